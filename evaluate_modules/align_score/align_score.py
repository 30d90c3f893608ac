"""ALIGNScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.embedding.ALIGNScore`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.embedding import ALIGNScore

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


class AlignScore(base.ScorerMetric):
    """ALIGNScore per image and its mean."""

    spec = base.Spec(
        ALIGNScore, "kakaobrain/align-base", base.options(), _DESCRIPTION, _CITATION,
        'align = evaluate.load("evaluate_modules/align_score")',
        urls=("https://arxiv.org/abs/2102.05918", "https://huggingface.co/kakaobrain/align-base"),
        forms=base.EMBEDDING_FORMS, args=base.EMBEDDING_FORMS_DOC, batch_size=32, batch="images per forward pass.")
