"""Files of a user's own SEGs: generated images, and the worked example of docs/build-your-own-segs.md."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def write_images(folder: Path, names, size=(8, 8)) -> Path:
    """An image of ``size`` under ``folder`` for each name, each its own colour; returns the folder."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    for k, name in enumerate(names):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", size, (20 * k % 256, 40, 90)).save(folder / name)
    return folder


DOCS = Path(__file__).resolve().parents[2] / "docs" / "build-your-own-segs.md"


def docs_annotations() -> str:
    """The ANNOTATIONS example of docs/build-your-own-segs.md (its first ```text block)."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("```text\nseg_id,") + len("```text\n")
    return text[start:text.index("```", start)]


def write_docs_example(work: Path) -> None:
    """What the page's ```bash block reads (tests/docs/test_commands.py's work folder): ``annotations.csv`` (the
    page's example), ``my_images/`` (8 px PNGs) and ``my_segs_scores.csv`` (seeded scores keyed by the names
    ``ts2 seg build`` gives the images: ``images/SSS-KK.png`` in ANNOTATIONS order)."""
    text = docs_annotations()
    (work / "annotations.csv").write_text(text, encoding="utf-8")
    rows = pd.read_csv(work / "annotations.csv", dtype=str, keep_default_na=False)
    write_images(work / "my_images", rows["file_name"].tolist())
    position = rows.groupby("seg_id", sort=False).cumcount()
    names = "images/" + rows["seg_id"].str.zfill(3) + "-" + position.astype(str).str.zfill(2) + ".png"
    rng = np.random.default_rng(0)
    pd.DataFrame({"seg_id": rows["seg_id"], "file_name": names,
                  "my_metric": rng.random(len(rows))}).to_csv(work / "my_segs_scores.csv", index=False)
