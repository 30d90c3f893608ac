"""Whether TS2 numbers may stand among the published rows: the one check that ``ts2 card``, ``ts2 score --meta``,
``ts2 report``, ``ts2 leaderboard`` and the demo make before they place a metric among them.

The published rows are the release's 19 metrics, computed on the release's ``metadata.csv`` over one SEG set (0-163
by default). Numbers computed on other metadata (a data dir ``ts2 seg build`` wrote, a subset, an edited copy) or over
another SEG set are numbers of other SEGs: a place "1 of 20" among the published rows would compare them with
numbers they do not share. Two sets of numbers are comparable only when their metadata are the same bytes (the
sha256 of ``metadata.csv``, as :mod:`scorers.tables.release` pins and every result file records it) and their SEG
sets are equal. :class:`Basis` is what a set of numbers was computed on; :func:`published_mismatch` says, in one line,
why numbers are left out, or None when they may be ranked together.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable

__all__ = ["RELEASE_METADATA", "Basis", "metadata_basis", "published_mismatch", "release_basis"]

#: how the release's metadata is named in the one line
RELEASE_METADATA = "the TS2 release metadata"
#: the digits of a sha256 the line shows (enough to tell two files apart at a glance)
_SHOWN = 12


@dataclass(frozen=True)
class Basis:
    """What TS2 numbers were computed on: ``sha256`` of the ``metadata.csv`` bytes (None: not known), ``source`` (how
    the line names that metadata: a path, or :data:`RELEASE_METADATA`) and ``segs``, the SEG ids (None: not
    compared)."""

    sha256: str | None
    source: str
    segs: tuple[int, ...] | None = None

    def with_segs(self, segs: Iterable[int] | None) -> Basis:
        """The same metadata over the SEG ids ``segs``."""
        return Basis(self.sha256, self.source, None if segs is None else tuple(sorted({int(s) for s in segs})))

    def metadata_text(self) -> str:
        digest = "sha256 unknown" if self.sha256 is None else f"sha256 {self.sha256[:_SHOWN]}…"
        return f"{self.source} ({digest})"


def metadata_basis(metadata: str | os.PathLike, segs: Iterable[int] | None = None, *,
                   source: str | None = None) -> Basis:
    """The :class:`Basis` of numbers computed on the ``metadata.csv`` at ``metadata`` (its bytes hashed) over the
    SEG ids ``segs``; ``source``: how to name it (default: the path as given)."""
    from scorers.tables.release import sha256_file

    return Basis(sha256_file(metadata), str(metadata) if source is None else source).with_segs(segs)


def release_basis(data_dir: str | os.PathLike | None = None, segs: Iterable[int] | None = None) -> Basis:
    """The :class:`Basis` of the published rows: the release's ``metadata.csv`` as :mod:`scorers.tables.release`
    finds it (``data_dir`` / ``$TS2_DATA``, else the cache), or its pinned sha256 when no copy is here (nothing is
    downloaded for this), over the SEG ids ``segs``."""
    from scorers.tables.release import RELEASE_FILES, ReleaseFileUnavailable, cached_path, local_data_dir, sha256_file

    pinned = RELEASE_FILES["metadata.csv"]
    try:  # where release_download.path would find it, without its checks (a differing copy is its warning to give)
        folder = local_data_dir(data_dir)
        found = folder / pinned.filename if folder is not None else cached_path(pinned)
    except (ReleaseFileUnavailable, OSError):
        found = None
    digest = sha256_file(found) if found is not None and found.is_file() else pinned.sha256
    return Basis(digest, RELEASE_METADATA).with_segs(segs)


def published_mismatch(ours: Basis, published: Basis, *, what: str = "these scores") -> str | None:
    """None when numbers computed on ``ours`` may be ranked among published rows computed on ``published``: the
    same metadata (equal sha256, both known) and, where both are given, the same SEG set. Otherwise one line saying
    why the published rows are left out, naming both sides (``what``: how the line names ours).

    Examples:
        >>> release = Basis("ab" * 32, RELEASE_METADATA, tuple(range(164)))
        >>> published_mismatch(Basis("ab" * 32, "metadata.csv", tuple(range(164))), release) is None
        True
        >>> print(published_mismatch(Basis("cd" * 32, "OUT/metadata.csv"), release))
        published rows left out: they were computed on the TS2 release metadata (sha256 abababababab…), these scores on OUT/metadata.csv (sha256 cdcdcdcdcdcd…)
        >>> print(published_mismatch(Basis("ab" * 32, "metadata.csv", (0, 1, 2)), release))
        published rows left out: they were computed on SEGs 0-163, these scores on SEGs 0-2
    """
    if ours.sha256 is None or published.sha256 is None or ours.sha256 != published.sha256:
        return (f"published rows left out: they were computed on {published.metadata_text()}, {what} on "
                f"{ours.metadata_text()}")
    if ours.segs is not None and published.segs is not None and set(ours.segs) != set(published.segs):
        from scorers.stats.graph import format_seg_range

        return (f"published rows left out: they were computed on SEGs {format_seg_range(published.segs)}, {what} on "
                f"SEGs {format_seg_range(ours.segs) if ours.segs else 'none'}")
    return None
