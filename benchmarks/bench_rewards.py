"""Reward scorers: batched images/s vs the official one image per call (same run, tiny models), and FLOPs per image of
the real architectures (counted on the meta device: no weights, no memory).

    python benchmarks/bench_rewards.py                  # speed on tiny random-weight models (CPU), then FLOPs
    python benchmarks/bench_rewards.py --only flops     # FLOPs only
    python benchmarks/bench_rewards.py --only speed --images 64 --batch-size 32

Speed: each scorer scores the same PIL images (64 x 48 px, 4 distinct prompts) twice in one process, once in batches
of ``--batch-size`` (each distinct prompt encoded once) and once one (image, prompt) per call with the prompt encoded
again each time (the official packages' ``score(prompt, image)`` style); it prints both rates, the ratio, and the
largest score difference between the two paths.

``--size real`` builds the reward models at their real sizes from their configs instead, with seeded random weights
(no download; the compute is the real models'): PickScore's CLIP ViT-H/14 (transformers), HPSv2's open_clip ViT-H-14,
ImageReward's BLIP ViT-L/16 + BERT-base; ``--size mini`` runs the same builders at test sizes (what
``benchmarks/gpu.sh --dry-run`` uses). ``--device cuda --precision bf16 --batched-only`` gives the GPU figure
(pairs/s in batches):

    python benchmarks/bench_rewards.py --only speed --size real --device cuda --precision bf16 --batched-only \
        --images 512 --batch-size 64 --scorers pickscore,hpsv2,imagereward

FLOPs (``torch.utils.flop_counter.FlopCounterMode``; 2 per multiply-add; matmuls, convolutions and attention) per
(image, prompt) pair with the prompt at the TS2 mean length padded as each official pipeline pads it, for: CLIP
ViT-B/16 (``openai/clip-vit-base-patch16``, to set beside the TS2 paper's Table 2 column), PickScore's CLIP-H/14,
HPSv2's open_clip ViT-H-14, ImageReward (BLIP ViT-L/16 at 224 px + BERT-base with cross-attention, 35 tokens), HPSv3
(Qwen2-VL-7B at 448 x 448 px: see :func:`hpsv3_flops` for how its vision tower is counted and its text length),
UnifiedReward-2.0 (Qwen3-VL-8B at 512 x 512 px, prompt and greedy reply: see :func:`unifiedreward_flops`). The last
line compares CLIP ViT-B/16 with Table 2's figure (604M), which follows another, unstated count.
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
sys.path.insert(0, str(ROOT))

PROMPTS = ["A Christmas tree with lights and teddy bear", "A group of planes near a large wall of windows.",
           "a red bicycle leaning against a brick wall", "two cats sleeping on a blue sofa"]


def images(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)) for _ in range(n)]


def one_per_call(scorer, pictures, prompts):
    """The official style: one (image, prompt) per call, the prompt encoded again each time."""
    out = []
    for image, prompt in zip(pictures, prompts):
        cache = getattr(scorer, "_text_cache", None)
        if cache is not None:
            cache.clear()
        out.append(scorer.score([image], [prompt])[0])
    return np.array(out)


def batched(scorer, pictures, prompts, batch_size):
    return np.concatenate([scorer.score(pictures[i:i + batch_size], prompts[i:i + batch_size])
                           for i in range(0, len(pictures), batch_size)])


def build_pickscore(root: Path, size: str) -> dict:
    """PickScore's CLIP ViT-H/14 (``real``) or the tiny test CLIP (``mini``) from a transformers config, saved with a
    CLIP processor (the real CLIP BPE, bundled with open_clip)."""
    from tests.helpers.tiny_embed_models import build_hf_clip

    return {"model": build_hf_clip(root, shapes="ViT-H-14" if size == "real" else "tiny", name=f"pickscore-{size}")}


def build_hpsv2(root: Path, size: str) -> dict:
    """HPSv2's open_clip ViT-H-14 (``real``) or the tests' tiny open_clip ViT (``mini``) with seeded random weights."""
    import open_clip

    if size == "mini":
        from tests.helpers.tiny_embed_models import build_open_clip

        return {"model": build_open_clip(root / "hpsv2-mini")}
    torch.manual_seed(0)
    weights = root / "hpsv2-ViT-H-14-random.pt"
    torch.save(open_clip.create_model("ViT-H-14").state_dict(), weights)
    return {"model": "ViT-H-14", "pretrained": str(weights)}


def build_imagereward(root: Path, size: str) -> dict:
    """ImageReward (BLIP ViT-L/16 at 224 px + BERT-base with cross-attention: ``official_configs()``) or a small one
    with the same layout (``mini``), seeded random weights, in the folder format its scorer loads."""
    from scorers.models.imagereward import ImageRewardModel, official_configs, save_pretrained
    from tests.helpers.tiny_reward_models import blip_tokenizer

    tokenizer = blip_tokenizer()
    med = {"vocab_size": len(tokenizer)}
    if size == "mini":
        med.update(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   max_position_embeddings=40)
    vision, text = official_configs(med, vit="large")
    if size == "mini":
        vision.update(hidden_size=32, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, image_size=32,
                      patch_size=8)
        text["encoder_hidden_size"] = 32
    torch.manual_seed(0)
    return {"model": str(save_pretrained(ImageRewardModel(vision, text).eval(), tokenizer, root / f"ir-{size}"))}


BUILDERS = {"pickscore": build_pickscore, "hpsv2": build_hpsv2, "imagereward": build_imagereward}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def speed(args) -> None:
    from scorers.scoring.registry import build_scorer
    from tests.helpers.tiny_reward_models import tiny_reward_models

    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp(prefix="bench-rewards-"))
    names = args.scorers.split(",")
    if args.size == "tiny":
        models = {name: {"model": path} for name, path in tiny_reward_models(root, hpsv3="hpsv3" in names).items()}
    else:
        unknown = sorted(set(names) - set(BUILDERS))
        if unknown:
            raise SystemExit(f"bench_rewards: --size {args.size} builds {', '.join(BUILDERS)}, not {', '.join(unknown)}")
        models = {name: BUILDERS[name](root, args.size) for name in names}
    pictures = images(args.images)
    prompts = [PROMPTS[i % len(PROMPTS)] for i in range(args.images)]
    print(f"speed: {args.images} images (64x48), {len(PROMPTS)} prompts, batch {args.batch_size}, "
          f"{args.threads} thread(s), {args.size} random-weight models, {args.device}, {args.precision or 'fp32'}")
    for name in names:
        spec = dict(models[name])
        scorer = build_scorer(name, model=spec.pop("model"), device=args.device, precision=args.precision, **spec)
        batched(scorer, pictures[:args.batch_size], prompts[:args.batch_size], args.batch_size)  # warm-up
        if args.batched_only:
            getattr(scorer, "_text_cache", {}).clear()
            sync(args.device)
            start = time.perf_counter()
            batched(scorer, pictures, prompts, args.batch_size)
            sync(args.device)
            print(f"  {name:12s} batched {args.images / (time.perf_counter() - start):8.1f} pairs/s")
            continue
        start = time.perf_counter()
        single = one_per_call(scorer, pictures, prompts)
        sync(args.device)
        t_single = time.perf_counter() - start
        getattr(scorer, "_text_cache", {}).clear()
        start = time.perf_counter()
        many = batched(scorer, pictures, prompts, args.batch_size)
        sync(args.device)
        t_batched = time.perf_counter() - start
        print(f"  {name:12s} one per call {args.images / t_single:8.1f} img/s   batched {args.images / t_batched:8.1f} "
              f"img/s   speed-up {t_single / t_batched:4.1f}x   max |diff| {np.max(np.abs(single - many)):.1e}")


def count_flops(fn) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        fn()
    return counter.get_total_flops()


def _human(flops: float) -> str:
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if flops >= scale:
            return f"{flops / scale:.1f}{unit}"
    return f"{flops:.0f}"


def flops() -> None:
    from transformers import CLIPConfig, CLIPModel

    meta = torch.device("meta")
    rows = []

    def hf_clip(name, vision, text, projection, size, tokens):
        with meta:
            model = CLIPModel(CLIPConfig(vision_config=vision, text_config=text, projection_dim=projection)).eval()
        pixels = torch.empty(1, 3, size, size, device=meta)
        ids = torch.zeros(1, tokens, dtype=torch.long, device=meta)
        image = count_flops(lambda: model.get_image_features(pixel_values=pixels))
        text_f = count_flops(lambda: model.get_text_features(input_ids=ids))
        rows.append((name, image, text_f))

    # openai/clip-vit-base-patch16 (the official TS2 CLIPScore) and CLIP-H/14 (PickScore_v1 = laion CLIP-ViT-H-14
    # fine-tuned); prompt padded to the longest of the batch: 14 tokens, about a TS2 prompt with BOS/EOS
    hf_clip("CLIP ViT-B/16 (clip_score)", dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                               num_attention_heads=12, patch_size=16, image_size=224),
            dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=8), 512, 224, 14)
    hf_clip("PickScore (CLIP ViT-H/14)", dict(hidden_size=1280, intermediate_size=5120, num_hidden_layers=32,
                                              num_attention_heads=16, patch_size=14, image_size=224),
            dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16), 1024, 224, 14)

    import open_clip

    with meta:
        model = open_clip.create_model("ViT-H-14", device=meta).eval()
    pixels = torch.empty(1, 3, 224, 224, device=meta)
    ids = torch.zeros(1, 77, dtype=torch.long, device=meta)  # open_clip pads every prompt to 77
    rows.append(("HPSv2 (open_clip ViT-H-14)", count_flops(lambda: model.encode_image(pixels)),
                 count_flops(lambda: model.encode_text(ids))))

    from scorers.models.imagereward import ImageRewardModel, official_configs

    vision, text = official_configs()
    with meta:
        reward = ImageRewardModel(vision, text).eval()
    pixels = torch.empty(1, 3, 224, 224, device=meta)
    ids = torch.zeros(1, 35, dtype=torch.long, device=meta)
    tokens = (224 // 16) ** 2 + 1
    image_embeds = torch.empty(1, tokens, vision["hidden_size"], device=meta)
    features = torch.empty(1, text["hidden_size"], device=meta)
    image = count_flops(lambda: reward.vision_model(pixel_values=pixels))
    # the text side without masks (building a padding mask reads values, which meta tensors do not have; the
    # all-ones image mask and the padding mask change no FLOP count)
    text_f = count_flops(lambda: reward.text_encoder(input_ids=ids, encoder_hidden_states=image_embeds,
                                                     is_decoder=False))
    text_f += count_flops(lambda: reward.mlp(features))
    rows.append(("ImageReward (BLIP ViT-L + BERT)", image, text_f))

    rows.append(hpsv3_flops())
    rows.append(unifiedreward_flops())

    print("FLOPs per (image, prompt) pair, real architectures on the meta device (image tower + text side):")
    for name, image, text_f in rows:
        print(f"  {name:34s} image {_human(image):>7s}   text {_human(text_f):>7s}   total {_human(image + text_f):>7s}")
    clip = rows[0][1] + rows[0][2]
    print(f"CLIP ViT-B/16: {_human(clip)} here (FlopCounterMode, 2 FLOPs per multiply-add) vs 604M in TS2's Table 2: "
          f"ratio {clip / 604e6:.1f}x")


#: HPSv3's language-model sequence: 256 image tokens (448 x 448 px) + the instruction, prompt and chat template.
#: The text length is an estimate (the instruction has 378 words, about 1.3 Qwen2 tokens per word, plus the chat
#: template and a TS2 prompt): the Qwen2 tokenizer is a Hub download this machine cannot make
HPSV3_TEXT_TOKENS = 520


def hpsv3_flops():
    """Qwen2-VL-7B + head: the vision tower counted on the CPU at depth 1 and 2 (full width, 1024 patches of a
    448 x 448 image) and extrapolated to its 32 identical blocks (its rotary and sequence bookkeeping read grid values,
    which the meta device does not have); the language model on the meta device."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VisionTransformerPretrainedModel

    vision = dict(embed_dim=1280, hidden_size=3584, num_heads=16, mlp_ratio=4, patch_size=14, spatial_merge_size=2,
                  temporal_patch_size=2, in_chans=3)

    def tower(depth):
        config = Qwen2VLConfig(vision_config=dict(vision, depth=depth)).vision_config
        model = Qwen2VisionTransformerPretrainedModel._from_config(config).eval()
        return count_flops(lambda: model(torch.zeros(1024, 3 * 2 * 14 * 14), grid_thw=torch.tensor([[1, 32, 32]])))

    one, two = tower(1), tower(2)
    image = one + 31 * (two - one)
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                         num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
                         rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}),
        vision_config=dict(vision, depth=1))
    with torch.device("meta"):
        model = Qwen2VLForConditionalGeneration(config).eval()
        head = torch.nn.Sequential(torch.nn.Linear(3584, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 16),
                                   torch.nn.ReLU(), torch.nn.Linear(16, 2))
    embeds = torch.empty(1, 256 + HPSV3_TEXT_TOKENS, 3584, device="meta")
    text = count_flops(lambda: model.model.language_model(inputs_embeds=embeds))
    text += count_flops(lambda: head(torch.empty(1, 3584, device="meta")))
    return (f"HPSv3 (Qwen2-VL-7B, {256 + HPSV3_TEXT_TOKENS} LM tokens)", image, text)


