"""Score-your-image tab logic: scorers built lazily (once, with a status line) and called on one image + prompt.

A scorer is anything with ``score(images, prompts) -> np.ndarray`` (the project's scorer protocol); QG/A scorers may
also return per-question records. Scorers themselves come from the ``scorers`` library; this module only decides
which ones the demo offers, builds each at most once, and reports progress and failures as text.
"""
from __future__ import annotations

import logging
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from scorers.errors import wording_of
from scorers.models.images import to_rgb
from scorers.demo.config import AppConfig

__all__ = ["ImageScore", "LazyScorer", "ScorerSpec", "demo_wording", "score_image", "scorer_specs"]

log = logging.getLogger(__name__)

MAX_PROMPT_CHARS = 1000
#: largest upload decoded, in pixels (25 MP, e.g. 5000 x 5000; generated images are <= 4 MP): far below PIL's
#: decompression-bomb limit (~89 MP warns, ~179 MP refuses), as a 97 KB PNG can hold 100 MP (~3 GB decoded)
MAX_IMAGE_PIXELS = 25_000_000


@dataclass(frozen=True)
class ScorerSpec:
    """One entry of the scorer dropdown: how to build it, and why it is unavailable (None: available)."""

    name: str
    build: Callable[[], Any]
    model: str
    unavailable: str | None = None
    option: str = "--model"  # the demo's flag that sets this model: its errors name it for the parameter ``model``


def demo_wording(error: BaseException, spec: ScorerSpec) -> str:
    """``error``'s message as the demo says it: the library names its parameters (a
    :class:`~scorers.errors.ParameterError`), the demo names its own control for each it has, the model as the
    ``ts2 demo`` flag that set it (``spec.option``, e.g. ``--clip-model``); other parameters keep their Python names."""
    wording = wording_of(error)
    return str(error) if wording is None else wording.worded({"model": spec.option})


class LazyScorer:
    """Builds a scorer on first use, exactly once (thread-safe); remembers the outcome for the status line."""

    def __init__(self, spec: ScorerSpec):
        self.spec = spec
        self._lock = threading.Lock()
        self._scorer = None
        self._error: str | None = None
        self.load_seconds: float | None = None

    @property
    def loaded(self) -> bool:
        return self._scorer is not None

    def status(self) -> str:
        if self.spec.unavailable:
            return f"**Unavailable:** {self.spec.name} is not available here: {self.spec.unavailable}"
        if self._error:
            return f"**Error:** {self.spec.name} failed to load from `{self.spec.model}`: {self._error}"
        if self._scorer is None:
            return f"{self.spec.name}: model `{self.spec.model}` not loaded yet (loads on first use, once)"
        return f"**Ready:** {self.spec.name} model `{self.spec.model}` loaded in {self.load_seconds:.1f} s"

    def get(self):
        """The scorer, building it on the first call; raises ``RuntimeError`` with the status text on failure."""
        if self.spec.unavailable:
            raise RuntimeError(self.status())
        with self._lock:
            if self._scorer is None and self._error is None:
                start = time.perf_counter()
                try:
                    self._scorer = self.spec.build()
                except Exception as error:  # any loading failure becomes a status message, not a crash
                    log.exception("loading %s failed", self.spec.name)
                    self._error = f"{type(error).__name__}: {demo_wording(error, self.spec)}"
                self.load_seconds = time.perf_counter() - start
        if self._scorer is None:
            raise RuntimeError(self.status())
        return self._scorer


def _registered(name: str) -> str | None:
    """None when the installed ``scorers`` registers scorer ``name``, else why not."""
    try:
        from scorers.scoring.registry import SCORERS
    except ImportError as error:
        return f"the installed scorers library has no scorer registry ({error})"
    return None if name in SCORERS else f"the installed scorers library has no {name!r} scorer"


def _builder(name: str, **options) -> Callable[[], Any]:
    def build():
        from scorers.scoring.registry import build_scorer

        return build_scorer(name, **options)

    return build


def _registry_name(prefix: str) -> str:
    """The registry's name for a QG/A family (``tifa``, ``tifa_score``...): the first registered name with the prefix."""
    try:
        from scorers.scoring.registry import SCORERS
    except ImportError:
        return prefix
    return next((name for name in sorted(SCORERS) if name.startswith(prefix)), prefix)


def _question_table(config: AppConfig, kind: str):
    """The data_dir's TS2 question table of ``kind`` (``tifa``/``dsg``), or None."""
    table = config.data_dir / f"{kind}_questions.csv" if config.data_dir else None
    return table if table is not None and table.is_file() else None


def _qga_unavailable(name: str, kind: str, config: AppConfig) -> str | None:
    if not config.vlm:
        return "no VQA model configured (start with `ts2 demo --vlm MODEL` or set TS2_VLM)"
    if not config.qg_model and _question_table(config, kind) is None:
        return ("no questions: start with `--qg-model MODEL` to generate questions for any prompt, or with a "
                f"`--data-dir` holding {kind}_questions.csv (TS2 prompts only)")
    return _registered(name)


