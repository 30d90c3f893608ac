"""Small files in the real layouts of the preference and rating sets (Pick-a-Pic v2, HPDv2, ImageRewardDB, MJ-Bench,
EvalMuse; TIFA160 and GenAI-Bench come from tests/helpers/rating_files.py), and :func:`make_sets`, every loader-backed
set with its images."""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

JPEG = b"\xff\xd8\xff\xe0fake-jpeg"


# ---- fixtures in the real layouts ---------------------------------------------------------------------------------


def write_pickapic(path: Path, labels=((1.0, 0.0), (0.0, 1.0), (0.5, 0.5))) -> Path:
    """Columns and types of the pickapic_v2 card's ``dataset_info`` (jpg_0/jpg_1 binary)."""
    n = len(labels)
    table = pa.table({
        "are_different": [True] * n, "best_image_uid": [f"u{k}" for k in range(n)],
        "caption": [f"prompt {k}" for k in range(n)],
        "created_at": pa.array([0] * n, pa.timestamp("ns")), "has_label": [True] * n,
        "image_0_uid": [f"img0-{k}" for k in range(n)], "image_0_url": [f"https://x/0/{k}" for k in range(n)],
        "image_1_uid": [f"img1-{k}" for k in range(n)], "image_1_url": [f"https://x/1/{k}" for k in range(n)],
        "jpg_0": [JPEG] * n, "jpg_1": [JPEG] * n,
        "label_0": [float(a) for a, _ in labels], "label_1": [float(b) for _, b in labels],
        "model_0": ["sdxl"] * n, "model_1": ["sd15"] * n, "ranking_id": list(range(100, 100 + n)),
        "user_id": [7] * n, "num_example_per_prompt": [1] * n, "__index_level_0__": list(range(n)),
    })
    pq.write_table(table, path)
    return path


def write_hpdv2(path: Path) -> Path:
    """HPDv2 test.json: prompt, image_path list, rank list (1 = best), raw_annotations."""
    entries = [
        {"prompt": "a cat", "image_path": ["00000.jpg", "00001.jpg", "00002.jpg", "00003.jpg"], "rank": [2, 1, 4, 3],
         "raw_annotations": [{"rank": [2, 1, 4, 3], "user_hash": "h1"}]},
        {"prompt": "a dog", "image_path": ["00004.jpg", "00005.jpg"], "rank": [1, 1], "raw_annotations": []},
    ]
    path.write_text(json.dumps(entries))
    return path


def write_imagerewarddb(path: Path) -> Path:
    """metadata-<split>.parquet columns as the ImageRewardDB card's example row."""
    rows = [("images/test/a.webp", "000001-0001", "p one", 2), ("images/test/b.webp", "000001-0001", "p one", 1),
            ("images/test/c.webp", "000001-0001", "p one", 2), ("images/test/d.webp", "000002-0002", "p two", 1),
            ("images/test/e.webp", "000002-0002", "p two", 3)]
    table = pa.table({
        "image_path": [r[0] for r in rows], "prompt_id": [r[1] for r in rows], "prompt": [r[2] for r in rows],
        "classification": ["Outdoor Scenes"] * len(rows), "image_amount_in_total": [3, 3, 3, 2, 2],
        "rank": [r[3] for r in rows], "overall_rating": [5] * len(rows),
        "image_text_alignment_rating": [5] * len(rows), "fidelity_rating": [5] * len(rows),
    })
    pq.write_table(table, path)
    return path


def write_mjbench(path: Path, labels=(0, 1, 0)) -> Path:
    """MJ-Bench subset Parquet: caption, image0/image1 as datasets Image structs {bytes, path}, label, info."""
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    n = len(labels)
    table = pa.table({
        "caption": [f"caption {k}" for k in range(n)],
        "image0": pa.array([{"bytes": JPEG, "path": None}] * n, image),
        "image1": pa.array([{"bytes": JPEG, "path": None}] * n, image),
        "label": list(labels), "info": ["attribute"] * n,
    })
    pq.write_table(table, path)
    return path


