"""Structure of TS2 semantic error graphs (SEGs): node labels, error counts, partitions, walks, node pairs.

Pure Python + NumPy so that everything downstream (meta-metrics, dataset helpers, reports, the demo) shares one
definition of "what a SEG looks like".  A SEG is one prompt whose images sit on nodes labelled ``0``, ``0b``, ``1a``,
``2``...; the digits of a label are the node's error count (how many semantic errors its images carry).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping, Sequence, Union

import numpy as np

from scorers.errors import ParameterError

__all__ = [
    "DEFAULT_SEG_IDS",
    "NODE_LABEL",
    "PARTITIONS",
    "SEG",
    "WALK_RULES",
    "attach_edges",
    "build_segs",
    "check_walks",
    "default_partition",
    "edge_pairs",
    "edge_walks",
    "error_count",
    "file_partitions",
    "format_seg_range",
    "node_pairs",
    "paper_era_walks",
    "parse_seg_range",
    "partition_of",
    "resolve_seg_subset",
    "summary_keys",
    "walks",
]

#: A node label: the error count's digits followed by an optional letter suffix (``0``, ``1a``, ``0b``, ``12c``).
NODE_LABEL = re.compile(r"^\s*(\d+)([A-Za-z]*)\s*$")

#: TS2's partitions in reporting order.
PARTITIONS = ("synth", "nat", "real")

PartitionSpec = Union[None, Mapping[int, str], Callable[[int], str]]

#: The default SEG set of ``ts2 meta``, ``ts2 reproduce``, ``ts2 report``, the leaderboard and the demo: SEGs 0-163,
#: the set the paper's Table 2 averages over (the release's last SEG, 164, is not in it). Every output states the SEGs
#: it used; ``--segs all`` (``seg_subset=None`` in Python) evaluates every SEG of the input.
DEFAULT_SEG_IDS = tuple(range(164))

#: The walk rules, default first. ``"levels"``: TS2's rule, one node per error level (the official evaluators' and the
#: release's; :func:`walks`, :func:`node_pairs`). ``"edges"``: the SEG's own edges (a built data dir's ``segs.json``;
#: :func:`edge_walks`, :func:`edge_pairs`). They differ only where nodes of one level do not all join every node of
#: the next (error sets that do not nest: ``0 -> 1a -> 2a`` and ``0 -> 1b -> 2b``).
WALK_RULES = ("levels", "edges")


def error_count(label: object, *, position: int | None = None) -> int:
    """Error count of a node label (its digits): ``"1a" -> 1``, ``"0" -> 0``, ``2 -> 2``.

    Raises ``ValueError`` naming the label (and ``position`` when given) if it is not digits + optional letters.

    Raises:
        ValueError: ``label`` is not digits + optional letters (a float must be a whole number); the message names the
            label, and ``position`` when given.

    Examples:
        >>> error_count("1a"), error_count("0"), error_count(2), error_count(3.0)
        (1, 0, 2, 3)
        >>> error_count("a1", position=4)
        Traceback (most recent call last):
        ...
        ValueError: position 4: node label 'a1' is not a TS2 node label (digits + optional letters)
    """
    text = str(label)
    if isinstance(label, float):
        if label != label or not float(label).is_integer():
            raise ValueError(_where(position) + f"node label {label!r} is not a TS2 node label (digits + optional letters)")
        text = str(int(label))
    match = NODE_LABEL.match(text)
    if match is None:
        raise ValueError(_where(position) + f"node label {label!r} is not a TS2 node label (digits + optional letters)")
    return int(match.group(1))


def default_partition(seg_id: int) -> str:
    """TS2's partition of a SEG id: ``< 111`` synth, ``111-135`` nat, ``>= 136`` real.

    Raises:
        ValueError: ``seg_id`` is not a number ``int()`` accepts (``TypeError`` for objects it cannot take at all).

    Examples:
        >>> [default_partition(s) for s in (0, 110, 111, 135, 136)]
        ['synth', 'synth', 'nat', 'nat', 'real']
    """
    seg_id = int(seg_id)
    if seg_id < 111:
        return "synth"
    if seg_id < 136:
        return "nat"
    return "real"


def partition_of(seg_id: int, partitions: PartitionSpec = None) -> str:
    """Partition name of ``seg_id`` under ``partitions`` (a mapping, a callable, or None for TS2's default).

    Raises:
        ValueError: ``partitions`` is a mapping without ``seg_id``.

    Examples:
        >>> partition_of(120), partition_of(7, {7: "dev"}), partition_of(7, lambda s: "odd" if s % 2 else "even")
        ('nat', 'dev', 'odd')
        >>> partition_of(8, {7: "dev"})
        Traceback (most recent call last):
        ...
        ValueError: SEG id 8 has no entry in the partition mapping
    """
    if partitions is None:
        return default_partition(seg_id)
    if callable(partitions):
        return str(partitions(int(seg_id)))
    try:
        return str(partitions[int(seg_id)])
    except KeyError:
        raise ValueError(f"SEG id {seg_id} has no entry in the partition mapping") from None


def file_partitions(seg_ids: Sequence[object], values: Sequence[object]) -> dict[int, str]:
    """The partition of each SEG from a per-image ``partition`` column (a built data dir's ``metadata.csv``): a
    mapping for :func:`partition_of` / ``PartitionSpec``. Whole arrays, no loop over images.

    When metadata has a ``partition`` column, the meta-metrics, report and card are per partition by its values;
    without it (the release) :func:`default_partition` splits SEGs by id range.

    Raises:
        ValueError: lengths differ, a cell is empty, or a SEG has two partition values; the message names the
            position (0-based row) and the SEG.

    Examples:
        >>> file_partitions([0, 0, 5, 7], ["dev", "dev", "test", "dev"])
        {0: 'dev', 5: 'test', 7: 'dev'}
        >>> file_partitions([0, 0], ["dev", "test"])
        Traceback (most recent call last):
        ...
        ValueError: position 1: SEG 0 has partition 'test' here but 'dev' at position 0; a SEG has one partition
    """
    ids = np.asarray([int(s) for s in seg_ids] if not isinstance(seg_ids, np.ndarray) else seg_ids, dtype=np.int64)
    text = np.char.strip(np.asarray(values, dtype=str)) if len(values) else np.asarray([], dtype=str)
    if ids.size != text.size:
        raise ValueError(f"seg_ids has {ids.size} entries but partitions has {text.size}; they must align per image")
    empty = np.flatnonzero(text == "")
    if empty.size:
        k = int(empty[0])
        raise ValueError(f"position {k}: SEG {ids[k]} has an empty partition")
    segs, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    differs = np.flatnonzero(text != text[first][inverse])
    if differs.size:
        k = int(differs[0])
        j = int(first[inverse[k]])
        raise ValueError(f"position {k}: SEG {ids[k]} has partition {str(text[k])!r} here but {str(text[j])!r} at "
                         f"position {j}; "
                         "a SEG has one partition")
    return dict(zip(segs.tolist(), text[first].tolist()))


def summary_keys(partitions: Iterable[str]) -> tuple[str, ...]:
    """The summary columns of a table of meta-metrics over SEGs in ``partitions``: ``avg, synth, nat, real`` when
    every partition is one of TS2's (the release, or a subset of it: absent ones show as blanks, as Table 2 does),
    else ``avg`` and the partitions given (a built data dir's own), in order of first appearance.

    Raises:
        TypeError: ``partitions`` is not iterable.

    Examples:
        >>> summary_keys(["synth"]), summary_keys(["dev", "test", "dev"])
        (('avg', 'synth', 'nat', 'real'), ('avg', 'dev', 'test'))
    """
    present = tuple(dict.fromkeys(str(p) for p in partitions if str(p) != "avg"))
    return ("avg",) + PARTITIONS if set(present) <= set(PARTITIONS) else ("avg",) + present


def walks(errors: Sequence[int]) -> list[tuple[int, ...]]:
    """All walks of a SEG, as tuples of node positions.

    ``errors[k]`` is the error count of node ``k``. A walk picks one node per error level present, in increasing error
    order (the cartesian product over levels): two error-0 heads and two error-1 nodes give four walks.

    Raises:
        ValueError: an error count that ``int()`` refuses (``TypeError`` for objects it cannot take at all).

    Examples:
        Two heads (positions 0, 1), two error-1 nodes (2, 3) and one error-2 node (4) give 2 x 2 x 1 walks:

        >>> walks([0, 0, 1, 1, 2])
        [(0, 2, 4), (0, 3, 4), (1, 2, 4), (1, 3, 4)]
        >>> walks([])
        []
    """
    by_level: dict[int, list[int]] = {}
    for position, err in enumerate(errors):
        by_level.setdefault(int(err), []).append(position)
    levels = [by_level[level] for level in sorted(by_level)]
    return list(itertools.product(*levels)) if levels else []


def paper_era_walks(errors: Sequence[int]) -> list[tuple[int, ...]]:
    """The walks of the code behind the paper's Table 2 (``variant="published"``), as tuples of node positions.

    A walk starts at each error-0 node and is then extended level by level over the sorted distinct error levels,
    level 0 included, appending every node of the level in turn. So every walk holds two error-0 nodes: its head
    twice when the SEG has one head, or an ordered pair of heads (``(a, a)``, ``(a, b)``, ``(b, a)``, ``(b, b)``)
    when it has several. One head ``h`` and error-1 nodes ``x``, ``y`` give ``(h, h, x)`` and ``(h, h, y)``.
    :func:`walks` is the spec's definition (one node per level, no duplicate head).

    Raises:
        ValueError: an error count that ``int()`` refuses.

    Examples:
        One head (position 0) and two error-1 nodes: the head is visited twice in each walk.

        >>> paper_era_walks([0, 1, 1])
        [(0, 0, 1), (0, 0, 2)]

        Two heads (0, 1) and one error-1 node: every ordered pair of heads.

        >>> paper_era_walks([0, 0, 1])
        [(0, 0, 2), (0, 1, 2), (1, 0, 2), (1, 1, 2)]
    """
    by_level: dict[int, list[int]] = {}
    for position, err in enumerate(errors):
        by_level.setdefault(int(err), []).append(position)
    heads = by_level.get(0, [])
    levels = [by_level[level] for level in sorted(by_level)]
    return [(head,) + rest for head in heads for rest in itertools.product(*levels)]


def node_pairs(errors: Sequence[int], *, adjacent_only: bool = False) -> list[tuple[int, int]]:
    """Pairs ``(lower, higher)`` of node positions whose error counts differ, lower-error node first.

    With ``adjacent_only`` only pairs whose error counts differ by exactly one (the paper's delta).

    Raises:
        ValueError: an error count that ``int()`` refuses.

    Examples:
        Error counts 0, 1, 1, 2: the two error-1 nodes (positions 1 and 2) never pair with each other, and only
        ``adjacent_only`` drops the 0-2 pair:

        >>> node_pairs([0, 1, 1, 2])
        [(0, 1), (0, 2), (0, 3), (1, 3), (2, 3)]
        >>> node_pairs([0, 1, 1, 2], adjacent_only=True)
        [(0, 1), (0, 2), (1, 3), (2, 3)]
    """
    pairs = []
    for a, b in itertools.combinations(range(len(errors)), 2):
        ea, eb = int(errors[a]), int(errors[b])
        if ea == eb:
            continue
        lo, hi = (a, b) if ea < eb else (b, a)
        if adjacent_only and abs(ea - eb) != 1:
            continue
        pairs.append((lo, hi))
    return pairs


def check_walks(walks: object) -> str:
    """``walks`` if it is one of :data:`WALK_RULES`, else a ``ParameterError`` naming the choices.

    Raises:
        ParameterError: an unknown rule.

    Examples:
        >>> check_walks("edges")
        'edges'
    """
    if walks not in WALK_RULES:
        raise ParameterError("{walks} must be one of {choices}, got {value!r}", choices=", ".join(WALK_RULES),
                             value=walks)
    return str(walks)


def edge_walks(errors: Sequence[int], edges: Iterable[tuple[int, int]]) -> list[tuple[int, ...]]:
    """The walks along a SEG's own edges, as tuples of node positions: every maximal directed path that starts at an
    error-0 node (node ``0`` of a built SEG), in depth-first order (edges in the order given).

    ``edges`` are ``(from, to)`` node positions, each adding errors (so no cycle). A head with no edge out is a walk of
    one node; a node no head reaches is on no walk.

    Raises:
        ValueError: an edge naming no node, or one that does not add errors.

    Examples:
        Error sets {}, {a}, {b}, {a, c}, {b, d} (positions 0-4) with the edges 0 -> 1 -> 3 and 0 -> 2 -> 4: two walks,
        where TS2's level rule (:func:`walks`) has four.

        >>> edge_walks([0, 1, 1, 2, 2], [(0, 1), (0, 2), (1, 3), (2, 4)])
        [(0, 1, 3), (0, 2, 4)]
        >>> walks([0, 1, 1, 2, 2])
        [(0, 1, 3), (0, 1, 4), (0, 2, 3), (0, 2, 4)]
    """
    children = _children(errors, edges)
    out: list[tuple[int, ...]] = []
    for head in [k for k, e in enumerate(errors) if int(e) == 0]:
        stack = [(head,)]
        while stack:  # depth-first; a SEG's graph is small
            path = stack.pop()
            nxt = children.get(path[-1], [])
            if not nxt:
                out.append(path)
            stack.extend(path + (child,) for child in reversed(nxt))
    return out


def edge_pairs(errors: Sequence[int], edges: Iterable[tuple[int, int]], *, adjacent_only: bool = False
               ) -> list[tuple[int, int]]:
    """Pairs ``(u, v)`` of node positions joined by a directed path along ``edges`` (``u`` reaches ``v``), sorted: the
    pairs of sep under the edge rule. ``adjacent_only``: those one error apart (the paper delta's: the edges).

    Raises:
        ValueError: an edge naming no node, or one that does not add errors.

    Examples:
        >>> edge_pairs([0, 1, 1, 2, 2], [(0, 1), (0, 2), (1, 3), (2, 4)])
        [(0, 1), (0, 2), (0, 3), (0, 4), (1, 3), (2, 4)]
        >>> edge_pairs([0, 1, 1, 2, 2], [(0, 1), (0, 2), (1, 3), (2, 4)], adjacent_only=True)
        [(0, 1), (0, 2), (1, 3), (2, 4)]
    """
    children = _children(errors, edges)
    pairs = set()
    for start in range(len(errors)):
        stack, seen = list(children.get(start, [])), set()
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if not adjacent_only or int(errors[node]) - int(errors[start]) == 1:
                pairs.add((start, node))
            stack.extend(children.get(node, []))
    return sorted(pairs)


def _children(errors: Sequence[int], edges: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for a, b in edges:
        a, b = int(a), int(b)
        if not (0 <= a < len(errors) and 0 <= b < len(errors)):
            raise ValueError(f"edge {a} -> {b} names a node position outside 0-{len(errors) - 1}")
        if int(errors[a]) >= int(errors[b]):
            raise ValueError(f"edge {a} -> {b} does not add errors (error count {errors[a]} -> {errors[b]})")
        if b not in children.setdefault(a, []):
            children[a].append(b)
    return children


@dataclass(frozen=True)
class SEG:
    """One semantic error graph: its nodes (sorted by error count, then label) and where its images are.

    ``members[k]`` holds the positions (into the caller's per-image arrays) of the images on node ``nodes[k]``.
    ``edges``: None (TS2's level rule: walks and pairs follow the error levels) or the SEG's own edges as ``(from,
    to)`` node positions (:func:`attach_edges`: walks and pairs follow them, :func:`edge_walks`, :func:`edge_pairs`).

    Examples:
        >>> seg = build_segs([5, 5, 5, 5], ["2", "1b", "0", "1a"])[0]
        >>> seg.seg_id, seg.partition, seg.nodes, seg.errors, seg.heads
        (5, 'synth', ('0', '1a', '1b', '2'), (0, 1, 1, 2), ('0',))
        >>> [m.tolist() for m in seg.members], seg.image_positions.tolist()
        ([[2], [3], [1], [0]], [2, 3, 1, 0])
        >>> seg.walks()
        [('0', '1a', '2'), ('0', '1b', '2')]
        >>> seg.pairs(adjacent_only=True)
        [('0', '1a'), ('0', '1b'), ('1a', '2'), ('1b', '2')]
    """

    seg_id: int
    partition: str
    nodes: tuple[str, ...]
    errors: tuple[int, ...]
    members: tuple[np.ndarray, ...]
    edges: tuple[tuple[int, int], ...] | None = None

    @property
    def walk_rule(self) -> str:
        """``"edges"`` when the SEG carries its own edges, else ``"levels"`` (:data:`WALK_RULES`)."""
        return "levels" if self.edges is None else "edges"

    def walk_positions(self) -> list[tuple[int, ...]]:
        """Walks as tuples of node positions: :func:`edge_walks` along ``edges``, else :func:`walks` by level."""
        return walks(self.errors) if self.edges is None else edge_walks(self.errors, self.edges)

    def pair_positions(self, *, adjacent_only: bool = False) -> list[tuple[int, int]]:
        """Node pairs as positions: :func:`edge_pairs` along ``edges``, else :func:`node_pairs` by level."""
        if self.edges is None:
            return node_pairs(self.errors, adjacent_only=adjacent_only)
        return edge_pairs(self.errors, self.edges, adjacent_only=adjacent_only)

    @property
    def image_positions(self) -> np.ndarray:
        """Positions of all images of the SEG, node by node."""
        return np.concatenate(self.members) if self.members else np.empty(0, dtype=np.int64)

    @property
    def heads(self) -> tuple[str, ...]:
        """Error-0 nodes (a SEG may have several)."""
        return tuple(n for n, e in zip(self.nodes, self.errors) if e == 0)

    def walks(self) -> list[tuple[str, ...]]:
        """Walks as tuples of node labels (see :func:`walks`, or :func:`edge_walks` with ``edges``)."""
        return [tuple(self.nodes[k] for k in walk) for walk in self.walk_positions()]

    def pairs(self, *, adjacent_only: bool = False) -> list[tuple[str, str]]:
        """Node-label pairs ``(lower-error, higher-error)`` (see :func:`node_pairs`, or :func:`edge_pairs` with
        ``edges``)."""
        return [(self.nodes[a], self.nodes[b]) for a, b in self.pair_positions(adjacent_only=adjacent_only)]


def attach_edges(segs: Iterable[SEG], edges: Mapping[int, Iterable[tuple[str, str]]]) -> list[SEG]:
    """The ``segs`` with their own edges (``{seg_id: [(from label, to label), ...]}``, e.g. a built data dir's
    ``segs.json`` read by :func:`scorers.tables.segs_file.read_seg_edges`): their walks and pairs then follow the edges
    (the ``"edges"`` rule of :data:`WALK_RULES`).

    Raises:
        ValueError: a SEG with no entry in ``edges``, an edge naming a node the SEG has no image on, or an edge that
            does not add errors; the message names the SEG and the edge.

    Examples:
        >>> seg = build_segs([0] * 5, ["0", "1a", "1b", "2a", "2b"])[0]
        >>> len(seg.walks()), attach_edges([seg], {0: [("0", "1a"), ("0", "1b"), ("1a", "2a"), ("1b", "2b")]})[0].walks()
        (4, [('0', '1a', '2a'), ('0', '1b', '2b')])
        >>> attach_edges([seg], {0: [("1a", "3")]})
        Traceback (most recent call last):
        ...
        ValueError: SEG 0: edge 1a -> 3 names node '3', which holds no image of the metadata (its nodes: 0, 1a, 1b, 2a, 2b)
    """
    out = []
    for seg in segs:
        if seg.seg_id not in edges:
            raise ValueError(f"SEG {seg.seg_id} has no entry in the edges (segs.json): it describes other SEGs than "
                             "the metadata")
        position = {label: k for k, label in enumerate(seg.nodes)}
        pairs = []
        for a, b in edges[seg.seg_id]:
            a, b = str(a).strip(), str(b).strip()
            for label in (a, b):
                if label not in position:
                    raise ValueError(f"SEG {seg.seg_id}: edge {a} -> {b} names node {label!r}, which holds no image of "
                                     f"the metadata (its nodes: {', '.join(seg.nodes)})")
            if seg.errors[position[a]] >= seg.errors[position[b]]:
                raise ValueError(f"SEG {seg.seg_id}: edge {a} -> {b} does not add errors (error count "
                                 f"{seg.errors[position[a]]} -> {seg.errors[position[b]]})")
            pairs.append((position[a], position[b]))
        out.append(replace(seg, edges=tuple(pairs)))
    return out


def build_segs(
    seg_ids: Iterable[object],
    nodes: Iterable[object],
    *,
    partitions: PartitionSpec = None,
    require_head: bool = True,
) -> list[SEG]:
    """Group per-image ``seg_ids``/``nodes`` into :class:`SEG` objects, sorted by SEG id.

    Validates as it goes: lengths must match, SEG ids must be integers, labels must parse, and (with
    ``require_head``) every SEG needs an error-0 node. Errors name the offending position and value.

    Raises:
        ValueError: ``seg_ids`` and ``nodes`` differ in length, a SEG id is not an integer, a node label does not parse,
            or (``require_head``) a SEG has no error-0 node; the message names the position and the value.

    Examples:
        >>> segs = build_segs([120, 3, 3, 120], ["0", "0", "1", "1a"])
        >>> [(s.seg_id, s.partition, s.nodes) for s in segs]
        [(3, 'synth', ('0', '1')), (120, 'nat', ('0', '1a'))]
        >>> build_segs([0, 0], ["1", "2"])
        Traceback (most recent call last):
        ...
        ValueError: SEG 0 has no error-0 node (nodes: 1, 2); every SEG needs a head
        >>> build_segs([0, "x"], ["0", "1"])
        Traceback (most recent call last):
        ...
        ValueError: position 1: SEG id 'x' is not an integer
    """
    seg_arr = _as_array(seg_ids)
    node_arr = _as_array(nodes)
    if seg_arr.size != node_arr.size:
        raise ValueError(f"seg_ids has {seg_arr.size} entries but nodes has {node_arr.size}; they must align per image")
    # each distinct value is converted once (no loop over images); the first bad position is reported, its SEG id
    # before its label, as a loop over the rows would
    id_of, seg_codes, seg_error = _distinct(seg_arr, _as_seg_id)
    label_of, node_codes, label_error = _distinct(node_arr, lambda raw, position: (_as_label(raw),
                                                                                  error_count(raw, position=position)))
    failures = [e for e in (seg_error, label_error) if e is not None]
    if failures:
        raise min(failures, key=lambda e: (e[0], e is label_error))[1]
    ids = np.asarray(id_of, dtype=np.int64)[seg_codes] if len(id_of) else np.empty(0, dtype=np.int64)
    # labels that read alike (" 1a" and "1a") are one node; order nodes by (error count, label)
    errors_of = dict(label_of)
    names = sorted(errors_of, key=lambda label: (errors_of[label], label))
    rank = {label: k for k, label in enumerate(names)}
    node_rank = np.asarray([rank[label] for label, _ in label_of], dtype=np.int64)[node_codes] if label_of else ids
    order = np.lexsort((node_rank, ids)).astype(np.int64)  # stable: positions ascend inside each (SEG, node)
    sorted_ids, sorted_nodes = ids[order], node_rank[order]
    change = np.flatnonzero((np.diff(sorted_ids) != 0) | (np.diff(sorted_nodes) != 0)) + 1
    starts = np.r_[0, change].astype(np.int64) if order.size else np.empty(0, dtype=np.int64)
    ends = np.r_[starts[1:], order.size].astype(np.int64)
    group_seg, group_node = sorted_ids[starts], sorted_nodes[starts]
    members = [order[a:b] for a, b in zip(starts.tolist(), ends.tolist())]  # one slice per node, not per image
    seg_starts = np.r_[0, np.flatnonzero(np.diff(group_seg)) + 1].astype(np.int64) if starts.size else starts
    seg_ends = np.r_[seg_starts[1:], starts.size].astype(np.int64)
    segs = []
    for a, b in zip(seg_starts.tolist(), seg_ends.tolist()):
        seg_id = int(group_seg[a])
        ordered = [names[k] for k in group_node[a:b].tolist()]
        errors = tuple(errors_of[label] for label in ordered)
        if require_head and 0 not in errors:
            raise ValueError(f"SEG {seg_id} has no error-0 node (nodes: {', '.join(ordered)}); every SEG needs a head")
        segs.append(SEG(seg_id=seg_id, partition=partition_of(seg_id, partitions), nodes=tuple(ordered),
                        errors=errors, members=tuple(members[a:b])))
    return segs


def _as_array(values: Iterable[object]) -> np.ndarray:
    """A 1-D array of ``values`` as given (numbers stay numbers, text stays text)."""
    if isinstance(values, np.ndarray):
        return values.reshape(-1)
    items = list(values)
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def _distinct(values: np.ndarray, convert) -> tuple[list, np.ndarray, tuple[int, Exception] | None]:
    """``(converted distinct values, code per position, (first bad position, its error) or None)``: ``convert(raw,
    position)`` runs once per distinct value, at its first position."""
    try:
        _, first, codes = np.unique(values, return_index=True, return_inverse=True)
    except TypeError:  # values of types that do not sort together (1 and "1"): group by type and value
        keys = [(type(v).__name__, v) for v in values.tolist()]
        index: dict = {}
        codes = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
        first = np.full(len(index), -1, dtype=np.int64)
        first[codes[::-1]] = np.arange(len(keys))[::-1]
    converted, failure = [], None
    for k, position in enumerate(first.tolist()):
        try:
            converted.append(convert(values[position], position))
        except ValueError as error:
            converted.append(None)
            if failure is None or position < failure[0]:
                failure = (position, error)
    return converted, np.asarray(codes, dtype=np.int64).reshape(-1), failure


def _as_label(raw: object) -> str:
    if isinstance(raw, float) and raw == raw and float(raw).is_integer():
        return str(int(raw))
    return str(raw).strip()


def _as_seg_id(raw: object, position: int) -> int:
    try:
        value = float(raw)  # accepts numpy ints, "12", 12.0
    except (TypeError, ValueError):
        raise ValueError(f"position {position}: SEG id {raw!r} is not an integer") from None
    if value != value or not value.is_integer():
        raise ValueError(f"position {position}: SEG id {raw!r} is not an integer")
    return int(value)


def _where(position: int | None) -> str:
    return "" if position is None else f"position {position}: "


#: SEG ids one range may name at most (``--segs 0-99999999999`` ran out of memory)
SEG_IDS_MAX = 1_000_000


def parse_seg_range(spec: str | None) -> list[int] | None:
    """``"0-163"`` / ``"0-10,20,30-32"`` -> list of SEG ids (None and ``""`` pass through as None).

    Raises:
        ValueError: a part is neither an integer nor ``lo-hi``; the message names the part.

    Examples:
        >>> parse_seg_range("0-3,7")
        [0, 1, 2, 3, 7]
        >>> parse_seg_range("") is None
        True
        >>> parse_seg_range("0-x")
        Traceback (most recent call last):
        ...
        ValueError: SEG range '0-x': cannot parse '0-x' (use e.g. 0-163 or 0-10,20)
    """
    if spec is None or str(spec).strip() == "":
        return None
    ids: list[int] = []
    for part in str(spec).split(","):
        part = part.strip()
        bounds = [b.strip() for b in part.split("-", 1)]
        # ASCII digits only: int() would take full-width "１２" and "1_000"
        if not all(b.isascii() and b.isdigit() for b in bounds):
            raise ValueError(f"SEG range {spec!r}: cannot parse {part!r} (use e.g. 0-163 or 0-10,20)")
        lo, hi = int(bounds[0]), int(bounds[-1])
        if hi < lo:
            raise ValueError(f"SEG range {spec!r}: {part!r} ends before it starts")
        if len(ids) + hi - lo + 1 > SEG_IDS_MAX:
            raise ValueError(f"SEG range {spec!r} names more than {SEG_IDS_MAX:,} SEGs (TS2 has 165)")
        ids.extend(range(lo, hi + 1))
    return ids


def format_seg_range(seg_ids: Iterable[int]) -> str:
    """The inverse of :func:`parse_seg_range`: ``[0, 1, 2, 5]`` -> ``"0-2,5"`` (sorted, duplicates dropped).

    Raises:
        ValueError: an id that ``int()`` refuses.

    Examples:
        >>> format_seg_range([5, 0, 2, 1, 2])
        '0-2,5'
        >>> parse_seg_range(format_seg_range(range(164))) == list(range(164))
        True
    """
    ids = sorted({int(s) for s in seg_ids})
    parts: list[str] = []
    start = prev = None
    for seg_id in ids + [None]:
        if start is not None and (seg_id is None or seg_id != prev + 1):
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if seg_id is not None and start is None:
            start = seg_id
        prev = seg_id
    return ",".join(parts)


def resolve_seg_subset(spec: object, present: Iterable[object], *, partitions_from_file: bool = False
                       ) -> list[int] | None:
    """The SEG ids to evaluate, from a user's choice, given the SEG ids ``present`` in the input.

    ``"default"``: :data:`DEFAULT_SEG_IDS` (0-163) that are present (an error if none is), the release's Table 2
    set; with ``partitions_from_file`` (metadata with a ``partition`` column: a built data dir, not the release)
    every SEG (returns None); ``"all"`` or None: every
    SEG (returns None); a range string (``"0-10,20"``) or an iterable of ids: exactly those (unknown ids are refused
    later, by the evaluator, with their ids named).

    Raises:
        ValueError: ``"default"`` and none of SEGs 0-163 is present, or a range string that does not parse.

    Examples:
        >>> resolve_seg_subset("all", [0, 1]) is None
        True
        >>> resolve_seg_subset("default", [0, 1, 164]), resolve_seg_subset("0-2", [0]), resolve_seg_subset([4], [4])
        ([0, 1], [0, 1, 2], [4])
        >>> resolve_seg_subset("default", [0, 170], partitions_from_file=True) is None
        True
        >>> resolve_seg_subset("default", [170])
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: none of the default SEGs (0-163) is in the input (it has 170); pass seg_subset='all' or a range
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "all"):
        return None
    if isinstance(spec, str) and spec.strip().lower() == "default" and partitions_from_file:
        return None
    if isinstance(spec, str) and spec.strip().lower() == "default":
        have = {int(float(s)) for s in present}
        chosen = [s for s in DEFAULT_SEG_IDS if s in have]
        if not chosen:
            raise ParameterError("none of the default SEGs ({default}) is in the input (it has {have}); pass "
                                 "{seg_subset='all'} or a range", default=format_seg_range(DEFAULT_SEG_IDS),
                                 have=format_seg_range(have) or "none")
        return chosen
    if isinstance(spec, str):
        return parse_seg_range(spec)
    return [int(s) for s in spec]
