"""Image bytes embedded in a set's Parquet file (Pick-a-Pic v2, MJ-Bench, GenAI-Bench): the ``embedded`` readers of
:class:`scorers.sets.registry.ImageSource`. Each returns the bytes of the named images, in their order (None where
the file holds none), and raises :class:`~scorers.sets.set_files.SetImagesUnavailable` when the file has no image
columns."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from scorers.sets.set_files import SetImagesUnavailable

__all__ = ["parquet_cell_bytes", "pickapic_bytes"]


def _payload(value):
    return value.get("bytes") if isinstance(value, dict) else value


def pickapic_bytes(name: str, images: Sequence[str], path: str | Path) -> list[Any]:
    """Pick-a-Pic's images by uid: ``jpg_0`` / ``jpg_1`` beside ``image_0_uid`` / ``image_1_uid``."""
    import pyarrow.parquet as pq

    path = Path(path)
    names = pq.read_schema(path).names
    wanted = [c for c in ("image_0_uid", "jpg_0", "image_1_uid", "jpg_1") if c in names]
    if len(wanted) < 4:
        raise SetImagesUnavailable(f"{name}: {path} has no jpg_0/jpg_1 image columns; use the Hub file "
                                   "(test_unique Parquet of yuvalkirstain/pickapic_v2, images embedded)")
    table = pq.read_table(path, columns=wanted).to_pydict()
    found = {}
    for side in ("0", "1"):
        found.update(zip(table[f"image_{side}_uid"], table[f"jpg_{side}"]))
    return [_payload(found.get(i)) for i in images]


def parquet_cell_bytes(name: str, images: Sequence[str], path: str | Path) -> list[Any]:
    """Images named ``<file>#<row>/<column>``: MJ-Bench's ``image0`` / ``image1``, GenAI-Bench's one column per
    model."""
    import pyarrow.parquet as pq

    path = Path(path)
    names = pq.read_schema(path).names
    parsed = [(int(ref.rpartition("#")[2].split("/", 1)[0]), ref.rpartition("/")[2]) for ref in images]
    columns = sorted({c for _, c in parsed})
    absent = [c for c in columns if c not in names]
    if absent:
        raise SetImagesUnavailable(f"{name}: {path} has no image column(s) {absent}; use the set's own Parquet file "
                                   "with its images embedded")
    table = pq.read_table(path, columns=columns).to_pydict()
    return [_payload(table[c][r]) for r, c in parsed]
