"""The options that turn score tables into TS2 meta-metrics, declared once: :func:`~scorers.ts2.meta_from_tables.
meta_from_tables`, :func:`~scorers.ts2.reproduce.reproduce_table`, :func:`scorers.report.write_report` and
:func:`scorers.report.card.build_cards` take ``options=MetaOptions(...)`` (``ts2 meta``, ``ts2 reproduce``, ``ts2
report``, ``ts2 card``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

__all__ = ["MetaOptions"]


@dataclass(frozen=True)
class MetaOptions:
    """How per-image scores become rank / sep / delta.

    * ``seg_subset``: the SEGs evaluated: ``"default"`` (SEGs 0-163, :data:`scorers.stats.graph.DEFAULT_SEG_IDS`),
      ``"all"`` / None, a range string or SEG ids (:func:`scorers.stats.graph.resolve_seg_subset`);
    * ``variant``: the meta-metric variant (:class:`scorers.stats.meta.TS2Evaluator`: ``paper``, ``official``...);
    * ``n_bootstrap``, ``confidence``, ``seed``: bootstrap intervals over SEGs (0 resamples: none);
    * orientation: ``lower_is_better`` (columns whose lower scores are better; :func:`~scorers.report.card.
      build_cards` reads metric names) and ``higher_is_better`` (a mapping, names or a bool), the rest as
      :func:`scorers.stats.orientation.resolve_orientation` decides;
    * reading the tables: ``clean_quotes`` (strip stray quote characters from numeric cells), ``on`` (the key
      columns of the join; default ``seg_id`` + ``file_name`` / ``image_id`` when a table has them) and
      ``lacking_keys_by_position`` (a table without keys is paired by row position, with a note, instead of refused);
    * ``by_error_type``: also rank / sep / delta over the walks along edges of one error type
      (:mod:`scorers.stats.error_type_walks`); needs metadata with ``errors`` and ``error_types`` (a data dir built by
      ``ts2 seg build``) and the ``paper`` variant;
    * ``walks``: the walk rule (:data:`scorers.stats.graph.WALK_RULES`): ``"levels"`` (default: TS2's rule, one node
      per error level, the official evaluators', so numbers stay comparable with the release) or ``"edges"`` (the
      built SEGs' own edges, read from ``segs_file``: default the ``segs.json`` beside the metadata file;
      :func:`scorers.tables.segs_file.edges_for_walks`). ``segs_file`` with ``"levels"`` changes no number: the
      report's graph figure draws its edges.
    """

    seg_subset: Iterable[int] | str | None = "default"
    variant: str = "paper"
    n_bootstrap: int = 0
    confidence: float = 0.95
    seed: int = 0
    lower_is_better: Iterable[str] = ()
    higher_is_better: Mapping[str, bool] | Iterable[str] | bool | None = None
    clean_quotes: bool = False
    on: Sequence[str] | None = None
    lacking_keys_by_position: bool = False
    by_error_type: bool = False
    walks: str = "levels"
    segs_file: str | None = None
