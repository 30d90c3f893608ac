"""Rating sets: per-image human ratings next to metric scores, read into one frame for :mod:`scorers.agreement`.

Canonical columns: ``item`` (the prompt id: images of one prompt form a group), ``system`` (the T2I model),
``prompt``, one column per human rater (``human_1``, ``human_2``...) and one column per metric. Sources:

* a generic CSV or Parquet file with those (or any) columns -- name them with ``--human/--metric/--item-col``;
* TIFA160 (Hu et al., 2023): the TIFA repository's ``human_annotations/human_annotations_with_scores.json``, a JSON
  object keyed by image (``"<text_id>_<model>"``) whose values hold ``text_id``, ``image_path``, ``text``,
  ``human_scores`` (two 1-5 Likert ratings), ``human_avg`` and reference metric scores (``clipscore_vitb32``,
  ``tifa_mplug-large``...). 800 images = 160 prompts x 5 models. :func:`fetch_tifa160` downloads it once from a URL
  pinned at a commit and checked against its sha256 through ``scorers.release.fetch`` (cache
  ``$HF_HOME/ts2-evaluate/<sha256>/``;
  ``--offline`` / ``HF_HUB_OFFLINE=1``: cache only);
* GenAI-Bench (Li et al., 2024), ``BaiqiL/GenAI-Bench`` on the Hub: a Parquet table with ``Index``, ``Prompt`` and a
  ``HumanRatings`` struct ``{model: [rating, ...]}`` (1-5 Likert, several raters) beside one image column per model.
  :func:`read_genai_bench` reads only those three columns (the images are never decoded) and returns one row per
  (prompt, model); join your metric's scores on ``item`` + ``system``. This is the layout of the dataset card at
  revision ``790172e`` (``dataset_info``); earlier revisions stored ``<model>_HumanRating`` columns instead, which
  this reader refuses with a message naming the columns it found.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .agreement import COEFFICIENTS, Agreement, GroupedBootstrap, agreement_many, inter_rater
from .meta import as_scores
from .release import PinnedFile, fetch
from .table_readers import read_csv

__all__ = [
    "TIFA160",
    "CorrelationTable",
    "correlate_frame",
    "fetch_tifa160",
    "read_genai_bench",
    "read_ratings",
    "read_tifa_annotations",
]


#: TIFA160 human ratings + reference metric scores, at the commit of the TIFA repository that holds them, with the
#: sha256 of that file (``release.fetch`` refuses any other content).
TIFA160 = PinnedFile(
    url="https://raw.githubusercontent.com/Yushi-Hu/tifa/d20b20066a593183f3436ce5cbff33982bb8d02f/"
        "human_annotations/human_annotations_with_scores.json",
    sha256="1720bb802c3c0821dd56df0d8c20a1214ff5085d7e5d9236a75736b1d39b7b3c",
    filename="human_annotations_with_scores.json",
    revision="d20b20066a593183f3436ce5cbff33982bb8d02f",
)
_TIFA_KEYS = ("text_id", "image_path", "text", "human_scores", "human_avg")


def fetch_tifa160(*, offline: bool | None = None, cache_dir: str | Path | None = None,
                  source: PinnedFile | None = None) -> Path:
    """The TIFA160 ratings file (see :data:`TIFA160`), downloaded once by ``scorers.release.fetch`` (the one download
    path: cache, digest check, ``offline`` = cache only, default ``HF_HUB_OFFLINE``)."""
    return fetch(source or TIFA160, offline=offline, cache_dir=cache_dir, progress=False)


def read_tifa_annotations(path: str | Path) -> pd.DataFrame:
    """TIFA's ``human_annotations_with_scores.json`` (or ``human_annotations.json``) as a canonical frame.

    One row per image: ``item`` (text_id), ``system`` (the image key without its ``<text_id>_`` prefix, e.g.
    ``stable_diffusion_v1_5``), ``image``, ``prompt``, ``human_1``... (one column per rating in ``human_scores``),
    ``human_avg`` and every other numeric field as a metric column.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(payload, dict) or not payload:
        raise ValueError(f"{path}: expected a JSON object keyed by image, as TIFA's human_annotations files are")
    rows = []
    n_raters = 0
    for key, entry in payload.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: entry {key!r} is not an object")
        missing = [k for k in ("text_id", "human_scores") if k not in entry]
        if missing:
            raise ValueError(f"{path}: entry {key!r} has no {', '.join(missing)}")
        text_id = str(entry["text_id"])
        scores = entry["human_scores"]
        if not isinstance(scores, list) or not scores:
            raise ValueError(f"{path}: entry {key!r}: human_scores must be a non-empty list, got {scores!r}")
        prefix = text_id + "_"
        system = key[len(prefix):] if key.startswith(prefix) else Path(str(entry.get("image_path", key))).stem
        row = {"item": text_id, "system": system, "image": entry.get("image_path", ""), "prompt": entry.get("text", "")}
        for k, rating in enumerate(scores, start=1):
            row[f"human_{k}"] = rating
        n_raters = max(n_raters, len(scores))
        if "human_avg" in entry:
            row["human_avg"] = entry["human_avg"]
        for name, value in entry.items():
            if name not in _TIFA_KEYS and not isinstance(value, (list, dict, str)):
                row[name] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    numeric = [c for c in frame.columns if c not in ("item", "system", "image", "prompt")]
    for column in numeric:
        frame[column] = as_scores(frame[column].tolist(), name=f"{path.name}: {column}")
    return frame


