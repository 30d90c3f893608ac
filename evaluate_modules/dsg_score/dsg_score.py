"""DSG as an `evaluate` metric: a thin wrapper over ``scorers.metrics.qga.question_scorers.DSGScorer`` and the shared runner."""
import scorers.scoring.evaluate_base as base
from scorers.metrics.qga.matching import DEFAULT_SBERT
from scorers.metrics.qga.question_scorers import DEFAULT_VQA_MODEL

_CITATION = """\
@inproceedings{cho2024dsg,
  title     = {Davidsonian Scene Graph: Improving Reliability in Fine-grained Evaluation for Text-to-Image Generation},
  author    = {Cho, Jaemin and Hu, Yushi and Baldridge, Jason and Garg, Roopal and Anderson, Peter and Krishna, Ranjay
               and Bansal, Mohit and Pont-Tuset, Jordi and Wang, Su},
  booktitle = {ICLR},
  year      = {2024}
}
"""

_DESCRIPTION = """\
DSG: ask a VQA model each of the prompt's Davidsonian-scene-graph yes/no questions about the image; a question passes
when its answer reads as yes (`yes_rule`: "word" (default) = the first standalone yes/no word, "release" = the TS2
release's substring rule, "tifa" = exact choice else SBERT) and its parent questions pass (`dsg_gating`:
"ancestors" (default) = every ancestor, recursively, as TS2's code and release; "parents" = direct parents only, as
the official DSG code); the
score is the fraction of questions that pass (`accumulate="dsg"`, which reproduces the TS2 release's DSG scores) or the plain fraction
answered yes (`accumulate="tifa"`, the DSG paper's no-dependency variant). The config name is the VQA checkpoint
(default Salesforce/blip-vqa-base). Questions come from a TS2-layout DSG table (`questions=` at load time, with
`parent_question_id`), looked up by prompt.
"""

_RETURNS = """\
failed_questions (`list` of `str`): per image, the `|`-joined ids of the questions it failed (as the CSV column).
records (`list` of `dict`): per image, `failed_questions` (did not pass, including
    children of failed parents) and `questions` (question, answer, chosen, correct, parents, passed).
"""


class DsgScore(base.ScorerMetric):
    """DSG score per image, its mean and the per-question records."""

    spec = base.Spec(
        base.registered("dsg"), DEFAULT_VQA_MODEL, base.options(
            precision=None, served=True, questions=None, vqa_backend="auto", sbert=DEFAULT_SBERT, yes_rule="word",
            accumulate="dsg", dsg_gating="ancestors"),
        _DESCRIPTION, _CITATION,
        'dsg = evaluate.load("evaluate_modules/dsg_score", questions="dsg_questions.csv")',
        urls=("https://arxiv.org/abs/2310.18235", "https://github.com/j-min/DSG"),
        prompts="one prompt per image; each must have questions in the question table.", scores="DSG score per image.",
        returns=_RETURNS, with_records=True,
        example_inputs=base.TS2_INPUTS, example_keys=("failed_questions", "mean", "records", "scores"))
