"""Small human-rating files in the real layouts of TIFA160 (JSON) and GenAI-Bench (Parquet), and the TIFA160
stand-in's place in the download cache."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from tests.helpers.pin_override import tifa160_cache_path

MODELS = ("mini_dalle", "stable_diffusion_v1_1", "stable_diffusion_v1_5", "stable_diffusion_v2_1", "vq_diffusion")


def write_tifa_json(path: Path, n_prompts: int = 12, seed: int = 0) -> Path:
    """A small file in the layout of TIFA's human_annotations_with_scores.json (keys "<text_id>_<model>", two Likert
    ratings in human_scores, their mean in human_avg, then caption/CLIP/TIFA metric scores)."""
    rng = np.random.default_rng(seed)
    payload = {}
    for p in range(n_prompts):
        text_id = f"coco_{300000 + 17 * p}"
        for model in MODELS:
            quality = rng.integers(1, 6)
            ratings = [int(np.clip(quality + rng.integers(-1, 2), 1, 5)) for _ in range(2)]
            payload[f"{text_id}_{model}"] = {
                "text_id": text_id,
                "image_path": f"{text_id}_{model}.jpg",
                "text": f"prompt number {p}",
                "human_scores": ratings,
                "human_avg": sum(ratings) / 2,
                "meteor": float(rng.random()),
                "clipscore_vitb32": float(25 + quality + 3 * rng.random()),
                "tifa_vilt": float(np.clip(quality / 5 + rng.normal(0, 0.2), 0, 1)),
                "tifa_mplug-large": float(rng.integers(0, 5) / 4),
            }
    path.write_text(json.dumps(payload, indent=4), encoding="utf-8")
    return path


def tifa160_cache_copy(source: Path) -> tuple[Path, str]:
    """Put the stand-in ``source`` where ``fetch_tifa160`` looks once TIFA160 is pinned to the stand-in's own digest
    (tests/helpers/pin_override.py: the real file's digest cannot be had here): ``$HF_HOME/ts2-evaluate/<digest>/<name>``, as
    a first download leaves it. Returns (copy, digest); the caller pins the digest and deletes the copy."""
    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    target = tifa160_cache_path(digest)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target, digest


def write_genai_parquet(path: Path, n_prompts: int = 6, seed: int = 0) -> Path:
    """The GenAI-Bench table layout: Index, Prompt, Tags struct, HumanRatings struct {model: [int]} and one image
    column per model (bytes here; never read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    models = ["DALLE_3", "SDXL_Turbo", "Midjourney_6"]
    rows = []
    for p in range(n_prompts):
        row = {"Index": p, "Prompt": f"genai prompt {p}",
               "Tags": {"basic": ["attribute"], "advanced": ["counting"] if p % 2 else []},
               "HumanRatings": {m: [int(x) for x in rng.integers(1, 6, 3)] for m in models}}
        for m in models:
            row[m] = {"bytes": b"\x89PNG-not-decoded", "path": f"{p}_{m}.png"}
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path
