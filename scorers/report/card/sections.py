"""A card's section for each set: TS2 (rank / sep / delta as ``ts2 meta``, the place among the published rows,
paired tests over SEGs), a rating set (agreement as ``ts2 correlate``, paired tests on the same items) and a
preference set (pairwise accuracy under both tie conventions, paired tests on the same pairs); each set's headline
convention from :mod:`scorers.sets.registry`; the verdict of a paired test; the grey rows of the figure (the other
metrics of a set's files). Sections are the JSON objects :mod:`scorers.report.card.schema` describes."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from scorers.report.card.inputs import (PreferenceSet, RatingSet, human_columns, pair_keys, rating_column,
                                        rating_wanted)
from scorers.sets.registry import PAIRS, RATINGS, get_set, headline_of
from scorers.ts2.options import MetaOptions

__all__ = ["NOT_SIGNIFICANT", "SharedResults", "is_judged", "pair_notes", "preference_others", "preference_section",
           "rating_others", "rating_section", "ts2_result",
           "ts2_section", "verdict_of"]


@dataclass
class SharedResults:
    """What the cards of one run share: the release's ``published`` rows (a
    :class:`~scorers.ts2.reproduce.Reproduction`, or None with ``published_reason``) and what they were computed on
    (``published_basis``; ``basis``: the cards' own metadata, :class:`scorers.tables.comparable.Basis`;
    ``left_out``: why they are not placed beside these metrics, other metadata), each
    metric's TS2 result (a reward's parts are compared with it) and each set's ``others`` (the grey rows), computed
    once."""

    published: object | None = None
    published_reason: str = "the published rows are not available"
    basis: object | None = None
    published_basis: object | None = None
    left_out: str | None = None
    ts2_results: dict = field(default_factory=dict)
    others: dict = field(default_factory=dict)


def ts2_result(source, column, metadata, options: MetaOptions, *, clean_quotes: bool, lower_is_better: bool = False,
               by_error_type: bool = False):
    """``ts2 meta`` on one column of one score file (``lower_is_better``: that column's; ``by_error_type``: as
    ``ts2 meta --by-error-type``)."""
    from scorers.tables.pandas_tables import read_score_table
    from scorers.ts2.meta_from_tables import meta_from_tables

    table = read_score_table(source, [column])
    return meta_from_tables([(str(source), table)], metadata, columns=[column],
                            options=replace(options, clean_quotes=clean_quotes, by_error_type=by_error_type,
                                            lower_is_better=[column] if lower_is_better else ()))


def _finite(x):
    return None if x is None or not np.isfinite(x) else float(x)


#: how a verdict starts when the paired test is not significant at the stated level
NOT_SIGNIFICANT = "no significant difference"


def verdict_of(comparison: dict | None, alpha: float = 0.05) -> str:
    """The verdict of one paired test (``statistic``, ``ci_low``, ``ci_high``, ``pvalue``: a
    :meth:`scorers.stats.resampling.PairedComparison.to_dict`): ``better`` / ``worse`` only when it is significant
    at level ``alpha`` (1 - the confidence of the interval): its interval excludes 0 on that side and its p-value is
    at most ``alpha``; otherwise ``no significant difference (p = 0.237 at alpha 0.05)``. A test without a p-value
    is judged by its interval alone.

    Examples:
        >>> verdict_of({"ci_low": 0.01, "ci_high": 0.3, "pvalue": 0.237})
        'no significant difference (p = 0.237 at alpha 0.05)'
        >>> verdict_of({"ci_low": 0.01, "ci_high": 0.3, "pvalue": 0.004})
        'better'
    """
    if comparison is None:
        return "no comparison"
    low, high = comparison.get("ci_low"), comparison.get("ci_high")
    if low is None or high is None:
        return "no interval"
    pvalue = comparison.get("pvalue")
    significant = pvalue is None or not np.isfinite(pvalue) or pvalue <= alpha
    if significant and low > 0:
        return "better"
    if significant and high < 0:
        return "worse"
    from scorers.formatting import format_number

    shown = "" if pvalue is None or not np.isfinite(pvalue) else f"p = {format_number(pvalue, 3)} at "
    return f"{NOT_SIGNIFICANT} ({shown}alpha {alpha:g})"


def _alpha(options: MetaOptions) -> float:
    """The level of a card's paired tests: 1 - the confidence of its intervals."""
    return round(1.0 - options.confidence, 12)


