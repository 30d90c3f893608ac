"""Questions/s of batched VQA answering vs one question per forward, same model, same run.

Default model: a BLIP VQA built from a config with BLIP-base-like proportions scaled to CPU (ViT 224 px / 16 px
patches, hidden 384, 6 vision + 4 text layers, random weights: speed does not depend on training). ``--model`` takes
any checkpoint (``--backend`` auto/blip_vqa/instructblip/llava/chat_vlm). Prints both rates, the ratio, and checks
that both ways give the same answers.

    python benchmarks/bench_vqa.py                      # small BLIP from config, CPU
    python benchmarks/bench_vqa.py --preset base --device cuda --precision bf16 --images 32
    python benchmarks/bench_vqa.py --model Salesforce/blip-vqa-base --device cuda --precision bf16
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

QUESTIONS = ["is there a christmas tree?", "what color is the car?", "how many dogs are on the table?",
             "is the man wearing a hat?", "what is the woman holding in her hand?", "are there lights on the tree?"]


def bert_tokenizer(root: Path, size: int = 30522):
    """A BERT WordPiece tokenizer with BLIP's vocabulary size (the LM head's cost) and no download."""
    from transformers import BertTokenizer

    words = sorted({w.strip("?") for q in QUESTIONS for w in q.split()})
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789?.,!'")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + words
    vocab += [f"w{i}" for i in range(size - len(vocab))]
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizer(str(root / "vocab.txt"))
    tokenizer.add_special_tokens({"bos_token": "[DEC]"})
    return tokenizer


PRESETS = {  # (hidden, vision layers, text layers, heads, image px): "base" has blip-vqa-base's shapes
    "small": (384, 6, 4, 6, 224),
    "base": (768, 12, 12, 12, 384),
}


def small_blip(root: Path, preset: str = "small") -> Path:
    import torch
    from transformers import BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    torch.manual_seed(0)
    tokenizer = bert_tokenizer(root)
    hidden, vision_layers, text_layers, heads, pixels = PRESETS[preset]
    text = dict(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=text_layers,
                num_attention_heads=heads, intermediate_size=4 * hidden, bos_token_id=tokenizer.bos_token_id,
                pad_token_id=tokenizer.pad_token_id,
                sep_token_id=tokenizer.sep_token_id, eos_token_id=tokenizer.sep_token_id)
    vision = dict(hidden_size=hidden, image_size=pixels, patch_size=16, num_hidden_layers=vision_layers,
                  num_attention_heads=heads, intermediate_size=4 * hidden)
    model = BlipForQuestionAnswering(BlipConfig(text_config=text, vision_config=vision)).eval()
    processor = BlipProcessor(BlipImageProcessor(size={"height": pixels, "width": pixels}), tokenizer)
    out = root / f"{preset}-blip-vqa"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="VQA checkpoint (default: a small BLIP VQA built from a config)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small",
                        help="shapes of the BLIP built from a config when --model is not given")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=48, help="questions per forward in the batched run")
    parser.add_argument("--max-new-tokens", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default=None)
    args = parser.parse_args(argv)

    import torch

    from scorers.models.vqa_base import load_vqa_backend

    torch.set_num_threads(max(1, torch.get_num_threads()))
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or str(small_blip(Path(tmp), args.preset))
        options = dict(device=args.device, precision=args.precision, max_new_tokens=args.max_new_tokens)
        backend = load_vqa_backend(model, args.backend, batch_size=args.batch_size, **options)
        rng = np.random.default_rng(0)
        images = [Image.fromarray(rng.integers(0, 255, (256, 256, 3), dtype=np.uint8)) for _ in range(args.images)]
        pairs_images = [im for im in images for _ in QUESTIONS]
        pairs_questions = QUESTIONS * len(images)
        n = len(pairs_questions)
        backend.answer(pairs_images[:2], pairs_questions[:2])  # warm-up

        sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
        start = time.perf_counter()
        single = [backend.answer([im], [q])[0] for im, q in zip(pairs_images, pairs_questions)]
        sync()
        t_single = time.perf_counter() - start
        start = time.perf_counter()
        batched = backend.answer(pairs_images, pairs_questions)
        sync()
        t_batched = time.perf_counter() - start

    label = args.model or f"{args.preset} BLIP VQA from config (random weights)"
    print(f"model: {label} on {args.device} ({backend.dtype}), "
          f"{len(images)} images x {len(QUESTIONS)} questions = {n} questions, {torch.get_num_threads()} threads")
    print(f"one question per forward: {n / t_single:8.2f} questions/s ({t_single:.2f} s)")
    print(f"batched ({args.batch_size}/forward):     {n / t_batched:8.2f} questions/s ({t_batched:.2f} s)")
    print(f"speed-up: {t_single / t_batched:.1f}x; answers identical: {batched == single}")
    return 0 if batched == single else 1


if __name__ == "__main__":
    sys.exit(main())
