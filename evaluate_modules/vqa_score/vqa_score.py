"""VQAScore as an `evaluate` metric: a thin wrapper over ``scorers.qga.vqascore.VQAScorer`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.qga.scorers import DEFAULT_VQA_MODEL
from scorers.qga.vqascore import VQASCORE_TEMPLATE

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

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one non-empty prompt per image.
    batch_size (`int`, defaults to 16): images per scorer call.
Returns:
    scores (`list` of `float`): P("Yes") per image, in [0, 1].
    mean (`float`): their mean.
Examples:
    >>> vqa = evaluate.load("evaluate_modules/vqa_score", config_name="llava-hf/llava-1.5-7b-hf")
    >>> out = vqa.compute(images=["images/000-00.jpg"], prompts=["A Christmas tree with lights and teddy bear"])
    >>> sorted(out)
    ['mean', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VqaScore(base.ScorerMetric):
    """VQAScore per image and its mean."""

    default_model = DEFAULT_VQA_MODEL
    options = {"vqa_backend": "auto", "device": None, "precision": None, "template": VQASCORE_TEMPLATE,
               "prompt_style": "short_answer",
               # served models (config name openai:MODEL): the chat-completions server and client limits
               "api_base": None, "max_concurrency": None, "timeout": None, "max_retries": None}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2404.01291", "https://github.com/linzhiqiu/t2v_metrics")
    default_batch_size = 16

    def build_scorer(self, model, **options):
        # through the registry, as `ts2 score vqa_score`: a served model (openai:MODEL) becomes the backend
        from scorers.registry import build_scorer

        return build_scorer("vqa_score", model=model, **options)
