"""Synthetic SEG rows in the layout of ``ts2 dataset export`` (``segs/train-*.parquet``), for streaming tests and
``benchmarks/bench_streaming.py``: any number of rows, written fast (vectorised with pyarrow, a few small PNGs reused),
shard by shard so that writing a million rows never holds them all.

Row ``i``: ``seg_id = i // 15`` (15 images per SEG, as TS2), ``file_name = "<seg_id>/<i>.png"``, ``node`` one of
five labels, ``prompt`` one of a few sentences, ``image`` = ``{"bytes": one of `variants` PNGs, "path": null}``.
"""
from __future__ import annotations

import io
from pathlib import Path

PROMPTS = ("a photo of a cat sitting on a red chair", "two dogs playing in the snow near a blue house",
           "an astronaut riding a horse on the moon", "a bowl of fruit with apples, bananas and oranges",
           "people walking in a city street at night")
NODES = ("0", "1_0", "1_1", "2_0", "3_0")


def png_variants(n: int, size: int = 8, seed: int = 0) -> list[bytes]:
    """``n`` distinct random ``size`` px RGB PNGs (bytes)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def segs_table(start: int, stop: int, pngs: list[bytes]):
    """Rows ``start..stop-1`` as a pyarrow table with the ``segs`` columns scoring reads."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    index = pa.array(np.arange(start, stop, dtype=np.int64))
    seg = pc.divide(index, 15)
    names = pc.binary_join_element_wise(pc.cast(seg, pa.string()), pc.cast(index, pa.string()), "/")
    names = pc.binary_join_element_wise(names, ".png", "")
    which = np.arange(start, stop) % len(pngs)
    image = pa.StructArray.from_arrays([pa.array(pngs, pa.binary()).take(pa.array(which)),
                                        pa.nulls(stop - start, pa.string())], names=["bytes", "path"])
    return pa.table({
        "seg_id": pc.cast(seg, pa.int32()),
        "prompt": pa.array(PROMPTS).take(pa.array((np.arange(start, stop) // 15) % len(PROMPTS))),
        "image": image,
        "file_name": names,
        "node": pa.array(NODES).take(pa.array(np.arange(start, stop) % len(NODES))),
    })


def build_open_clip_8px(root: str | Path, *, seed: int = 0) -> str:
    """A smaller open_clip CLIP than ``tests.helpers.tiny_embed_models``' (8 px images, one 8 px patch, width 16, one
    layer per tower: the cost per row is the pipeline's, not the model's); returns ``"local-dir:<folder>"``, for
    ``clip_score`` with ``allow_random_weights``."""
    import json

    import open_clip
    import torch

    torch.manual_seed(seed)
    config = {"embed_dim": 8, "vision_cfg": {"image_size": 8, "layers": 1, "width": 16, "head_width": 8,
                                             "patch_size": 8},
              "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 16, "heads": 2, "layers": 1}}
    out = Path(root) / "open_clip_8px"
    out.mkdir(parents=True, exist_ok=True)
    (out / "open_clip_config.json").write_text(json.dumps({"model_cfg": config, "preprocess_cfg": {}}))
    torch.save(open_clip.CLIP(**config).state_dict(), out / "open_clip_pytorch_model.bin")
    return f"local-dir:{out}"


def write_segs_export(folder: str | Path, rows: int, *, shard_rows: int = 100_000, row_group: int = 1_000,
                      variants: int = 64, image_size: int = 8) -> Path:
    """``folder/segs/train-XXXXX-of-YYYYY.parquet`` holding ``rows`` synthetic rows; returns ``folder``."""
    import math

    import pyarrow.parquet as pq

    folder = Path(folder)
    (folder / "segs").mkdir(parents=True, exist_ok=True)
    pngs = png_variants(variants, image_size)
    shards = max(1, math.ceil(rows / shard_rows))
    for shard in range(shards):
        start, stop = shard * shard_rows, min(rows, (shard + 1) * shard_rows)
        pq.write_table(segs_table(start, stop, pngs), folder / "segs" / f"train-{shard:05d}-of-{shards:05d}.parquet",
                       row_group_size=row_group, use_dictionary=["prompt", "node"])  # images stored per row
    return folder
