"""CLIPScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.embedding.CLIPScore`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.embedding import CLIPScore

_CITATION = """\
@inproceedings{hessel2021clipscore,
  title     = {CLIPScore: A Reference-free Evaluation Metric for Image Captioning},
  author    = {Hessel, Jack and Holtzman, Ari and Forbes, Maxwell and Le Bras, Ronan and Choi, Yejin},
  booktitle = {EMNLP},
  year      = {2021}
}
@inproceedings{saxon2024ts2,
  title     = {Who Evaluates the Evaluations? Objectively Scoring Text-to-Image Prompt Coherence Metrics with
               T2IScoreScore (TS2)},
  author    = {Saxon, Michael and others},
  booktitle = {Advances in Neural Information Processing Systems},
  year      = {2024}
}
"""

_DESCRIPTION = """\
CLIPScore: how well an image matches its prompt, as the cosine similarity of CLIP's L2-normalised image and text
embeddings, clipped at 0 (TS2 paper eq. 6). The config name is the model: a transformers CLIP checkpoint
(default "openai/clip-vit-base-patch16", as in the official TS2 code) or an open_clip model name with
`pretrained=` (e.g. config "ViT-B-32", pretrained="openai"), or "local-dir:/path" for an open_clip folder.
"""


class ClipScore(base.ScorerMetric):
    """CLIPScore per image and its mean."""

    spec = base.Spec(
        CLIPScore, "openai/clip-vit-base-patch16", base.options(pretrained=None), _DESCRIPTION, _CITATION,
        'clip = evaluate.load("evaluate_modules/clip_score", config_name="ViT-B-32", pretrained="openai")',
        urls=("https://arxiv.org/abs/2104.08718", "https://github.com/mlfoundations/open_clip"),
        forms=base.EMBEDDING_FORMS, args=base.EMBEDDING_FORMS_DOC, batch_size=32, batch="images per forward pass.")
