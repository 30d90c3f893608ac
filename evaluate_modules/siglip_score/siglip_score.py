"""SigLIP score as an `evaluate` metric: a thin wrapper over ``scorers.metrics.embedding.SigLIPScore`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.embedding import SigLIPScore

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


class SiglipScore(base.ScorerMetric):
    """SigLIP score and match probability per image, and the mean score."""

    spec = base.Spec(
        SigLIPScore, "google/siglip-so400m-patch14-384", base.options(), _DESCRIPTION, _CITATION,
        'siglip = evaluate.load("evaluate_modules/siglip_score")',
        urls=("https://arxiv.org/abs/2303.15343", "https://huggingface.co/google/siglip-so400m-patch14-384"),
        forms=base.EMBEDDING_FORMS, args=base.EMBEDDING_FORMS_DOC, batch_size=32, batch="images per forward pass.",
        returns="siglip_probability (`list` of `float`): the sigmoid match probability per image.\n",
        example_keys=("mean", "scores", "siglip_probability"))
