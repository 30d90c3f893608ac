"""Build a local TS2 ``data_dir`` (the Hub dataset's layout) from the shared release tables and small generated images.

Layout: ``metadata.csv`` (release columns), ``images/<file>.jpg``, ``tifa_questions.csv``, ``dsg_questions.csv``.
Images are tiny deterministic JPEGs whose colour depends on the SEG id and node, so tests can tell them apart.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
from PIL import Image

SHARED_TS2 = Path(__file__).resolve().parents[1].parent / "shared" / "ts2"
#: copies of published files that are not release tables (the official full-precision Table 2)
SHARED_PUBLISHED = SHARED_TS2.parent / "published"


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
    metadata = pd.read_csv(SHARED_TS2 / "metadata.csv", dtype=str, keep_default_na=False)
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
            questions = pd.read_csv(SHARED_TS2 / name, dtype=str, keep_default_na=False)
            if seg_ids is not None:
                questions = questions[questions["id"].isin({str(s) for s in seg_ids})]
            questions.to_csv(root / name, index=False)
    return root


def copy_release_table(name: str, dest: str | Path) -> Path:
    """Copy one shared release table into a temp location (for tests that corrupt it)."""
    dest = Path(dest)
    shutil.copy(SHARED_TS2 / name, dest)
    return dest


#: header of the official repository's ``src/output/pareto_information.csv`` (release name
#: ``table2_full_precision.csv``): fractions per meta-metric and partition, then two FLOPs costs
OFFICIAL_TABLE2_HEADER = ["metric", "spearman-all", "spearman-synth", "spearman-nat", "spearman-real", "delta-all",
                          "delta-synth", "delta-nat", "delta-real", "ks-all", "ks-synth", "ks-nat", "ks-real", "cost",
                          "cost-generous"]


def release_bytes(name: str) -> bytes:
    """The bytes a stand-in source serves for release file ``name``: the shared copy. ``table2_full_precision.csv``
    (not in ``../shared/ts2``) is the official file's copy in ``../shared/published/``, so its pinned sha256 is
    checked on the way in, as for every other release file."""
    if name != "table2_full_precision.csv":
        return (SHARED_TS2 / name).read_bytes()
    published = SHARED_PUBLISHED / name
    if not published.is_file():
        import pytest

        pytest.skip(f"../shared/published/{name} is not available")
    return published.read_bytes()