def is_judged(verdict: str | None) -> bool:
    """A verdict that counts in a card's line: better, worse or not significant (not "no comparison" / "no
    interval")."""
    return verdict in ("better", "worse") or str(verdict or "").startswith(NOT_SIGNIFICANT)


def ts2_section(name, column, source, baseline, metadata, options: MetaOptions, shared: SharedResults, *,
                clean_quotes=False, lower_is_better=False, parts: Sequence[str] = ()) -> dict:
    """TS2: rank / sep / delta (as ``ts2 meta``; per error type too, as ``ts2 meta --by-error-type``, when the
    metadata carries error types: ``meta["by_error_type"]``), the place among the published rows, paired tests over
    SEGs against the ``baseline`` (``{"name", "ts2", "ts2_column", "ts2_source"}``) and a reward's ``parts``."""
    from scorers.stats.meta import META_METRICS, compare
    from scorers.tables.error_columns import has_error_types

    evaluated = ts2_result(source, column, metadata, options, clean_quotes=clean_quotes,
                           lower_is_better=lower_is_better,
                           by_error_type=has_error_types(metadata) and options.variant == "paper")
    result = evaluated.results[column]
    shared.ts2_results[name] = result
    section = {"status": "evaluated", "headline": get_set("ts2").headline.convention,
               "column": column, "source": str(source), "meta": evaluated.to_dict()[column], "notes": evaluated.notes}
    published, left_out = shared.published, shared.left_out
    if published is not None and shared.basis is not None and shared.published_basis is not None:  # same SEGs?
        from scorers.tables.comparable import published_mismatch

        theirs = next(iter(published.results.values())).rank.seg_ids if published.results else None
        left_out = published_mismatch(shared.basis.with_segs(result.rank.seg_ids),
                                      shared.published_basis.with_segs(theirs))
        if left_out is not None:
            published = None
    section["published_left_out"] = left_out
    if published is not None:
        values = {c: r.rank.statistic.get("avg") for c, r in published.results.items()}
        ours = result.rank.statistic.get("avg")
        better = sorted((c for c, v in values.items() if v is not None and v > ours and c != name),
                        key=lambda c: -values[c])
        cis = {c: (r.rank.confidence_interval or {}).get("avg") for c, r in published.results.items()}
        section["published"] = {
            "rank_avg": {c: (None if v is None or np.isnan(v) else float(v)) for c, v in values.items()},
            "rank_avg_ci": {c: (None if ci is None else [_finite(ci[0]), _finite(ci[1])]) for c, ci in cis.items()},
            "place": len(better) + 1, "of": len([c for c in values if c != name]) + 1,
            "above": better,
        }
    else:
        section["published"] = None
        if left_out is None:  # left out: the card's own note says why
            section["notes"] = section["notes"] + [shared.published_reason]

    def against(other):
        """(summary, ci, paired comparisons over SEGs) of this metric against the TS2 result ``other``"""
        comparisons = [compare(result, other, meta_metric=m, n_resamples=options.n_bootstrap or 1000,
                               confidence=options.confidence, seed=options.seed).to_dict() for m in META_METRICS]
        as_dict = other.to_dict()
        return ({m: as_dict[m]["summary"] for m in META_METRICS}, {m: as_dict[m].get("ci") for m in META_METRICS},
                comparisons)

    if baseline is not None and baseline["name"] != name:
        summary, ci, comparisons = against(baseline["ts2"])
        section["baseline_meta"] = {"column": baseline["ts2_column"], "source": baseline["ts2_source"],
                                    "summary": summary, "ci": ci}
        section["comparison"] = comparisons
        section["verdict"] = verdict_of(comparisons[0], _alpha(options))
    if parts:
        section["parts"] = {}
        for part in parts:
            summary, ci, comparisons = against(shared.ts2_results[part])
            section["parts"][part] = {"summary": summary, "ci": ci, "comparison": comparisons,
                                      "verdict": verdict_of(comparisons[0], _alpha(options))}
    return section


