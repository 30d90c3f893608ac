"""HPSv3 as an `evaluate` metric: a thin wrapper over ``scorers.preference.HPSv3Score`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.models.hpsv3 import DEFAULT_HPSV3_MODEL
from scorers.preference import HPSv3Score

_CITATION = """\
@inproceedings{ma2025hpsv3,
  title     = {HPSv3: Towards Wide-Spectrum Human Preference Score},
  author    = {Ma, Yuhang and others},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2025}
}
"""

_DESCRIPTION = """\
HPSv3: Qwen2-VL-7B with a reward head trained on HPDv3 preferences. The score of an (image, prompt) pair is the head's
predicted mean `mu` at the `<|Reward|>` token (the official output); the predicted uncertainty `sigma` goes into the
records (`hpsv3_sigma`). The config name is the model: default "MizzenAI/HPSv3" (HPSv3.safetensors on
Qwen/Qwen2-VL-7B-Instruct), a local HPSv3.safetensors, or a folder with a Qwen2-VL config, processor and HPSv3.safetensors.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image (repeats allowed: one score per pair).
    batch_size (`int`, defaults to 8): images per forward pass.
Returns:
    scores (`list` of `float`): `mu` per image, in input order.
    mean (`float`): their mean.
    hpsv3_sigma (`list` of `float`): the predicted uncertainty per image.
Examples:
    >>> hps3 = evaluate.load("evaluate_modules/hpsv3")
    >>> out = hps3.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['hpsv3_sigma', 'mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Hpsv3(base.ScorerMetric):
    """HPSv3 mu per image, its mean, and sigma per image."""

    default_model = DEFAULT_HPSV3_MODEL
    options = {"base": None, "pixels": None, "device": None, "precision": None}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2508.03789", "https://github.com/MizzenAI/HPSv3")
    default_batch_size = 8

    def build_scorer(self, model, **options):
        return HPSv3Score(model, **{k: v for k, v in options.items() if v is not None})
