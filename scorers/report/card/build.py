"""Building the cards: read the inputs once (:func:`~scorers.report.card.inputs.read_inputs`), evaluate the baseline
and the release's published rows once, then for each metric one section per set
(:mod:`scorers.report.card.sections`) and its verdict lines: a :class:`~scorers.report.card.schema.Card`."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from scorers.report.card.elements import ElementSource, element_section, read_element_summaries
from scorers.report.card.inputs import (AUTO_BASELINE, CardInputs, PreferenceSet, RatingSet, RewardSpec,
                                        card_provenance, file_sha256, is_pairs, read_inputs, resolve_baseline)
from scorers.report.card.schema import Card
from scorers.report.card.sections import (SharedResults, is_judged, preference_others, preference_section,
                                          rating_others, rating_section, ts2_result, ts2_section)
from scorers.sets.registry import PAIRS, RATINGS, SEGS, set_names
from scorers.ts2.options import MetaOptions

__all__ = ["build_cards"]

def build_cards(
    scores: Mapping[str, str | Path],
    *,
    metadata,
    baseline: str | None = AUTO_BASELINE,
    ratings: Sequence[RatingSet] = (),
    sets: Sequence[str] | None = None,
    data_dir: str | None = None,
    options: MetaOptions = MetaOptions(n_bootstrap=1000),
    offline: bool | None = None,
    command: str = "",
    preferences: Sequence[PreferenceSet] = (),
    reward: RewardSpec | None = None,
    reward_dir: str | Path | None = None,
    elements: Sequence[ElementSource] = (),
) -> dict[str, Card]:
    """``{metric: card}`` for every metric of ``scores`` (name -> per-image TS2 scores file).

    ``baseline``: a name among ``scores`` or a column of the release's ``released_scores.csv`` (a release column
    only when ``metadata`` is the release's: :func:`~scorers.report.card.inputs.resolve_baseline`); None: no paired
    tests; ``"auto"`` (default): the release's ``clipscore`` on the release's metadata, else none, with a note saying
    so. The TS2 section places the metric among the release's published rows only when it was computed on the same
    metadata (sha256) and SEG set (:func:`scorers.tables.comparable.published_mismatch`); otherwise one note says why
    they are left out. ``ratings``: the human rating sets. ``sets``: names asked for; one that is
    neither ``ts2`` nor given in ``ratings`` is listed as not evaluated with the reason. ``options``
    (:class:`~scorers.ts2.options.MetaOptions`, default 1,000 bootstrap resamples): the SEGs, the bootstrap (every
    interval and paired test of the card), ``clean_quotes`` (stray quote characters stripped from the ``scores``
    files' cells, as ``ts2 meta --clean-quotes``) and ``lower_is_better``: here the metrics (of ``scores`` or the
    baseline) whose lower scores are better; others follow :func:`scorers.stats.orientation.resolve_orientation`.
    ``preferences``: the preference sets (pair tables + per-image
    score files). ``reward``: a weighted reward over metrics of ``scores`` (each part must be one), judged as one
    more metric named ``reward.name``; its per-image TS2 scores are written to ``reward_dir`` as
    ``<name>_ts2_scores.csv`` (``seg_id, file_name, <name>``; default: the current folder), and on each human set its
    scores come from the parts' columns there (normalisation statistics over that set's images). ``elements``:
    ``ts2 elements --json`` files or per-question records (:class:`~scorers.report.card.elements.ElementSource`,
    records of built SEGs read against ``metadata``), each card's "finds the error" section
    (:func:`~scorers.report.card.elements.element_section`); none: the cards have no such section.
    """
    from scorers.tables.comparable import metadata_basis, published_mismatch, release_basis

    ours, release = metadata_basis(metadata), release_basis(data_dir)
    baseline, baseline_note = resolve_baseline(baseline, scores, ours, release)
    read = read_inputs(scores, metadata=metadata, baseline=baseline, ratings=ratings, preferences=preferences,
                       sets=sets, data_dir=data_dir, options=options, offline=offline, reward=reward,
                       reward_dir=reward_dir)
    if baseline_note:
        read.baseline_note = baseline_note
    shared = SharedResults(basis=ours)
    other_metadata = published_mismatch(ours, release)
    if other_metadata is not None:  # not computed at all: they could not be placed beside these metrics
        shared.left_out = other_metadata
    else:
        try:
            from scorers.ts2.reproduce import released_reproduction

            shared.published = released_reproduction(data_dir, seg_subset=options.seg_subset, progress=False,
                                                     n_bootstrap=options.n_bootstrap)
            shared.published_basis = release
        except (FileNotFoundError, ValueError) as error:  # ReleaseFileUnavailable is a FileNotFoundError
            shared.published_reason = f"the published rows are not available: {str(error).splitlines()[0]}"
    base = None
    if read.baseline_source is not None:
        src, col, quotes = read.baseline_source
        evaluated = ts2_result(src, col, read.meta_frame, options, clean_quotes=quotes,
                               lower_is_better=baseline in options.lower_is_better)
        base = {"name": baseline, "ts2": evaluated.results[col], "ts2_column": col, "ts2_source": str(src)}
    provenance = card_provenance(read, command=command, options=options)
    found = read_element_summaries(elements, metadata=metadata) if elements else []
    for k, (source, _summary) in enumerate(found):
        provenance["inputs"][f"elements[{k}]"] = {"path": str(Path(source.path).resolve()),
                                                  "sha256": file_sha256(source.path)}
    cards = {}
    for name, src in read.scores.items():
        card_sets = {}
        for set_name in read.asked:
            card_sets[set_name] = _section(read, set_name, name, src, base, baseline, options, shared)
            if set_name == "ts2":
                provenance["segs"] = card_sets["ts2"]["meta"]["segs"]
        _add_other_metrics(read, card_sets, options, shared)
        cards[name] = _card(read, name, card_sets, base, baseline, options.confidence, provenance)
        cards[name].elements = element_section(found, name, only_card=len(read.scores) == 1)
    return cards


def _section(read: CardInputs, set_name: str, name: str, src, base, baseline, options: MetaOptions,
             shared: SharedResults) -> dict:
    """Metric ``name``'s section for set ``set_name``."""
    parts = read.parts_of.get(name, ())
    if set_name == "ts2":
        return ts2_section(name, read.columns[name], src, base, read.meta_frame, options, shared,
                           clean_quotes=options.clean_quotes and name not in read.parts_of,
                           lower_is_better=name in options.lower_is_better, parts=parts)
    if set_name in read.unavailable:
        return {"status": "not evaluated", "reason": read.unavailable[set_name]}
    if name in read.parts_of:
        lacking = read.reward_info["stats"].get(
            ("preferences:" if set_name in read.pair_tables else "ratings:") + set_name, {}).get("missing parts")
        if lacking:
            return {"status": "not evaluated",
                    "reason": f"the reward's part(s) {', '.join(lacking)} have no scores on {set_name} (a column "
                              "per part, or --ratings-column PART=COL)"}
    if set_name in read.frames:
        rating = read.rating(set_name)
        try:
            return rating_section(rating, name, baseline, read.frames[set_name], options, parts=parts)
        except ValueError as error:  # e.g. a pooled bootstrap too large, a constant column: say so, go on
            return {"status": "not evaluated", "reason": f"{rating.source}: {error}"}
    if set_name in read.pair_tables:
        pset = read.preference(set_name)
        try:
            section = preference_section(pset, name, baseline, read.pair_tables[set_name], read.set_scores[set_name],
                                         options, parts=parts)
            section["provenance"] = read.pair_tables[set_name].attrs.get("provenance")
            return section
        except ValueError as error:
            return {"status": "not evaluated", "reason": f"{pset.source}: {error}"}
    known_sets = set_names(SEGS, RATINGS, PAIRS)
    known = "" if set_name in known_sets else (f" ({set_name!r} is not a set the card knows by name: "
                                               f"{', '.join(known_sets)})")
    how = (f"no pair table and per-image scores were given (--preferences {set_name}=FILE --preference-scores "
           f"{set_name}=FILE)" if is_pairs(set_name) else
           f"no ratings file with {name}'s scores was given (--ratings {set_name}=FILE)")
    return {"status": "not evaluated", "reason": f"{how}; the card reads scores and never scores images{known}"}


