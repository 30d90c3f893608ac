"""A data dir built by ``ts2 seg build`` whose metadata carries error types: several SEGs in two partitions, each
with missing-object and attribute errors, and a seeded score file keyed by the built file names."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: per SEG: (error set, types), one image each, two error-free images first
IMAGES = [("", ""), ("", ""), ("cat", "missing"), ("dog", "missing"), ("cat;dog", "missing;missing"),
          ("red", "attribute"), ("red;cat", "attribute;missing")]
#: SEG id -> partition: four SEGs in ``p1``, three in ``p2``
PARTITIONS = {0: "p1", 1: "p1", 2: "p1", 3: "p1", 4: "p2", 5: "p2", 6: "p2"}


def build_error_type_dir(tmp_path: Path, run) -> tuple[Path, Path]:
    """``(built dir, scores CSV)``: :data:`IMAGES` for every SEG of :data:`PARTITIONS`, built with ``ts2 seg build``
    (``run(*argv) -> (code, stdout, stderr)`` calls the CLI), and scores (columns ``m`` and ``k``, seed 11) keyed by
    the built ``seg_id, file_name``: ``m`` falls with missing objects, ``k`` is noise."""
    from tests.helpers.seg_files import write_images

    rows, files = ["seg_id,prompt,file_name,errors,error_types,partition"], []
    for seg, part in PARTITIONS.items():
        for k, (errors, types) in enumerate(IMAGES):
            files.append(f"s{seg}_{k}.png")
            rows.append(f"{seg},a red cat and a dog {seg},{files[-1]},{errors},{types},{part}")
    (tmp_path / "ann.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    write_images(tmp_path / "imgs", files)
    out = tmp_path / "built"
    code, _, err = run("seg", "build", tmp_path / "ann.csv", "--images", tmp_path / "imgs", "--out", out)
    assert code == 0, err
    built = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    rng = np.random.default_rng(11)
    n_errors = built["errors"].map(lambda e: len([x for x in e.split(";") if x]))
    missing = built["error_types"].map(lambda t: t.split(";").count("missing"))
    scores = pd.DataFrame({"seg_id": built["id"], "file_name": built["file_name"],
                           "m": 1.0 - 0.3 * missing + 0.05 * n_errors + rng.normal(0, 0.25, len(built)),
                           "k": rng.normal(size=len(built))})
    scores.to_csv(tmp_path / "scores.csv", index=False)
    return out, tmp_path / "scores.csv"
