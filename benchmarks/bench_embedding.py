"""Images/s of CLIPScore through the batched runner vs a one-image-per-forward loop (the official TS2 code's style).

Both use the same ViT-B-32 weights (random by default: the compute is the same as with trained ones) on the same
JPEGs (generated, TS2-like: 512 px, a few images per prompt), in the same process; the script prints both rates,
their ratio and the largest score difference between the two paths.

    python benchmarks/bench_embedding.py                                   # CPU, fp32
    python benchmarks/bench_embedding.py --device cuda --precision bf16 --images 4096 --batch-size 256 \\
        --unique-images 512 --num-workers 14 --baseline-images 256          # GPU
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from scorers.embedding import CLIPScore, EmbeddingScorer
from scorers.runner import run

PROMPTS = [
    "A Christmas tree with lights and teddy bear",
    "A group of planes near a large wall of windows.",
    "a red bicycle leaning against a brick wall",
    "two cats sleeping on a blue sofa",
    "an old man reading a newspaper on a bench",
]


def make_images(folder: Path, n: int, size: int, seed: int = 0) -> list[str]:
    """``n`` noisy gradient JPEGs (quality 90) of ``size`` px: decoding costs about what real photos cost."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 255, size, dtype=np.float32)
    paths = []
    for i in range(n):
        base = np.stack([np.add.outer(ramp, ramp) / 2, np.add.outer(ramp[::-1], ramp) / 2,
                         np.full((size, size), (i * 37) % 256, np.float32)], axis=-1)
        pixels = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).astype(np.uint8)
        paths.append(str(folder / f"{i:05d}.jpg"))
        Image.fromarray(pixels).save(paths[-1], quality=90)
    return paths


def baseline_loop(embedder, paths, prompts) -> np.ndarray:
    """One image and its prompt per forward, decoded on the main thread (as the official TS2 scripts do)."""
    scores = []
    with torch.inference_mode():
        for path, prompt in zip(paths, prompts):
            pixels = embedder.image_transform(Image.open(path).convert("RGB"))[None]
            image = embedder.encode_images(pixels)
            text = embedder.encode_texts([prompt])
            scores.append(torch.nn.functional.cosine_similarity(image, text).item())
    return np.asarray(scores)


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="ViT-B-32", help="open_clip architecture, or a transformers checkpoint")
    parser.add_argument("--pretrained", default=None, help="open_clip tag (default: random weights)")
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--baseline-images", type=int, default=None, help="images timed in the loop (default all)")
    parser.add_argument("--unique-images", type=int, default=None,
                        help="JPEGs generated (paths then repeat; decoding still happens per image; default all)")
    parser.add_argument("--image-size", type=int, default=512)
    parser.add_argument("--per-prompt", type=int, default=16, help="images per prompt (TS2: ~17)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--jpeg-draft", type=int, default=None, metavar="PX",
                        help="runner decodes JPEGs at reduced scale (approximate; the diff is printed)")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs of the batched runner (best is kept)")
    args = parser.parse_args()

    torch.manual_seed(0)
    backend = "open_clip" if args.pretrained or "/" not in args.model else "auto"
    scorer = CLIPScore(args.model, args.pretrained, backend=backend, form="cosine", device=args.device,
                       precision=args.precision)
    embedder = scorer.embedder
    with tempfile.TemporaryDirectory() as tmp:
        unique = make_images(Path(tmp), min(args.unique_images or args.images, args.images), args.image_size)
        paths = [unique[i % len(unique)] for i in range(args.images)]
        prompts = [PROMPTS[(i // args.per_prompt) % len(PROMPTS)] + (f" #{i // args.per_prompt}"
                   if i // args.per_prompt >= len(PROMPTS) else "") for i in range(args.images)]
        n_base = min(args.baseline_images or args.images, args.images)

        baseline_loop(embedder, paths[:2], prompts[:2])  # warm-up (allocations, kernels)
        run(EmbeddingScorer(embedder, form="cosine"), paths[:args.batch_size], prompts[:args.batch_size],
            batch_size=args.batch_size, num_workers=0, progress=False)

        sync(args.device)
        start = time.perf_counter()
        base_scores = baseline_loop(embedder, paths[:n_base], prompts[:n_base])
        sync(args.device)
        base_rate = n_base / (time.perf_counter() - start)

        best = 0.0
        for _ in range(args.repeats):
            fresh = EmbeddingScorer(embedder, form="cosine")  # empty prompt cache: text encoding is timed too
            sync(args.device)
            start = time.perf_counter()
            result = run(fresh, paths, prompts, batch_size=args.batch_size, num_workers=args.num_workers,
                         progress=False, jpeg_draft=args.jpeg_draft)
            sync(args.device)
            best = max(best, args.images / (time.perf_counter() - start))

    diff = float(np.max(np.abs(result.scores[:n_base] - base_scores)))
    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"model {args.model} ({'random weights' if not args.pretrained else args.pretrained}), {device}, "
          f"{args.precision}, torch threads {torch.get_num_threads()}")
    print(f"images {args.images} ({len(set(paths))} distinct {args.image_size} px JPEGs, {len(set(prompts))} prompts), "
          f"batch {args.batch_size}, jpeg draft {args.jpeg_draft or 'off'}, "
          f"workers {args.num_workers}")
    print(f"one image per forward (official style): {base_rate:9.1f} img/s  ({n_base} images)")
    print(f"batched runner                        : {best:9.1f} img/s  ({args.images} images)")
    print(f"speed-up: {best / base_rate:.2f}x   max |score difference|: {diff:.2e}")


if __name__ == "__main__":
    main()
