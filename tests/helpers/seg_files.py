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


#: three SEGs in two partitions whose error sets do not nest, so TS2's level rule walks paths no edge joins:
#: ``(seg_id, partition, [(errors, number of images), ...])``
WALKS_SEGS = (
    (0, "alpha", [("", 2), ("a", 2), ("b", 2), ("a;c", 2), ("b;d", 2)]),  # 0 -> 1a -> 2a, 0 -> 1b -> 2b
    (1, "beta", [("", 2), ("x", 1), ("y", 2), ("x;z", 2), ("y;w", 1), ("x;y", 2), ("w;x;y", 2)]),
    (2, "alpha", [("", 3), ("m", 2), ("m;n", 2), ("p", 2)]),  # two error sets of size 1: 1a, 1b
)


def build_walks_dir(work: Path, capsys) -> tuple[Path, Path]:
    """``ts2 seg build`` of :data:`WALKS_SEGS` (8 px PNGs) into ``work/built``, and seeded scores keyed by the built
    names (``work/scores.csv``, column ``my_metric``, ties included); returns ``(built dir, scores)``."""
    from tests.helpers.cli import run_cli

    rows = []
    for seg, partition, nodes in WALKS_SEGS:
        for errors, n in nodes:
            for k in range(n):
                rows.append({"seg_id": seg, "prompt": f"prompt {seg}", "partition": partition, "errors": errors,
                             "file_name": f"s{seg}/{errors.replace(';', '-') or 'none'}-{k}.png"})
    frame = pd.DataFrame(rows)
    write_images(work / "imgs", frame["file_name"].tolist())
    frame.to_csv(work / "annotations.csv", index=False)
    out = work / "built"
    code, _, err = run_cli(capsys, "seg", "build", work / "annotations.csv", "--images", work / "imgs", "--out", out)
    assert code == 0, err
    metadata = pd.read_csv(out / "metadata.csv")
    rng = np.random.default_rng(7)
    scores = np.round(rng.random(len(metadata)) * 8) / 8  # ties
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"],
                  "my_metric": scores}).to_csv(work / "scores.csv", index=False)
    return out, work / "scores.csv"


def built_edges(out: Path) -> dict:
    """``{seg_id: [(from, to), ...]}`` of a built dir's ``segs.json``, read with the json module alone."""
    import json

    return {seg["seg_id"]: [(e["from"], e["to"]) for e in seg["edges"]]
            for seg in json.loads((out / "segs.json").read_text(encoding="utf-8"))["segs"]}
