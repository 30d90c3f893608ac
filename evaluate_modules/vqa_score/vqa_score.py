"""VQAScore as an `evaluate` metric: a thin wrapper over ``scorers.metrics.qga.vqascore.VQAScorer`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.qga.question_scorers import DEFAULT_VQA_MODEL
from scorers.metrics.qga.vqascore import VQASCORE_TEMPLATE

_CITATION = """\
@inproceedings{lin2024vqascore,
  title     = {Evaluating Text-to-Visual Generation with Image-to-Text Generation},
  author    = {Lin, Zhiqiu and Pathak, Deepak and Li, Baiqi and Li, Jiayao and Xia, Xide and Neubig, Graham and
               Zhang, Pengchuan and Ramanan, Deva},
  booktitle = {ECCV},
  year      = {2024}
}
"""

_DESCRIPTION = """\
VQAScore: the probability a VQA model gives to the answer "Yes" for the question
'Does this figure show "{prompt}"? Please answer yes or no.' about the image. The config name is the VQA checkpoint
(default Salesforce/blip-vqa-base; any BLIP VQA, InstructBLIP with a decoder-only LM, LLaVA-1.5 or
AutoModelForImageTextToText chat VLM).
"""


class VqaScore(base.ScorerMetric):
    """VQAScore per image and its mean."""

    spec = base.Spec(
        base.registered("vqa_score"), DEFAULT_VQA_MODEL, base.options(
            precision=None, served=True, vqa_backend="auto", template=VQASCORE_TEMPLATE, prompt_style="short_answer"),
        _DESCRIPTION, _CITATION,
        'vqa = evaluate.load("evaluate_modules/vqa_score", config_name="llava-hf/llava-1.5-7b-hf")',
        urls=("https://arxiv.org/abs/2404.01291", "https://github.com/linzhiqiu/t2v_metrics"),
        scores='P("Yes") per image, in [0, 1].', batch_size=16, example_inputs=base.TS2_INPUTS)
