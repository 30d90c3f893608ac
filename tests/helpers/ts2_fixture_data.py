"""Build a local TS2 ``data_dir`` (the Hub dataset's layout) from the release tables and small generated images.

The release tables come from ``tests/helpers/release_data.py`` (TS2_DATA, else ../shared/ts2 when it exists; the release
cache; the pinned download); a test that needs one that no source has skips with one reason naming the fix.

Layout: ``metadata.csv`` (release columns), ``images/<file>.jpg``, ``tifa_questions.csv``, ``dsg_questions.csv``.
Images are tiny deterministic JPEGs whose colour depends on the SEG id and node, so tests can tell them apart.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from PIL import Image

from tests.helpers.release_data import require


def make_data_dir(
    root: str | Path,
    *,
    seg_ids: list[int] | None = None,
    image_size: int = 16,
    with_questions: bool = True,
) -> Path:
    """Write a data_dir under ``root`` for ``seg_ids`` (default all 165 SEGs, 2,840 images) and return its path."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    metadata = pd.read_csv(require("metadata.csv"), dtype=str, keep_default_na=False)
    if seg_ids is not None:
        keep = {str(s) for s in seg_ids}
        metadata = metadata[metadata["id"].isin(keep)].reset_index(drop=True)
    metadata.to_csv(root / "metadata.csv", index=False)
    for row in metadata.itertuples(index=False):
        seg, node = int(row.id), str(row.rank)
        colour = ((seg * 37) % 256, (int(node[0]) * 60 + ord(node[-1])) % 256, (seg * 11 + len(node) * 50) % 256)
        Image.new("RGB", (image_size, image_size), colour).save(root / row.file_name, quality=90)
    if with_questions:
        for name in ("tifa_questions.csv", "dsg_questions.csv"):
            questions = pd.read_csv(require(name), dtype=str, keep_default_na=False)
            if seg_ids is not None:
                questions = questions[questions["id"].isin({str(s) for s in seg_ids})]
            questions.to_csv(root / name, index=False)
    return root


def synthetic_data_dir(root: str | Path, *, n_segs: int = 3, images_per_seg: int = 15, image_size: int = 16) -> Path:
    """A data_dir in the release's layout that needs no release file: ``n_segs`` SEGs of ``images_per_seg`` JPEGs
    (nodes ``0``, ``1a``, ``1b``, ``2``, ``3`` in turn), one prompt each, for tests that only need images to score."""
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    nodes = ("0", "1a", "1b", "2", "3")
    rows = []
    for seg in range(n_segs):
        for k in range(images_per_seg):
            node = nodes[k * len(nodes) // images_per_seg]
            name = f"images/{seg:03d}-{k:02d}.jpg"
            rows.append({"id": str(seg), "target_prompt": f"a red cube and {seg + 1} blue spheres",
                         "file_name": name, "image_source": "SD2.1", "rank": node})
            colour = ((seg * 37 + k * 13) % 256, (int(node[0]) * 60 + ord(node[-1])) % 256, (seg * 11 + k * 29) % 256)
            Image.new("RGB", (image_size, image_size), colour).save(root / name, quality=90)
    pd.DataFrame(rows).to_csv(root / "metadata.csv", index=False)
    return root


def copy_release_table(name: str, dest: str | Path) -> Path:
    """Copy one release table into a temp location (for tests that corrupt it)."""
    dest = Path(dest)
    shutil.copy(require(name), dest)
    return dest


#: header of the official repository's ``src/output/pareto_information.csv`` (release name
#: ``table2_full_precision.csv``): fractions per meta-metric and partition, then two FLOPs costs
OFFICIAL_TABLE2_HEADER = ["metric", "spearman-all", "spearman-synth", "spearman-nat", "spearman-real", "delta-all",
                          "delta-synth", "delta-nat", "delta-real", "ks-all", "ks-synth", "ks-nat", "ks-real", "cost",
                          "cost-generous"]


def release_bytes(name: str) -> bytes:
    """The bytes a stand-in source serves for release file ``name``: the copy the tests find
    (``release_data.require``: TS2_DATA, the cache, the download; skips when none has it), so its pinned sha256 is
    checked on the way in, as for every other release file."""
    return require(name).read_bytes()
