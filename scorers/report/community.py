"""The community leaderboard: every submission verified before it is listed, beside the 19 published rows.

A submission is a folder ``ts2 submit`` wrote (:mod:`scorers.ts2.submission.folder`). The submissions come from a
local folder or from a Hub dataset at a pinned revision (``OWNER/NAME@REVISION``, read by
:func:`scorers.ts2.submission.hub.fetch_submissions` with :func:`huggingface_hub.snapshot_download`); either way they
sit under ``submissions/NAME/`` (a local folder may also hold the submission folders directly, or be one submission).
Each one is verified by :func:`scorers.ts2.submission.folder.verify_submission`, which recomputes every number from
the per-image scores; a row is listed only when its claims equal the recomputation, and its numbers are then the
verified ones.

The table (:class:`Leaderboard`):

- verified rows beside the published rows (the TS2 release's 19 metrics, recomputed from the release's per-image
  scores by :func:`scorers.ts2.reproduce.released_reproduction`), each marked with the ts2-evaluate version that
  verified or recomputed it;
- one *group* per (variant, SEG set, walk rule): the default group is variant ``paper`` on SEGs 0-163 by TS2's
  levels, the published rows'; a row on another variant or SEG set, or computed along a built dir's edges
  (``--walks edges``), is labelled with its group and ranked only inside it;
- only *complete* rows are ranked: every image of the evaluated SEGs scored with a finite number (a blank cell is
  skipped by rank/sep/delta, so leaving out the images a metric orders worst would raise its numbers). An
  incomplete row is listed apart, in the group :data:`INCOMPLETE_GROUP`, unranked, with its coverage (cells scored /
  total, SEGs used / total: :class:`scorers.stats.coverage.Coverage`, recomputed by the verifier); every row states
  its coverage, the published rows' the release's stray-quote cells too;
- rejected submissions apart, each with its one-line reason. A later submission (in folder order) whose name
  another one already has is rejected (names are one name after :func:`scorers.ts2.submission.folder.name_key`:
  ``clip-ref`` and ``clip_ref``); so is a name of a published metric, and a submission whose scores equal those of
  an earlier one or of a published metric (:func:`scorers.stats.coverage.score_fingerprint`), as a duplicate of it.
  A bad submission never stops the others from being listed, an error of the verifier included.

Submissions verified on other metadata (``metadata`` not the published rows' ``metadata.csv``, by sha256:
:func:`scorers.tables.comparable.published_mismatch`) are never ranked with the published rows: those are left out,
with a note naming both files.

Edge cases: an empty source gives the published rows alone. Without the release's ``metadata.csv`` nothing can be
verified: one error. With a metadata file given but the release's scores not to be had, the community rows are
listed alone, with a note. A Hub revision read before can be listed again offline (``HF_HUB_OFFLINE=1``), from the
cache.
"""
from __future__ import annotations

import contextlib
import math
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from scorers.errors import ParameterError
from scorers.formatting import csv_safe, escape_controls
from scorers.stats.meta import META_METRICS, SUMMARY_KEYS
from scorers.ts2.submission.hub import SUBMISSIONS_FOLDER, SubmissionsSource, fetch_submissions

__all__ = ["COVERAGE_COLUMNS", "DEFAULT_SEGS", "DEFAULT_VARIANT", "DESCRIPTION_COLUMNS", "INCOMPLETE_GROUP",
           "TABLE_COLUMNS", "VALUE_COLUMNS", "coverage_cells", "is_complete", "is_value_column", "table_columns",
           "build_leaderboard", "community_leaderboard", "group_label", "Leaderboard", "leaderboard_text",
           "plain_files", "printable", "published_rows", "read_submissions", "Rejected", "submission_folders",
           "verifier_label"]

