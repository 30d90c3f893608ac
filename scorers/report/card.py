"""The report card: one metric judged every way it can be from scores alone -- TS2 meta-metrics, agreement with each
human rating set, paired tests against a baseline metric, one verdict line per set -- written as Markdown,
self-contained HTML and JSON with provenance.

The card never scores images: it reads score files. TS2 numbers come from :func:`scorers.ts2.meta_from_tables.meta_from_tables`
(exactly what ``ts2 meta`` computes), rating-set numbers from :func:`scorers.stats.correlation.correlate_frame` (exactly what
``ts2 correlate`` computes), preference-set numbers from
:func:`scorers.stats.preference_accuracy.pairwise_preference_accuracy` (both tie conventions, bootstrap over prompts), paired
tests from :func:`scorers.stats.meta.compare` (TS2, over SEGs),
:func:`scorers.stats.agreement.compare_agreement` (rating sets) and
:func:`scorers.stats.preference_accuracy.compare_preference_accuracy` (preference sets, same pairs). A set that was asked
for but cannot be evaluated (no file, offline without a cache, no column for the metric) is kept in the card as
``"not evaluated"`` with its reason.

A weighted reward (:class:`RewardSpec`, ``ts2 card --reward pickscore=1,hpsv2=0.5``) is one more metric: its
per-image score is the weighted sum of its parts' scores after the normalisation :func:`scorers.rewards.api.load` applies
(:func:`weighted_reward`), and its card also compares it with each part.
"""
from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from scorers.json_safe import json_default
from scorers.sets.registry import PAIRS, RATINGS, SEGS, canonical_name, find_set, get_set, headline_of, set_names

__all__ = ["FIGURE_CAPTION", "PreferenceSet", "RatingSet",
           "RewardSpec", "build_cards", "card_figure", "card_html", "card_markdown", "figure_dots",
           "parse_reward_normalize", "read_pair_table", "read_set_scores", "weighted_reward",
           "write_card"]


def _is_pairs(name: str) -> bool:
    """``name`` is a preference set of the registry (its own file has a loader; the card asks for pairs)."""
    record = find_set(name)
    return record is not None and record.kind == PAIRS


@dataclass
class RatingSet:
    """A human rating set as the card reads it: ``name``, ``source`` (a path, or ``tifa160`` for the pinned
    download), the ``human`` rater columns (default: every ``human_<k>`` column) and ``columns``, metric name ->
    column of the file holding that metric's per-item scores."""

    name: str
    source: str
    human: Sequence[str] = ()
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass
class PreferenceSet:
    """A preference set as the card reads it: ``name`` (a loader's name such as ``hpdv2`` gives its own headline
    convention), ``source`` (a pair table ``item, prompt, image_a, image_b, preference`` as CSV / Parquet / JSON, or
    the set's own file read by its loader (:mod:`scorers.sets.registry`), or the loader's name for its pinned
    download), ``scores``: per-image score files (:func:`read_set_scores`) and ``columns``, metric name -> their
    column holding that metric (default: the metric's name)."""

    name: str
    source: str
    scores: Sequence[str] = ()
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RewardSpec:
    """A weighted reward judged as one metric: ``weights`` ``{part: weight}`` over metrics of the card, and
    ``normalize`` as :func:`scorers.rewards.api.load` takes it (``"none"``, ``"running"``, ``{part: (shift, scale)}``)."""

    weights: Mapping[str, float]
    normalize: object = "none"
    name: str = "reward"


def parse_reward_normalize(text: str, weights: Mapping[str, float]):
    """``"none"`` / ``"running"`` / ``"pickscore=20:2,hpsv2=0.25:0.01"`` (``NAME=SHIFT:SCALE``, giving
    ``(r - SHIFT) / SCALE``; parts left out are not normalised), checked by :func:`scorers.rewards.api.check_normalize`,
    as :func:`scorers.rewards.api.load` checks it."""
    from scorers.rewards.api import check_normalize

    text = text.strip()
    if text in ("none", "running"):
        return text
    pairs = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, pair = part.partition("=")
        shift, colon, scale = pair.partition(":")
        if not sep or not colon:
            raise ValueError(f"--reward-normalize {part}: expected none, running or NAME=SHIFT:SCALE[,...]")
        pairs[name.strip()] = (shift.strip(), scale.strip())
    if not pairs:
        raise ValueError("--reward-normalize: expected none, running or NAME=SHIFT:SCALE[,...]")
    try:
        return check_normalize(pairs, weights)
    except ValueError as error:
        raise ValueError(f"--reward-normalize {text}: {error}") from None


def weighted_reward(components: Mapping[str, Sequence[float]], weights: Mapping[str, float],
                    normalize="none") -> tuple[np.ndarray, dict]:
    """Per-image ``sum_k w_k * n_k(r_k)`` over score arrays of the same images, and the normalisation stats.

    ``n_k`` is :func:`scorers.rewards.api.load`'s ``normalize``: ``"none"`` (identity), ``{name: (shift, scale)}``
    (``(r - shift) / scale``, parts left out: identity), or ``"running"``: ``(r - mean) / std`` with the mean and
    population std (ddof 0) of every finite score of that part -- what the reward's running statistics hold after
    one pass over these images, each image's own included (``r - mean`` when std is 0). An image lacking any part's
    score (NaN) has no reward (NaN). Summed in the order of ``weights``, as the reward sums its terms.
    """
    total = None
    stats: dict = {}
    for name, weight in weights.items():
        r = np.asarray(components[name], dtype=np.float64)
        if normalize == "running":
            finite = r[np.isfinite(r)]
            mean = float(finite.mean()) if finite.size else 0.0
            std = float(finite.std()) if finite.size else 0.0
            stats[name] = {"count": int(finite.size), "mean": mean, "std": std}
            r = (r - mean) / std if std > 0 else r - mean
        elif isinstance(normalize, Mapping) and name in normalize:
            shift, scale = normalize[name]
            stats[name] = {"shift": float(shift), "scale": float(scale)}
            r = (r - float(shift)) / float(scale)
        term = float(weight) * r
        total = term if total is None else total + term
    return total, stats


def _read_table(path: str | Path):
    """A CSV / TSV / Parquet / JSON (list of records) / JSONL table as a pandas frame (text cells kept as text)."""
    import pandas as pd

    from scorers.tables.readers import read_csv

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pd.read_parquet(path)
    if suffix in (".json", ".jsonl"):
        try:
            return pd.read_json(path, lines=suffix == ".jsonl", orient="records", dtype=False)
        except ValueError as error:
            raise ValueError(f"{path}: not a JSON list of records ({str(error).splitlines()[0]})") from None
    return read_csv(path, dtype=str, keep_default_na=False, sep="\t" if suffix == ".tsv" else ",")


