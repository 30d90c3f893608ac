"""InstructBLIP (``Salesforce/instructblip-vicuna-7b``, ``-flan-t5-xl``...): loading + batched answering.

The question goes both to the Q-Former (right-padded BERT tokenizer) and to the LM (left-padded): only the LM
tokenizer is switched to left padding, which keeps batched greedy answers equal to one-at-a-time answers.

Prefix cache (``prefix_cache=True``, the default): the vision tower runs once per image, and the model's own Q-Former,
projection and LM then run per question on those outputs. The LM prefill is not shared across questions: the Q-Former
reads the question, so the query tokens at the start of the LM prompt differ for every question on an image.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

import torch

from scorers.models.vqa_base import PromptedVQA, chunks, move_inputs, pick_device, pick_dtype

__all__ = ["INSTRUCTBLIP_PROMPT", "InstructBlipVQA"]

INSTRUCTBLIP_PROMPT = "Question: {question} Short answer:"


class _PrecomputedVision(torch.nn.Module):
    """Stands in for the vision tower inside the model's own ``forward``/``generate``: returns given outputs."""

    def __init__(self, outputs):
        super().__init__()
        self.outputs = outputs

    def forward(self, pixel_values=None, **kwargs):
        return self.outputs


class InstructBlipVQA(PromptedVQA):
    """``InstructBlipVQA("Salesforce/instructblip-vicuna-7b")``: ``answer`` (greedy) and ``yes_probability``."""

    def __init__(self, model: str = "Salesforce/instructblip-vicuna-7b", *, device: str | None = None,
                 precision: str | None = None, batch_size: int = 16, max_new_tokens: int = 16,
                 prompt: str = INSTRUCTBLIP_PROMPT, prefix_cache: bool = True):
        from transformers import AutoProcessor, InstructBlipForConditionalGeneration

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from scorers.models.loading import model_source

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
        self._set_prefix_cache(prefix_cache)
        if self.prefix_cache:
            self.prefix_cache_note = ("vision tower once per image; Q-Former and LM per question (the Q-Former reads the "
                                      "question, so no LM prefix is shared)")

    def _inputs(self, images: Sequence, questions: Sequence[str]):
        texts = [self.prompt.format(question=q) for q in questions]
        inputs = self.processor(images=list(images), text=texts, padding=True, return_tensors="pt")
        return move_inputs(inputs, self.device, self.dtype)

    def _check_answer_probability(self) -> None:
        if not self.is_decoder_only:
            raise ValueError(f"{self.name}: answer probabilities are implemented for decoder-only LMs only")

    @contextmanager
    def _vision_outputs(self, vision, rows: Sequence[int]):
        """Within the block, the model's vision tower returns ``vision``'s rows ``rows`` (one per question)."""
        from transformers.modeling_outputs import BaseModelOutputWithPooling

        index = torch.as_tensor(rows, device=self.device)
        tower = self.model.vision_model
        self.model.vision_model = _PrecomputedVision(BaseModelOutputWithPooling(
            last_hidden_state=vision.last_hidden_state[index], pooler_output=vision.pooler_output[index]))
        try:
            yield
        finally:
            self.model.vision_model = tower

    def _encode_images(self, images: Sequence):
        pixels = self.processor.image_processor(list(images), return_tensors="pt")["pixel_values"]
        return self.model.vision_model(pixel_values=pixels.to(self.device, self.dtype), return_dict=True)

    def _answer_window(self, images: Sequence, questions: Sequence[str], rows: Sequence[int]) -> list[str]:
        vision, out = self._encode_images(images), []
        for part in chunks(len(questions), self.batch_size):
            part_rows = [rows[i] for i in part]
            inputs = self._inputs([images[r] for r in part_rows], [questions[i] for i in part])
            with self._vision_outputs(vision, part_rows):
                out.extend(self._generate(inputs))
        return out

    def _probability_window(self, images: Sequence, questions: Sequence[str], rows: Sequence[int],
                            answer_ids: torch.Tensor) -> list[float]:
        vision, out = self._encode_images(images), []
        for part in chunks(len(questions), self.batch_size):
            part_rows = [rows[i] for i in part]
            with self._vision_outputs(vision, part_rows):
                out.extend(self._probability_plain([images[r] for r in part_rows], [questions[i] for i in part],
                                                   answer_ids))
        return out
