"""Images/s of CLIPScore through the batched runner vs a one-image-per-forward loop (the official TS2 code's style).

Both use the same ViT-B-32 weights (random by default: the compute is the same as with trained ones) on the same
JPEGs (generated, TS2-like: 512 px, a few images per prompt), in the same process; the script prints both rates,
their ratio and the largest score difference between the two paths.

``--configs`` times several runner paths in the same process, on the same weights and JPEGs, each against the first:
``float`` (PIL decode, open_clip's float transform in the workers: the path before uint8 transfer), ``uint8`` (the
default: PIL decode, uint8 crops to the main process, normalised on the device), ``draft`` (uint8 + PIL reduced-size
JPEG decode, ``--jpeg-draft``, default 224) and ``device`` (JPEG bytes from the workers, batched decode + resize on
the model's device: nvJPEG on CUDA).

    python benchmarks/bench_embedding.py                                   # CPU, fp32
    python benchmarks/bench_embedding.py --device cuda --precision bf16 --images 4096 --batch-size 256 \\
        --unique-images 512 --num-workers 14 --baseline-images 256          # GPU
    python benchmarks/bench_embedding.py --configs float,uint8,device     # paths side by side
    python benchmarks/bench_embedding.py --peer torchmetrics --images 256 --per-prompt 16   # against torchmetrics

``--peer torchmetrics`` also times torchmetrics' ``CLIPScore`` in the same process on the same weights and JPEGs:
the model is then a transformers CLIP (``--model ViT-B-32`` builds openai/clip-vit-base-patch32's shapes from a config,
random weights; any transformers CLIP folder works), the peer decodes each batch with PIL on the main thread (its
``update`` takes decoded images) and encodes every prompt of every batch, as its API does; ours is the batched runner
(decode in DataLoader workers, each distinct prompt encoded once). ``--per-prompt 1`` gives every image its own prompt
(no reuse); TS2 has ~17 images per prompt. Scores are compared per batch (the peer keeps a sum per ``update``).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.helpers builds the models from their configs (--model tiny, --peer)

from scorers.metrics.embedding import CLIPScore, EmbeddingScorer  # noqa: E402
from scorers.scoring.runner import run  # noqa: E402

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
            transform = getattr(embedder, "reference_transform", embedder.image_transform)
            pixels = transform(Image.open(path).convert("RGB"))[None]
            image = embedder.encode_images(pixels)
            text = embedder.encode_texts([prompt])
            scores.append(torch.nn.functional.cosine_similarity(image, text).item())
    return np.asarray(scores)


CONFIGS = ("float", "uint8", "draft", "device")


def make_scorer(embedder, config: str) -> EmbeddingScorer:
    """A fresh scorer (empty prompt cache: text encoding is timed too) for one runner path, same weights."""
    if config == "device":
        return EmbeddingScorer(embedder.with_decode("device"), form="cosine")
    scorer = EmbeddingScorer(embedder, form="cosine")
    if config == "float":
        scorer.image_transform = embedder.reference_transform
    return scorer


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="ViT-B-32",
                        help="open_clip architecture, a transformers checkpoint, or 'tiny' (the tests' tiny CLIP)")
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
    parser.add_argument("--configs", default=None,
                        help="comma list of runner paths to time: float, uint8, draft, device (default: uint8, or "
                             "draft with --jpeg-draft); each is compared with the first")
    parser.add_argument("--peer", choices=["torchmetrics"], default=None,
                        help="also time torchmetrics' CLIPScore on the same weights and JPEGs (transformers CLIP)")
    args = parser.parse_args()
    configs = (args.configs or ("draft" if args.jpeg_draft else "uint8")).split(",")
    for config in configs:
        if config not in CONFIGS:
            parser.error(f"--configs: {config!r} is not one of {CONFIGS}")

    torch.manual_seed(0)
    label = args.model
    if args.model == "tiny":
        from tests.helpers.tiny_embed_models import tiny_models

        args.model = tiny_models()["clip"]
    elif args.peer:
        from tests.helpers.tiny_embed_models import CLIP_SHAPES, build_hf_clip

        if args.model in CLIP_SHAPES:  # the architecture as a transformers CLIP, random weights from its config
            import atexit
            import shutil

            folder = tempfile.mkdtemp(prefix="bench-embedding-")
            atexit.register(shutil.rmtree, folder, True)
            args.model = build_hf_clip(folder, shapes=args.model, name="hf-clip")
            label += " (transformers CLIP from its config)"
    backend = "open_clip" if args.pretrained or "/" not in args.model else "auto"
    scorer = CLIPScore(args.model, args.pretrained, backend=backend, form="cosine", device=args.device,
                       precision=args.precision, allow_random_weights=not args.pretrained)  # timing: random on purpose
    embedder = scorer.embedder
    with tempfile.TemporaryDirectory() as tmp:
        unique = make_images(Path(tmp), min(args.unique_images or args.images, args.images), args.image_size)
        paths = [unique[i % len(unique)] for i in range(args.images)]
        prompts = [PROMPTS[(i // args.per_prompt) % len(PROMPTS)] + (f" #{i // args.per_prompt}"
                   if i // args.per_prompt >= len(PROMPTS) else "") for i in range(args.images)]
        n_base = min(args.baseline_images or args.images, args.images)

        baseline_loop(embedder, paths[:2], prompts[:2])  # warm-up (allocations, kernels)
        for config in configs:
            run(make_scorer(embedder, config), paths[:args.batch_size], prompts[:args.batch_size],
                batch_size=args.batch_size, num_workers=0, progress=False)

        sync(args.device)
        start = time.perf_counter()
        base_scores = baseline_loop(embedder, paths[:n_base], prompts[:n_base])
        sync(args.device)
        base_rate = n_base / (time.perf_counter() - start)

        rates, scores = {}, {}
        for config in configs:
            best = 0.0
            for _ in range(args.repeats):
                scorer = make_scorer(embedder, config)
                draft = (args.jpeg_draft or 224) if config == "draft" else None
                sync(args.device)
                start = time.perf_counter()
                try:
                    result = run(scorer, paths, prompts, batch_size=args.batch_size, num_workers=args.num_workers,
                                 progress=False, jpeg_draft=draft)
                except Exception as error:  # report and go on with the other paths
                    print(f"config {config} failed: {type(error).__name__}: {error}")
                    break
                sync(args.device)
                best = max(best, args.images / (time.perf_counter() - start))
            else:
                rates[config], scores[config] = best, result.scores
        configs = [c for c in configs if c in rates]

        peer = torchmetrics_rate(args, paths, prompts, scores[configs[0]]) if args.peer and configs else None

        # the model alone on one preprocessed batch: the ceiling the input pipeline is measured against
        pixels = torch.stack([embedder.image_transform(Image.open(p).convert("RGB"))
                              for p in paths[:args.batch_size]])
        embedder.encode_images(pixels)
        sync(args.device)
        start, n_model = time.perf_counter(), 0
        while time.perf_counter() - start < 2.0:
            embedder.encode_images(pixels)
            n_model += len(pixels)
        sync(args.device)
        model_rate = n_model / (time.perf_counter() - start)

    device = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    print(f"model {label} ({'random weights' if not args.pretrained else args.pretrained}), {device}, "
          f"{args.precision}, torch threads {torch.get_num_threads()}")
    print(f"images {args.images} ({len(set(paths))} distinct {args.image_size} px JPEGs, {len(set(prompts))} prompts), "
          f"batch {args.batch_size}, workers {args.num_workers}, jpeg draft {args.jpeg_draft or 224} (config draft)")
    print(f"one image per forward (official style): {base_rate:9.1f} img/s  ({n_base} images)")
    print(f"model only (uint8 batch already in memory, image tower): {model_rate:9.1f} img/s")
    if not configs:
        return
    first = configs[0]
    for config in configs:
        vs_base = float(np.max(np.abs(scores[config][:n_base] - base_scores)))
        vs_first = float(np.max(np.abs(scores[config] - scores[first])))
        print(f"batched runner, {config:6s}                : {rates[config]:9.1f} img/s  ({args.images} images)  "
              f"speed-up {rates[config] / base_rate:6.2f}x, {rates[config] / rates[first]:5.2f}x vs {first}   "
              f"max |score diff| vs one-per-forward {vs_base:.2e}, vs {first} {vs_first:.2e}")
    if peer is not None:
        rate, diff = peer
        print(f"torchmetrics CLIPScore (PIL decode on the main thread, update per batch): {rate:9.1f} img/s  "
              f"({args.images} images)   ours ({first}) / torchmetrics {rates[first] / rate:5.2f}x   max |mean cosine "
              f"diff| per batch {diff:.2e}")


def torchmetrics_rate(args, paths, prompts, ours: np.ndarray) -> tuple[float, float]:
    """Images/s of torchmetrics' CLIPScore over ``paths`` in batches of ``--batch-size`` (decoding included), and the
    largest difference between its mean cosine per batch and ours."""
    from tests.helpers.tiny_embed_models import torchmetrics_clip_score

    peer = torchmetrics_clip_score(args.model)
    if args.device != "cpu":
        peer = peer.to(args.device)

    def decoded(batch):
        return [torch.from_numpy(np.array(Image.open(p).convert("RGB"))).permute(2, 0, 1) for p in batch]

    peer.update(decoded(paths[:2]), prompts[:2])  # warm-up
    sums = []
    sync(args.device)
    start = time.perf_counter()
    for i in range(0, len(paths), args.batch_size):
        peer.reset()
        peer.update(decoded(paths[i:i + args.batch_size]), prompts[i:i + args.batch_size])
        sums.append(float(peer.score) / 100.0)  # the sum of 100 * cos over the batch, before the clamp
    sync(args.device)
    rate = len(paths) / (time.perf_counter() - start)
    means = [ours[i:i + args.batch_size].mean() for i in range(0, len(paths), args.batch_size)]
    counts = [len(paths[i:i + args.batch_size]) for i in range(0, len(paths), args.batch_size)]
    return rate, float(max(abs(s / c - m) for s, c, m in zip(sums, counts, means)))


if __name__ == "__main__":
    main()
