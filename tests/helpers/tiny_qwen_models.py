"""Tiny Qwen2-VL / Qwen2.5-VL chat checkpoints built from configs (random weights, no Hub): they load through
``AutoModelForImageTextToText`` / ``AutoProcessor`` like the real ones (3-D multimodal rotary positions, 14 px patches
merged 2 x 2, Qwen's chat layout). The keyword sizes default to the test model; ``benchmarks/bench_vqa.py
--family qwen2_vl`` builds a larger one with them."""
from __future__ import annotations

from pathlib import Path

#: Qwen2-VL's chat layout (default system turn, then each message; image placeholder inside the user turn)
QWEN2VL_CHAT_TEMPLATE = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")


def make_qwen_chat(root: str | Path, family: str = "qwen2_vl", seed: int = 0, *, hidden: int = 32, layers: int = 2,
                   heads: int = 2, vision_hidden: int = 32, vision_layers: int = 2, max_pixels: int = 28 * 28 * 16,
                   corpus: tuple[str, ...] = (), vocab_size: int = 300, initializer_range: float = 0.2) -> Path:
    """``family`` "qwen2_vl" or "qwen2_5_vl"; images are resized to at most ``max_pixels`` (16 merged tokens)."""
    import torch
    import transformers

    from tests.helpers.tiny_vqa_models import _bpe_tokenizer

    torch.manual_seed(seed)
    tokenizer = _bpe_tokenizer(extra_special=SPECIALS, corpus=corpus, vocab_size=vocab_size)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    prefix = {"qwen2_vl": "Qwen2VL", "qwen2_5_vl": "Qwen2_5_VL"}[family]
    image_processor = transformers.Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=max_pixels)
    processor = getattr(transformers, f"{prefix}Processor")(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=transformers.Qwen2VLVideoProcessor(),
        chat_template=QWEN2VL_CHAT_TEMPLATE)
    vision = dict(depth=vision_layers, hidden_size=hidden, num_heads=heads, patch_size=14, spatial_merge_size=2,
                  temporal_patch_size=2, in_chans=3)
    vision.update(dict(embed_dim=vision_hidden, mlp_ratio=2) if family == "qwen2_vl" else
                  dict(hidden_size=vision_hidden, intermediate_size=2 * vision_hidden, out_hidden_size=hidden,
                       window_size=56, fullatt_block_indexes=[vision_layers - 1]))
    head_dim = hidden // heads
    section = [head_dim // 2 - 2 * (head_dim // 6), head_dim // 6, head_dim // 6]
    config = getattr(transformers, f"{prefix}Config")(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=max(1, heads // 2),
                         max_position_embeddings=4096, rope_scaling={"type": "mrope", "mrope_section": section},
                         initializer_range=initializer_range, pad_token_id=tokenizer.pad_token_id,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=None),
        vision_config=vision, image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    model = getattr(transformers, f"{prefix}ForConditionalGeneration")(config).eval()
    out = Path(root) / f"{family}-{hidden}"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
