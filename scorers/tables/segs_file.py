"""A built data dir's ``segs.json`` (written by ``ts2 seg build``, :mod:`scorers.ts2.seg.build`) read back for what
the rest of the toolkit needs of it: each SEG's edges, for the ``"edges"`` walk rule
(:data:`scorers.stats.graph.WALK_RULES`) and for drawing the built graph.

``segs.json`` is one JSON document: ``{"format": "ts2-segs/1", ..., "segs": [{"seg_id": 0, "nodes": [...], "edges":
[{"from": "0", "to": "1a", "error": "dog"}, ...]}, ...]}``; it lies beside the dir's ``metadata.csv``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from scorers.errors import ParameterError

__all__ = ["SEGS_FILE", "edges_for_walks", "find_segs_file", "read_seg_edges", "segs_file_beside"]

#: the file name of a built data dir's SEG graphs
SEGS_FILE = "segs.json"


def segs_file_beside(metadata: str | os.PathLike) -> Path:
    """Where a built data dir keeps its ``segs.json``: beside ``metadata`` (its ``metadata.csv``)."""
    return Path(metadata).parent / SEGS_FILE


def read_seg_edges(path: str | os.PathLike) -> dict[int, list[tuple[str, str]]]:
    """``{seg_id: [(from label, to label), ...]}`` of every SEG in ``segs.json`` at ``path`` (edges in file order).

    Raises
    ------
    FileNotFoundError
        No file at ``path``.
    ValueError
        Not JSON, or not the layout ``ts2 seg build`` writes; one line naming the file and what is wrong.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "segs.json"
    >>> _ = file.write_text(json.dumps({"format": "ts2-segs/1", "segs": [{"seg_id": 3, "nodes": [],
    ...     "edges": [{"from": "0", "to": "1a", "error": "dog"}, {"from": "1a", "to": "2", "error": "red"}]}]}))
    >>> read_seg_edges(file)
    {3: [('0', '1a'), ('1a', '2')]}
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON document ({error})") from None
    segs = payload.get("segs") if isinstance(payload, dict) else None
    if not isinstance(segs, list):
        raise ValueError(f"{path}: no \"segs\" list; not the segs.json that ts2 seg build writes")
    out: dict[int, list[tuple[str, str]]] = {}
    for k, seg in enumerate(segs):
        seg_id = seg.get("seg_id") if isinstance(seg, dict) else None
        edges = seg.get("edges") if isinstance(seg, dict) else None
        if isinstance(seg_id, bool) or not isinstance(seg_id, int) or not isinstance(edges, list):
            raise ValueError(f"{path}: segs[{k}] needs an integer \"seg_id\" and an \"edges\" list")
        if seg_id in out:
            raise ValueError(f"{path}: SEG {seg_id} is listed twice")
        pairs = []
        for j, edge in enumerate(edges):
            if not isinstance(edge, dict) or not isinstance(edge.get("from"), str) or not isinstance(edge.get("to"),
                                                                                                       str):
                raise ValueError(f"{path}: SEG {seg_id}: edges[{j}] needs text \"from\" and \"to\" node labels")
            pairs.append((edge["from"], edge["to"]))
        out[seg_id] = pairs
    return out


def find_segs_file(walks: str, *, metadata: object = None, segs_file: str | os.PathLike | None = None) -> Path | None:
    """The ``segs.json`` a walk rule reads: None for ``"levels"`` (TS2's rule); for ``"edges"`` ``segs_file``, by
    default the one beside ``metadata`` (a path; a frame has no folder, so pass ``segs_file``). A cheap check, run
    before any table is read.

    Raises
    ------
    ParameterError
        An unknown rule, or ``"edges"`` with no ``segs.json`` there: one line naming the file looked for.
    """
    from scorers.stats.graph import check_walks

    if check_walks(walks) == "levels":
        return None
    if segs_file is None:
        if not isinstance(metadata, (str, os.PathLike)):
            raise ParameterError("{walks='edges'} reads the SEGs' edges from a built data dir's segs.json: pass "
                                 "{segs_file} (the metadata given is a table, not a file in a folder)")
        segs_file = segs_file_beside(metadata)
    if not Path(segs_file).is_file():
        raise ParameterError("{walks='edges'} follows the edges of a built data dir's segs.json (ts2 seg build writes "
                             "it beside metadata.csv); there is none at {path}", path=str(segs_file))
    return Path(segs_file)


def edges_for_walks(walks: str, *, metadata: object = None, segs_file: str | os.PathLike | None = None
                    ) -> dict[int, list[tuple[str, str]]] | None:
    """The edges a walk rule needs: None for ``"levels"``; for ``"edges"`` those of :func:`find_segs_file`'s file.

    Raises
    ------
    ParameterError
        What :func:`find_segs_file` refuses.
    ValueError
        What :func:`read_seg_edges` refuses.
    """
    found = find_segs_file(walks, metadata=metadata, segs_file=segs_file)
    return None if found is None else read_seg_edges(found)
