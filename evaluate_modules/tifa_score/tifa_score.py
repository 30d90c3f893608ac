"""TIFA as an `evaluate` metric: a thin wrapper over ``scorers.metrics.qga.question_scorers.TIFAScorer`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.qga.matching import DEFAULT_SBERT
from scorers.metrics.qga.question_scorers import DEFAULT_VQA_MODEL

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

_RETURNS = """\
failed_questions (`list` of `str`): per image, the `|`-joined ids of the questions it failed (as the CSV column).
records (`list` of `dict`): per image, `failed_questions` and `questions`
    (question, expected, answer, chosen, correct for each question).
"""


class TifaScore(base.ScorerMetric):
    """TIFA score per image, its mean and the per-question records."""

    spec = base.Spec(
        base.registered("tifa"), DEFAULT_VQA_MODEL, base.options(
            precision=None, served=True, questions=None, vqa_backend="auto", sbert=DEFAULT_SBERT, yes_rule="word"),
        _DESCRIPTION, _CITATION,
        'tifa = evaluate.load("evaluate_modules/tifa_score", questions="tifa_questions.csv")',
        urls=("https://arxiv.org/abs/2303.11897", "https://github.com/Yushi-Hu/tifa"),
        prompts="one prompt per image; each must have questions in the question table.",
        batch="images per scorer call (all their questions are answered in batched forwards).",
        scores="fraction of questions answered correctly, per image.", returns=_RETURNS, with_records=True,
        example_inputs=base.TS2_INPUTS, example_keys=("failed_questions", "mean", "records", "scores"))
