"""A tiny chat VLM whose greedy reply is a fixed text: for end-to-end tests of judges whose parser needs a readable
reply (``unifiedreward``), with the production parser and backend unchanged.

Architecture: Qwen3-VL (the family of the default UnifiedReward-2.0 checkpoint), built from a config (hidden 32,
2 layers, 16 px patches merged 2 x 2), loaded by ``AutoModelForImageTextToText`` / ``AutoProcessor`` like the real
one. Weights: random, then crafted so that greedy decoding is a fixed chain of tokens:

- the reply's lines are added tokens of the tokenizer (``REPLY_LINES``: one token per line, kept by
  ``skip_special_tokens=True`` because they are not special);
- every attention output projection and MLP down projection is zero, so the residual stream at a position is the
  embedding of that position's token alone (the vision features enter only at image positions, and the deepstack
  additions only there too);
- token embeddings are orthonormal directions: every ordinary token -> ``u0``, reply line ``k`` -> ``u(k+1)``; the
  LM head maps ``u0`` to line 0, ``u(k+1)`` to line ``k+1`` and the last line's direction to ``</s>`` (eos).

So whatever the image and prompt, the last prompt token is an ordinary token and greedy decoding writes line 0, 1,
..., then eos. Logit margins are ``GAIN * sqrt(hidden)`` (RMSNorm of a unit vector times ``sqrt(hidden)``): 64 * 5.7,
no tie possible.
"""
from __future__ import annotations

from pathlib import Path

#: the published pointwise output format of UnifiedReward-2.0 (``Alignment Score (1-5): X`` / ``Coherence Score
#: (1-5): Y`` / ``Style Score (1-5): Z``; e.g. the authors' example outputs), one line per token
REPLY_LINES = ("Alignment Score (1-5): 4\n", "Coherence Score (1-5): 3\n", "Style Score (1-5): 5")
GAIN = 64.0

#: Qwen chat layout (system turn optional; image placeholder inside the user turn)
QWEN3VL_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% else %}{{ part['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")


def make_fixed_reply_qwen3_vl(root: str | Path, reply_lines: tuple[str, ...] = REPLY_LINES, seed: int = 0) -> Path:
    """Save the tiny Qwen3-VL under ``root/qwen3_vl-fixed-reply`` and return the folder (``--model`` value)."""
    import torch
    import transformers

    from tests.helpers.tiny_vqa_models import _bpe_tokenizer

    torch.manual_seed(seed)
    tokenizer = _bpe_tokenizer(extra_special=SPECIALS)
    tokenizer.add_tokens(list(reply_lines))
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIALS}
    line_ids = [tokenizer.convert_tokens_to_ids(line) for line in reply_lines]
    image_processor = transformers.Qwen2VLImageProcessor(patch_size=16, merge_size=2, min_pixels=32 * 32,
                                                        max_pixels=32 * 32 * 4)
    video_processor = transformers.Qwen3VLVideoProcessor(patch_size=16, merge_size=2)
    processor = transformers.Qwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                              video_processor=video_processor, chat_template=QWEN3VL_CHAT_TEMPLATE)
    hidden, heads = 32, 2
    head_dim = hidden // heads
    config = transformers.Qwen3VLConfig(
        text_config=dict(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=2, num_attention_heads=heads, num_key_value_heads=1, head_dim=head_dim,
                         max_position_embeddings=4096,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [head_dim // 2 - 2 * (head_dim // 6), head_dim // 6,
                                                            head_dim // 6], "mrope_interleaved": True},
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=hidden,
                           patch_size=16, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False)
    model = transformers.Qwen3VLForConditionalGeneration(config).eval()
    with torch.no_grad():
        craft_fixed_reply(model, line_ids, tokenizer.eos_token_id)
    out = Path(root) / "qwen3_vl-fixed-reply"
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def craft_fixed_reply(model, line_ids: list[int], eos_id: int) -> None:
    """Zero the residual writers of every text layer and set embeddings / LM head to the token chain above (call it
    under ``torch.no_grad()``: the weights are written in place)."""
    import torch

    text = model.model.language_model
    for layer in text.layers:
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
    hidden = text.config.hidden_size
    assert len(line_ids) + 1 <= hidden
    basis = torch.eye(hidden)
    embed = text.embed_tokens.weight
    embed.copy_(basis[0].expand_as(embed))
    for k, token in enumerate(line_ids):
        embed[token] = basis[k + 1]
    head = model.lm_head.weight
    head.zero_()
    targets = [*line_ids, eos_id]
    for k, token in enumerate(targets):  # direction k (ordinary tokens for k=0, then line k-1) -> targets[k]
        head[token] = GAIN * basis[k]
    text.norm.weight.fill_(1.0)