#: the default group: the published rows' variant and SEG set (``ts2 meta``'s defaults)
DEFAULT_VARIANT = "paper"
DEFAULT_SEGS = "0-163"
#: the twelve numbers of a row, Table 2's order: ``rank_avg, rank_synth, ..., delta_real``
VALUE_COLUMNS = tuple(f"{m}_{p}" for m in META_METRICS for p in SUMMARY_KEYS)
#: the columns of the table (text, CSV and JSON rows alike); the values are in % in the table and CSV, fractions in
#: JSON
#: the coverage of a row: text (``2698/2840 cells scored, 164/164 SEGs used``) and its numbers
COVERAGE_COLUMNS = ("coverage", "cells_scored", "cells_total", "segs_used", "segs_total")
TABLE_COLUMNS = ("group", "#", "name", "source", "verified_by", "variant", "segs", *COVERAGE_COLUMNS,
                 *VALUE_COLUMNS, "metric", "paper_url", "code_url", "license", "flops_per_image")
#: the group of the rows that leave images of their SEGs without a finite score: listed, never ranked
INCOMPLETE_GROUP = "incomplete (not ranked)"
#: the columns a submission's ``metric.json`` fills (published rows: the column's name as ``metric``, the rest empty)
DESCRIPTION_COLUMNS = ("metric", "paper_url", "code_url", "license", "flops_per_image")
#: entries of a folder that are never submissions (a git checkout, huggingface_hub's local_dir metadata)
_NOT_SUBMISSIONS = {".git", ".cache", ".gitattributes", ".huggingface"}


@dataclass(frozen=True)
class Rejected:
    """A submission that is not listed: its ``folder`` name (printable), the ``name`` it claims (printable, may be
    ``""``) and the one-line ``reason``."""

    folder: str
    name: str
    reason: str

    def to_dict(self) -> dict:
        return {"folder": self.folder, "name": self.name, "reason": self.reason}


@dataclass
class Leaderboard:
    """The leaderboard: ``rows`` (dicts with :data:`TABLE_COLUMNS`, values in %, grouped: the default group first,
    each group ranked by ``sort_by``, best first), ``rejected`` submissions, the ``source`` and ``notes``."""

    rows: list[dict]
    rejected: list[Rejected]
    source: str
    notes: list[str] = field(default_factory=list)
    sort_by: str = "rank"

    def frame(self):
        """The rows as a DataFrame with :data:`TABLE_COLUMNS` (values in %)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=table_columns(self.rows))

    def to_dict(self) -> dict:
        """``ts2 leaderboard --json``: the same rows, values as fractions (``unit``), with the rejected list."""
        rows = [{k: (None if v is None else v / 100.0) if is_value_column(k) else v for k, v in row.items()}
                for row in self.rows]
        return {"source": self.source, "unit": "fraction", "sort_by": self.sort_by, "rows": rows,
                "rejected": [r.to_dict() for r in self.rejected], "notes": list(self.notes)}

    def write_csv(self, path: str | os.PathLike) -> Path:
        """The rows as CSV (values in %, full precision; the text rounds them to 0.1), written atomically."""
        from scorers.atomic import write_text_atomic

        return write_text_atomic(Path(path), csv_safe(self.frame()).to_csv(index=False))

    def text(self) -> str:
        """The table as text: one block per group (values in %, 0.1), then the rejected submissions."""
        return leaderboard_text(self)


# ----------------------------------------------------------------------------- where the submissions are


@contextlib.contextmanager
def plain_files(source: SubmissionsSource):
    """The folder to verify: a local one as it is; a Hub snapshot copied into a temporary folder first, as plain
    files (the Hugging Face cache holds a snapshot's files as symbolic links into its blob store, and a submission is
    plain files only)."""
    if source.repo is None or not source.folder.is_dir():
        yield source.folder
        return
    with tempfile.TemporaryDirectory(prefix="ts2-submissions-") as scratch:
        copy = Path(scratch) / SUBMISSIONS_FOLDER
        shutil.copytree(source.folder, copy, symlinks=False)
        yield copy


def submission_folders(folder: str | os.PathLike) -> list[Path]:
    """The entries of ``folder`` to verify as submissions, in sorted order (which decides which of two same-named
    submissions is the later one); ``[folder]`` when ``folder`` is itself one submission (it holds a manifest).
    A missing folder (a dataset with no submission yet) gives ``[]``. Files are returned too: they are rejected as
    not being a submission folder."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    from scorers.ts2.submission.folder import SUBMISSION_FILES

    if any((folder / name).is_file() for name in SUBMISSION_FILES) and not any(p.is_dir() for p in folder.iterdir()):
        return [folder]
    return sorted((p for p in folder.iterdir() if p.name not in _NOT_SUBMISSIONS), key=lambda p: p.name)