def rating_section(rating: RatingSet, name: str, baseline_name: str | None, frame, options: MetaOptions,
                   parts: Sequence[str] = ()) -> dict:
    """A rating set: agreement of metric ``name``'s column with the human ratings (as ``ts2 correlate``), paired
    tests on the same items against the baseline and a reward's ``parts`` (``options.lower_is_better``: metric
    names)."""
    from scorers.stats.agreement import COEFFICIENTS, compare_agreement
    from scorers.stats.correlation import correlate_frame
    from scorers.checks import as_scores
    from scorers.stats.orientation import resolve_orientation

    lower_is_better = options.lower_is_better

    column = rating_column(rating, name, frame)
    if column is None:
        wanted = rating_wanted(rating, name)
        return {"status": "not evaluated",
                "reason": f"{rating.source} has no column {wanted!r} with {name}'s scores (name it with "
                          f"--ratings-column {name}=COL)"}
    human = human_columns(rating, frame)
    if not human:
        return {"status": "not evaluated", "reason": f"{rating.source} has no human_<k> rating columns (--human)"}
    rule = headline_of(rating.name, RATINGS)
    coefficient, grouping, convention = rule.statistic, rule.grouping, rule.convention
    flipped = [column] if name in lower_is_better else []
    table = correlate_frame(frame, human=human, metrics=[column], coefficients=COEFFICIENTS, grouping="none",
                            n_bootstrap=options.n_bootstrap, confidence=options.confidence, seed=options.seed,
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
                                n_bootstrap=options.n_bootstrap, confidence=options.confidence, seed=options.seed,
                                lower_is_better=[other_col] if other_name in lower_is_better else [])
        row = next(r for r in other.to_dict()["rows"] if r["metric"] == other_col)
        comparison = compare_agreement(h, a, b, coefficient=coefficient, grouping=grouping,
                                       n_resamples=options.n_bootstrap or 1000, confidence=options.confidence,
                                       seed=options.seed).to_dict()
        return row, comparison

    base_col = rating_column(rating, baseline_name, frame) if baseline_name and baseline_name != name else None
    if baseline_name and baseline_name != name and base_col is None:
        section["notes"] = section["notes"] + [f"no baseline column for {baseline_name}: no paired test"]
    if base_col is not None:
        section["baseline_row"], comparison = against(baseline_name, base_col)
        section["baseline_column"] = base_col
        section["comparison"] = [comparison]
        section["verdict"] = verdict_of(comparison, _alpha(options))
    if parts:
        section["parts"] = {}
        for part in parts:
            part_col = rating_column(rating, part, frame)
            if part_col is None:
                section["notes"] = section["notes"] + [f"no column for the part {part}: no paired test against it"]
                continue
            row, comparison = against(part, part_col)
            section["parts"][part] = {"column": part_col, "row": row, "comparison": [comparison],
                                      "verdict": verdict_of(comparison, _alpha(options))}
    return section


def _pair_scores(scores, column: str, pairs, flip: bool) -> tuple[np.ndarray, np.ndarray]:
    """Score of image A and of image B per pair (NaN where the image has no score), negated when lower is better."""
    values = scores[column]
    a = values.reindex(pair_keys(scores, pairs, "a")).to_numpy(dtype=np.float64)
    b = values.reindex(pair_keys(scores, pairs, "b")).to_numpy(dtype=np.float64)
    return (-a, -b) if flip else (a, b)


