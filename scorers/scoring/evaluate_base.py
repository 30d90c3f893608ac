"""What every scorer `evaluate` module shares: images + prompts in, per-image scores out, the scorer built once.

The modules in ``evaluate_modules/`` (clip_score, align_score, siglip_score, tifa_score, dsg_score, vqa_score, the
preference models and the judges) are subclasses of :class:`ScorerMetric` whose only body is a :class:`Spec`: their
scorer, its default model, load-time and compute-time options, and their card text. The inputs description (Args /
Returns / Examples), the docstring, ``_info``, option checks and ``_compute`` are this module's. They import
this *module* (``import scorers.scoring.evaluate_base as base``), never the class by name: evaluate's loader takes the first
``EvaluationModule`` subclass in a module's namespace as the module's metric, and that must be the module's own.
"""
from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import datasets
import evaluate

from scorers.metrics.embedding import HESSEL_W
from scorers.scoring.runner import pairs_output, run, score_pairs

__all__ = ["CAT_INPUTS", "EMBEDDING_FORMS", "EMBEDDING_FORMS_DOC", "SERVED", "Spec", "TS2_INPUTS", "ScorerMetric",
           "options", "registered"]

#: keyword arguments evaluate.Metric itself takes (evaluate.load passes these)
_METRIC_PARAMETERS = set(inspect.signature(evaluate.Metric.__init__).parameters) - {"self", "kwargs"}

#: the served-model options (config name ``openai:MODEL``): the chat-completions server and client limits
SERVED = {"api_base": None, "max_concurrency": None, "timeout": None, "max_retries": None}

#: the embedding scorers' compute-time forms and their defaults (``Spec.forms``)
EMBEDDING_FORMS = {"form": "paper", "w": HESSEL_W}
#: the Args lines of the embedding scorers' compute-time forms (:data:`EMBEDDING_FORMS`)
EMBEDDING_FORMS_DOC = """\
form (`str`, defaults to "paper"): "paper" max(cos, 0); "cosine"; "hessel" w*max(cos, 0); "x100" 100*max(cos, 0).
w (`float`, defaults to 2.5): Hessel's weight (form "hessel").
"""

#: the Examples' inputs: a picture of a cat (``Spec.example_inputs``' default), or a TS2 image and its prompt
CAT_INPUTS = 'images=["cat.jpg"], prompts=["a photo of a cat"]'
TS2_INPUTS = 'images=["images/000-00.jpg"], prompts=["A Christmas tree with lights and teddy bear"]'

_INPUTS = """
Args:
    images (`list` of PIL images or paths): the images.
    prompts (`list` of `str`): {prompts}
{args}    batch_size (`int`, defaults to {batch_size}): {batch}
Returns:
    scores (`list` of `float`): {scores}
    mean (`float`): {mean}
{returns}Examples:
{example}"""


def options(*, precision: str | None = "fp32", served: bool = False, **own: Any) -> dict:
    """A module's load-time options: its ``own`` ones with their defaults, ``device`` (default ``None``: the
    scorer's choice) and ``precision``, and with ``served=True`` the served-model options of :data:`SERVED`."""
    return {**own, "device": None, "precision": precision, **(SERVED if served else {})}


def registered(name: str) -> Callable[..., Any]:
    """A ``Spec.build`` that goes through the scorer registry, as ``ts2 score NAME`` does: a served model
    (``openai:MODEL``) becomes the backend of the question scorers."""
    def build(**kwargs):
        from scorers.scoring.registry import build_scorer

        return build_scorer(name, **kwargs)

    build.__name__ = f"registered({name!r})"
    return build


