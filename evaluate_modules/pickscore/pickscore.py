"""PickScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.reward_models.PickScore`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.reward_models import PICKSCORE_MODEL, PickScore

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


class Pickscore(base.ScorerMetric):
    """PickScore per image and its mean."""

    spec = base.Spec(
        PickScore, PICKSCORE_MODEL, base.options(processor=None), _DESCRIPTION, _CITATION,
        'pick = evaluate.load("evaluate_modules/pickscore")',
        urls=("https://arxiv.org/abs/2305.01569", "https://github.com/yuvalkirstain/PickScore"),
        prompts="one non-empty prompt per image (repeats allowed: one score per pair).",
        scores="one PickScore per image, in input order.", batch_size=32, batch="images per forward pass.")