def pair_notes(pairs, scored_human) -> list[str]:
    """The notes a preference section carries about its pairs: pairs listed more than once (counted, each row
    counts as given) and pairs listed with opposite preferences (:func:`scorers.sets.pair_repeats`), and a
    set whose every scored pair is a human tie (then any metric reaches a calibrated accuracy of 1)."""
    from scorers.sets import pair_repeats

    notes = []
    repeats = pair_repeats(pairs)
    if repeats["duplicated"]:
        first, again = repeats["first_duplicated"]
        notes.append(f"{repeats['duplicated']} duplicated pair row(s): the same two images of one item with the same "
                     f"preference listed again (first: rows {first} and {again}); each row is counted as given")
    if repeats["contradictory"]:
        first, again = repeats["first_contradictory"]
        notes.append(f"{repeats['contradictory']} contradictory pair(s): the same two images of one item listed with "
                     f"opposite preferences (e.g. A over B and B over A; first: rows {first} and {again}); each row is "
                     "counted as given, so no metric can order both right")
    if len(scored_human) and (np.asarray(scored_human) == "tie").all():
        notes.append("every scored human pair is a tie: the calibrated accuracy is trivially 1.000 for any metric (a "
                     "large enough epsilon ties every pair), and ties excluded leaves no pair; neither says how well "
                     "the metric orders images")
    return notes


def preference_section(pset: PreferenceSet, name: str, baseline_name: str | None, pairs, scores,
                       options: MetaOptions, parts: Sequence[str] = ()) -> dict:
    """A preference set: pairwise accuracy of metric ``name`` under both tie conventions (the set's headline one
    first), paired tests on the same pairs against the baseline and a reward's ``parts``
    (``options.lower_is_better``: metric names)."""
    from scorers.stats.preference_accuracy import (TIE_CONVENTIONS, compare_preference_accuracy,
                                                   pairwise_preference_accuracy)

    lower_is_better = options.lower_is_better

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
    boot = {"n_bootstrap": options.n_bootstrap, "confidence": options.confidence, "seed": options.seed}

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
               "score_files": [str(p) for p in pset.scores], "notes": pair_notes(pairs, human[scored])}

    def comparisons(other_column, other_flip):
        oa, ob = _pair_scores(scores, other_column, pairs, other_flip)
        return [{"ties": ties, **compare_preference_accuracy(
            (sa, sb), (oa, ob), human, ties=ties, items=items, n_bootstrap=options.n_bootstrap or 1000,
            confidence=options.confidence, seed=options.seed).to_dict()} for ties in order]

    base_col = column_of(baseline_name) if baseline_name and baseline_name != name else None
    if baseline_name and baseline_name != name and base_col is None:
        section["notes"].append(f"no column for the baseline {baseline_name} in the score files: no paired test")
    if base_col is not None:
        flip = baseline_name in lower_is_better
        section["baseline_column"] = base_col
        section["baseline_rows"] = rows_of(*_pair_scores(scores, base_col, pairs, flip))
        section["comparison"] = comparisons(base_col, flip)
        section["verdict"] = verdict_of(section["comparison"][0], _alpha(options))
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
            section["parts"][part]["verdict"] = verdict_of(section["parts"][part]["comparison"][0], _alpha(options))
    return section


def rating_others(rating: RatingSet, frame, options: MetaOptions, exclude: Sequence[str]) -> dict:
    """The headline coefficient, with its CI, of every other metric column of a rating file (TIFA160's file holds
    the per-image scores of the metrics TIFA published): the grey rows of the card's figure."""
    import pandas as pd

    from scorers.stats.correlation import correlate_frame

    coefficient = headline_of(rating.name, RATINGS).statistic
    human = human_columns(rating, frame)
    skip = {"item", "system", "image", "prompt", *exclude}
    columns = [c for c in frame.columns if c not in skip and not str(c).startswith("human")
               and pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])]
    if not columns or not human:
        return {}
    table = correlate_frame(frame, human=human, metrics=columns, coefficients=(coefficient,), grouping="none",
                            n_bootstrap=options.n_bootstrap, confidence=options.confidence, seed=options.seed)
    return {r["metric"]: {"value": r["value"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
            for r in table.to_dict()["rows"] if r["metric"] in columns}


def preference_others(pset: PreferenceSet, pairs, scores, options: MetaOptions, exclude: Sequence[str]) -> dict:
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
                                           items=pairs["item"].to_numpy(), n_bootstrap=options.n_bootstrap,
                                           confidence=options.confidence, seed=options.seed).to_dict()
        ci = acc["confidence_interval"] or (None, None)
        out[column] = {"value": acc["statistic"], "ci_low": ci[0], "ci_high": ci[1]}
    return out