def _add_other_metrics(read: CardInputs, card_sets: dict, options: MetaOptions, shared: SharedResults) -> None:
    """Each evaluated human set's ``other_metrics``: the headline of its files' other metric columns (computed once
    per set), less the columns the section shows."""
    for set_name, section in card_sets.items():
        if section["status"] != "evaluated" or set_name == "ts2":
            continue
        if set_name not in shared.others:
            own = [read.reward.name] if read.reward is not None else []
            try:
                if set_name in read.pair_tables:
                    shared.others[set_name] = preference_others(read.preference(set_name), read.pair_tables[set_name],
                                                                read.set_scores[set_name], options, own)
                else:
                    shared.others[set_name] = rating_others(read.rating(set_name), read.frames[set_name], options,
                                                            own)
            except ValueError:  # a constant or empty column: no grey row, the card's own numbers stand
                shared.others[set_name] = {}
        shown = {section.get("column"), section.get("baseline_column"),
                 *[p.get("column") for p in (section.get("parts") or {}).values()]}
        section["other_metrics"] = {c: v for c, v in shared.others[set_name].items() if c not in shown}


def _card(read: CardInputs, name: str, card_sets: dict, base, baseline, confidence: float, provenance: dict) -> Card:
    """Metric ``name``'s card: its sections and its verdict lines (against the baseline; a reward against each
    part)."""
    judged = [s for s in card_sets.values() if is_judged(s.get("verdict"))]
    better = sum(s["verdict"] == "better" for s in judged)
    worse = sum(s["verdict"] == "worse" for s in judged)
    level = f"{confidence:.0%}"
    if base is None and baseline in (None, ""):
        summary = "no baseline: no paired tests"
    elif name == baseline:
        summary = f"{name} is the baseline"
    else:
        summary = (f"better than {baseline} on {better} of {len(judged)} sets, worse on {worse}, "
                   f"{level} paired intervals")
    notes = [read.baseline_note, (card_sets.get("ts2") or {}).get("published_left_out")]
    card = Card(metric=name, baseline=baseline, verdict=summary, sets=card_sets, provenance=provenance,
                notes=[n for n in notes if n])
    if name in read.parts_of:
        lines = []
        for part in read.parts_of[name]:
            judged_p = [s["parts"][part]["verdict"] for s in card_sets.values()
                        if part in (s.get("parts") or {}) and is_judged(s["parts"][part]["verdict"])]
            lines.append(f"better than {part} on {judged_p.count('better')} of {len(judged_p)} sets, worse on "
                         f"{judged_p.count('worse')}")
        card.reward = read.reward_info
        card.parts_verdict = "; ".join(lines) + f", {level} paired intervals"
    return card