# ----------------------------------------------------------------------------- reading and verifying


def printable(text: str, limit: int = 80) -> str:
    """``text`` safe to print on one line (:func:`scorers.formatting.escape_controls`: control and other
    invisible characters as escapes), cut to ``limit`` characters with an ellipsis.

    Examples:
        >>> printable("ok\\x1b[2Jname\\n")
        'ok\\\\x1b[2Jname\\\\n'
    """
    shown = escape_controls(str(text))
    return shown if len(shown) <= limit else shown[:limit - 1] + "…"


def verifier_label(version: str | None) -> str:
    """``"ts2-evaluate 0.1.0"``: the version that verified a row, named (default: this one)."""
    from scorers import __version__

    text = str(version or __version__).strip()
    return text if text.startswith("ts2-evaluate") else f"ts2-evaluate {text}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0]}" if text else type(error).__name__


def _numbers(result: dict | None) -> dict[str, dict[str, float | None]] | None:
    """``{column: {"rank_avg": %, ...}}`` from a verified result: the result file's ``results`` (or the results
    mapping itself), each ``TS2Result.to_dict()`` (fractions)."""
    if not isinstance(result, dict):
        return None
    results = result.get("results", result)
    if not isinstance(results, dict) or not results:
        return None
    out = {}
    for column, entry in results.items():
        if not isinstance(entry, dict) or not all(isinstance(entry.get(m), dict) for m in META_METRICS):
            return None
        values = {}
        for meta in META_METRICS:
            summary = entry[meta].get("summary", {})
            others = sorted(str(k) for k in summary if k not in SUMMARY_KEYS) if isinstance(summary, dict) else []
            for partition in (*SUMMARY_KEYS, *others):  # a built dir's own partitions too
                value = summary.get(partition)
                values[f"{meta}_{partition}"] = (None if value is None or not math.isfinite(float(value))
                                                 else 100.0 * float(value))
        out[str(column)] = values
    return out


def _segs_text(segs) -> str:
    """A SEG set as a range string (``"0-163"``): a string as given, a list of ids formatted."""
    if segs is None:
        return DEFAULT_SEGS
    if isinstance(segs, str):
        return segs
    from scorers.stats.graph import format_seg_range

    return format_seg_range(segs)


def _key(name: str) -> str:
    """Names that are the same name (:func:`scorers.ts2.submission.folder.name_key`)."""
    from scorers.ts2.submission.folder import name_key

    return name_key(name)


def coverage_cells(coverage) -> dict:
    """The :data:`COVERAGE_COLUMNS` of a row from a :class:`scorers.stats.coverage.Coverage` (or its ``to_dict()``;
    None: unknown, the row is not ranked)."""
    if isinstance(coverage, dict):
        from scorers.stats.coverage import Coverage

        try:
            coverage = Coverage.from_dict(coverage)
        except (KeyError, TypeError, ValueError):
            coverage = None
    if coverage is None:
        return {"coverage": "unknown", "cells_scored": None, "cells_total": None, "segs_used": None,
                "segs_total": None}
    return {"coverage": coverage.text(), "cells_scored": coverage.cells_scored, "cells_total": coverage.cells_total,
            "segs_used": coverage.segs_used, "segs_total": coverage.segs_total}


