"""PickScore as an `evaluate` metric: a thin wrapper over ``scorers.preference.PickScore`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.preference import PICKSCORE_MODEL, PickScore

_CITATION = """\
@inproceedings{kirstain2023pickapic,
  title     = {Pick-a-Pic: An Open Dataset of User Preferences for Text-to-Image Generation},
  author    = {Kirstain, Yuval and Polyak, Adam and Singer, Uriel and Matiana, Shahbuland and Penna, Joe and Levy, Omer},
  booktitle = {Advances in Neural Information Processing Systems},
  year      = {2023}
}
"""

_DESCRIPTION = """\
PickScore: a CLIP-H/14 fine-tuned on Pick-a-Pic human preferences. The score of an (image, prompt) pair is
exp(logit_scale) * cos(image embedding, prompt embedding), the official raw scale (about 0-25). The config name is the
model: default "yuvalkirstain/PickScore_v1" (with the processor of "laion/CLIP-ViT-H-14-laion2B-s32B-b79K", as the
official code), or any transformers CLIP folder holding its own processor.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image (repeats allowed: one score per pair).
    batch_size (`int`, defaults to 32): images per forward pass.
Returns:
    scores (`list` of `float`): one PickScore per image, in input order.
    mean (`float`): their mean.
Examples:
    >>> pick = evaluate.load("evaluate_modules/pickscore")
    >>> out = pick.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Pickscore(base.ScorerMetric):
    """PickScore per image and its mean."""

    default_model = PICKSCORE_MODEL
    options = {"processor": None, "device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2305.01569", "https://github.com/yuvalkirstain/PickScore")
    default_batch_size = 32

    def build_scorer(self, model, **options):
        return PickScore(model, **options)
