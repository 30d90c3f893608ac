"""BLIP VQA (``Salesforce/blip-vqa-base``): loading + batched answering with each image encoded once.

``BlipForQuestionAnswering.generate`` runs the vision encoder once per question, and in transformers 5 the answer
decoder's cross-attention ignores the question's padding mask (padded tokens are attended), so a padded batch answers
differently from single questions. Here the vision encoder runs once per distinct image and each batch of questions
is split into groups of equal token length, which need no padding: a batch answers exactly as ``model.generate`` does
for one unpadded question (tests/metrics/test_qga_models.py).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from scorers.checks import check_pairs
from scorers.models.vqa_base import answer_log_probability, chunks, pick_device, pick_dtype, unique_images

__all__ = ["BlipVQA"]


class BlipVQA:
    """``BlipVQA("Salesforce/blip-vqa-base")``: ``answer`` (greedy) and ``yes_probability``."""

    def __init__(self, model: str = "Salesforce/blip-vqa-base", *, device: str | None = None,
                 precision: str | None = None, batch_size: int = 64, max_new_tokens: int = 10):
        from transformers import AutoProcessor, BlipForQuestionAnswering

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from scorers.models.loading import model_source

        with model_source(model) as source:
            self.processor = AutoProcessor.from_pretrained(source)
            self.model = BlipForQuestionAnswering.from_pretrained(source, dtype=self.dtype).to(self.device).eval()
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.name = str(model)

    def _groups(self, images: Sequence, questions: Sequence[str]):
        """Yield (positions, question embeddings) per group of equal-length questions; images encoded once each."""
        uniques, index = unique_images(images)
        pixels = self.processor.image_processor(uniques, return_tensors="pt")["pixel_values"]
        image_embeds = self.model.vision_model(pixel_values=pixels.to(self.device, self.dtype))[0]
        token_ids = self.processor.tokenizer(list(questions))["input_ids"]
        by_length: dict[int, list[int]] = {}
        for position, ids in enumerate(token_ids):
            by_length.setdefault(len(ids), []).append(position)
        for positions in by_length.values():
            ids = torch.as_tensor([token_ids[p] for p in positions], device=self.device)
            states = image_embeds[torch.as_tensor([index[p] for p in positions], device=self.device)]
            embeds = self.model.text_encoder(input_ids=ids, attention_mask=torch.ones_like(ids),
                                             encoder_hidden_states=states, return_dict=False)[0]
            yield positions, embeds

    @torch.inference_mode()
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        check_pairs(images, questions, what="questions")
        config = self.model.config.text_config
        out: list[str] = [""] * len(questions)
        for part in chunks(len(questions), self.batch_size):
            for positions, embeds in self._groups([images[i] for i in part], [questions[i] for i in part]):
                bos = torch.full((embeds.shape[0], 1), self.model.decoder_start_token_id, device=self.device)
                ids = self.model.text_decoder.generate(input_ids=bos, eos_token_id=config.sep_token_id,
                                                       pad_token_id=config.pad_token_id,
                                                       encoder_hidden_states=embeds,
                                                       max_new_tokens=self.max_new_tokens, do_sample=False,
                                                       num_beams=1)
                for p, text in zip(positions, self.processor.tokenizer.batch_decode(ids, skip_special_tokens=True)):
                    out[part[p]] = text.strip()
        return out

    @torch.inference_mode()
    def answer_probability(self, images: Sequence, questions: Sequence[str], answer: str = "yes") -> np.ndarray:
        """P(``answer`` | image, question) under the answer decoder (teacher-forced over the answer's tokens)."""
        check_pairs(images, questions, what="questions")
        answer_ids = torch.as_tensor(self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"])
        out = np.zeros(len(questions))
        for part in chunks(len(questions), self.batch_size):
            for positions, embeds in self._groups([images[i] for i in part], [questions[i] for i in part]):
                bos = torch.full((embeds.shape[0], 1), self.model.decoder_start_token_id, device=self.device)
                ids = torch.cat([bos, answer_ids.to(self.device).expand(embeds.shape[0], -1)], dim=1)
                logits = self.model.text_decoder(input_ids=ids, encoder_hidden_states=embeds, return_dict=True).logits
                out[[part[p] for p in positions]] = answer_log_probability(logits, answer_ids).exp().cpu().numpy()
        return out

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> np.ndarray:
        """P("yes") (BLIP's vocabulary is lower-case)."""
        return self.answer_probability(images, questions, "yes")