def read_pair_table(name: str, source: str, *, offline: bool | None = None):
    """``(pairs, provenance)`` of a preference set: ``source`` = the loader's name (its pinned download, ``offline``:
    cache only), the set's own file for its loader (``name`` a preference set of :mod:`scorers.sets.registry`), or a pair table with
    the columns ``item, prompt, image_a, image_b, preference`` (a/b/tie). Errors are one line naming the file."""
    from scorers.sets import PAIR_COLUMNS, SetFormatError, check_pairs

    canonical = canonical_name(name)
    loader = find_set(name).load if _is_pairs(name) else None  # rating loaders give no pairs
    if loader is not None and source in (name, canonical):
        return loader(offline=offline)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"--preferences {name}={source}: no such file")
    try:
        if path.suffix.lower() == ".parquet":  # a set's own Parquet may embed images: read its schema first
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
            frame = pq.read_table(path, columns=list(PAIR_COLUMNS)).to_pandas() \
                if all(c in names for c in PAIR_COLUMNS) else None
        else:
            frame = _read_table(path)
        is_pairs = frame is not None and all(c in frame.columns for c in PAIR_COLUMNS)
    except (ValueError, OSError, ImportError):
        frame, is_pairs = None, False
    if is_pairs:
        frame = frame.copy()
        for column in ("item", "image_a", "image_b"):
            frame[column] = frame[column].astype(str)
        frame["preference"] = frame["preference"].astype(str).str.strip().str.lower()
        from scorers.tables.release import sha256_file

        return check_pairs(frame, str(path)), {"source": str(path), "revision": None, "sha256": sha256_file(path),
                                               "sha256_pinned": False, "file": str(path),
                                               "note": "a pair table given by the user"}
    if loader is None:
        raise SetFormatError(f"{path}: not a pair table (columns {', '.join(PAIR_COLUMNS)}), and {name!r} is not a "
                             f"preference set with a loader ({', '.join(set_names(PAIRS))})")
    return loader(path)


#: the key column of a per-image score file of a preference set, first found
SET_SCORE_KEYS = ("image", "key", "image_path", "file_name")


def read_set_scores(paths: Sequence[str | Path]):
    """The per-image scores of a set's images from one or more files: a frame indexed by image name (as the pair
    table's ``image_a`` / ``image_b`` name them) with one float column per metric. Each file has a key column
    (:data:`SET_SCORE_KEYS`, first found) and score columns; files are joined on the key, a column in two files or a
    duplicated key is an error, and a non-numeric cell is an error naming the file, row and column."""
    import pandas as pd

    merged = None
    owner: dict[str, str] = {}
    for path in paths:
        frame = _read_table(path)
        key = next((k for k in SET_SCORE_KEYS if k in frame.columns), None)
        if key is None:
            raise ValueError(f"{path}: no image key column (one of {', '.join(SET_SCORE_KEYS)}) naming the images as "
                             f"the pair table's image_a / image_b do")
        keys = frame[key].astype(str)
        duplicated = keys[keys.duplicated()]
        if len(duplicated):
            raise ValueError(f"{path}: image {duplicated.iloc[0]!r} appears more than once in column {key!r}")
        columns = {}
        for column in frame.columns:
            if column == key or column in SET_SCORE_KEYS or column in ("prompt", "item", "error", "record"):
                continue
            cells = frame[column]
            text = cells.astype(str).str.strip()
            values = pd.to_numeric(cells.where(~text.isin(["", "nan", "NaN", "None"])), errors="coerce")
            bad = values.isna() & ~text.isin(["", "nan", "NaN", "None"]) & cells.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(f"{path}: row {row}, column {column!r}: {cells.iloc[row]!r} is not a number")
            if np.isinf(values.to_numpy(dtype=np.float64)).any():
                row = int(np.flatnonzero(np.isinf(values.to_numpy(dtype=np.float64)))[0])
                raise ValueError(f"{path}: row {row}, column {column!r}: infinite score")
            if column in owner:
                raise ValueError(f"column {column!r} is in both {owner[column]} and {path}")
            owner[column] = str(path)
            columns[column] = values.to_numpy(dtype=np.float64)
        part = pd.DataFrame(columns, index=pd.Index(keys.to_numpy(), name="image"))
        merged = part if merged is None else merged.join(part, how="outer")
    if merged is None:
        raise ValueError("no per-image score file was given for the set")
    return merged


def _sha(path) -> str | None:
    from scorers.tables.release import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None


def _score_column(table, name: str, source: str) -> str:
    from scorers.tables.readers import score_columns

    available = score_columns(table)
    if name in available:
        return name
    if len(available) == 1:
        return available[0]
    raise ValueError(f"--scores {name}={source}: the file has {len(available)} score columns and none is named "
                     f"{name!r}; available: {', '.join(available[:10])}")


def _ts2_result(source, column, metadata, *, clean_quotes, segs, n_bootstrap, confidence, seed, lower_is_better=()):
    from scorers.ts2.meta_from_tables import meta_from_tables
    from scorers.tables.readers import read_score_table

    table = read_score_table(source, [column])
    return meta_from_tables([(str(source), table)], metadata, columns=[column], seg_subset=segs,
                            n_bootstrap=n_bootstrap, confidence=confidence, seed=seed, clean_quotes=clean_quotes,
                            lower_is_better=[column] if lower_is_better else ())


def _finite(x):
    return None if x is None or not np.isfinite(x) else float(x)


