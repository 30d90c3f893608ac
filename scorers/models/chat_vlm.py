"""Any ``AutoModelForImageTextToText`` chat VLM (Qwen2-VL, SmolVLM, LLaVA...): loading + batched, left-padded answering.

Each question becomes one chat (optional system prompt asking for a concise answer, then the image and the question)
rendered with the checkpoint's chat template; a batch is left-padded, so greedy answers equal one-at-a-time answers.
"""
from __future__ import annotations

from typing import Sequence


from .vqa_base import PromptedVQA, move_inputs, pick_device, pick_dtype

__all__ = ["CONCISE_SYSTEM_PROMPT", "ChatVLM"]

CONCISE_SYSTEM_PROMPT = ("You answer questions about an image. Reply with a short answer only: yes or no for yes/no "
                         "questions, otherwise a single word or short phrase.")


class ChatVLM(PromptedVQA):
    """``ChatVLM("Qwen/Qwen2-VL-2B-Instruct")``: ``answer`` (greedy) and ``yes_probability``."""

    yes_word = "Yes"  # chat models answer "Yes, ..." after the generation prompt

    def __init__(self, model: str, *, device: str | None = None, precision: str | None = None, batch_size: int = 16,
                 max_new_tokens: int = 16, system_prompt: str | None = CONCISE_SYSTEM_PROMPT):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from .loading import model_source

        with model_source(model) as source:
            self.processor = AutoProcessor.from_pretrained(source, padding_side="left")
            self.model = AutoModelForImageTextToText.from_pretrained(source, dtype=self.dtype).to(self.device).eval()
        self.processor.tokenizer.padding_side = "left"
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
