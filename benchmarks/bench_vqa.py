"""Questions/s of VQA answering against a baseline in the same run, same model: two comparisons.

``--compare batching`` (default): batched answering vs one question per forward. Default model: a BLIP VQA built from
a config with BLIP-base-like proportions scaled to CPU (ViT 224 px / 16 px patches, hidden 384, 6 vision + 4 text
layers, random weights: speed does not depend on training).

``--compare prefix-cache``: per-question prefill (``prefix_cache=False``: every question runs vision tower + its
whole prompt) vs the shared image prefix (``prefix_cache=True``: vision + prefill of the image prefix once per
image), both batched alike. Default model: a LLaVA-1.5-shaped model built from a config, 336 px / 14 px patches =
576 image tokens, 7 questions of ~15 tokens per image behind LLaVA-1.5's prompt (``--llava-preset small`` for a
CPU, ``7b`` for LLaVA-1.5-7B's shapes on a GPU).

``--model`` takes any checkpoint (``--backend`` auto/blip_vqa/instructblip/llava/chat_vlm). Prints both rates, the
ratio (``speed-up N.Nx``), and checks that both ways give the same answers.

    python benchmarks/bench_vqa.py                      # small BLIP from config, CPU
    python benchmarks/bench_vqa.py --preset base --device cuda --precision bf16 --images 32
    python benchmarks/bench_vqa.py --model Salesforce/blip-vqa-base --device cuda --precision bf16
    python benchmarks/bench_vqa.py --compare prefix-cache                 # small LLaVA-shaped model, CPU
    python benchmarks/bench_vqa.py --compare prefix-cache --llava-preset 7b --device cuda --precision bf16
    python benchmarks/bench_vqa.py --compare prefix-cache --family qwen2_vl   # small Qwen2-VL-shaped model, CPU

``--family qwen2_vl`` / ``qwen2_5_vl`` (prefix-cache): a Qwen2-VL-shaped chat model from a config instead
(``tests/helpers/tiny_qwen_models.py``; 336 x 336 images = 576 patches merged into 144 image tokens, 3-D rotary positions).
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


#: 7 questions per image (TIFA asks ~7 per TS2 image), ~15 tokens each under the benchmark LLaVA's tokenizer
LLAVA_QUESTIONS = ["is there a red cat sitting on the wooden table next to the open window?",
                   "what color is the small dog that is lying on the floor near the door?",
                   "how many people are standing in front of the tall green tree in the park?",
                   "is the person on the left holding a blue umbrella over his head?",
                   "does this figure show a green table with two white cups on top of it?",
                   "are there two dogs or one cat playing together on the grass in the yard?",
                   "what is the woman in the red dress holding in her right hand at the table?"]

LLAVA_PRESETS = {  # (LM hidden, LM layers, heads, vision hidden, vision layers); 336 px / 14 px patches in both
    "small": (256, 4, 4, 128, 2),
    "7b": (4096, 32, 32, 1024, 24),  # llava-1.5-7b: Vicuna-7B + CLIP ViT-L/14-336
}


def llava_shaped(root: Path, preset: str = "small") -> Path:
    """A LLaVA-1.5-shaped model from a config (random weights), its tokenizer trained on the benchmark's prompts."""
    from scorers.models.llava import LLAVA_PROMPT
    from tests.helpers.tiny_vqa_models import make_llava

    hidden, layers, heads, vision_hidden, vision_layers = LLAVA_PRESETS[preset]
    corpus = tuple(LLAVA_PROMPT.format(question=q) for q in LLAVA_QUESTIONS)
    return make_llava(root, image_size=336, patch_size=14, hidden=hidden, intermediate=4 * hidden, layers=layers,
                      heads=heads, vision_hidden=vision_hidden, vision_intermediate=4 * vision_hidden,
                      vision_layers=vision_layers, corpus=corpus, vocab_size=1000, name=f"{preset}-llava")


#: (LM hidden, LM layers, heads, vision hidden, vision layers) of the Qwen2-VL-shaped model (prefix-cache, CPU)
QWEN_SMALL = (256, 4, 4, 128, 2)


def qwen_shaped(root: Path, family: str) -> Path:
    """A small Qwen2-VL-family chat model from a config (random weights), its tokenizer trained on the questions."""
    from tests.helpers.tiny_qwen_models import make_qwen_chat

    hidden, layers, heads, vision_hidden, vision_layers = QWEN_SMALL
    return make_qwen_chat(root, family, hidden=hidden, layers=layers, heads=heads, vision_hidden=vision_hidden,
                          vision_layers=vision_layers, max_pixels=336 * 336, corpus=tuple(LLAVA_QUESTIONS),
                          vocab_size=1000, initializer_range=0.02)


