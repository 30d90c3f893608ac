"""ImageReward as an `evaluate` metric: a thin wrapper over ``scorers.metrics.reward_models.ImageRewardScore`` and the runner."""
import scorers.scoring.evaluate_base as base
from scorers.models.reward_checkpoints import DEFAULT_IMAGEREWARD_MODEL  # no torch at load
from scorers.metrics.reward_models import ImageRewardScore

_CITATION = """\
@inproceedings{xu2023imagereward,
  title     = {ImageReward: Learning and Evaluating Human Preferences for Text-to-Image Generation},
  author    = {Xu, Jiazheng and Liu, Xiao and Wu, Yuchen and Tong, Yuxuan and Li, Qinkai and Ding, Ming and Tang, Jie
               and Dong, Yuxiao},
  booktitle = {Advances in Neural Information Processing Systems},
  year      = {2023}
}
"""

_DESCRIPTION = """\
ImageReward: a BLIP ViT-L image encoder, a BERT text encoder cross-attending to the image, and an MLP on the first
text token, trained on 137k expert comparisons. The score of an (image, prompt) pair is the MLP output standardised
by the official mean 0.16717362830052426 and std 1.0333394966054072 (about N(0, 1) over the training data). The
config name is the model: default "THUDM/ImageReward" (the official ImageReward.pt, converted on load), a local
ImageReward.pt, or a folder written by scorers.models.imagereward.save_pretrained.
"""


class Imagereward(base.ScorerMetric):
    """ImageReward per image and its mean."""

    spec = base.Spec(
        ImageRewardScore, DEFAULT_IMAGEREWARD_MODEL, base.options(med_config=None, tokenizer=None, vision_heads=None),
        _DESCRIPTION, _CITATION,
        'reward = evaluate.load("evaluate_modules/imagereward")',
        urls=("https://arxiv.org/abs/2304.05977", "https://github.com/THUDM/ImageReward"),
        prompts="one non-empty prompt per image (repeats allowed: one reward per pair).",
        scores="one reward per image, in input order.", batch_size=16, batch="images per forward pass.")
