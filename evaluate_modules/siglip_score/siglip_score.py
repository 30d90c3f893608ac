"""SigLIP score as an `evaluate` metric: a thin wrapper over ``scorers.embedding.SigLIPScore`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.embedding import HESSEL_W, SigLIPScore

_CITATION = """\
@inproceedings{zhai2023siglip,
  title     = {Sigmoid Loss for Language Image Pre-Training},
  author    = {Zhai, Xiaohua and Mustafa, Basil and Kolesnikov, Alexander and Beyer, Lucas},
  booktitle = {ICCV},
  year      = {2023}
}
"""

_DESCRIPTION = """\
SigLIP score: the cosine similarity of SigLIP's L2-normalised image and text embeddings, clipped at 0 like TS2's
CLIPScore, plus SigLIP's own match probability sigmoid(cos * exp(t) + b) with the checkpoint's learned temperature t
and bias b. The config name is a transformers SigLIP checkpoint (default "google/siglip-so400m-patch14-384").
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image.
    form (`str`, defaults to "paper"): "paper" max(cos, 0); "cosine"; "hessel" w*max(cos, 0); "x100" 100*max(cos, 0).
    w (`float`, defaults to 2.5): weight of form "hessel".
    batch_size (`int`, defaults to 32): images per forward pass.
Returns:
    scores (`list` of `float`): one score per image, in input order.
    mean (`float`): their mean.
    siglip_probability (`list` of `float`): the sigmoid match probability per image.
Examples:
    >>> siglip = evaluate.load("evaluate_modules/siglip_score")
    >>> out = siglip.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['mean', 'scores', 'siglip_probability']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SiglipScore(base.ScorerMetric):
    """SigLIP score and match probability per image, and the mean score."""

    default_model = "google/siglip-so400m-patch14-384"
    options = {"device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2303.15343", "https://huggingface.co/google/siglip-so400m-patch14-384")
    default_batch_size = 32
    compute_options = {"form": "paper", "w": HESSEL_W}

    def build_scorer(self, model, **options):
        return SigLIPScore(model, **options)