def timed(run, sync) -> tuple[list[str], float]:
    start = time.perf_counter()
    answers = run()
    sync()
    return answers, time.perf_counter() - start


def compare_prefix_cache(args, model: str, images, sync) -> int:
    """Per-question prefill vs shared image prefix: same backend class, same batch size, same questions."""
    from scorers.models.vqa_base import load_vqa_backend

    options = dict(device=args.device, precision=args.precision, max_new_tokens=args.max_new_tokens,
                   batch_size=args.batch_size)
    plain = load_vqa_backend(model, args.backend, prefix_cache=False, **options)
    shared = load_vqa_backend(model, args.backend, prefix_cache=True, **options)
    pairs_images = [im for im in images for _ in LLAVA_QUESTIONS]
    pairs_questions = LLAVA_QUESTIONS * len(images)
    n = len(pairs_questions)
    for backend in (plain, shared):  # warm-up
        backend.answer(pairs_images[:2], pairs_questions[:2])
    t_plain = t_shared = 0.0
    for _ in range(args.repeats):  # alternate, so both see the same machine load
        plain_answers, t = timed(lambda: plain.answer(pairs_images, pairs_questions), sync)
        t_plain += t
        shared_answers, t = timed(lambda: shared.answer(pairs_images, pairs_questions), sync)
        t_shared += t
    tokens = shared.processor(images=images[0], text=shared.prompt(LLAVA_QUESTIONS[0]))["input_ids"]
    image_tokens = sum(int(t == shared.model.config.image_token_id) for t in tokens[0])
    question_tokens = np.mean([len(shared.processor.tokenizer(q)["input_ids"]) for q in LLAVA_QUESTIONS])
    built = (f"{args.llava_preset} LLaVA-shaped" if args.family == "llava" else f"small {args.family}-shaped")
    print(f"model: {args.model or f'{built} from config (random weights)'} on "
          f"{args.device} ({shared.dtype}), {len(images)} images x {len(LLAVA_QUESTIONS)} questions = {n} questions, "
          f"{image_tokens} image tokens, {question_tokens:.1f} tokens/question, {len(tokens[0])} prompt tokens, "
          f"batch {args.batch_size}, {torch_threads()} threads, {args.repeats} repeats")
    print(f"per-question prefill: {args.repeats * n / t_plain:8.2f} questions/s ({t_plain:.2f} s)")
    print(f"shared image prefix:  {args.repeats * n / t_shared:8.2f} questions/s ({t_shared:.2f} s)")
    same = shared_answers == plain_answers
    print(f"speed-up {t_plain / t_shared:.1f}x; answers identical: {same}")
    return 0 if same else 1


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


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
    parser.add_argument("--compare", choices=["batching", "prefix-cache"], default="batching",
                        help="batched vs one question per forward, or shared image prefix vs per-question prefill")
    parser.add_argument("--model", help="VQA checkpoint (default: a model built from a config, see --preset / "
                                        "--llava-preset)")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small",
                        help="shapes of the BLIP built from a config when --model is not given")
    parser.add_argument("--llava-preset", choices=sorted(LLAVA_PRESETS), default="small",
                        help="shapes of the LLaVA built from a config for --compare prefix-cache")
    parser.add_argument("--family", choices=["llava", "qwen2_vl", "qwen2_5_vl"], default="llava",
                        help="architecture of the model built from a config for --compare prefix-cache")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--images", type=int, default=None, help="default 8 (batching), 4 (prefix-cache)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="questions per forward (default 48 for batching, 7 for prefix-cache)")
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each way (prefix-cache)")
    parser.add_argument("--max-new-tokens", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default=None)
    args = parser.parse_args(argv)
    prefix = args.compare == "prefix-cache"
    args.images = args.images or (4 if prefix else 8)
    args.batch_size = args.batch_size or (7 if prefix else 48)

    import torch

    from scorers.models.vqa_base import load_vqa_backend

    torch.set_num_threads(max(1, torch.get_num_threads()))
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    if prefix:
        rng = np.random.default_rng(0)
        images = [Image.fromarray(rng.integers(0, 255, (336, 336, 3), dtype=np.uint8)) for _ in range(args.images)]
        with tempfile.TemporaryDirectory() as tmp:
            if args.model:
                model = args.model
            elif args.family == "llava":
                model = str(llava_shaped(Path(tmp), args.llava_preset))
            else:
                model = str(qwen_shaped(Path(tmp), args.family))
            return compare_prefix_cache(args, model, images, sync)
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
