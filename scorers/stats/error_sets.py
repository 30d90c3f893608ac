"""Error sets -> SEG node labels and edges (TS2 paper, sections 3.1-3.2; issue 35).

Every SEG procedure (Synth, Nat, Real) reduces to one fact per image: the set of the prompt's elements it gets wrong.
Images with the same error set share a node; the node's label is the set's size, plus a letter when several distinct
sets have that size (``1a``, ``1b``), which is how the release's ``rank`` column reads. An edge runs from set A to
set B when B is A plus one error.

Standard library only (the stats layer stays light). The *order* of distinct sets used throughout is
``(len(s), sorted(s))``: by size, then by the sorted tuple of labels.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["ERROR_SEPARATOR", "ERROR_TYPES", "ERROR_TYPE_OF_ELEMENT", "KEY_SEPARATOR", "node_labels", "label_sets",
           "error_set_edges", "split_error_labels", "unreachable"]

#: the error types of the TS2 paper's edges (section 3.1): an ANNOTATIONS ``error_types`` item is one of these
ERROR_TYPES = ("missing", "attribute", "relation", "action")
#: how an ANNOTATIONS cell joins an image's error labels (``errors``) and their types (``error_types``)
ERROR_SEPARATOR = ";"
#: a prompt element's type (``ts2 seg plan``) -> the error its removal makes: an entity (object) goes missing
ERROR_TYPE_OF_ELEMENT = {"entity": "missing", "object": "missing", **{t: t for t in ERROR_TYPES}}
#: joins a sorted error set into one key (``key`` column): the ASCII unit separator, below every printable
#: character, so keys sort like the tuples (numpy would drop a trailing NUL)
KEY_SEPARATOR = "\x1f"


def split_error_labels(cell: object) -> list[str]:
    """The labels of one ``errors`` (or ``error_types``) cell, stripped, empty items dropped.

    >>> split_error_labels("dog; red"), split_error_labels(""), split_error_labels(" ;x;")
    (['dog', 'red'], [], ['x'])
    """
    return [part.strip() for part in str(cell).split(ERROR_SEPARATOR) if part.strip()]


def _letters(i: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'aa' (bijective base 26, so any count of same-size sets gets a distinct suffix)."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def _frozen(error_sets: Sequence[Iterable[str]]) -> list[frozenset[str]]:
    if isinstance(error_sets, (str, bytes)):
        raise TypeError("error_sets: expected a sequence of iterables of error labels, got a string")
    out = []
    for i, s in enumerate(error_sets):
        if isinstance(s, (str, bytes)):
            raise TypeError(f"error_sets[{i}]: expected an iterable of error labels, got the string {s!r}")
        f = frozenset(s)
        bad = [e for e in f if not isinstance(e, str) or e == ""]
        if bad:
            raise ValueError(f"error_sets[{i}]: error labels must be non-empty strings, got {bad[0]!r}")
        out.append(f)
    return out


def label_sets(error_sets: Sequence[Iterable[str]]) -> dict[str, frozenset[str]]:
    """The distinct error sets by their node label, in node order (size, then sorted tuple).

    Parameters
    ----------
    error_sets : sequence of iterables of str
        One error set per image (duplicates and any order allowed).

    Returns
    -------
    dict of str to frozenset
        ``{label: error_set}``; the empty set, when present, is ``"0"``. Empty input gives ``{}``.

    Raises
    ------
    TypeError
        When ``error_sets`` or one of its items is a string (a common slip: ``"dog;red"`` instead of a set).
    ValueError
        When an error label is not a non-empty string.

    Examples
    --------
    >>> {label: sorted(s) for label, s in label_sets([set(), {"dog"}, {"red"}, {"dog", "red"}, {"dog"}]).items()}
    {'0': [], '1a': ['dog'], '1b': ['red'], '2': ['dog', 'red']}
    """
    distinct = sorted(set(_frozen(error_sets)), key=lambda s: (len(s), sorted(s)))
    per_size: dict[int, int] = {}
    for s in distinct:
        per_size[len(s)] = per_size.get(len(s), 0) + 1
    out: dict[str, frozenset[str]] = {}
    seen: dict[int, int] = {}
    for s in distinct:
        k = len(s)
        if per_size[k] == 1:
            out[str(k)] = s
        else:
            out[f"{k}{_letters(seen.get(k, 0))}"] = s
            seen[k] = seen.get(k, 0) + 1
    return out


def node_labels(error_sets: Sequence[Iterable[str]]) -> list[str]:
    """One node label per image: equal sets share a label; the digits are the set's size.

    When several distinct sets have the same size they get letters ``a, b, ...`` in the order of their sorted tuples
    (``sorted(sorted(s) for s in distinct)``), else no letter. After ``z`` the letters go on ``aa, ab, ...``.

    Parameters
    ----------
    error_sets : sequence of iterables of str
        One error set per image.

    Returns
    -------
    list of str
        Aligned with ``error_sets``; ``[]`` for empty input. The empty set is ``"0"``.

    Raises
    ------
    TypeError
        When ``error_sets`` or one of its items is a string.
    ValueError
        When an error label is not a non-empty string.

    Examples
    --------
    >>> node_labels([set(), {"dog"}, {"red"}, {"dog", "red"}])
    ['0', '1a', '1b', '2']
    >>> node_labels([[], ["b", "a"], ["a", "b"]])
    ['0', '2', '2']
    >>> node_labels([])
    []
    """
    frozen = _frozen(error_sets)
    by_set = {s: label for label, s in label_sets(frozen).items()}
    return [by_set[s] for s in frozen]


def error_set_edges(error_sets: Sequence[Iterable[str]]) -> list[tuple[str, str, str]]:
    """The SEG's edges: ``(from_label, to_label, added_error)`` for each pair of distinct sets A, B with
    B = A + one error.

    Parameters
    ----------
    error_sets : sequence of iterables of str
        One error set per image (or one per node: duplicates are merged).

    Returns
    -------
    list of (str, str, str)
        In node order of ``to_label``, then of ``from_label``. A set whose one-smaller subsets are all absent has no
        incoming edge (see :func:`unreachable`); the empty set never has one.

    Raises
    ------
    TypeError
        When ``error_sets`` or one of its items is a string.
    ValueError
        When an error label is not a non-empty string.

    Examples
    --------
    >>> error_set_edges([set(), {"dog"}, {"red"}, {"dog", "red"}])
    [('0', '1a', 'dog'), ('0', '1b', 'red'), ('1a', '2', 'red'), ('1b', '2', 'dog')]
    >>> error_set_edges([set(), {"dog", "red"}])
    []
    """
    labels = label_sets(error_sets)
    label_of = {s: label for label, s in labels.items()}
    order = {label: i for i, label in enumerate(labels)}
    edges = []
    for to_label, b in labels.items():
        incoming = [(label_of[b - {e}], to_label, e) for e in b if (b - {e}) in label_of]
        edges.extend(sorted(incoming, key=lambda edge: order[edge[0]]))
    return edges


def unreachable(error_sets: Sequence[Iterable[str]]) -> list[str]:
    """Labels of the non-empty sets with no set one error smaller inside them (no incoming edge), in node order.

    Such a node is valid (its error count is its set's size, and walks may skip levels), but it is worth a look:
    often an image between it and node 0 is missing or mislabelled.

    Parameters
    ----------
    error_sets : sequence of iterables of str
        One error set per image.

    Returns
    -------
    list of str
        ``[]`` when every non-empty set is reachable one error at a time.

    Raises
    ------
    TypeError
        When ``error_sets`` or one of its items is a string.
    ValueError
        When an error label is not a non-empty string.

    Examples
    --------
    >>> unreachable([set(), {"dog"}, {"dog", "red"}, {"cat", "hat", "red"}])
    ['3']
    >>> unreachable([set(), {"dog"}])
    []
    """
    labels = label_sets(error_sets)
    present = set(labels.values())
    return [label for label, s in labels.items() if s and not any((s - {e}) in present for e in s)]
