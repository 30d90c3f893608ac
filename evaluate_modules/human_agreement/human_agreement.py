"""Agreement of a faithfulness metric with human ratings as an `evaluate` metric: a thin wrapper over
``scorers.stats.agreement.agreement_many``."""
import datasets
import evaluate
from scorers.stats.agreement import COEFFICIENTS, agreement_many

_CITATION = """\
@inproceedings{deutsch2023ties,
  title     = {Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and Tie Calibration},
  author    = {Deutsch, Daniel and Foster, George and Freitag, Markus},
  booktitle = {Proceedings of EMNLP},
  year      = {2023}
}
@inproceedings{hu2023tifa,
  title     = {TIFA: Accurate and Interpretable Text-to-Image Faithfulness Evaluation with Question Answering},
  author    = {Hu, Yushi and Liu, Benlin and Kasai, Jungo and Wang, Yizhong and Ostendorf, Mari and Krishna, Ranjay and
               Smith, Noah A.},
  booktitle = {ICCV},
  year      = {2023}
}
"""

_DESCRIPTION = """\
How well a text-to-image faithfulness metric agrees with human ratings of the same images (the view of TIFA160,
DSG-1k and GenAI-Bench, beside TS2's). Coefficients follow scipy.stats: Pearson r, Spearman rho, Kendall tau-b and
tau-c, plus pairwise accuracy with tie calibration (acc_eq of Deutsch et al., 2023: a pair of images is correct when
the metric orders it as the humans do, or ties it where the humans tie it; the metric's tie threshold epsilon is
chosen to maximise the accuracy and reported). Items can be pooled, grouped per prompt (coefficients averaged over
prompts) or per T2I model (model means correlated), with seeded bootstrap intervals.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): the metric's score per image (NaN allowed: the pair is dropped and counted).
    references (`list` of `float`): the human rating per image (e.g. the mean of the raters' 1-5 Likert scores).
    coefficients (`list` of `str` or `str`, defaults to all five): pearson, spearman, kendall_b, kendall_c,
        pairwise_acc.
    grouping (`str`, defaults to "none"): "none", "item" (needs `items`) or "system" (needs `systems`).
    items (`list`, optional): the prompt id of each image; systems (`list`, optional): its T2I model.
    n_bootstrap (`int`, defaults to 0): bootstrap resamples for intervals (prompts for grouping "item").
    confidence (`float`, defaults to 0.95), seed (`int`, defaults to 0).
Returns:
    <coefficient> (`float`): each requested coefficient (plain, not %).
    pairwise_acc_epsilon (`float`): the calibrated metric tie threshold (with pairwise_acc).
    <coefficient>_ci (`list`, only with n_bootstrap): [low, high].
    n_items (`int`), n_groups (`int`), n_groups_skipped (`int`), n_nan_dropped (`int`).
Examples:
    >>> agreement = evaluate.load("evaluate_modules/human_agreement")
    >>> out = agreement.compute(predictions=[0.50, 0.52, 0.90, 0.10], references=[1, 1, 2, 3],
    ...                         coefficients=["kendall_b", "pairwise_acc"])
    >>> round(out["kendall_b"], 4), out["pairwise_acc"], round(out["pairwise_acc_epsilon"], 2)
    (-0.1826, 0.5, 0.02)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HumanAgreement(evaluate.Metric):
    """Pearson / Spearman / Kendall b, c / tie-calibrated pairwise accuracy of metric scores against human ratings."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("float64")}
            ),
            reference_urls=["https://arxiv.org/abs/2305.14324", "https://github.com/Yushi-Hu/tifa"],
        )

    def _compute(self, predictions, references, coefficients=COEFFICIENTS, grouping="none", items=None,
                 systems=None, n_bootstrap=0, confidence=0.95, seed=0):
        if isinstance(coefficients, str):
            coefficients = [coefficients]
        results = agreement_many(references, {"metric": predictions}, coefficients=coefficients, grouping=grouping,
                                 items=items, systems=systems, n_bootstrap=n_bootstrap, confidence=confidence,
                                 seed=seed)
        out = {}
        for result in results:
            out[result.coefficient] = result.statistic
            if result.coefficient == "pairwise_acc":
                out["pairwise_acc_epsilon"] = result.epsilon
            if n_bootstrap:
                out[f"{result.coefficient}_ci"] = list(result.confidence_interval)
        first = results[0]
        out.update(n_items=first.n_items, n_groups=first.n_groups, n_groups_skipped=first.n_groups_skipped,
                   n_nan_dropped=first.n_nan_dropped)
        return out
