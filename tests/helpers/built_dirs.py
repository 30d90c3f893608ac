"""A data dir built by ``ts2 seg build`` (three SEGs in two partitions) and a tiny score file keyed by its names: the
input of the tests that check what is (and is not) compared with the published rows."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pandas as pd

from tests.helpers.seg_files import write_images

HEADER = "seg_id,prompt,file_name,errors,error_types,partition,image_source"
#: three SEGs (dog: error counts 0-2, cat: 0-2, bird: 0-1) in two partitions
ROWS = [
    "dog,a red dog on a mat,d0.png,,,alpha,SDXL",
    "dog,a red dog on a mat,d1.png,,,alpha,SDXL",
    "dog,a red dog on a mat,d2.png,dog,missing,alpha,SDXL",
    "dog,a red dog on a mat,d3.png,red,attribute,alpha,SDXL",
    "dog,a red dog on a mat,d4.png,red;dog,attribute;missing,alpha,SDXL",
    "cat,a cat,c0.png,,,beta,DALL-E2",
    "cat,a cat,c1.png,cat,missing,beta,DALL-E2",
    "cat,a cat,c2.png,cat;black,missing;attribute,beta,DALL-E2",
    "bird,a bird,b0.png,,,beta,DALL-E2",
    "bird,a bird,b1.png,bird,missing,beta,DALL-E2",
]


def build_dir(work: Path) -> Path:
    """``ts2 seg build`` of :data:`ROWS` (8 px images) into ``work / "OUT"``; returns that folder."""
    from scorers.cli import main

    work.mkdir(parents=True, exist_ok=True)
    annotations = work / "annotations.csv"
    annotations.write_text("\n".join([HEADER, *ROWS]) + "\n", encoding="utf-8")
    write_images(work / "imgs", [row.split(",")[2] for row in ROWS])
    out = work / "OUT"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["seg", "build", str(annotations), "--images", str(work / "imgs"), "--out", str(out)])
    assert code == 0, "ts2 seg build failed"
    return out


def write_scores(out: Path, target: Path) -> Path:
    """Scores of the built dir's images keyed as ``ts2 score --data-dir OUT`` keys them (``seg_id, file_name``):
    ``good`` falls with the node's error count (orders every SEG), ``bad`` rises with it (orders every SEG the wrong
    way), so ``good`` beats ``bad`` on every SEG."""
    metadata = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    errors = metadata["rank"].str[0].astype(int)
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "good": 1.0 - 0.25 * errors,
                  "bad": 0.1 + 0.25 * errors}).to_csv(target, index=False)
    return target
