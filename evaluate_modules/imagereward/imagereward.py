"""ImageReward as an `evaluate` metric: a thin wrapper over ``scorers.preference.ImageRewardScore`` and the runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.models.imagereward import DEFAULT_IMAGEREWARD_MODEL
from scorers.preference import ImageRewardScore

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

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image (repeats allowed: one reward per pair).
    batch_size (`int`, defaults to 16): images per forward pass.
Returns:
    scores (`list` of `float`): one reward per image, in input order.
    mean (`float`): their mean.
Examples:
    >>> reward = evaluate.load("evaluate_modules/imagereward")
    >>> out = reward.compute(images=["cat.jpg", "cat.jpg"], prompts=["a photo of a cat", "a photo of a dog"])
    >>> len(out["scores"])
    2
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Imagereward(base.ScorerMetric):
    """ImageReward per image and its mean."""

    default_model = DEFAULT_IMAGEREWARD_MODEL
    options = {"med_config": None, "tokenizer": None, "vision_heads": None, "device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2304.05977", "https://github.com/THUDM/ImageReward")
    default_batch_size = 16

    def build_scorer(self, model, **options):
        return ImageRewardScore(model, **options)