def is_complete(row: dict) -> bool:
    """Whether a row's coverage is known and complete: every image of its SEGs scored, every SEG used."""
    numbers = [row.get(c) for c in COVERAGE_COLUMNS[1:]]
    return all(isinstance(n, int) for n in numbers) and numbers[0] == numbers[1] and numbers[2] == numbers[3]


def read_submissions(folder: str | os.PathLike, *, verify: Callable | None = None, metadata=None,
                     taken: Iterable[str] = (), refused: dict[str, str] | None = None,
                     fingerprints: dict[str, str] | None = None) -> tuple[list[dict], list[Rejected]]:
    """Verify every submission in ``folder`` (:func:`submission_folders`) and return ``(rows, rejected)``.

    ``verify``: the verifier, default :func:`scorers.ts2.submission.folder.verify_submission` (called as
    ``verify(path, metadata=metadata)``; it returns a ``SubmissionCheck``). ``taken``: names already on the board
    (the published metrics' columns): a submission with one of them is rejected. Rows are dicts with
    :data:`TABLE_COLUMNS` except ``group`` and ``#`` (values in %). ``refused``: submissions not downloaded (folder
    name -> reason), listed as rejected in folder order. ``fingerprints``: ``{sha256 of scores: published metric}``
    (:attr:`scorers.ts2.reproduce.Reproduction.fingerprints`): a submission whose scores are those of a published
    metric or of an earlier submission is rejected as a duplicate of it. Nothing raises for a bad submission: it
    becomes a :class:`Rejected` with one line; an exception of the verifier is worded the same way.
    """
    if verify is None:
        from scorers.ts2.submission.folder import verify_submission as verify

    seen = {_key(str(name)): f"the published metric {name}" for name in taken}
    # the same scores in one group (variant, walk rule; the fingerprint covers the SEG set): a copy. The published
    # rows are in the default group
    copies = {(DEFAULT_VARIANT, "levels", digest): f"the published metric {name}"
              for digest, name in (fingerprints or {}).items()}
    rows, rejected = [], []
    refused = dict(refused or {})
    entries = {p.name: p for p in submission_folders(folder)}
    for entry in sorted(set(entries) | set(refused)):
        shown = printable(entry)
        if entry in refused:
            rejected.append(Rejected(shown, "", refused[entry]))
            continue
        path = entries[entry]
        if not path.is_dir():
            rejected.append(Rejected(shown, "", "a file, not a submission folder"))
            continue
        try:
            check = verify(path, metadata=metadata)
        except Exception as error:  # a verifier bug must not hide the other submissions
            rejected.append(Rejected(shown, "", f"the verification failed: {printable(_first_line(error), 200)}"))
            continue
        name = str(check.name or path.name)
        label = printable(name)
        earlier = seen.get(_key(name))
        if not check.ok:
            reason = printable(str(check.reason or "rejected (no reason given)").strip().replace("\n", " "), 300)
            rejected.append(Rejected(shown, label, reason))
            seen.setdefault(_key(name), f"submission {shown}")
            continue
        if earlier is not None:
            rejected.append(Rejected(shown, label, f"duplicate name {label!r}: {earlier} has it already"))
            continue
        numbers = _numbers(check.result)
        if numbers is None or len(numbers) != 1:
            count = "no" if not numbers else str(len(numbers))
            rejected.append(Rejected(shown, label, f"result: {count} metric results; a submission holds one metric"))
            continue
        digest = getattr(check, "fingerprint", None)
        claimed = next(iter(check.result["results"].values()), {}) \
            if isinstance(check.result, dict) and isinstance(check.result.get("results"), dict) else {}
        walks = claimed.get("walks", "levels") if isinstance(claimed, dict) else "levels"
        digest = None if digest is None else (check.variant or DEFAULT_VARIANT, walks, digest)
        if digest is not None and digest in copies:
            rejected.append(Rejected(shown, label, f"duplicate of {copies[digest]}: the same scores under another "
                                                   f"name ({label!r})"))
            continue
        seen[_key(name)] = f"submission {shown}"
        if digest is not None:
            copies[digest] = f"submission {shown}"
        meta = check.metadata if isinstance(check.metadata, dict) else {}
        coverage = getattr(check, "coverage", None)
        if coverage is None:  # a verifier that does not say: the result's own, which the real verifier recomputed
            coverage = claimed.get("coverage") if isinstance(claimed, dict) else None
        rows.append({"name": label, "source": "community", "verified_by": verifier_label(check.verified_by),
                     "variant": check.variant or DEFAULT_VARIANT, "segs": _segs_text(check.segs), "walks": walks,
                     **coverage_cells(coverage), **next(iter(numbers.values())), **_description(meta, label)})
    return rows, rejected


