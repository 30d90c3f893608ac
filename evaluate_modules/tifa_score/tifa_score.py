"""TIFA as an `evaluate` metric: a thin wrapper over ``scorers.qga.question_scorers.TIFAScorer`` and the shared runner."""
import evaluate
import scorers.evaluate_base as base
from scorers.qga.matching import DEFAULT_SBERT
from scorers.qga.question_scorers import DEFAULT_VQA_MODEL

_CITATION = """\
@inproceedings{hu2023tifa,
  title     = {TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question Answering},
  author    = {Hu, Yushi and Liu, Benlin and Kasai, Jungo and Wang, Yizhong and Ostendorf, Mari and Krishna, Ranjay
               and Smith, Noah A.},
  booktitle = {ICCV},
  year      = {2023}
}
"""

_DESCRIPTION = """\
TIFA: ask a VQA model each of the prompt's questions about the image, map each free-form answer onto the question's
choices (yes/no by `yes_rule`: "word" (default) = the first standalone yes/no word, "release" = the TS2 release's
substring rule, "tifa" = the official TIFA code's exact choice else SBERT; multiple choice: nearest choice by SBERT
cosine) and score the fraction answered correctly. The config name is the VQA checkpoint (default
Salesforce/blip-vqa-base; any BLIP VQA, InstructBLIP, LLaVA-1.5 or AutoModelForImageTextToText chat VLM). Questions come from a TS2-layout question table (`questions=`
at load time), looked up by prompt.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): one prompt per image; each must have questions in the question table.
    batch_size (`int`, defaults to 8): images per scorer call (all their questions are answered in batched forwards).
Returns:
    scores (`list` of `float`): fraction of questions answered correctly, per image.
    mean (`float`): their mean.
    failed_questions (`list` of `str`): per image, the `|`-joined ids of the questions it failed (as the CSV column).
    records (`list` of `dict`): per image, `failed_questions` and `questions`
        (question, expected, answer, chosen, correct for each question).
Examples:
    >>> tifa = evaluate.load("evaluate_modules/tifa_score", questions="tifa_questions.csv")
    >>> out = tifa.compute(images=["images/000-00.jpg"], prompts=["A Christmas tree with lights and teddy bear"])
    >>> sorted(out)
    ['failed_questions', 'mean', 'records', 'scores']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class TifaScore(base.ScorerMetric):
    """TIFA score per image, its mean and the per-question records."""

    default_model = DEFAULT_VQA_MODEL
    options = {"questions": None, "vqa_backend": "auto", "sbert": DEFAULT_SBERT, "yes_rule": "word", "device": None,
               "precision": None,
               # served models (config name openai:MODEL): the chat-completions server and client limits
               "api_base": None, "max_concurrency": None, "timeout": None, "max_retries": None}
    description, citation, kwargs_description = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    reference_urls = ("https://arxiv.org/abs/2303.11897", "https://github.com/Yushi-Hu/tifa")
    with_records = True

    def build_scorer(self, model, **options):
        # through the registry, as `ts2 score tifa`: a served model (openai:MODEL) becomes the backend
        from scorers.registry import build_scorer

        return build_scorer("tifa", model=model, **options)
