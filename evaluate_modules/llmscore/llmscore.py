"""LLMScore as an `evaluate` metric: a thin wrapper over ``scorers.judges.llmscore.LLMScorer`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.judges.llmscore import DEFAULT_CAPTIONER
from scorers.judges.llmscore import DEFAULT_LLM
from scorers.judges.llmscore import LLMScorer

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

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image.
    batch_size (`int`, defaults to 8): images per scorer call.
Returns:
    scores (`list` of `float`): the error count per image (lower is better; NaN when the reply has none).
    mean (`float`): their mean over readable replies.
    llmscore_overall (`list` of `float`): the overall rating per image, 1-100 (higher is better; None if unreadable).
Examples:
    >>> llmscore = evaluate.load("evaluate_modules/llmscore", config_name="openai:Qwen/Qwen2-VL-7B-Instruct",
    ...                          llm="openai:Qwen/Qwen2-VL-7B-Instruct", api_base="http://localhost:8000/v1")
    >>> out = llmscore.compute(images=["images/000-00.jpg"], prompts=["A Christmas tree with lights and teddy bear"])
    >>> sorted(out)
    ['llmscore_overall', 'mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Llmscore(base.ScorerMetric):
    """LLMScore error count per image, its mean, and the overall rating."""

    default_model = DEFAULT_CAPTIONER
    options = {"llm": DEFAULT_LLM, "vqa_backend": "chat_vlm", "device": None, "precision": None, "api_base": None,
               "max_concurrency": None, "timeout": None, "max_retries": None}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2305.11116", "https://github.com/YujieLu10/LLMScore")

    def build_scorer(self, model, **options):
        # served-model options left unset (None) keep the client's defaults and do not reach local models
        return LLMScorer(model=model, **{k: v for k, v in options.items() if v is not None})
