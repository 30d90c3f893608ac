"""HPSv3 as an `evaluate` metric: a thin wrapper over ``scorers.metrics.reward_models.HPSv3Score`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.models.reward_checkpoints import DEFAULT_HPSV3_MODEL  # no torch at load
from scorers.metrics.reward_models import HPSv3Score

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


class Hpsv3(base.ScorerMetric):
    """HPSv3 mu per image, its mean, and sigma per image."""

    spec = base.Spec(
        HPSv3Score, DEFAULT_HPSV3_MODEL, base.options(precision=None, base=None, pixels=None), _DESCRIPTION, _CITATION,
        'hps3 = evaluate.load("evaluate_modules/hpsv3")',
        urls=("https://arxiv.org/abs/2508.03789", "https://github.com/MizzenAI/HPSv3"),
        prompts="one non-empty prompt per image (repeats allowed: one score per pair).",
        scores="`mu` per image, in input order.", batch="images per forward pass.",
        returns="hpsv3_sigma (`list` of `float`): the predicted uncertainty per image.\n",
        example_keys=("hpsv3_sigma", "mean", "scores"))
