"""HPSv2 / HPSv2.1 as an `evaluate` metric: a thin wrapper over ``scorers.preference.HPSv2Score`` and the runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.preference import HPSv2Score

_CITATION = """\
@article{wu2023hpsv2,
  title   = {Human Preference Score v2: A Solid Benchmark for Evaluating Human Preferences of Text-to-Image Synthesis},
  author  = {Wu, Xiaoshi and Hao, Yiming and Sun, Keqiang and Chen, Yixiong and Zhu, Feng and Zhao, Rui and Li, Hongsheng},
  journal = {arXiv preprint arXiv:2306.09341},
  year    = {2023}
}
"""

_DESCRIPTION = """\
HPSv2 (Human Preference Score v2, and v2.1 by default): an open_clip ViT-H-14 fine-tuned on HPD v2 preferences. The
score of an (image, prompt) pair is the cosine of the normalised image and prompt embeddings (what the official
`hpsv2.score` returns; leaderboards print it x 100), with HPSv2's own preprocessing. The config name is the open_clip
model: default "ViT-H-14" with the `xswu/HPSv2` checkpoint of `version` ("v2.1" or "v2.0"), or `pretrained=` a local
checkpoint file, or "local-dir:/path" for an open_clip folder.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image (repeats allowed: one score per pair).
    batch_size (`int`, defaults to 32): images per forward pass.
Returns:
    scores (`list` of `float`): one HPS per image, in input order.
    mean (`float`): their mean.
Examples:
    >>> hps = evaluate.load("evaluate_modules/hpsv2")                 # HPS v2.1
    >>> out = hps.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Hpsv2(base.ScorerMetric):
    """HPSv2 per image and its mean."""

    default_model = "ViT-H-14"
    options = {"pretrained": None, "version": "v2.1", "device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2306.09341", "https://github.com/tgxs002/HPSv2")
    default_batch_size = 32

    def build_scorer(self, model, **options):
        return HPSv2Score(model, **options)
