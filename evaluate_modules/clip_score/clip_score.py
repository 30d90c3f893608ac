"""CLIPScore as an `evaluate` metric: a thin wrapper over ``scorers.embedding.CLIPScore`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.embedding import CLIPScore, HESSEL_W

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

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image.
    form (`str`, defaults to "paper"): "paper" max(cos, 0); "cosine"; "hessel" w*max(cos, 0); "x100" 100*max(cos, 0).
    w (`float`, defaults to 2.5): Hessel's weight (form "hessel").
    batch_size (`int`, defaults to 32): images per forward pass.
Returns:
    scores (`list` of `float`): one score per image, in input order.
    mean (`float`): their mean.
Examples:
    >>> clip = evaluate.load("evaluate_modules/clip_score", config_name="ViT-B-32", pretrained="openai")
    >>> out = clip.compute(images=["cat.jpg"], prompts=["a photo of a cat"])
    >>> sorted(out)
    ['mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClipScore(base.ScorerMetric):
    """CLIPScore per image and its mean."""

    default_model = "openai/clip-vit-base-patch16"
    options = {"pretrained": None, "device": None, "precision": "fp32"}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2104.08718", "https://github.com/mlfoundations/open_clip")
    default_batch_size = 32
    compute_options = {"form": "paper", "w": HESSEL_W}

    def build_scorer(self, model, **options):
        return CLIPScore(model, **options)
