"""VIEScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.judges.viescore.VIEScorer`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.judges.viescore import DEFAULT_VIESCORE_MODEL, VIEScorer

_CITATION = """\
@inproceedings{ku2024viescore,
  title     = {VIEScore: Towards Explainable Metrics for Conditional Image Synthesis Evaluation},
  author    = {Ku, Max and Jiang, Dongfu and Wei, Cong and Yue, Xiang and Chen, Wenhu},
  booktitle = {ACL},
  year      = {2024}
}
"""

_DESCRIPTION = """\
VIEScore: a VLM rates from 0 to 10 how well the image follows the prompt (SC, semantic consistency) and explains why.
output="sc" (default, what TS2 ran and released): the score is SC / 10. output="overall" (the paper's score): a
second prompt rates perceptual quality, PQ = min(naturalness, artifacts), and the score is sqrt(SC x PQ) / 10, with
`viescore_sc` and `viescore_pq` beside it. NaN when a needed reply holds no readable rating. prompt="paper" (default)
or "detailed" picks the SC wording (see the card). The config name is the VLM: a local instruction-following chat
VLM (default llava-hf/llava-1.5-7b-hf) or "openai:MODEL" for a model served behind an OpenAI-compatible API (vLLM,
SGLang, OpenAI; pass api_base=...).
"""


class Viescore(base.ScorerMetric):
    """VIEScore per image and its mean."""

    spec = base.Spec(
        VIEScorer, DEFAULT_VIESCORE_MODEL, base.options(
            precision=None, served=True, vqa_backend="chat_vlm", max_new_tokens=256, output="sc", prompt="paper",
            template=None, pq_template=None),
        _DESCRIPTION, _CITATION,
        ('viescore = evaluate.load("evaluate_modules/viescore", config_name="openai:Qwen/Qwen2-VL-7B-Instruct",\n'
         '                         api_base="http://localhost:8000/v1")'),
        urls=("https://arxiv.org/abs/2312.14867", "https://github.com/TIGER-AI-Lab/VIEScore"),
        scores="SC / 10 per image, or with output=\"overall\" sqrt(SC x PQ) / 10, in [0, 1] (NaN for\n"
               "        an unreadable reply).", mean="their mean over readable replies.",
        returns='viescore_sc, viescore_pq (`list` of `float`, output="overall" only): SC / 10 and PQ / 10 (None when '
                'unreadable).\n', example_inputs=base.TS2_INPUTS)