def _rating_others(rating: RatingSet, frame, opts, exclude: Sequence[str]) -> dict:
    """The headline coefficient, with its CI, of every other metric column of a rating file (TIFA160's file holds
    the per-image scores of the metrics TIFA published): the grey rows of the card's figure."""
    import pandas as pd

    from scorers.stats.correlation import correlate_frame

    coefficient = headline_of(rating.name, RATINGS).statistic
    human = list(rating.human) or [c for c in frame.columns if str(c).startswith("human_") and c != "human_avg"]
    skip = {"item", "system", "image", "prompt", *exclude}
    columns = [c for c in frame.columns if c not in skip and not str(c).startswith("human")
               and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
    if not columns or not human:
        return {}
    table = correlate_frame(frame, human=human, metrics=columns, coefficients=(coefficient,), grouping="none",
                            n_bootstrap=opts["n_bootstrap"], confidence=opts["confidence"], seed=opts["seed"])
    return {r["metric"]: {"value": r["value"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
            for r in table.to_dict()["rows"] if r["metric"] in columns}


def _preference_others(pset: PreferenceSet, pairs, scores, opts, exclude: Sequence[str]) -> dict:
    """The headline accuracy, with its CI, of every other metric column of a preference set's score files."""
    from scorers.stats.preference_accuracy import pairwise_preference_accuracy

    ties = headline_of(pset.name, PAIRS).statistic
    out = {}
    for column in scores.columns:
        if column in exclude:
            continue
        a, b = _pair_scores(scores, column, pairs, False)
        if np.isnan(a).all() or np.isnan(b).all():
            continue
        acc = pairwise_preference_accuracy(a, b, pairs["preference"].to_numpy(), ties=ties,
                                           items=pairs["item"].to_numpy(), n_bootstrap=opts["n_bootstrap"],
                                           confidence=opts["confidence"], seed=opts["seed"]).to_dict()
        ci = acc["confidence_interval"] or (None, None)
        out[column] = {"value": acc["statistic"], "ci_low": ci[0], "ci_high": ci[1]}
    return out


def _verdict(comparison: dict | None) -> str:
    if comparison is None:
        return "no comparison"
    low, high = comparison.get("ci_low"), comparison.get("ci_high")
    if low is None or high is None:
        return "no interval"
    if low > 0:
        return "better"
    if high < 0:
        return "worse"
    return "no clear difference"


def _ts2_section(name, column, source, baseline, metadata, data_dir, opts, cache, *, clean_quotes=False,
                 lower_is_better=False, parts: Sequence[str] = ()) -> dict:
    from scorers.stats.meta import META_METRICS, compare

    evaluated = _ts2_result(source, column, metadata, clean_quotes=clean_quotes, lower_is_better=lower_is_better,
                            **opts)
    result = evaluated.results[column]
    cache.setdefault("ts2_results", {})[name] = result
    section = {"status": "evaluated", "headline": get_set("ts2").headline.convention,
               "column": column, "source": str(source), "meta": evaluated.to_dict()[column], "notes": evaluated.notes}
    published = cache.get("published")
    if published is not None:
        values = {c: r.rank.summary.get("avg") for c, r in published.results.items()}
        ours = result.rank.summary.get("avg")
        better = sorted((c for c, v in values.items() if v is not None and v > ours and c != name),
                        key=lambda c: -values[c])
        cis = {c: (r.rank.ci or {}).get("avg") for c, r in published.results.items()}
        section["published"] = {
            "rank_avg": {c: (None if v is None or np.isnan(v) else float(v)) for c, v in values.items()},
            "rank_avg_ci": {c: (None if ci is None else [_finite(ci[0]), _finite(ci[1])]) for c, ci in cis.items()},
            "place": len(better) + 1, "of": len([c for c in values if c != name]) + 1,
            "above": better,
        }
    else:
        section["published"] = None
        section["notes"] = section["notes"] + [cache.get("published_reason", "the published rows are not available")]
    if baseline is not None and baseline["name"] != name:
        base = baseline["ts2"]
        comparisons = [compare(result, base, meta_metric=m, n_resamples=opts["n_bootstrap"] or 1000,
                               confidence=opts["confidence"], seed=opts["seed"]).to_dict() for m in META_METRICS]
        as_dict = base.to_dict()
        section["baseline_meta"] = {"column": baseline["ts2_column"], "source": baseline["ts2_source"],
                                    "summary": {m: as_dict[m]["summary"] for m in META_METRICS},
                                    "ci": {m: as_dict[m].get("ci") for m in META_METRICS}}
        section["comparison"] = comparisons
        section["verdict"] = _verdict(comparisons[0])
    if parts:
        section["parts"] = {}
        for part in parts:
            other = cache["ts2_results"][part]
            as_dict = other.to_dict()
            comparisons = [compare(result, other, meta_metric=m, n_resamples=opts["n_bootstrap"] or 1000,
                                   confidence=opts["confidence"], seed=opts["seed"]).to_dict() for m in META_METRICS]
            section["parts"][part] = {"summary": {m: as_dict[m]["summary"] for m in META_METRICS},
                                      "ci": {m: as_dict[m].get("ci") for m in META_METRICS},
                                      "comparison": comparisons, "verdict": _verdict(comparisons[0])}
    return section


def _rating_frame(rating: RatingSet, offline):
    from scorers.sets.ratings import read_ratings

    return read_ratings(rating.source, offline=offline)


def _rating_wanted(rating: RatingSet, name: str) -> str:
    """The column of a rating file that should hold metric ``name``'s scores: ``--ratings-column``, else the set's
    own column for that release metric (its registry record), else the metric's name."""
    record = find_set(rating.name)
    return rating.columns.get(name) or (record.metric_columns.get(name) if record else None) or name


def _rating_column(rating: RatingSet, name: str, frame) -> str | None:
    column = _rating_wanted(rating, name)
    return column if column in frame.columns else None


def _rating_section(rating: RatingSet, name: str, baseline_name: str | None, frame, opts,
                    lower_is_better: Sequence[str] = (), parts: Sequence[str] = ()) -> dict:
    from scorers.stats.agreement import COEFFICIENTS, compare_agreement
    from scorers.stats.meta import as_scores
    from scorers.stats.orientation import resolve_orientation
    from scorers.stats.correlation import correlate_frame

    column = _rating_column(rating, name, frame)
    if column is None:
        wanted = _rating_wanted(rating, name)
        return {"status": "not evaluated",
                "reason": f"{rating.source} has no column {wanted!r} with {name}'s scores (name it with "
                          f"--ratings-column {name}=COL)"}
    human = list(rating.human) or [c for c in frame.columns if str(c).startswith("human_") and c != "human_avg"]
    if not human:
        return {"status": "not evaluated", "reason": f"{rating.source} has no human_<k> rating columns (--human)"}
    head = headline_of(rating.name, RATINGS)
    coefficient, grouping, convention = head.statistic, head.grouping, head.convention
    flipped = [column] if name in lower_is_better else []
    table = correlate_frame(frame, human=human, metrics=[column], coefficients=COEFFICIENTS, grouping="none",
                            n_bootstrap=opts["n_bootstrap"], confidence=opts["confidence"], seed=opts["seed"],
                            lower_is_better=flipped)
    rows = table.to_dict()["rows"]
    own = [r for r in rows if r["metric"] == column]
    head = next(r for r in own if r["coefficient"] == coefficient)
    n_total = len(frame)
    section = {"status": "evaluated", "source": str(rating.source), "column": column, "human": human,
               "headline": convention, "headline_coefficient": coefficient, "headline_value": head["value"],
               "rows": rows, "n_scored": head["n_items"], "n_skipped": n_total - head["n_items"],
               "notes": table.notes}
    def against(other_name, other_col):
        """(the other metric's headline row, the paired comparison of this metric against it)"""
        orient = resolve_orientation([column, other_col], lower_is_better=flipped + (
            [other_col] if other_name in lower_is_better else []))
        a = as_scores(frame[column].tolist(), name=column)
        b = as_scores(frame[other_col].tolist(), name=other_col)
        a, b = (a if orient[column] else -a), (b if orient[other_col] else -b)
        with np.errstate(invalid="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                h = np.nanmean(np.vstack([as_scores(frame[c].tolist(), name=c) for c in human]), axis=0)
        other = correlate_frame(frame, human=human, metrics=[other_col], coefficients=(coefficient,), grouping="none",
                                n_bootstrap=opts["n_bootstrap"], confidence=opts["confidence"], seed=opts["seed"],
                                lower_is_better=[other_col] if other_name in lower_is_better else [])
        row = next(r for r in other.to_dict()["rows"] if r["metric"] == other_col)
        comparison = compare_agreement(h, a, b, coefficient=coefficient, grouping=grouping,
                                       n_resamples=opts["n_bootstrap"] or 1000, confidence=opts["confidence"],
                                       seed=opts["seed"]).to_dict()
        return row, comparison

    base_col = _rating_column(rating, baseline_name, frame) if baseline_name and baseline_name != name else None
    if baseline_name and baseline_name != name and base_col is None:
        section["notes"] = section["notes"] + [f"no baseline column for {baseline_name}: no paired test"]
    if base_col is not None:
        section["baseline_row"], comparison = against(baseline_name, base_col)
        section["baseline_column"] = base_col
        section["comparison"] = [comparison]
        section["verdict"] = _verdict(comparison)
    if parts:
        section["parts"] = {}
        for part in parts:
            part_col = _rating_column(rating, part, frame)
            if part_col is None:
                section["notes"] = section["notes"] + [f"no column for the part {part}: no paired test against it"]
                continue
            row, comparison = against(part, part_col)
            section["parts"][part] = {"column": part_col, "row": row, "comparison": [comparison],
                                      "verdict": _verdict(comparison)}
    return section


def _pair_scores(scores, column: str, pairs, flip: bool) -> tuple[np.ndarray, np.ndarray]:
    """Score of image A and of image B per pair (NaN where the image has no score), negated when lower is better."""
    values = scores[column]
    a = values.reindex(pairs["image_a"].to_numpy()).to_numpy(dtype=np.float64)
    b = values.reindex(pairs["image_b"].to_numpy()).to_numpy(dtype=np.float64)
    return (-a, -b) if flip else (a, b)


def _preference_section(pset: PreferenceSet, name: str, baseline_name: str | None, pairs, scores, opts,
                        lower_is_better: Sequence[str] = (), parts: Sequence[str] = ()) -> dict:
    from scorers.stats.preference_accuracy import TIE_CONVENTIONS, compare_preference_accuracy, pairwise_preference_accuracy

    def column_of(metric):
        column = pset.columns.get(metric) or metric
        return column if column in scores.columns else None

    column = column_of(name)
    if column is None:
        return {"status": "not evaluated",
                "reason": f"the score files of {pset.name} ({', '.join(map(str, pset.scores))}) have no column "
                          f"{pset.columns.get(name) or name!r} with {name}'s scores (name it with "
                          f"--ratings-column {name}=COL)"}
    head = headline_of(pset.name, PAIRS)
    headline, convention = head.statistic, head.convention
    order = [headline] + [t for t in TIE_CONVENTIONS if t != headline]
    human = pairs["preference"].to_numpy()
    items = pairs["item"].to_numpy()
    sa, sb = _pair_scores(scores, column, pairs, name in lower_is_better)
    scored = ~(np.isnan(sa) | np.isnan(sb))
    if not scored.any():
        return {"status": "not evaluated",
                "reason": f"none of the {len(pairs)} pairs of {pset.name} has both images scored in column "
                          f"{column!r} (the score files' image keys must equal the pair table's image_a/image_b)"}
    boot = {"n_bootstrap": opts["n_bootstrap"], "confidence": opts["confidence"], "seed": opts["seed"]}

    def rows_of(a, b):
        out = []
        for ties in order:
            acc = pairwise_preference_accuracy(a, b, human, ties=ties, items=items, **boot).to_dict()
            ci = acc.pop("confidence_interval") or (None, None)
            out.append({**acc, "ci_low": ci[0], "ci_high": ci[1]})
        return out

    rows = rows_of(sa, sb)
    section = {"status": "evaluated", "source": str(pset.source), "column": column,
               "headline": convention, "headline_ties": headline, "headline_value": rows[0]["statistic"],
               "rows": rows, "n_pairs": int(len(pairs)), "n_scored": int(scored.sum()),
               "n_skipped": int((~scored).sum()), "n_prompts": int(len(set(items[scored].tolist()))),
               "score_files": [str(p) for p in pset.scores], "notes": []}

    def comparisons(other_column, other_flip):
        oa, ob = _pair_scores(scores, other_column, pairs, other_flip)
        return [{"ties": ties, **compare_preference_accuracy(
            (sa, sb), (oa, ob), human, ties=ties, items=items, n_bootstrap=opts["n_bootstrap"] or 1000,
            confidence=opts["confidence"], seed=opts["seed"]).to_dict()} for ties in order]

    base_col = column_of(baseline_name) if baseline_name and baseline_name != name else None
    if baseline_name and baseline_name != name and base_col is None:
        section["notes"].append(f"no column for the baseline {baseline_name} in the score files: no paired test")
    if base_col is not None:
        flip = baseline_name in lower_is_better
        section["baseline_column"] = base_col
        section["baseline_rows"] = rows_of(*_pair_scores(scores, base_col, pairs, flip))
        section["comparison"] = comparisons(base_col, flip)
        section["verdict"] = _verdict(section["comparison"][0])
    if parts:
        section["parts"] = {}
        for part in parts:
            part_col = column_of(part)
            if part_col is None:
                section["notes"].append(f"no column for the part {part}: no paired test against it")
                continue
            flip = part in lower_is_better
            section["parts"][part] = {"column": part_col, "rows": rows_of(*_pair_scores(scores, part_col, pairs, flip)),
                                      "comparison": comparisons(part_col, flip)}
            section["parts"][part]["verdict"] = _verdict(section["parts"][part]["comparison"][0])
    return section


def _write_reward_scores(reward: RewardSpec, scores, columns, meta_frame, segs, clean_quotes, target: Path) -> dict:
    """The weighted reward's per-image TS2 scores (metadata order, ``seg_id, file_name, <name>``) written to
    ``target``; each part is joined with the metadata as ``ts2 meta`` joins it. Returns the reward's provenance."""
    import pandas as pd

    from scorers.atomic import write_text_atomic
    from scorers.stats.graph import resolve_seg_subset
    from scorers.tables.join import join_scores
    from scorers.tables.readers import column_scores, read_score_table

    subset = resolve_seg_subset(segs, meta_frame["seg_id"])
    parts = {}
    for part in reward.weights:
        table = read_score_table(scores[part], [columns[part]])
        try:
            joined = join_scores(table, meta_frame, required_segs=subset)
        except ValueError as error:
            raise ValueError(f"{scores[part]}: {error}") from None
        parts[part] = column_scores(joined.frame, columns[part], clean_quotes=clean_quotes)
    total, stats = weighted_reward(parts, reward.weights, reward.normalize)
    frame = pd.DataFrame({"seg_id": meta_frame["seg_id"].to_numpy(), "file_name": meta_frame["file_name"].to_numpy(),
                          reward.name: total})
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, frame.to_csv(index=False))
    return {"name": reward.name, "weights": dict(reward.weights),
            "normalize": reward.normalize if isinstance(reward.normalize, str) else
            {k: list(v) for k, v in reward.normalize.items()},
            "stats": {"ts2": stats}, "ts2_scores": str(target),
            "definition": "sum_k w_k * n_k(score_k) per image, n_k as scorers.rewards.api.load(normalize=...); "
                          "'running' = z-score with the mean and population std of the part's scores on each set"}


def _add_reward_column(reward: RewardSpec, frame, column_of, where: str, info: dict) -> None:
    """Add the reward's per-row score to a set's frame from its parts' columns (when all are there), with the
    normalisation statistics of that set's rows; ``info['stats'][where]`` records them."""
    if reward.name in frame.columns:
        raise ValueError(f"{where}: already has a column named {reward.name!r}, the reward's name")
    found = {part: column_of(part) for part in reward.weights}
    found = {part: c for part, c in found.items() if c is not None and c in frame.columns}
    if len(found) < len(reward.weights):
        info["stats"][where] = {"missing parts": [p for p in reward.weights if p not in found]}
        return
    from scorers.stats.meta import as_scores

    values = {part: as_scores(frame[c].tolist(), name=f"{where} column {c!r}") for part, c in found.items()}
    frame[reward.name], info["stats"][where] = weighted_reward(values, reward.weights, reward.normalize)


def build_cards(
    scores: Mapping[str, str | Path],
    *,
    metadata,
    baseline: str | None = "clipscore",
    ratings: Sequence[RatingSet] = (),
    sets: Sequence[str] | None = None,
    data_dir: str | None = None,
    segs="default",
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    offline: bool | None = None,
    command: str = "",
    clean_quotes: bool = False,
    lower_is_better: Sequence[str] = (),
    preferences: Sequence[PreferenceSet] = (),
    reward: RewardSpec | None = None,
    reward_dir: str | Path | None = None,
) -> dict[str, dict]:
    """``{metric: card}`` for every metric of ``scores`` (name -> per-image TS2 scores file).

    ``baseline``: a name among ``scores`` or a column of the release's ``released_scores.csv`` (default the release's
    ``clipscore``; None: no paired tests). ``ratings``: the human rating sets. ``sets``: names asked for; one that is
    neither ``ts2`` nor given in ``ratings`` is listed as not evaluated with the reason. ``clean_quotes`` strips stray
    quote characters from the ``scores`` files' cells (as ``ts2 meta --clean-quotes``); ``lower_is_better`` names the
    metrics (of ``scores`` or the baseline) whose lower scores are better; others follow
    :func:`scorers.stats.orientation.resolve_orientation`. ``preferences``: the preference sets (pair tables + per-image
    score files). ``reward``: a weighted reward over metrics of ``scores`` (each part must be one), judged as one
    more metric named ``reward.name``; its per-image TS2 scores are written to ``reward_dir`` as
    ``<name>_ts2_scores.csv`` (``seg_id, file_name, <name>``; default: the current folder), and on each human set its
    scores come from the parts' columns there (normalisation statistics over that set's images).
    """
    from scorers import __version__
    from scorers.tables.readers import read_metadata, read_score_table

    opts = {"segs": segs, "n_bootstrap": n_bootstrap, "confidence": confidence, "seed": seed}
    meta_frame = read_metadata(metadata)
    scores = dict(scores)
    from dataclasses import replace

    preferences = [replace(p, name=canonical_name(p.name)) for p in preferences]
    columns = {name: _score_column(read_score_table(src), name, str(src)) for name, src in scores.items()}
    parts_of: dict[str, list[str]] = {}
    reward_info = None
    if reward is not None:
        missing = [p for p in reward.weights if p not in scores]
        if missing:
            raise ValueError(f"--reward: {missing[0]} has no --scores file (every part needs --scores "
                             f"{missing[0]}=FILE)")
        if reward.name in scores:
            raise ValueError(f"--reward: the reward's name {reward.name!r} is also a --scores name")
        target = Path(reward_dir or ".") / f"{reward.name}_ts2_scores.csv"
        reward_info = _write_reward_scores(reward, scores, columns, meta_frame, segs, clean_quotes, target)
        scores[reward.name], columns[reward.name] = target, reward.name
        parts_of[reward.name] = list(reward.weights)
    cache: dict = {}
    try:
        from scorers.ts2.reproduce import released_reproduction

        cache["published"] = released_reproduction(data_dir, seg_subset=segs, progress=False,
                                                   n_bootstrap=n_bootstrap)
    except (FileNotFoundError, ValueError) as error:  # ReleaseFileUnavailable is a FileNotFoundError
        cache["published_reason"] = f"the published rows are not available: {str(error).splitlines()[0]}"
    base = None
    inputs = {f"scores:{n}": str(s) for n, s in scores.items()}
    inputs["metadata"] = str(metadata)
    baseline_note = None
    if baseline:
        if baseline in scores:
            src, col, quotes = scores[baseline], columns[baseline], clean_quotes
        else:
            from scorers.tables.release import path

            try:
                src = path("released_scores.csv", data_dir, progress=False)
            except FileNotFoundError as error:
                src = None
                baseline_note = f"baseline {baseline}: the release's scores are not available ({error})"
            col, quotes = baseline, True
            if src is not None:
                from scorers.tables.readers import score_columns

                if baseline not in score_columns(read_score_table(src)):
                    raise ValueError(f"--baseline {baseline}: not one of the --scores names nor a column of the "
                                     f"release's released_scores.csv")
                inputs["baseline"] = str(src)
        if src is not None:
            evaluated = _ts2_result(src, col, meta_frame, clean_quotes=quotes,
                                    lower_is_better=baseline in lower_is_better, **opts)
            base = {"name": baseline, "ts2": evaluated.results[col], "ts2_column": col, "ts2_source": str(src)}
    frames, unavailable = {}, {}
    for rating in ratings:
        try:
            frames[rating.name] = _rating_frame(rating, offline)
            src = rating.source
            if str(src).lower() == "tifa160":
                from scorers.sets.ratings import fetch_tifa160

                src = fetch_tifa160(offline=offline)
            inputs[f"ratings:{rating.name}"] = str(src)
        except (FileNotFoundError, ValueError) as error:
            unavailable[rating.name] = f"{rating.source}: " + " ".join(
                line.strip() for line in str(error).splitlines() if line.strip())
    pair_tables, set_scores = {}, {}
    for pset in preferences:
        try:
            pair_tables[pset.name], prov = read_pair_table(pset.name, pset.source, offline=offline)
            set_scores[pset.name] = read_set_scores(pset.scores)
            if reward is not None:
                _add_reward_column(reward, set_scores[pset.name], lambda part, p=pset: p.columns.get(part) or part,
                                   f"preferences:{pset.name}", reward_info)
            inputs[f"preferences:{pset.name}"] = prov.get("file") or str(pset.source)
            for k, score_file in enumerate(pset.scores):
                inputs[f"preference_scores:{pset.name}:{k}"] = str(score_file)
            pair_tables[pset.name].attrs["provenance"] = {**{k: v for k, v in prov.items() if k != "file"},
                                                          "n_pairs": int(len(pair_tables[pset.name]))}
        except (FileNotFoundError, ValueError, OSError) as error:
            pair_tables.pop(pset.name, None)
            unavailable[pset.name] = f"{pset.source}: " + " ".join(
                line.strip() for line in str(error).splitlines() if line.strip())
    if reward is not None:
        for rating in ratings:
            if rating.name in frames:
                frame = frames[rating.name]
                _add_reward_column(reward, frame, lambda part, r=rating, f=frame: _rating_column(r, part, f),
                                   f"ratings:{rating.name}", reward_info)
    asked = list(dict.fromkeys(["ts2"] + [r.name for r in ratings] + [p.name for p in preferences]
                               + [canonical_name(x) for x in (sets or ())]))
    provenance = {
        "command": command, "ts2_evaluate_version": __version__, "segs": None,
        "n_bootstrap": n_bootstrap, "confidence": confidence, "seed": seed,
        "inputs": {role: {"path": str(Path(p).resolve()), "sha256": _sha(p)} for role, p in inputs.items()},
        "preference_sets": {n: t.attrs.get("provenance") for n, t in pair_tables.items()},
    }
    if reward_info is not None:
        provenance["reward"] = reward_info
    if any(r.name == "tifa160" for r in ratings):
        from scorers.sets.ratings import TIFA160

        provenance["tifa160_revision"] = TIFA160.revision  # the pinned file's; matches_pinned says if it was read
        given = provenance["inputs"].get("ratings:tifa160")
        if given:
            given["matches_pinned"] = given["sha256"] == TIFA160.sha256
    cards = {}
    for name, src in scores.items():
        card_sets = {}
        for set_name in asked:
            if set_name == "ts2":
                card_sets["ts2"] = _ts2_section(name, columns[name], src, base, meta_frame, data_dir, opts, cache,
                                                clean_quotes=clean_quotes and name not in parts_of,
                                                lower_is_better=name in lower_is_better,
                                                parts=parts_of.get(name, ()))
                provenance["segs"] = card_sets["ts2"]["meta"]["segs"]
            elif set_name in unavailable:
                card_sets[set_name] = {"status": "not evaluated", "reason": unavailable[set_name]}
            elif name in parts_of and "missing parts" in reward_info["stats"].get(
                    ("preferences:" if set_name in pair_tables else "ratings:") + set_name, {}):
                lacking = reward_info["stats"][("preferences:" if set_name in pair_tables else "ratings:")
                                               + set_name]["missing parts"]
                card_sets[set_name] = {"status": "not evaluated",
                                       "reason": f"the reward's part(s) {', '.join(lacking)} have no scores on "
                                                 f"{set_name} (a column per part, or --ratings-column PART=COL)"}
            elif set_name in frames:
                rating = next(r for r in ratings if r.name == set_name)
                try:
                    card_sets[set_name] = _rating_section(rating, name, baseline, frames[set_name], opts,
                                                          lower_is_better, parts=parts_of.get(name, ()))
                except ValueError as error:  # e.g. a pooled bootstrap too large, a constant column: say so, go on
                    card_sets[set_name] = {"status": "not evaluated", "reason": f"{rating.source}: {error}"}
            elif set_name in pair_tables:
                pset = next(p for p in preferences if p.name == set_name)
                try:
                    card_sets[set_name] = _preference_section(pset, name, baseline, pair_tables[set_name],
                                                              set_scores[set_name], opts, lower_is_better,
                                                              parts=parts_of.get(name, ()))
                    card_sets[set_name]["provenance"] = pair_tables[set_name].attrs.get("provenance")
                except ValueError as error:
                    card_sets[set_name] = {"status": "not evaluated", "reason": f"{pset.source}: {error}"}
            else:
                known_sets = set_names(SEGS, RATINGS, PAIRS)
                known = "" if set_name in known_sets else f" ({set_name!r} is not a set the card knows by name: " \
                                                          f"{', '.join(known_sets)})"
                how = (f"no pair table and per-image scores were given (--preferences {set_name}=FILE "
                       f"--preference-scores {set_name}=FILE)" if _is_pairs(set_name) else
                       f"no ratings file with {name}'s scores was given (--ratings {set_name}=FILE)")
                card_sets[set_name] = {"status": "not evaluated",
                                       "reason": f"{how}; the card reads scores and never scores images{known}"}
        for set_name, section in card_sets.items():
            if section["status"] != "evaluated" or set_name == "ts2":
                continue
            if set_name not in cache.setdefault("others", {}):
                own = [reward.name] if reward is not None else []
                try:
                    if set_name in pair_tables:
                        pset = next(p for p in preferences if p.name == set_name)
                        cache["others"][set_name] = _preference_others(pset, pair_tables[set_name],
                                                                       set_scores[set_name], opts, own)
                    else:
                        rating = next(r for r in ratings if r.name == set_name)
                        cache["others"][set_name] = _rating_others(rating, frames[set_name], opts, own)
                except ValueError:  # a constant or empty column: no grey row, the card's own numbers stand
                    cache["others"][set_name] = {}
            shown = {section.get("column"), section.get("baseline_column"),
                     *[p.get("column") for p in (section.get("parts") or {}).values()]}
            section["other_metrics"] = {c: v for c, v in cache["others"][set_name].items() if c not in shown}
        judged = [s for s in card_sets.values() if s.get("verdict") in ("better", "worse", "no clear difference")]
        better = sum(s["verdict"] == "better" for s in judged)
        worse = sum(s["verdict"] == "worse" for s in judged)
        level = f"{confidence:.0%}"
        if base is None and not baseline_note and baseline in (None, ""):
            summary = "no baseline: no paired tests"
        elif name == baseline:
            summary = f"{name} is the baseline"
        else:
            summary = (f"better than {baseline} on {better} of {len(judged)} sets, worse on {worse}, "
                       f"{level} paired intervals")
        notes = [baseline_note] if baseline_note else []
        extra = {}
        if name in parts_of:
            extra["reward"] = reward_info
            lines = []
            for part in parts_of[name]:
                judged_p = [s["parts"][part]["verdict"] for s in card_sets.values()
                            if part in (s.get("parts") or {}) and s["parts"][part]["verdict"] in
                            ("better", "worse", "no clear difference")]
                lines.append(f"better than {part} on {judged_p.count('better')} of {len(judged_p)} sets, worse on "
                             f"{judged_p.count('worse')}")
            extra["parts_verdict"] = "; ".join(lines) + f", {level} paired intervals"
        cards[name] = {"metric": name, "baseline": baseline, "verdict": summary, **extra, "sets": card_sets,
                       "not_evaluated": {k: v["reason"] for k, v in card_sets.items()
                                         if v["status"] == "not evaluated"},
                       "notes": notes, "provenance": provenance, "unit": "fraction"}
    return cards


# ----------------------------------------------------------------------------------------------------------------------
# Writing
# ----------------------------------------------------------------------------------------------------------------------


def _fmt(value, digits: int = 3) -> str:
    from scorers.formatting import format_number

    return format_number(value, digits)


def _interval(low, high) -> str:
    return "" if low is None or high is None else f"[{_fmt(low)}, {_fmt(high)}]"


def _set_lines(card: dict) -> list[tuple[str, list[list[str]], list[str]]]:
    """``(title, table rows, text lines)`` per set: the shared content of Markdown and HTML."""
    out = []
    base = card["baseline"]
    for set_name, section in card["sets"].items():
        if section["status"] != "evaluated":
            out.append((set_name, [], [f"not evaluated: {section['reason']}"]))
            continue
        text = [f"headline: {section['headline']}"]
        rows = []
        if set_name == "ts2":
            rows.append(["meta-metric", "partition", card["metric"], "CI", base or "", "CI"]
                        + [x for name in (section.get("parts") or {}) for x in (name, "CI")])
            meta = section["meta"]
            bm = section.get("baseline_meta")
            for m in ("rank", "sep", "delta"):
                for part, value in meta[m]["summary"].items():
                    ci = (meta[m].get("ci") or {}).get(part) or (None, None)
                    bv = bci = ""
                    if bm is not None:
                        bv = _fmt(bm["summary"][m].get(part))
                        bc = (bm["ci"].get(m) or {}).get(part) if bm["ci"].get(m) else None
                        bci = _interval(*bc) if bc else ""
                    row = [m, part, _fmt(value), _interval(*ci), bv, bci]
                    for name, p in (section.get("parts") or {}).items():
                        pc = (p["ci"].get(m) or {}).get(part) if p["ci"].get(m) else None
                        row += [_fmt(p["summary"][m].get(part)), _interval(*pc) if pc else ""]
                    rows.append(row)
            pub = section.get("published")
            if pub:
                text.append(f"place among the published rows (rank avg): {pub['place']} of {pub['of']}")
            text.append(f"SEGs {meta['segs']} ({meta['n_segs']})")
        elif "headline_ties" in section:  # a preference set
            rows.append(["metric", "ties", "accuracy", "CI", "epsilon", "pairs", "human ties", "prompts"])
            others = [(card["metric"], section["rows"])]
            if section.get("baseline_rows"):
                others.append((base, section["baseline_rows"]))
            others += [(part, p["rows"]) for part, p in (section.get("parts") or {}).items()]
            for who, acc_rows in others:
                for r in acc_rows:
                    ties = r["ties"] + ("" if r["ties"] == "calibrated" else f" (metric tie {r['metric_ties']})")
                    rows.append([who, ties + (" *" if r["ties"] == section["headline_ties"] else ""),
                                 _fmt(r["statistic"]), _interval(r["ci_low"], r["ci_high"]),
                                 "" if r["epsilon"] is None else _fmt(r["epsilon"], 4), str(r["n_pairs"]),
                                 str(r["n_human_ties"]), str(r["n_items"])])
            text.append(f"* = the headline convention; pairs scored {section['n_scored']} of {section['n_pairs']}, "
                        f"skipped {section['n_skipped']} (an image without a score); {section['n_prompts']} prompts; "
                        f"CIs: bootstrap over prompts; column {section['column']}")
        else:
            rows.append(["coefficient", "value", "CI", "items", "NaN dropped"])
            for r in section["rows"]:
                if r["metric"] == section["column"]:
                    rows.append([r["coefficient"], _fmt(r["value"]), _interval(r["ci_low"], r["ci_high"]),
                                 str(r["n_items"]), str(r["n_nan_dropped"])])
            text.append(f"items scored {section['n_scored']}, skipped {section['n_skipped']}; "
                        f"column {section['column']}, human = mean of {', '.join(section['human'])}")
        against = [(base, section.get("comparison", []), section.get("verdict"))]
        against += [(part, p["comparison"], p["verdict"]) for part, p in (section.get("parts") or {}).items()]
        for who, comparisons, verdict in against:
            for comparison in comparisons:
                what = comparison.get("meta_metric") or comparison.get("coefficient") or \
                    f"accuracy, ties {comparison.get('ties')}"
                text.append(f"paired vs {who} ({what}): difference {_fmt(comparison['statistic'])} "
                            f"{_interval(comparison['ci_low'], comparison['ci_high'])}, "
                            f"p = {_fmt(comparison['pvalue'])}, {comparison['n_units']} {comparison['unit']}s, "
                            f"{comparison['method']}")
            if verdict and who != base:
                text.append(f"verdict vs {who}: {verdict}")
        if "verdict" in section:
            text.append(f"verdict: {section['verdict']}")
        text += [f"note: {n}" for n in section.get("notes", [])]
        out.append((set_name, rows, text))
    return out


def _reward_text(reward: dict) -> str:
    terms = " + ".join(f"{_fmt(w, 4)} * n({name})" for name, w in reward["weights"].items())
    norm = reward["normalize"]
    if isinstance(norm, dict):
        norm = ", ".join(f"n({k}) = (r - {_fmt(v[0], 4)}) / {_fmt(v[1], 4)}" for k, v in norm.items())
    return f"{reward['name']} = {terms}; normalize: {norm}"


def card_markdown(card: dict, figure: str | None = None) -> str:
    lines = [f"# Report card: {card['metric']}", "", f"**{card['verdict']}**", ""]
    if card.get("reward"):
        lines += [f"- weighted reward: {_reward_text(card['reward'])}",
                  f"- against its parts: {card['parts_verdict']}", ""]
    lines += [f"- note: {n}" for n in card.get("notes", [])] + ([""] if card.get("notes") else [])
    for title, rows, text in _set_lines(card):
        lines += [f"## {title}", ""]
        if rows:
            lines.append("| " + " | ".join(rows[0]) + " |")
            lines.append("|" + "---|" * len(rows[0]))
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            lines.append("")
        lines += [f"- {t}" for t in text] + [""]
    if figure:
        lines += [f"![{card['metric']} vs {card['baseline']}]({figure})", "", FIGURE_CAPTION, ""]
    prov = card["provenance"]
    lines += ["## Provenance", "", f"- command: `{prov['command']}`", f"- ts2-evaluate {prov['ts2_evaluate_version']}",
              f"- SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
    lines += [f"- {role}: `{v['path']}` sha256 {v['sha256']}" for role, v in prov["inputs"].items()]
    return "\n".join(lines) + "\n"


def card_html(card: dict, png: bytes | None = None) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>Report card: {e(card['metric'])}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .6em;"
             "text-align:right;white-space:nowrap}th{background:#eee}.verdict{font-size:1.2em;font-weight:bold}"
             ".missing{color:#a33}</style></head><body>",
             f"<h1>Report card: {e(card['metric'])}</h1>", f"<p class='verdict'>{e(card['verdict'])}</p>"]
    if card.get("reward"):
        parts.append(f"<ul><li>weighted reward: {e(_reward_text(card['reward']))}</li>"
                     f"<li>against its parts: {e(card['parts_verdict'])}</li></ul>")
    if card.get("notes"):
        parts.append("<ul>" + "".join(f"<li>note: {e(n)}</li>" for n in card["notes"]) + "</ul>")
    for title, rows, text in _set_lines(card):
        parts.append(f"<h2>{e(title)}</h2>")
        if rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in rows[0]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows[1:]]
            parts.append("</table>")
        cls = " class='missing'" if not rows else ""
        parts.append(f"<ul{cls}>" + "".join(f"<li>{e(t)}</li>" for t in text) + "</ul>")
    if png:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>Figure</h2><img alt='dot plot' src='data:image/png;base64,{data}' style='max-width:100%'>"
                     f"<p>{e(FIGURE_CAPTION)}</p>")
    prov = card["provenance"]
    parts.append("<h2>Provenance</h2><ul>" + "".join(
        f"<li>{e(t)}</li>" for t in [f"command: {prov['command']}", f"ts2-evaluate {prov['ts2_evaluate_version']}",
                                     f"SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
        + [f"{role}: {v['path']} sha256 {v['sha256']}" for role, v in prov["inputs"].items()]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def figure_dots(card: dict, set_name: str) -> tuple[str, list[tuple[str, float, float | None, float | None, str]]]:
    """``(axis label, dots)`` of one set's panel: ``(label, value, ci_low, ci_high, kind)`` with kind ``metric``,
    ``baseline``, ``part`` (a weighted reward's parts) or ``other`` (TS2: the published rows of the release, with
    their bootstrap intervals; a human set: the other metric columns of its files, e.g. the metrics TIFA160's file
    scores). Only evaluated sets have dots."""
    section = card["sets"][set_name]
    dots = []
    if set_name == "ts2":
        rank = section["meta"]["rank"]
        ci = (rank.get("ci") or {}).get("avg") or (None, None)
        dots.append((card["metric"], rank["summary"]["avg"], *ci, "metric"))
        bm = section.get("baseline_meta")
        if bm:
            bci = (bm["ci"].get("rank") or {}).get("avg") if bm["ci"].get("rank") else None
            dots.append((card["baseline"], bm["summary"]["rank"]["avg"], *(bci or (None, None)), "baseline"))
        for part, p in (section.get("parts") or {}).items():
            pci = (p["ci"].get("rank") or {}).get("avg") if p["ci"].get("rank") else None
            dots.append((part, p["summary"]["rank"]["avg"], *(pci or (None, None)), "part"))
        pub = section.get("published") or {}
        shown = {d[0] for d in dots}
        for col, value in sorted((pub.get("rank_avg") or {}).items(), key=lambda kv: -kv[1] if kv[1] is not None
                                 else 9):
            if value is not None and col not in shown:
                ci = (pub.get("rank_avg_ci") or {}).get(col) or (None, None)
                dots.append((col, value, *ci, "other"))
        return "rank (avg over SEGs)", dots
    if "headline_ties" in section:
        head = section["rows"][0]
        dots.append((card["metric"], head["statistic"], head["ci_low"], head["ci_high"], "metric"))
        if section.get("baseline_rows"):
            r = section["baseline_rows"][0]
            dots.append((card["baseline"], r["statistic"], r["ci_low"], r["ci_high"], "baseline"))
        for part, p in (section.get("parts") or {}).items():
            r = p["rows"][0]
            dots.append((part, r["statistic"], r["ci_low"], r["ci_high"], "part"))
        label = f"pairwise accuracy (ties {section['headline_ties']})"
    else:
        head = next(r for r in section["rows"]
                    if r["metric"] == section["column"] and r["coefficient"] == section["headline_coefficient"])
        dots.append((card["metric"], head["value"], head["ci_low"], head["ci_high"], "metric"))
        br = section.get("baseline_row")
        if br:
            dots.append((card["baseline"], br["value"], br["ci_low"], br["ci_high"], "baseline"))
        for part, p in (section.get("parts") or {}).items():
            dots.append((part, p["row"]["value"], p["row"]["ci_low"], p["row"]["ci_high"], "part"))
        label = section["headline_coefficient"]
    for col, v in sorted((section.get("other_metrics") or {}).items(),
                         key=lambda kv: -kv[1]["value"] if kv[1]["value"] is not None else 9):
        dots.append((col, v["value"], v["ci_low"], v["ci_high"], "other"))
    return label, dots


_COLOURS = {"metric": "C0", "baseline": "C1", "part": "C2", "other": "0.6"}
#: the figure's legend, written under it in Markdown and HTML
FIGURE_CAPTION = ("Dots with their intervals, per set: blue this metric, orange the baseline, green a weighted "
                  "reward's parts, grey the published rows (TS2: the release's metrics) or the other metrics of a "
                  "human set's files.")


def card_figure(card: dict, path: Path) -> Path | None:
    """One dot plot per evaluated set (:func:`figure_dots`): this metric, the baseline, a reward's parts and, in
    grey, the published rows (TS2) or the other metrics of the set's files, each with its interval where it has
    one. TS2 shows rank (avg); a rating set its headline coefficient; a preference set its headline accuracy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [k for k, s in card["sets"].items() if s["status"] == "evaluated"]
    if not panels:
        return None
    drawn = [(k, *figure_dots(card, k)) for k in panels]
    height = max(3.6, 0.22 * max(len(d[2]) for d in drawn) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), height), squeeze=False)
    import textwrap

    title = textwrap.fill(f"{card['metric']} vs {card['baseline']}: {card['verdict']}", width=int(55 * len(panels)))
    fig.suptitle(title, fontsize=9)
    for ax, (set_name, xlabel, dots) in zip(axes[0], drawn):
        for y, (label, value, low, high, kind) in enumerate(reversed(dots)):
            if value is None:
                continue
            colour = _COLOURS[kind]
            if low is not None and high is not None:
                ax.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=3,
                            markersize=4 if kind == "other" else 6, elinewidth=0.8 if kind == "other" else 1.5)
            else:
                ax.plot(value, y, "o", color=colour, markersize=4)
        ax.set_ylim(-0.7, len(dots) - 0.3)
        ax.set_yticks(range(len(dots)))
        ax.set_yticklabels([d[0] for d in reversed(dots)], fontsize=7)
        ax.set_title(set_name)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_card(card: dict, out_dir: str | Path) -> dict[str, Path]:
    """``<metric>.md``, ``<metric>.html`` (figure inlined), ``<metric>.json`` and ``<metric>.png`` in ``out_dir``."""
    from scorers.atomic import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in card["metric"])
    paths = {}
    try:
        png_path = card_figure(card, out / f"{stem}.png")
    except ModuleNotFoundError as missing:  # matplotlib is the report extra: the card's numbers stand without it
        if missing.name != "matplotlib":
            raise
        png_path = None
        card["notes"] = card.get("notes", []) + ["no figure: matplotlib is not installed "
                                                 "(pip install 'ts2-evaluate[report]')"]
    png = png_path.read_bytes() if png_path else None
    if png_path:
        paths["png"] = png_path
    for kind, text in (("md", card_markdown(card, png_path.name if png_path else None)), ("html", card_html(card, png)),
                       ("json", json.dumps(card, indent=1, default=json_default))):
        target = out / f"{stem}.{kind}"
        write_text_atomic(target, text)
        paths[kind] = target
    return paths
