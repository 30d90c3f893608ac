"""ALIGNScore as an `evaluate` metric: a thin wrapper over ``scorers.embedding.ALIGNScore`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.embedding import ALIGNScore, HESSEL_W

_CITATION = """\
@inproceedings{jia2021align,
  title     = {Scaling Up Visual and Vision-Language Representation Learning With Noisy Text Supervision},
  author    = {Jia, Chao and Yang, Yinfei and Xia, Ye and Chen, Yi-Ting and Parekh, Zarana and Pham, Hieu and
               Le, Quoc and Sung, Yun-Hsuan and Li, Zhen and Duerig, Tom},
  booktitle = {ICML},
  year      = {2021}
}
"""

_DESCRIPTION = """\
ALIGNScore: the cosine similarity of ALIGN's (EfficientNet image tower, BERT text tower) L2-normalised image and
text embeddings, clipped at 0 like TS2's CLIPScore. The config name is a transformers `AlignModel` checkpoint
(default "kakaobrain/align-base").
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
Examples:
    >>> align = evaluate.load("evaluate_modules/align_score")
    >>> out = align.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class AlignScore(base.ScorerMetric):
    """ALIGNScore per image and its mean."""

    default_model = "kakaobrain/align-base"
    options = {"device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2102.05918", "https://huggingface.co/kakaobrain/align-base")
    default_batch_size = 32
    compute_options = {"form": "paper", "w": HESSEL_W}

    def build_scorer(self, model, **options):
        return ALIGNScore(model, **options)