#: UnifiedReward-2.0 (Qwen3-VL-8B) pointwise, one image: a 512 x 512 image is 32 x 32 patches of 16 px = 1024
#: patches, 256 LM tokens after the 2 x 2 merge. Text: an **estimated** 200 tokens (the pointwise instruction, about
#: 130 words, plus the chat template and a TS2 prompt; the Qwen tokenizer is a Hub download this machine cannot make)
#: and a 32-token reply (the three ``... Score (1-5): X`` lines and the end token)
UNIFIEDREWARD_IMAGE_PX, UNIFIEDREWARD_TEXT_TOKENS, UNIFIEDREWARD_REPLY_TOKENS = 512, 200, 32


def unifiedreward_flops():
    """Qwen3-VL-8B (the default UnifiedReward-2.0 checkpoint's architecture): the vision tower counted on the CPU at
    full width (its position interpolation and rotary bookkeeping read grid values, which meta tensors lack) at depth
    1 and 2, extrapolated to its 27 identical blocks, plus its 3 deepstack mergers; the language model on the meta
    device over prompt + reply tokens in one pass (the linear layers cost the same per token as prefill + greedy
    decoding with a KV cache; attention, a small part here, is counted over the whole square)."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionModel

    # Qwen3-VL-8B-Instruct: vision = transformers' Qwen3VLVisionConfig defaults (1152 wide, 27 blocks, 16 px patches,
    # deepstack at blocks 8, 16, 24) projected to 4096; text = Qwen3-8B (4096 wide, 36 layers, 32 heads, 8 KV heads)
    vision = dict(hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=4096, patch_size=16,
                  spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=2304)
    side = UNIFIEDREWARD_IMAGE_PX // 16

    def tower(depth, deepstack):
        config = Qwen3VLConfig(vision_config=dict(vision, depth=depth, deepstack_visual_indexes=deepstack)).vision_config
        model = Qwen3VLVisionModel._from_config(config).eval()
        pixels = torch.zeros(side * side, 3 * 2 * 16 * 16)
        return count_flops(lambda: model(pixels, grid_thw=torch.tensor([[1, side, side]])))

    one, two, one_deep = tower(1, []), tower(2, []), tower(1, [0])
    block, merger = two - one, one_deep - one
    image = one + 26 * block + 3 * merger
    config = Qwen3VLConfig(
        text_config=dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, max_position_embeddings=262144),
        vision_config=dict(vision, depth=1), tie_word_embeddings=False)
    tokens = (side // 2) ** 2 + UNIFIEDREWARD_TEXT_TOKENS + UNIFIEDREWARD_REPLY_TOKENS
    with torch.device("meta"):
        model = Qwen3VLForConditionalGeneration(config).eval()
    embeds = torch.empty(1, tokens, 4096, device="meta")
    text = count_flops(lambda: model.model.language_model(inputs_embeds=embeds,
                                                          position_ids=torch.zeros(3, 1, tokens, dtype=torch.long,
                                                                                   device="meta")))
    # the LM head runs once per generated token (the prompt's last position and each reply token but the last)
    text += count_flops(lambda: model.lm_head(torch.empty(1, UNIFIEDREWARD_REPLY_TOKENS, 4096, device="meta")))
    return (f"UnifiedReward (Qwen3-VL-8B, {tokens} LM tokens)", image, text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["speed", "flops"])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--scorers", default="pickscore,hpsv2,imagereward,hpsv3")
    parser.add_argument("--size", choices=["tiny", "mini", "real"], default="tiny",
                        help="speed: the tests' tiny models, or the config builders at test (mini) or real size")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default=None)
    parser.add_argument("--batched-only", action="store_true", help="speed: time the batched path only (pairs/s)")
    args = parser.parse_args(argv)
    if args.only != "flops":
        speed(args)
    if args.only != "speed":
        flops()
    return 0


if __name__ == "__main__":
    sys.exit(main())