def _description(meta: dict, name: str) -> dict:
    """The :data:`DESCRIPTION_COLUMNS` of a row from ``metric.json`` (printable text; ``""`` where unknown;
    ``flops_per_image`` a number or ``None``)."""
    flops = meta.get("flops_per_image")
    flops = float(flops) if isinstance(flops, (int, float)) and not isinstance(flops, bool) \
        and math.isfinite(flops) else None
    text = {key: printable(str(meta.get(key) or ""), 200) for key in ("paper_url", "code_url", "license")}
    return {"metric": printable(str(meta.get("metric") or name), 80), **text, "flops_per_image": flops}


def published_rows(reproduction, coverage: dict | None = None) -> list[dict]:
    """Rows of the published metrics from a :class:`scorers.ts2.reproduce.Reproduction` (values in %), with their
    ``coverage`` (``{column: Coverage}``, default the reproduction's own; :func:`scorers.report.published.published_coverage`
    adds the stray-quote cells)."""
    coverage = getattr(reproduction, "coverage", {}) if coverage is None else coverage
    by_column: dict[str, dict] = {}
    for column in reproduction.columns:
        by_column[column] = {"name": column, "source": "published", "verified_by": verifier_label(None),
                             "variant": DEFAULT_VARIANT, "segs": reproduction.segs or DEFAULT_SEGS,
                             **coverage_cells(coverage.get(column)), **_description({}, column)}
    for row in reproduction.rows:
        by_column[row["column"]][f"{row['meta_metric']}_{row['partition']}"] = row["ours"]
    return list(by_column.values())


def is_value_column(name: str) -> bool:
    """A meta-metric's value column (``rank_avg``, ``sep_real``, a built dir's ``delta_alpha``...)."""
    return str(name).partition("_")[0] in META_METRICS and bool(str(name).partition("_")[2])


def table_columns(rows: Sequence[dict]) -> list[str]:
    """:data:`TABLE_COLUMNS`, with the value columns of other partitions that ``rows`` hold (a built dir's own, in
    ``ts2 seg build``'s ``partition`` column) after TS2's, in name order."""
    extra = sorted({k for row in rows for k in row if is_value_column(k) and k not in VALUE_COLUMNS},
                   key=lambda k: (META_METRICS.index(k.partition("_")[0]), k.partition("_")[2]))
    at = TABLE_COLUMNS.index(VALUE_COLUMNS[-1]) + 1
    return [*TABLE_COLUMNS[:at], *extra, *TABLE_COLUMNS[at:]]


def group_label(variant: str, segs: str, walks: str = "levels") -> str:
    """``"default"`` for the published rows' variant, SEG set and walk rule (TS2's levels), else ``"variant V, SEGs
    S"`` (with ``", walks along edges"`` for numbers computed along a built dir's edges, ``--walks edges``: never
    ranked with numbers computed by levels)."""
    if variant == DEFAULT_VARIANT and segs == DEFAULT_SEGS and walks == "levels":
        return "default"
    return f"variant {variant}, SEGs {segs}" + (", walks along edges" if walks == "edges" else "")


