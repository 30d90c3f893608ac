"""InstructBLIP (``Salesforce/instructblip-vicuna-7b``, ``-flan-t5-xl``...): loading + batched answering.

The question goes both to the Q-Former (right-padded BERT tokenizer) and to the LM (left-padded): only the LM
tokenizer is switched to left padding, which keeps batched greedy answers equal to one-at-a-time answers.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .vqa_base import answer_log_probability, check_pairs, chunks, move_inputs, pick_device, pick_dtype

__all__ = ["INSTRUCTBLIP_PROMPT", "InstructBlipVQA"]

INSTRUCTBLIP_PROMPT = "Question: {question} Short answer:"


class InstructBlipVQA:
    """``InstructBlipVQA("Salesforce/instructblip-vicuna-7b")``: ``answer`` (greedy) and ``yes_probability``."""

    def __init__(self, model: str = "Salesforce/instructblip-vicuna-7b", *, device: str | None = None,
                 precision: str | None = None, batch_size: int = 16, max_new_tokens: int = 16,
                 prompt: str = INSTRUCTBLIP_PROMPT):
        from transformers import AutoProcessor, InstructBlipForConditionalGeneration

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        self.processor = AutoProcessor.from_pretrained(model)
        self.processor.tokenizer.padding_side = "left"
        self.model = InstructBlipForConditionalGeneration.from_pretrained(model, dtype=self.dtype)
        self.model = self.model.to(self.device).eval()
        self.is_decoder_only = not self.model.config.text_config.is_encoder_decoder
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.prompt = prompt
        self.name = str(model)

    def _inputs(self, images: Sequence, questions: Sequence[str]):
        texts = [self.prompt.format(question=q) for q in questions]
        inputs = self.processor(images=list(images), text=texts, padding=True, return_tensors="pt")
        return move_inputs(inputs, self.device, self.dtype)

    @torch.inference_mode()
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        check_pairs(images, questions)
        out: list[str] = []
        tokenizer = self.processor.tokenizer
        for part in chunks(len(questions), self.batch_size):
            inputs = self._inputs([images[i] for i in part], [questions[i] for i in part])
            ids = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1,
                                      pad_token_id=tokenizer.pad_token_id)
            if self.is_decoder_only and ids.shape[1] >= inputs["input_ids"].shape[1] and torch.equal(
                    ids[:, :inputs["input_ids"].shape[1]], inputs["input_ids"]):
                ids = ids[:, inputs["input_ids"].shape[1]:]
            out.extend(t.strip() for t in tokenizer.batch_decode(ids, skip_special_tokens=True))
        return out

    @torch.inference_mode()
    def answer_probability(self, images: Sequence, questions: Sequence[str], answer: str = "yes") -> np.ndarray:
        """P(``answer`` | image, question) for decoder-only LMs (teacher-forced after the prompt)."""
        if not self.is_decoder_only:
            raise ValueError(f"{self.name}: answer probabilities are implemented for decoder-only LMs only")
        check_pairs(images, questions)
        answer_ids = torch.as_tensor(self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"])
        out = []
        for part in chunks(len(questions), self.batch_size):
            inputs = self._inputs([images[i] for i in part], [questions[i] for i in part])
            tail = answer_ids.to(self.device).expand(inputs["input_ids"].shape[0], -1)
            inputs["input_ids"] = torch.cat([inputs["input_ids"], tail], dim=1)
            inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(tail)], dim=1)
            logits = self.model(**inputs).logits
            out.append(answer_log_probability(logits, answer_ids).exp().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> np.ndarray:
        return self.answer_probability(images, questions, "yes")