def write_evalmuse(path: Path) -> Path:
    entries = [
        {"prompt_id": "p1", "prompt": "a red car", "type": "real", "img_path": "images/p1_0.png",
         "total_score": [3, 4, 5], "element_score": "{'car (object)': [1, 1, 1], 'red (color)': [1, 0, 1]}",
         "promt_meaningless": [0, 0, 0], "split_confidence": [0, 0, 0], "attribute_confidence": [1, 1, 1],
         "fidelity_label": ["no obvious distortion"] * 3},
        {"prompt_id": "p1", "prompt": "a red car", "type": "real", "img_path": "images/p1_1.png",
         "total_score": [1, 2], "element_score": "{}", "promt_meaningless": [0, 0], "split_confidence": [0, 0],
         "attribute_confidence": [1, 1], "fidelity_label": ["-"] * 2},
    ]
    path.write_text(json.dumps(entries))
    return path


def image_bytes(k: int, fmt: str = "PNG") -> bytes:
    """A 24 px image whose colours depend on ``k`` (distinct images give distinct CLIP scores)."""
    from PIL import Image

    rng = np.random.default_rng(k)
    pixels = rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


def write_image_files(root: Path, names, fmt="PNG", start=0) -> Path:
    for k, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(image_bytes(start + k, fmt))
    return root


def replace_column(path: Path, column: str, values) -> Path:
    table = pq.read_table(path)
    field = table.schema.field(column)
    table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, field.type))
    pq.write_table(table, path)
    return path


def make_sets(root: Path) -> dict[str, dict]:
    """``{set: {"file", "images_dir" (None: embedded)}}`` for every loader-backed set."""
    from tests.helpers.rating_files import write_genai_parquet, write_tifa_json

    root.mkdir(parents=True, exist_ok=True)
    sets = {}
    evalmuse = write_evalmuse(root / "train_list.json")
    sets["evalmuse"] = {"file": evalmuse, "images_dir": write_image_files(root / "evalmuse", ["images/p1_0.png",
                                                                                    "images/p1_1.png"], start=10)}
    hpdv2 = write_hpdv2(root / "test.json")
    sets["hpdv2"] = {"file": hpdv2, "images_dir": write_image_files(root / "hpdv2", [f"0000{k}.jpg" for k in range(6)],
                                                         "JPEG", start=20)}
    ird = write_imagerewarddb(root / "metadata-test.parquet")
    sets["imagerewarddb"] = {"file": ird, "images_dir": write_image_files(root / "ird", [f"images/test/{c}.webp"
                                                                             for c in "abcde"], "WEBP", start=30)}
    pick = write_pickapic(root / "test_unique.parquet")
    replace_column(pick, "jpg_0", [image_bytes(40 + k, "JPEG") for k in range(3)])
    replace_column(pick, "jpg_1", [image_bytes(50 + k, "JPEG") for k in range(3)])
    sets["pickapic_v2"] = {"file": pick, "images_dir": None}
    mj = write_mjbench(root / "alignment.parquet")
    replace_column(mj, "image0", [{"bytes": image_bytes(60 + k), "path": None} for k in range(3)])
    replace_column(mj, "image1", [{"bytes": image_bytes(70 + k), "path": None} for k in range(3)])
    sets["mjbench_alignment"] = {"file": mj, "images_dir": None}
    tifa = write_tifa_json(root / "human_annotations_with_scores.json", n_prompts=4)
    names = [v["image_path"] for v in json.loads(tifa.read_text()).values()]
    sets["tifa160"] = {"file": tifa, "images_dir": write_image_files(root / "tifa160", names, "JPEG", start=100)}
    genai = write_genai_parquet(root / "genai.parquet", n_prompts=3)
    for m, model in enumerate(["DALLE_3", "SDXL_Turbo", "Midjourney_6"]):
        replace_column(genai, model, [{"bytes": image_bytes(200 + 10 * m + p), "path": f"{p}_{model}.png"} for p in range(3)])
    sets["genai_bench"] = {"file": genai, "images_dir": None}
    return sets