def build_leaderboard(community: Sequence[dict], published: Sequence[dict] = (), *,
                      rejected: Sequence[Rejected] = (), source: str = "", notes: Sequence[str] = (),
                      sort_by: str = "rank") -> Leaderboard:
    """Group the rows by (variant, SEG set, walk rule), the default group first (then by label), rank each group by
    ``sort_by`` average (best first; ties keep published before community, then name order) and number them; an
    incomplete row (:func:`is_complete`) goes to :data:`INCOMPLETE_GROUP`, last, unnumbered (``#`` None).

    Raises:
        ParameterError: ``sort_by`` is not one of rank, sep, delta.
    """
    if sort_by not in META_METRICS:
        raise ParameterError("{sort_by} must be one of {choices}, got {value!r}", choices=", ".join(META_METRICS),
                             value=sort_by)
    key = f"{sort_by}_avg"
    groups: dict[str, list[dict]] = {}
    for row in [*published, *community]:
        label = group_label(row["variant"], row["segs"], row.get("walks") or "levels") if is_complete(row) \
            else INCOMPLETE_GROUP
        groups.setdefault(label, []).append(row)
    ordered = sorted(groups, key=lambda g: (g == INCOMPLETE_GROUP, g != "default", g))
    rows = []
    for label in ordered:
        members = sorted(groups[label], key=lambda r: (r.get(key) is None, -(r.get(key) or 0.0)))
        for position, row in enumerate(members, start=1):
            rows.append({column: row.get(column) for column in TABLE_COLUMNS}
                        | {k: v for k, v in row.items() if is_value_column(k) and k not in VALUE_COLUMNS}
                        | {"group": label, "#": None if label == INCOMPLETE_GROUP else position})
    return Leaderboard(rows=rows, rejected=list(rejected), source=source, notes=list(notes), sort_by=sort_by)


def community_leaderboard(submissions: str | os.PathLike, *, data_dir: str | None = None, metadata=None,
                          published: bool = True, sort_by: str = "rank", verify: Callable | None = None,
                          cache_dir: str | os.PathLike | None = None, reproduction=None,
                          published_metadata=None) -> Leaderboard:
    """The leaderboard of ``submissions`` (a folder or ``OWNER/NAME[@REVISION]``,
    :func:`scorers.ts2.submission.hub.fetch_submissions`): every submission verified (:func:`read_submissions`;
    ``metadata``: the TS2 metadata to verify against, default the release's, found once:
    :class:`scorers.tables.release.ReleaseFileUnavailable` when it cannot be had, as nothing could be verified),
    beside the published rows (``published=False``: without them) read through :mod:`scorers.tables.release`
    (``data_dir`` / ``$TS2_DATA``, else the cache, else one verified download); when the release cannot be had, a
    note says so and the community rows are listed alone. The published metrics' names are reserved either way: a
    submission named like one is rejected. ``reproduction``: the published rows already computed (a
    :class:`scorers.ts2.reproduce.Reproduction`, e.g. the demo's), used as they are; ``published_metadata``: the
    ``metadata.csv`` they were computed on (default: the release's).

    Every submission is verified on ``metadata``, so its numbers are of that metadata's SEGs: when it is not the
    metadata of the published rows (another sha256, :func:`scorers.tables.comparable.published_mismatch`), the
    published rows are left out, with a note saying why; the submissions are then ranked among themselves.
    """
    source = fetch_submissions(submissions, cache_dir=cache_dir)
    if metadata is None and verify is None:  # one error when nothing could be verified, not one per submission
        from scorers.tables.release_download import path

        metadata = path("metadata.csv", data_dir, progress=False)
    notes, rows_published, taken = [], [], []
    from scorers.report.published import published_coverage

    if published and metadata is not None:  # submissions of other metadata are never ranked with the published rows
        from scorers.tables.comparable import metadata_basis, published_mismatch, release_basis

        theirs = release_basis(data_dir) if published_metadata is None else metadata_basis(published_metadata)
        left_out = published_mismatch(metadata_basis(metadata), theirs, what="the submissions")
        if left_out is not None:
            published = False
            notes.append(left_out)
    if published and reproduction is not None:
        rows_published = published_rows(reproduction, published_coverage(reproduction, data_dir))
        taken = list(reproduction.columns)
    elif published:
        from scorers.ts2.reproduce import released_reproduction
        from scorers.tables.release import ReleaseFileUnavailable

        try:
            reproduction = released_reproduction(data_dir, progress=False)
        except (ReleaseFileUnavailable, OSError, ValueError) as error:
            notes.append(f"the published rows are not listed: the TS2 release tables are not available "
                         f"({printable(_first_line(error), 200)})")
        else:
            rows_published = published_rows(reproduction, published_coverage(reproduction, data_dir))
            taken = list(reproduction.columns)
    with plain_files(source) as folder:
        from scorers.report.published import RELEASED_COLUMNS

        taken = list(dict.fromkeys([*RELEASED_COLUMNS, *taken]))  # reserved, listed or not
        copies = {d: c for c, d in getattr(reproduction, "fingerprints", {}).items()} if published and reproduction \
            is not None else {}
        community, rejected = read_submissions(folder, verify=verify, metadata=metadata, taken=taken,
                                               refused=source.refused, fingerprints=copies)
    return build_leaderboard(community, rows_published, rejected=rejected, source=source.describe(), notes=notes,
                             sort_by=sort_by)