def _qga_builder(name: str, kind: str, config: AppConfig) -> Callable[[], Any]:
    """TIFA/DSG with questions from the data_dir's table and, with ``qg_model``, generated for any other prompt."""
    def build():
        from scorers.scoring.registry import build_scorer

        table = _question_table(config, kind)
        if not config.qg_model:
            return build_scorer(name, model=config.vlm, questions=str(table))
        from scorers.models.text_lm import TextLM
        from scorers.metrics.qga.generation import OnDemandQuestions, QuestionGenerator
        from scorers.metrics.qga.questions import read_question_set

        known = read_question_set(table, kind) if table is not None else None
        questions = OnDemandQuestions(QuestionGenerator(TextLM(config.qg_model)), kind=kind, known=known)
        return build_scorer(name, model=config.vlm, questions=questions)

    return build


def scorer_specs(config: AppConfig) -> dict[str, ScorerSpec]:
    """The dropdown's scorers, CLIPScore first (the default)."""
    specs = {"CLIPScore": ScorerSpec("CLIPScore", _builder("clip_score", model=config.clip_model),
                                     config.clip_model, _registered("clip_score"), option="--clip-model")}
    for label, prefix in (("TIFA", "tifa"), ("DSG", "dsg")):
        name = _registry_name(prefix)
        model = f"{config.vlm} + questions from {config.qg_model or 'the data_dir tables'}" if config.vlm else "-"
        specs[label] = ScorerSpec(label, _qga_builder(name, prefix, config), model,
                                  _qga_unavailable(name, prefix, config),
                                  option="--model" if config.qg_model else "--vlm")  # two models: keep the name
    return specs


@dataclass(frozen=True)
class ImageScore:
    """One image's score; ``cosine`` is the raw cosine of embedding scorers (whose score form may clamp it)."""

    score: float
    answers: pd.DataFrame | None = None
    cosine: float | None = None
    form: str | None = None

    def detail(self) -> str:
        """The line under the score: the raw cosine, and why the score is 0 when ``max(cos, 0)`` clamped it."""
        if self.cosine is None:
            return ""
        line = f"raw cosine: {self.cosine:.4f} (score form `{self.form}`)"
        if self.cosine < 0 and self.score == 0:
            line += " - the score is max(cos, 0), so a negative cosine shows as 0.0000: no match, not a failure"
        return line


def score_image(scorer: Any, image, prompt: str) -> ImageScore:
    """Score one image (with per-question answers, or the raw cosine of an embedding scorer); raises ValueError for
    bad input."""
    if image is None:
        raise ValueError("upload an image first")
    prompt = (prompt or "").strip()
    if not prompt:
        raise ValueError("enter the prompt the image was generated from")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ValueError(f"the prompt has {len(prompt)} characters; at most {MAX_PROMPT_CHARS}")
    image = open_upload(image)
    records = None
    if hasattr(scorer, "cosine") and hasattr(scorer, "form"):  # embedding scorer: one forward gives both numbers
        from scorers.metrics.embedding import HESSEL_W, apply_form

        cosine = float(np.asarray(scorer.cosine([image], [prompt]), dtype=np.float64).reshape(-1)[0])
        score = float(apply_form(np.array([cosine]), scorer.form, w=getattr(scorer, "w", HESSEL_W))[0])
        return ImageScore(score, None, cosine, scorer.form)
    if hasattr(scorer, "score_with_records"):
        values, records = scorer.score_with_records([image], [prompt])
    else:
        values = scorer.score([image], [prompt])
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size != 1:
        raise ValueError(f"the scorer returned {values.size} values for one image")
    return ImageScore(float(values[0]), _answers_table(records[0] if records else None))


def open_upload(image) -> Any:
    """An uploaded image (a file path, as the demo's image input passes it, or a PIL image) as RGB, refusing with a
    ``ValueError`` a file PIL cannot read and an image above :data:`MAX_IMAGE_PIXELS` (checked from the header,
    before any pixel is decoded)."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(image, Image.Image):
        _check_pixels(image.size)
        return to_rgb(image)
    try:
        with warnings.catch_warnings():  # the pixel cap below is far stricter than PIL's bomb warning
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            handle = Image.open(image)
        with handle:
            _check_pixels(handle.size)
            handle.load()
            rgb = to_rgb(handle)
            return rgb.copy() if rgb is handle else rgb
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError) as error:
        raise ValueError(f"cannot read the upload as an image ({type(error).__name__}: {error}); upload a PNG, "
                         "JPEG or WebP file") from None


def _check_pixels(size) -> None:
    width, height = size
    if width * height > MAX_IMAGE_PIXELS:
        raise ValueError(f"the image is {width} x {height} px ({width * height / 1e6:.0f} megapixels); at most "
                         f"{MAX_IMAGE_PIXELS / 1e6:.0f} megapixels are scored: downscale it first")


def _answers_table(record: Any) -> pd.DataFrame | None:
    """The per-item record as a table: its list of per-question dicts if it has one, else its fields as one row."""
    if not record:
        return None
    if isinstance(record, (list, tuple)):
        return pd.DataFrame([dict(r) for r in record])
    for value in record.values():
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
            return pd.DataFrame([dict(r) for r in value])
    return pd.DataFrame([record])
