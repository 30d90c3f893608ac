"""Score tables -> TS2 meta-metrics: read, join on keys, orient, evaluate. The one path from CSV files to results.

``ts2 meta``, ``ts2 reproduce`` (:func:`scorers.ts2.reproduce.reproduce_table`), ``ts2 report`` and ``ts2 score --meta``
all call :func:`meta_from_tables`; the flow is: paths (the CLI, through :mod:`scorers.tables.release` for defaults) ->
read (:mod:`scorers.tables.csv_tables` without pandas when every input is a plain CSV path, as ``ts2 meta`` and
``ts2 reproduce`` give them; else :mod:`scorers.tables.pandas_tables`) -> the one join (:mod:`scorers.tables.join`) and the
one reading of score cells (:func:`scorers.tables.columns.text_scores`) -> :func:`scorers.stats.orientation.resolve_orientation`
-> :class:`scorers.stats.meta.TS2Evaluator` -> results the CLI formats.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence, Union

import numpy as np

from scorers.errors import value_error
from scorers.stats.graph import resolve_seg_subset
from scorers.tables.join import Joined, join_scores
from scorers.stats.meta import TS2Evaluator, TS2Result
from scorers.stats.orientation import resolve_orientation
from scorers.ts2.options import MetaOptions

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["TableMeta", "meta_from_tables", "metadata_partitions"]

Table = Union[str, Path, "pd.DataFrame", Joined]

#: The unit of every meta-metric value this library returns and every JSON output writes (tables print %, labelled).
UNIT = "fraction"


@dataclass
class TableMeta:
    """What :func:`meta_from_tables` computed: ``results`` (``{column: TS2Result}``, fractions), the evaluated
    ``columns``, their ``orientation`` (``{column: higher_is_better}``), the raw (un-negated) per-image ``values`` in
    metadata order, ``segs`` (e.g. ``"0-163"``), ``pairing`` per source (``"keys (seg_id, file_name)"`` or ``"row
    position"``), ``sources`` (column -> table) and ``notes`` for the output (a row-position pairing always has one)."""

    results: dict[str, TS2Result]
    columns: list[str]
    orientation: dict[str, bool]
    values: dict[str, np.ndarray]
    segs: str
    pairing: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unit: str = UNIT
    sources: dict[str, str] = field(default_factory=dict)
    source_notes: dict[str, list[str]] = field(default_factory=dict)
    #: ``{column: {error type: ErrorTypeResult}}`` with ``options.by_error_type`` (else None)
    by_error_type: dict | None = None
    #: ``{column: Coverage}``: the images of the evaluated SEGs with a finite score (:mod:`scorers.stats.coverage`)
    coverage: dict = field(default_factory=dict)
    #: ``{column: sha256}`` of the scores over the evaluated SEGs (:func:`scorers.stats.coverage.score_fingerprint`)
    fingerprints: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """``ts2 meta --json``: ``{column: TS2Result.to_dict() + {"pairing", "unit"}}``."""
        out = {}
        for name, result in self.results.items():
            out[name] = result.to_dict()
            out[name]["unit"] = self.unit
            out[name]["pairing"] = self.pairing.get(self.sources.get(name, ""), "")
            out[name]["notes"] = list(self.source_notes.get(self.sources.get(name, ""), []))
            if name in self.coverage:
                out[name]["coverage"] = self.coverage[name].to_dict()
            if self.by_error_type is not None:
                out[name]["by_error_type"] = {t: r.to_dict() for t, r in self.by_error_type[name].items()}
        return out


@dataclass
class ReadTables:
    """What the reading of :func:`meta_from_tables` hands back, from either reader (:func:`_light`, without pandas, or
    :func:`_pandas_path`): the metadata's ``seg_ids`` and ``nodes`` (file order) and ``partitions`` (``{seg_id:
    partition}`` from its file, or None: TS2's id ranges), the resolved SEG ``subset``, ``origin`` (column -> source),
    ``pairing`` per source, ``notes`` and ``source_notes``; the score columns either as ``values`` (the light path:
    ``{column: scores}``, already read) or as the joined ``frame`` (the pandas path: read per wanted column by
    :func:`scorers.tables.pandas_tables.column_scores`)."""

    seg_ids: np.ndarray
    nodes: np.ndarray
    partitions: dict[int, str] | None
    subset: list[int] | None
    origin: dict[str, str]
    pairing: dict[str, str]
    notes: list[str]
    source_notes: dict[str, list[str]]
    values: dict[str, np.ndarray] | None = None
    frame: pd.DataFrame | None = None

    @property
    def available(self) -> list[str]:
        """The score columns read, in order."""
        return list(self.values) if self.values is not None else list(self.frame.columns)

    def scores(self, column: str, *, clean_quotes: bool = False) -> np.ndarray:
        """The per-image scores of ``column`` in metadata order."""
        if self.values is not None:
            return self.values[column]
        from scorers.tables.pandas_tables import column_scores

        return column_scores(self.frame, column, clean_quotes=clean_quotes)


def _is_path(item) -> bool:
    return isinstance(item, (str, Path))


def _sources(scores) -> list[tuple[str | None, object]]:
    if _is_path(scores) or not isinstance(scores, Sequence):  # one path or one frame
        scores = [scores]
    return [item if isinstance(item, tuple) else (None, item) for item in scores]


def _light(scores, metadata, columns, seg_subset, clean_quotes, max_columns) -> ReadTables | None:
    """The pandas-free reading of :mod:`scorers.tables.csv_tables` when every input is a path it takes (its
    :class:`ReadTables` holds ``values``), or None (the pandas path decides)."""
    from scorers.tables.csv_tables import light_metadata, light_scores

    sources = _sources(scores)
    if not _is_path(metadata) or not sources or not all(_is_path(table) for _, table in sources):
        return None
    light = light_metadata(metadata)
    if light is None:
        return None
    try:
        subset = resolve_seg_subset(seg_subset, light.seg_id, partitions_from_file=light.partitions is not None)
    except ValueError:  # the pandas path raises it, after any error of reading the score tables
        return None
    values: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    pairing: dict[str, str] = {}
    notes: list[str] = []
    source_notes: dict[str, list[str]] = {}
    for source, table in sources:
        source = source or str(table)
        read = light_scores(table, light, columns=columns, required_segs=subset, clean_quotes=clean_quotes,
                            max_columns=max_columns)
        if read is None or any(name in values for name in read[0]):
            return None
        pairing[source] = read[1]
        if read[2]:
            notes.append(f"{Path(source).name}: {read[2]}")
            source_notes[source] = [notes[-1]]
        values.update(read[0])
        origin.update(dict.fromkeys(read[0], source))
    return ReadTables(seg_ids=light.seg_id, nodes=light.node, partitions=light.partitions, subset=subset,
                      origin=origin, pairing=pairing, notes=notes, source_notes=source_notes, values=values)


def _tables(scores, columns) -> list[tuple[str, pd.DataFrame | Joined]]:
    import pandas as pd

    from scorers.tables.pandas_tables import read_score_table

    if isinstance(scores, (str, Path, pd.DataFrame, Joined)):
        scores = [scores]
    out = []
    for item in scores:
        source, table = item if isinstance(item, tuple) else (None, item)
        if isinstance(table, (pd.DataFrame, Joined)):
            out.append((source or "scores", table))
        else:
            wanted = [c for c in columns or () if c]
            out.append((source or str(table), read_score_table(table, wanted or None)))
    return out


def meta_from_tables(
    scores: Table | Sequence[Table | tuple[str, Table]],
    metadata: str | Path | pd.DataFrame,
    *,
    columns: Iterable[str] | None = None,
    paper: pd.DataFrame | None = None,
    options: MetaOptions = MetaOptions(),
    progress: Callable[[int, int], None] | None = None,
) -> TableMeta:
    """rank/sep/delta of the score columns of one or more per-image score tables (paths or frames).

    Each table is joined with ``metadata`` by :func:`scorers.tables.join.join_scores` (on ``seg_id`` + ``file_name`` /
    ``image_id`` when it has them, else by row position with a note); a column found in two tables is an error naming
    both; a :class:`~scorers.tables.join.Joined` (a table the caller already joined with this ``metadata``, covering the
    SEGs evaluated: the demo's checked upload) is taken as joined. ``columns`` picks the score columns (default: the
    paper's columns in Table 2 order, then the rest as given).
    ``options`` (:class:`~scorers.ts2.options.MetaOptions`): the SEGs (``"default"``: 0-163; a keyed table may leave
    out SEGs outside them), the variant, the bootstrap, the orientation
    (:func:`scorers.stats.orientation.resolve_orientation`: ``lower_is_better``, ``higher_is_better``, the paper, the
    release's known facts), ``walks`` (``"edges"``: along the ``segs.json`` beside ``metadata``, or
    ``segs_file``), ``clean_quotes``, and ``on``, the keys: a table without them is an error, or with
    ``lacking_keys_by_position`` paired by row position (``ts2 report``).
    """
    seg_subset, clean_quotes, on = options.seg_subset, options.clean_quotes, options.on
    if options.by_error_type and options.variant != "paper":
        from scorers.errors import ParameterError

        raise ParameterError("{by_error_type=True} computes the paper variant; {variant=!r} is not supported with it",
                             variant=options.variant)
    from scorers.tables.segs_file import edges_for_walks

    edges = edges_for_walks(options.walks, metadata=metadata, segs_file=options.segs_file)  # before any reading
    if options.by_error_type:  # before any score is read: on the release this is the whole answer
        # the metadata is read once, here: the scores are joined with this frame (the pandas path)
        metadata, error_keys, label_types = _error_types(metadata)
    lacking_keys_by_position = options.lacking_keys_by_position
    chosen = list(columns) if columns else None
    light = None
    if on is None and not lacking_keys_by_position:
        from scorers.tables.columns import MAX_METRIC_COLUMNS

        light = _light(scores, metadata, chosen, seg_subset, clean_quotes, MAX_METRIC_COLUMNS)
    read = light if light is not None else _pandas_path(scores, metadata, chosen, seg_subset, on,
                                                         lacking_keys_by_position)
    available = read.available
    if chosen:
        unknown = [c for c in chosen if c not in available]
        if unknown:
            from scorers.tables.columns import preview_names

            raise ValueError(f"score column(s) {unknown[:5]} not found; available: {preview_names(available)}")
        wanted = chosen
    else:
        order = [c for c in dict.fromkeys(paper["column"]) if c in available] if paper is not None else []
        wanted = order + [c for c in available if c not in order]
    values = {c: read.scores(c, clean_quotes=clean_quotes) for c in wanted}
    orientation = resolve_orientation(wanted, lower_is_better=options.lower_is_better,
                                      higher_is_better=options.higher_is_better, paper=paper)
    evaluator = TS2Evaluator(read.seg_ids, read.nodes, partitions=read.partitions, seg_subset=read.subset,
                             walks=options.walks, edges=edges)
    results = evaluator.evaluate_many(values, higher_is_better=orientation, variant=options.variant,
                                      n_bootstrap=options.n_bootstrap, confidence=options.confidence,
                                      seed=options.seed, progress=progress)
    segs = results[wanted[0]].segs
    from scorers.stats.coverage import score_coverage, score_fingerprint

    evaluated = {c: results[c].rank.seg_ids.tolist() for c in wanted}
    out = TableMeta(results=results, columns=wanted, orientation=orientation, values=values, segs=segs,
                    pairing=read.pairing, notes=read.notes, sources=read.origin,
                    source_notes=read.source_notes,
                    coverage={c: score_coverage(values[c], read.seg_ids, evaluated[c]) for c in wanted},
                    fingerprints={c: score_fingerprint(values[c], read.seg_ids, evaluated[c]) for c in wanted})
    if options.by_error_type:
        from scorers.stats.error_type_walks import error_type_meta
        from scorers.stats.error_sets import KEY_SEPARATOR

        first = results[wanted[0]].rank
        out.by_error_type = error_type_meta(
            read.seg_ids, error_keys, label_types,
            {c: values[c] if orientation[c] else -values[c] for c in wanted},
            score_std={c: results[c].score_std for c in wanted},
            partitions=dict(zip(first.seg_ids.tolist(), first.partitions.tolist())),
            segs=first.seg_ids.tolist(), separator=KEY_SEPARATOR, n_bootstrap=options.n_bootstrap,
            confidence=options.confidence, seed=options.seed)
    return out


def _error_types(metadata):
    """``(frame, per-image error sets, {(seg_id, label): type})`` of a built metadata (path or frame): ``frame`` is the
    one reading of the file, which the scores are joined with."""
    import pandas as pd

    from scorers.tables.pandas_tables import read_metadata
    from scorers.tables.error_columns import metadata_error_types

    frame = metadata if isinstance(metadata, pd.DataFrame) else read_metadata(metadata)
    source = "metadata" if isinstance(metadata, pd.DataFrame) else str(metadata)
    return (frame, *metadata_error_types(frame, source))


def _pandas_path(scores, metadata, chosen, seg_subset, on, lacking_keys_by_position) -> ReadTables:
    """Read and join with pandas (:mod:`scorers.tables.pandas_tables`, :func:`scorers.tables.join.join_scores`): every rule and
    error message lives on this path. Its :class:`ReadTables` holds the joined ``frame``."""
    import pandas as pd

    from scorers.tables.pandas_tables import read_metadata, score_columns

    if not isinstance(metadata, pd.DataFrame):
        metadata = read_metadata(metadata)
    tables = _tables(scores, chosen)
    if not tables:
        raise ValueError("no score tables given")
    partitions, from_file = metadata_partitions(metadata)
    subset = resolve_seg_subset(seg_subset, metadata["seg_id"], partitions_from_file=from_file)
    combined: dict[str, pd.Series] = {}
    origin: dict[str, str] = {}
    pairing: dict[str, str] = {}
    notes: list[str] = []
    source_notes: dict[str, list[str]] = {}
    for source, table in tables:
        if isinstance(table, Joined):  # joined by the caller, with this metadata
            joined, table = table, table.frame
        else:
            try:
                joined = join_scores(table, metadata, on=on, required_segs=subset,
                                     lacking_keys_by_position=lacking_keys_by_position)
            except ValueError as error:
                raise value_error("{prefix}{error}", prefix=f"{source}: " if source != "scores" else "",
                                  error=error) from None
        pairing[source] = joined.pairing
        if joined.note:
            notes.append(f"{Path(source).name}: {joined.note}" if source != "scores" else joined.note)
            source_notes[source] = [notes[-1]]
        names = score_columns(joined.frame)
        if not names:
            raise ValueError(f"{source}: no score columns (all columns are image keys: {list(table.columns)})")
        for name in names:
            if name in combined:
                raise ValueError(f"score column {name!r} appears in both {origin[name]} and {source}; rename one")
            combined[name] = joined.frame[name].reset_index(drop=True)
            origin[name] = source
    return ReadTables(seg_ids=metadata["seg_id"].to_numpy(), nodes=metadata["node"].to_numpy(), partitions=partitions,
                      subset=subset, origin=origin, pairing=pairing, notes=notes, source_notes=source_notes,
                      frame=pd.DataFrame(combined))


def metadata_partitions(metadata: pd.DataFrame) -> tuple[dict[int, str] | None, bool]:
    """``({seg_id: partition}, from_file)`` of a :func:`scorers.tables.pandas_tables.read_metadata` frame: its
    ``partition`` column when it has one (``from_file`` when that column came from the file: a built data dir), else
    ``(None, False)``: TS2's id ranges."""
    from scorers.stats.graph import file_partitions
    from scorers.tables.pandas_tables import PARTITIONS_FROM_FILE

    if "partition" not in metadata.columns:
        return None, False
    partitions = file_partitions(metadata["seg_id"].to_numpy(), metadata["partition"].to_numpy(dtype=str))
    return partitions, bool(metadata.attrs.get(PARTITIONS_FROM_FILE, False))
