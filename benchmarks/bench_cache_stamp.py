"""Cost of hashing image bytes into the cache stamp (issue 22.3) against a CPU CLIPScore run of the same images.

1. Writes ``--n`` JPEGs (default 2,840, TS2's image count) of 512x512 px at quality 90 into a temp folder: smooth
   random colour fields plus grain, about the size of a generated photo-like image.
2. Times ``scorers.scoring.cache.item_stamp`` on every file, hashed (the default) and ``fast=True`` (size + mtime only). The
   files were just written, so they are in the page cache: this is the warm-cache cost (a cold disk adds reading time,
   which the scoring run pays too: it decodes the same bytes).
3. Times CLIPScore on ``--subset`` of the images with a ViT-B/16 CLIP of random weights (transformers ``CLIPModel``
   built from the config of openai/clip-vit-base-patch16, the project's default checkpoint: the same shape and so the
   same compute as the real weights), through ``scorers.scoring.runner.run`` with PIL decoding, batch 16, no cache; then
   extrapolates linearly to ``--n`` images (the per-image cost of a batched forward is constant in the batch count).
4. Prints both and the ratio hash / CLIPScore.

    OMP_NUM_THREADS=2 python benchmarks/bench_cache_stamp.py [--n 2840] [--subset 64]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorers.scoring.cache import item_stamp  # noqa: E402


def write_images(folder: Path, n: int, side: int = 512, seed: int = 0) -> list[str]:
    from PIL import Image

    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        coarse = rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8)
        field = np.asarray(Image.fromarray(coarse).resize((side, side), Image.BICUBIC), dtype=np.int16)
        grain = rng.normal(0, 6, size=field.shape)
        pixels = np.clip(field + grain, 0, 255).astype(np.uint8)
        path = folder / f"{i:05d}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(str(path))
    return paths


def random_clip_vit_b16(folder: Path) -> str:
    """A ViT-B/16 CLIP (openai/clip-vit-base-patch16's config) with random weights, saved with a CLIP tokenizer."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    from tests.helpers.tiny_embed_models import clip_tokenizer

    config = CLIPConfig(
        text_config={"hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8, "num_hidden_layers": 12,
                     "max_position_embeddings": 77, "vocab_size": 49408, "bos_token_id": 49406,
                     "eos_token_id": 49407, "pad_token_id": 49407},
        vision_config={"hidden_size": 768, "intermediate_size": 3072, "num_attention_heads": 12,
                       "num_hidden_layers": 12, "image_size": 224, "patch_size": 16},
        projection_dim=512,
    )
    model = CLIPModel(config)
    model.save_pretrained(folder)
    processor = CLIPProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 224},
                                                                 crop_size={"height": 224, "width": 224}),
                              tokenizer=clip_tokenizer())
    processor.save_pretrained(folder)
    return str(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2840, help="images (TS2 has 2,840)")
    parser.add_argument("--subset", type=int, default=64, help="images actually scored by CLIPScore")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "images").mkdir()
        start = time.perf_counter()
        paths = write_images(tmp / "images", args.n)
        megabytes = sum(Path(p).stat().st_size for p in paths) / 1e6
        print(f"{args.n} JPEGs 512x512 q90: {megabytes:.0f} MB ({1e3 * megabytes / args.n:.0f} kB each), "
              f"written in {time.perf_counter() - start:.1f} s")
        prompts = ["a photo of a red bicycle leaning on a wall"] * args.n

        start = time.perf_counter()
        for p, q in zip(paths, prompts):
            item_stamp(p, q, fast=True)
        fast = time.perf_counter() - start
        start = time.perf_counter()
        for p, q in zip(paths, prompts):
            item_stamp(p, q)
        hashed = time.perf_counter() - start
        print(f"stamps of {args.n} images: hashed {hashed:.2f} s, fast (size + mtime) {fast:.2f} s")

        import torch

        from scorers.metrics.embedding import CLIPScore
        from scorers.scoring.runner import run

        scorer = CLIPScore(random_clip_vit_b16(tmp / "clip"), device="cpu")
        subset = paths[: args.subset]
        run(scorer, subset[:16], prompts[:16], batch_size=16, num_workers=0, progress=False)  # warm-up
        start = time.perf_counter()
        run(scorer, subset, prompts[: len(subset)], batch_size=16, num_workers=1, progress=False)
        per_image = (time.perf_counter() - start) / len(subset)
        total = per_image * args.n
        print(f"CLIPScore ViT-B/16 on CPU ({torch.get_num_threads()} threads): {1e3 * per_image:.0f} ms/image over "
              f"{len(subset)} images -> {total:.0f} s for {args.n} (extrapolated)")
        print(f"ratio hash / CLIPScore run: {hashed / total:.4f} ({100 * hashed / total:.2f}%; "
              f"above 5%: {hashed / total > 0.05})")


if __name__ == "__main__":
    main()
