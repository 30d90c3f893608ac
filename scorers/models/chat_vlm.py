"""Any ``AutoModelForImageTextToText`` chat VLM (Qwen2-VL, SmolVLM, LLaVA...): loading + batched, left-padded answering.

Each question becomes one chat (optional system prompt asking for a concise answer, then the image and the question)
rendered with the checkpoint's chat template; a batch is left-padded, so greedy answers equal one-at-a-time answers.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .vqa_base import answer_log_probability, check_pairs, chunks, move_inputs, pick_device, pick_dtype

__all__ = ["CONCISE_SYSTEM_PROMPT", "ChatVLM"]

CONCISE_SYSTEM_PROMPT = ("You answer questions about an image. Reply with a short answer only: yes or no for yes/no "
                         "questions, otherwise a single word or short phrase.")


class ChatVLM:
    """``ChatVLM("Qwen/Qwen2-VL-2B-Instruct")``: ``answer`` (greedy) and ``yes_probability``."""

    def __init__(self, model: str, *, device: str | None = None, precision: str | None = None, batch_size: int = 16,
                 max_new_tokens: int = 16, system_prompt: str | None = CONCISE_SYSTEM_PROMPT):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        self.processor = AutoProcessor.from_pretrained(model, padding_side="left")
        self.processor.tokenizer.padding_side = "left"
        self.model = AutoModelForImageTextToText.from_pretrained(model, dtype=self.dtype).to(self.device).eval()
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.system_prompt = system_prompt
        self.name = str(model)

    def prompt(self, question: str) -> str:
        """The rendered chat for one question (system prompt, image, question, generation prompt)."""
        messages = []
        if self.system_prompt:
            messages.append({"role": "system", "content": [{"type": "text", "text": self.system_prompt}]})
        messages.append({"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]})
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def _inputs(self, images: Sequence, questions: Sequence[str]):
        texts = [self.prompt(q) for q in questions]
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
            new = ids[:, inputs["input_ids"].shape[1]:]
            out.extend(t.strip() for t in tokenizer.batch_decode(new, skip_special_tokens=True))
        return out

    @torch.inference_mode()
    def answer_probability(self, images: Sequence, questions: Sequence[str], answer: str = "Yes") -> np.ndarray:
        """P(``answer``'s tokens follow the generation prompt | image, question), teacher-forced."""
        check_pairs(images, questions)
        answer_ids = torch.as_tensor(self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"])
        out = []
        for part in chunks(len(questions), self.batch_size):
            inputs = self._inputs([images[i] for i in part], [questions[i] for i in part])
            n = inputs["input_ids"].shape[0]
            tail = answer_ids.to(self.device).expand(n, -1)
            inputs["input_ids"] = torch.cat([inputs["input_ids"], tail], dim=1)
            inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(tail)], dim=1)
            if "mm_token_type_ids" in inputs:
                inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(tail)], dim=1)
            logits = self.model(**inputs).logits
            out.append(answer_log_probability(logits, answer_ids).exp().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> np.ndarray:
        return self.answer_probability(images, questions, "Yes")
