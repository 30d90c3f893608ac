"""Text-only language models (causal LMs such as ``tifa-benchmark/llama2_tifa_question_generation``, or seq2seq QA
models such as UnifiedQA): loading + batched greedy generation, nothing else.

Causal LMs are left-padded so a batch generates exactly what one prompt at a time generates.
"""
from __future__ import annotations

from typing import Sequence

import torch

from scorers.models.vqa_base import chunks, pick_device, pick_dtype

__all__ = ["TextLM"]


class TextLM:
    """``TextLM("tifa-benchmark/llama2_tifa_question_generation").generate(prompts) -> list[str]`` (new text only)."""

    def __init__(self, model: str, *, device: str | None = None, precision: str | None = None, batch_size: int = 8,
                 max_new_tokens: int = 256):
        from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from scorers.models.loading import model_source

        with model_source(model) as source:
            self.is_encoder_decoder = bool(getattr(AutoConfig.from_pretrained(source), "is_encoder_decoder", False))
            self.tokenizer = AutoTokenizer.from_pretrained(source, padding_side="right" if self.is_encoder_decoder
                                                           else "left")
            auto = AutoModelForSeq2SeqLM if self.is_encoder_decoder else AutoModelForCausalLM
            self.model = auto.from_pretrained(source, dtype=self.dtype).to(self.device).eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.name = str(model)

    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], max_new_tokens: int | None = None) -> list[str]:
        out: list[str] = []
        for part in chunks(len(prompts), self.batch_size):
            inputs = self.tokenizer([prompts[i] for i in part], padding=True, return_tensors="pt").to(self.device)
            ids = self.model.generate(**inputs, max_new_tokens=max_new_tokens or self.max_new_tokens,
                                      do_sample=False, num_beams=1, pad_token_id=self.tokenizer.pad_token_id)
            if not self.is_encoder_decoder:
                ids = ids[:, inputs["input_ids"].shape[1]:]
            out.extend(self.tokenizer.batch_decode(ids, skip_special_tokens=True))
        return out