@dataclass(frozen=True)
class Spec:
    """One scorer module's declaration.

    ``build(model=..., **options)`` makes the scorer; load-time options left unset (``None``) are not passed, so the
    scorer (or the served client) keeps its own defaults. ``description`` and ``citation`` are the card text; the
    inputs description is assembled from ``prompts`` / ``args`` / ``batch`` / ``scores`` / ``mean`` / ``returns``
    (further Returns lines) and the Examples section from ``example`` (load), ``example_inputs`` (compute) and
    ``example_keys`` (what comes back)."""

    build: Callable[..., Any]
    default_model: str
    options: Mapping[str, Any]
    description: str
    citation: str
    #: the Examples section's ``evaluate.load`` statement (``name = evaluate.load(...)``; a newline continues it)
    example: str
    urls: tuple[str, ...]
    scores: str = "one score per image, in input order."
    mean: str = "their mean."
    returns: str = ""
    prompts: str = "one non-empty prompt per image."
    args: str = ""
    batch: str = "images per scorer call."
    #: images per batch when ``compute`` gets no ``batch_size``
    batch_size: int = 8
    #: compute-time score-form options and their defaults, passed to the scorer's ``set_form`` (embedding scorers:
    #: ``{"form": "paper", "w": 2.5}``); empty: the scorer has no forms
    forms: Mapping[str, Any] = field(default_factory=dict)
    #: also return the scorer's per-image ``records`` (e.g. per-question answers)
    with_records: bool = False
    #: the Examples section: what ``compute`` gets, and the keys it returns
    example_inputs: str = CAT_INPUTS
    example_keys: tuple[str, ...] = ("mean", "scores")

    @property
    def inputs_description(self) -> str:
        """The module's ``_KWARGS_DESCRIPTION``: Args, Returns and Examples."""
        lines = lambda text: textwrap.indent(text, "    ")  # noqa: E731
        load = ">>> " + self.example.replace("\n", "\n... ")
        name = self.example.split("=", 1)[0].strip()
        example = (f"{load}\n>>> out = {name}.compute({self.example_inputs})\n>>> sorted(out)\n"
                   f"{sorted(self.example_keys)!r}\n")
        return _INPUTS.format(prompts=self.prompts, args=lines(self.args), batch_size=self.batch_size,
                              batch=self.batch, scores=self.scores, mean=self.mean, returns=lines(self.returns),
                              example=lines(example))


class ScorerMetric(evaluate.Metric):
    """Base of the scorer modules. A subclass sets :attr:`spec`; its docstring gets the card's description and
    inputs description in front, as ``evaluate.utils.file_utils.add_start_docstrings`` would put them.

    ``evaluate.load(path, config_name=MODEL, **options)``: the config name is the model (``"default"`` means
    ``spec.default_model``); ``options`` are the scorer's load-time options, checked against ``spec.options``.
    """

    spec: Spec

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "spec" in cls.__dict__:  # a module's metric (not an intermediate base)
            cls.__doc__ = cls.spec.description + cls.spec.inputs_description + (cls.__doc__ or "")

    def __init__(self, *args, **kwargs):
        given = {name: kwargs.pop(name) for name in list(kwargs) if name in self.spec.options}
        unknown = sorted(set(kwargs) - _METRIC_PARAMETERS)
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown option(s) {unknown}; scorer options are "
                             f"{sorted(self.spec.options)}")
        super().__init__(*args, **kwargs)
        self._options = {**self.spec.options, **given}
        self._scorer = None

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.spec.description,
            citation=self.spec.citation,
            inputs_description=self.spec.inputs_description,
            features=datasets.Features({"images": datasets.Image(), "prompts": datasets.Value("string")}),
            reference_urls=list(self.spec.urls),
        )

    @property
    def scorer(self):
        """The scorer, built on first use and kept (models load once per metric object)."""
        if self._scorer is None:
            from scorers.errors import missing_extra_error

            model = self.spec.default_model if self.config_name == "default" else self.config_name
            try:
                self._scorer = self.spec.build(model=model, **{k: v for k, v in self._options.items()
                                                               if v is not None})
            except ModuleNotFoundError as missing:  # no models extra: one line naming it, not a traceback
                raise (missing_extra_error(missing) or missing) from None
        return self._scorer

    def _compute(self, images, prompts, batch_size: int | None = None, **compute_options) -> dict:
        """What every scorer module's ``compute`` does: set the score form (if any), score, return scores + mean."""
        forms = self.spec.forms
        unknown = sorted(set(compute_options) - set(forms))
        if unknown:
            allowed = ["batch_size", *forms]
            raise ValueError(f"{type(self).__name__}.compute: unknown option(s) {unknown}; options are {allowed}")
        if forms:
            self.scorer.set_form(**{**forms, **compute_options})
        batch_size = self.spec.batch_size if batch_size is None else batch_size
        if self.spec.with_records:
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