# ----------------------------------------------------------------------------- text


def _cell(value, column: str) -> str:
    if column in VALUE_COLUMNS:
        return "-" if value is None else f"{value:.1f}"
    if column == "#" and value is None:
        return "-"
    return "" if value is None else str(value)


#: the columns the text shows (the CSV and JSON have all of :data:`TABLE_COLUMNS`)
TEXT_COLUMNS = ("#", "name", "source", "verified_by", "rank_avg", "sep_avg", "delta_avg")
_HEADINGS = {"verified_by": "verified by", "rank_avg": "rank", "sep_avg": "sep", "delta_avg": "delta"}


def leaderboard_text(board: Leaderboard) -> str:
    """One block per group (``== default ==``, ``== variant official, SEGs 0-99 (not ranked with the default) ==``),
    the averages in % (0.1); then ``rejected (N):`` with one line each; then the notes."""
    lines = [f"submissions: {board.source}", "values in % (averages over SEGs; the JSON gives fractions, the CSV "
                                             "all twelve values)"]
    groups: dict[str, list[dict]] = {}
    for row in board.rows:
        groups.setdefault(row["group"], []).append(row)
    for label, rows in groups.items():
        title = label if label in ("default", INCOMPLETE_GROUP) else f"{label} (not ranked with the default)"
        shown = TEXT_COLUMNS + (("variant", "segs", "coverage") if label == INCOMPLETE_GROUP else ())
        cells = [[_HEADINGS.get(c, c) for c in shown]]
        cells += [[_cell(row[c], c) for c in shown] for row in rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(shown))]
        lines += ["", f"== {title} =="]
        if label == INCOMPLETE_GROUP:
            lines.append("images of their SEGs without a finite score: listed with their coverage, never ranked")
        for r in cells:
            lines.append("  ".join(v.rjust(w) if i in (0, 4, 5, 6) else v.ljust(w)
                                   for i, (v, w) in enumerate(zip(r, widths))).rstrip())
    if not board.rows:
        lines += ["", "no rows"]
    repaired = [r for r in board.rows if r["group"] != INCOMPLETE_GROUP and "stray quotes" in str(r["coverage"])]
    lines += [f"coverage of {r['name']}: {r['coverage']}" for r in repaired]
    lines += ["", f"rejected ({len(board.rejected)}):" if board.rejected else "rejected: none"]
    lines += [f"  {r.folder}: {r.reason}" for r in board.rejected]
    lines += [f"note: {note}" for note in board.notes]
    return "\n".join(lines)
