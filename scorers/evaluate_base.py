"""What every scorer `evaluate` module shares: images + prompts in, per-image scores out, the scorer built once.

The modules in ``evaluate_modules/`` (clip_score, align_score, siglip_score, tifa_score, dsg_score, vqa_score) are
subclasses of :class:`ScorerMetric` that name their scorer, its load-time and compute-time options and their card
text; the ``_compute`` is this class's. They import
this *module* (``import scorers.evaluate_base as base``), never the class by name: evaluate's loader takes the first
``EvaluationModule`` subclass in a module's namespace as the module's metric, and that must be the module's own.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

import datasets
import evaluate

from .runner import pairs_output, run, score_pairs

__all__ = ["ScorerMetric"]

#: keyword arguments evaluate.Metric itself takes (evaluate.load passes these)
_METRIC_PARAMETERS = set(inspect.signature(evaluate.Metric.__init__).parameters) - {"self", "kwargs"}


class ScorerMetric(evaluate.Metric):
    """Base of the scorer modules. Subclasses set the class attributes below and implement :meth:`build_scorer`.

    ``evaluate.load(path, config_name=MODEL, **options)``: the config name is the model (``"default"`` means
    :attr:`default_model`); ``options`` are the scorer's load-time options, checked against :attr:`options`.
    """

    #: model used when no config name is given
    default_model: str = ""
    #: load-time scorer options and their defaults (``device``, ``precision``...)
    options: dict[str, Any] = {}
    description: str = ""
    citation: str = ""
    kwargs_description: str = ""
    reference_urls: tuple[str, ...] = ()
    #: images per batch when ``compute`` gets no ``batch_size``
    default_batch_size: int = 8
    #: compute-time score-form options and their defaults, passed to the scorer's ``set_form`` (embedding scorers:
    #: ``{"form": "paper", "w": 2.5}``); empty: the scorer has no forms
    compute_options: dict[str, Any] = {}
    #: also return the scorer's per-image ``records`` (e.g. per-question answers)
    with_records: bool = False

    def __init__(self, *args, **kwargs):
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in self.options}
        unknown = sorted(set(kwargs) - _METRIC_PARAMETERS)
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown option(s) {unknown}; scorer options are "
                             f"{sorted(self.options)}")
        super().__init__(*args, **kwargs)
        self._options = {**self.options, **given}
        self._scorer = None

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.description,
            citation=self.citation,
            inputs_description=self.kwargs_description,
            features=datasets.Features({"images": datasets.Image(), "prompts": datasets.Value("string")}),
            reference_urls=list(self.reference_urls),
        )

    def build_scorer(self, model: str, **options):
        """The scorer object (anything the runner accepts) for ``model`` with the load-time ``options``."""
        raise NotImplementedError

    @property
    def scorer(self):
        """The scorer, built on first use and kept (models load once per metric object)."""
        if self._scorer is None:
            model = self.default_model if self.config_name == "default" else self.config_name
            self._scorer = self.build_scorer(model, **self._options)
        return self._scorer

    def _compute(self, images, prompts, batch_size: int | None = None, **compute_options) -> dict:
        """What every scorer module's ``compute`` does: set the score form (if any), score, return scores + mean."""
        unknown = sorted(set(compute_options) - set(self.compute_options))
        if unknown:
            allowed = ["batch_size", *self.compute_options]
            raise ValueError(f"{type(self).__name__}.compute: unknown option(s) {unknown}; options are {allowed}")
        if self.compute_options:
            self.scorer.set_form(**{**self.compute_options, **compute_options})
        batch_size = self.default_batch_size if batch_size is None else batch_size
        if self.with_records:
            return self.score_with_records(images, prompts, batch_size=batch_size)
        return self.score(images, prompts, batch_size=batch_size)

    def score(self, images: Sequence[Any], prompts: Sequence[str], *, batch_size: int) -> dict:
        """``{"scores": [...], "mean": float, <scalar record field>: [...]}`` through the shared runner."""
        return score_pairs(self.scorer, images, prompts, batch_size=batch_size)

    def score_with_records(self, images: Sequence[Any], prompts: Sequence[str], *, batch_size: int) -> dict:
        """:meth:`score` (scalar record fields as lists, e.g. ``failed_questions``) plus ``records``: the scorer's full
        per-image records (e.g. per-question answers)."""
        result = run(self.scorer, images, prompts, batch_size=batch_size, num_workers=0, progress=False)
        return {**pairs_output(result), "records": result.records}
