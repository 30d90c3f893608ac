"""InstructBLIP (``Salesforce/instructblip-vicuna-7b``, ``-flan-t5-xl``...): loading + batched answering.

The question goes both to the Q-Former (right-padded BERT tokenizer) and to the LM (left-padded): only the LM
tokenizer is switched to left padding, which keeps batched greedy answers equal to one-at-a-time answers.
"""
from __future__ import annotations

from typing import Sequence


from .vqa_base import PromptedVQA, move_inputs, pick_device, pick_dtype

__all__ = ["INSTRUCTBLIP_PROMPT", "InstructBlipVQA"]

INSTRUCTBLIP_PROMPT = "Question: {question} Short answer:"


class InstructBlipVQA(PromptedVQA):
    """``InstructBlipVQA("Salesforce/instructblip-vicuna-7b")``: ``answer`` (greedy) and ``yes_probability``."""

    def __init__(self, model: str = "Salesforce/instructblip-vicuna-7b", *, device: str | None = None,
                 precision: str | None = None, batch_size: int = 16, max_new_tokens: int = 16,
                 prompt: str = INSTRUCTBLIP_PROMPT):
        from transformers import AutoProcessor, InstructBlipForConditionalGeneration

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from .loading import model_source

        with model_source(model) as source:
            self.processor = AutoProcessor.from_pretrained(source)
            self.model = InstructBlipForConditionalGeneration.from_pretrained(source, dtype=self.dtype)
        self.processor.tokenizer.padding_side = "left"
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

    def _check_answer_probability(self) -> None:
        if not self.is_decoder_only:
            raise ValueError(f"{self.name}: answer probabilities are implemented for decoder-only LMs only")
