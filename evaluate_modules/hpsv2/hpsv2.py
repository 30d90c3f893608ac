"""HPSv2 / HPSv2.1 as an `evaluate` metric: a thin wrapper over ``scorers.metrics.reward_models.HPSv2Score`` and the runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.reward_models import HPSv2Score

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


class Hpsv2(base.ScorerMetric):
    """HPSv2 per image and its mean."""

    spec = base.Spec(
        HPSv2Score, "ViT-H-14", base.options(pretrained=None, version="v2.1"), _DESCRIPTION, _CITATION,
        'hps = evaluate.load("evaluate_modules/hpsv2")                 # HPS v2.1',
        urls=("https://arxiv.org/abs/2306.09341", "https://github.com/tgxs002/HPSv2"),
        prompts="one non-empty prompt per image (repeats allowed: one score per pair).",
        scores="one HPS per image, in input order.", batch_size=32, batch="images per forward pass.")
