"""LLMScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.judges.llmscore.LLMScorer`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.judges.llmscore import DEFAULT_CAPTIONER, DEFAULT_LLM, LLMScorer

_CITATION = """\
@article{lu2023llmscore,
  title   = {LLMScore: Unveiling the Power of Large Language Models in Text-to-Image Synthesis Evaluation},
  author  = {Lu, Yujie and Yang, Xianjun and Li, Xiujun and Wang, Xin Eric and Wang, William Yang},
  journal = {NeurIPS},
  year    = {2023}
}
"""

_DESCRIPTION = """\
LLMScore: a captioner VLM describes the image (a global description and a list of objects with their attributes);
a text LLM compares the descriptions with the prompt and returns the number of composition errors (EC, lower is
better; a missing object category counts 4) and an overall 1-100 rating (higher is better), each with a rationale.
The config name is the captioner (local chat VLM, default llava-hf/llava-1.5-7b-hf, or "openai:MODEL"); the `llm`
option the judge (local causal LM or "openai:MODEL").
"""


class Llmscore(base.ScorerMetric):
    """LLMScore error count per image, its mean, and the overall rating."""

    spec = base.Spec(
        LLMScorer, DEFAULT_CAPTIONER,
        base.options(precision=None, served=True, llm=DEFAULT_LLM, vqa_backend="chat_vlm"),
        _DESCRIPTION, _CITATION,
        ('llmscore = evaluate.load("evaluate_modules/llmscore", config_name="openai:Qwen/Qwen2-VL-7B-Instruct",\n'
         '                         llm="openai:Qwen/Qwen2-VL-7B-Instruct", api_base="http://localhost:8000/v1")'),
        urls=("https://arxiv.org/abs/2305.11116", "https://github.com/YujieLu10/LLMScore"),
        scores="the error count per image (lower is better; NaN when the reply has none).",
        mean="their mean over readable replies.",
        returns="llmscore_overall (`list` of `float`): the overall rating per image, 1-100 (higher is better; None if "
                "unreadable).\n",
        example_inputs=base.TS2_INPUTS, example_keys=("llmscore_overall", "mean", "scores"))
