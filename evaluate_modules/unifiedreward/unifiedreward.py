"""UnifiedReward-2.0 pointwise as an `evaluate` metric: a thin wrapper over ``scorers.metrics.judges.unifiedreward``."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.judges.unifiedreward import DEFAULT_UNIFIEDREWARD_MODEL, UNIFIEDREWARD_PROMPT, UnifiedRewardScorer

_CITATION = """\
@article{wang2025unifiedreward,
  title   = {Unified Reward Model for Multimodal Understanding and Generation},
  author  = {Wang, Yibin and others},
  journal = {arXiv preprint arXiv:2503.05236},
  year    = {2025}
}
"""

_DESCRIPTION = """\
UnifiedReward-2.0 pointwise: a Qwen-VL reward model rates an image against its caption from 1 to 5 on Alignment,
Coherence and Style; the score is the Alignment rating (NaN with a reason when the reply has none). The config name is
the model: a local chat VLM checkpoint (default CodeGoat24/UnifiedReward-2.0-qwen3vl-8b) or "openai:NAME" for a served
one (vLLM, SGLang...) with `api_base=`.
"""


class Unifiedreward(base.ScorerMetric):
    """UnifiedReward-2.0 Alignment rating per image and its mean."""

    spec = base.Spec(
        UnifiedRewardScorer, DEFAULT_UNIFIEDREWARD_MODEL, base.options(
            precision=None, served=True, vqa_backend="chat_vlm", max_new_tokens=256, template=UNIFIEDREWARD_PROMPT,
            caption_whitespace="collapse", jpeg_quality=None),
        _DESCRIPTION, _CITATION,
        ('ur = evaluate.load("evaluate_modules/unifiedreward", config_name="openai:UnifiedReward",\n'
         '                   api_base="http://localhost:8000/v1")'),
        urls=("https://arxiv.org/abs/2503.05236", "https://github.com/CodeGoat24/UnifiedReward"),
        scores="the Alignment rating (1-5) per image (NaN for an unreadable reply).",
        mean="their mean over readable replies.", example_inputs=base.TS2_INPUTS)