def read_genai_bench(path: str | Path) -> pd.DataFrame:
    """GenAI-Bench's Parquet (``Index``, ``Prompt``, ``HumanRatings`` struct of rating lists per model) as a canonical
    long frame: one row per (prompt, model) with ``item``, ``prompt``, ``system`` and ``human_1``... Image columns
    are not read."""
    import pyarrow.parquet as pq

    path = Path(path)
    schema = pq.read_schema(path)
    needed = ["Index", "Prompt", "HumanRatings"]
    missing = [c for c in needed if c not in schema.names]
    if missing:
        raise ValueError(f"{path}: not a GenAI-Bench table: missing column(s) {missing} (has {schema.names})")
    table = pq.read_table(path, columns=needed).to_pylist()
    rows = []
    for position, record in enumerate(table):
        ratings = record["HumanRatings"]
        if not isinstance(ratings, dict):
            raise ValueError(f"{path}: row {position}: HumanRatings must be a struct {{model: [ratings]}}")
        for model, values in ratings.items():
            if values is None:
                continue
            row = {"item": str(record["Index"]), "prompt": record["Prompt"], "system": model}
            for k, rating in enumerate(values, start=1):
                row[f"human_{k}"] = float(rating)
            rows.append(row)
    return pd.DataFrame(rows)


def read_ratings(source: str | Path, *, offline: bool | None = None) -> pd.DataFrame:
    """A rating set by name or path: ``tifa160`` (downloaded once), a TIFA-format ``.json``, a GenAI-Bench
    ``.parquet`` (has ``HumanRatings``), or any ``.csv`` / ``.parquet`` table."""
    if str(source).lower() == "tifa160":
        return read_tifa_annotations(fetch_tifa160(offline=offline))
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"ratings file {path} not found (or use the name 'tifa160')")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return read_tifa_annotations(path)
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        if "HumanRatings" in pq.read_schema(path).names:
            return read_genai_bench(path)
        return pd.read_parquet(path)
    if suffix in (".csv", ".tsv", ".txt"):
        return read_csv(path, sep="\t" if suffix == ".tsv" else ",", keep_default_na=True)
    raise ValueError(f"{path}: unknown ratings format {suffix!r}; expected .csv, .tsv, .parquet or TIFA .json")


@dataclass
class CorrelationTable:
    """What :func:`correlate_frame` computed: inter-rater rows (when several raters), then metric rows."""

    rows: list[Agreement]
    inter_rater: list[Agreement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"rows": [r.to_row() for r in self.inter_rater + self.rows]}


def _column(frame: pd.DataFrame, name: str, option: str) -> pd.Series:
    if name not in frame.columns:
        raise ValueError(f"{option} {name!r}: no such column; available: {', '.join(map(str, frame.columns))}")
    return frame[name]


def correlate_frame(
    frame: pd.DataFrame,
    *,
    human: Sequence[str],
    metrics: Sequence[str],
    coefficients: Sequence[str] = COEFFICIENTS,
    grouping: str = "none",
    item_col: str = "item",
    system_col: str = "system",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    seed: int = 0,
    lower_is_better: Sequence[str] = (),
    higher_is_better: Mapping[str, bool] | Sequence[str] | None = None,
) -> CorrelationTable:
    """Agreement of every ``metrics`` column with the human rating (the mean of the ``human`` columns per row, NaN
    raters skipped), plus inter-rater agreement when several ``human`` columns are given.

    Orientation: :func:`scorers.orientation.resolve_orientation` (``lower_is_better`` / ``higher_is_better`` and the
    release's known error-count columns); a lower-is-better column's coefficients are those of its negated scores. Group columns are only
    required by the grouping that uses them (``system`` also uses ``item_col`` as bootstrap clusters when present).
    """
    human = list(human)
    metrics = list(metrics)
    if not human:
        raise ValueError("human: name at least one human rating column")
    if not metrics:
        raise ValueError("metrics: name at least one metric column")
    raters = {c: as_scores(_column(frame, c, "human column").tolist(), name=f"human column {c!r}") for c in human}
    unknown = [c for c in lower_is_better if c not in metrics]
    if unknown:
        raise ValueError(f"lower_is_better {unknown[0]!r} is not one of the metrics columns {metrics}")
    from .orientation import resolve_orientation

    orientation = resolve_orientation(metrics, lower_is_better=lower_is_better, higher_is_better=higher_is_better)
    values = {}
    for c in metrics:  # a coefficient's orientation is its sign: the resolver's lower-is-better columns are negated
        v = as_scores(_column(frame, c, "metrics column").tolist(), name=f"metrics column {c!r}")
        values[c] = v if orientation[c] else -v
    items = systems = None
    if grouping == "item" or (grouping == "system" and item_col in frame.columns):
        items = _column(frame, item_col, "item_col").tolist()
    if grouping == "system":
        systems = _column(frame, system_col, "system_col").tolist()
    stacked = np.vstack(list(raters.values()))
    with np.errstate(invalid="ignore"), _quiet():
        mean_rating = np.nanmean(stacked, axis=0)
    design = GroupedBootstrap(grouping, items, systems, n_bootstrap, confidence, seed)
    rows = agreement_many(mean_rating, values, coefficients=coefficients, design=design)
    table = CorrelationTable(rows=rows)
    if len(human) > 1:
        table.inter_rater = [inter_rater(raters, coefficient=c, design=design) for c in coefficients]
        table.notes.append(f"human = mean of {len(human)} raters ({', '.join(human)}); inter-rater rows are the "
                           "mean coefficient over rater pairs")
    dropped = {r.metric: r.n_nan_dropped for r in rows if r.n_nan_dropped}
    if dropped:
        table.notes.append("rows dropped for a NaN: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))
    return table


class _quiet:
    """Silence numpy's 'Mean of empty slice' for rows where every rater is NaN (they stay NaN and are dropped)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)
