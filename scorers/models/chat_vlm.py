"""Any ``AutoModelForImageTextToText`` chat VLM (Qwen2-VL, SmolVLM, LLaVA...): loading + batched, left-padded answering.

Each question becomes one chat (optional system prompt asking for a concise answer, then the image and the question)
rendered with the checkpoint's chat template; a batch is left-padded, so greedy answers equal one-at-a-time answers.

Prefix cache (``prefix_cache=True``, the default): for the architectures in :data:`SHARED_PREFIX_MODEL_TYPES`, the
system text + image tokens are prefilled once per image and every question on it continues from that KV cache
(``vqa_base.SharedPrefix``). For Qwen2-VL / Qwen2.5-VL the prefix is prefilled with its 3-D multimodal rotary
positions (``get_rope_index``) and each question continues at its whole prompt's positions (``rope_deltas``). Other
architectures run each whole prompt (the plain path): their prefill is not a continuation we have verified.
"""
from __future__ import annotations

from typing import Sequence


from scorers.models.vqa_base import PromptedVQA, move_inputs, pick_device, pick_dtype

__all__ = ["CONCISE_SYSTEM_PROMPT", "SHARED_PREFIX_MODEL_TYPES", "ChatVLM"]

#: ``config.model_type`` of the architectures whose image prefix is shared across questions (tested on tiny models:
#: image features enter only at the image placeholder tokens, and the LLM takes 1-D positions from the attention mask)
SHARED_PREFIX_MODEL_TYPES = frozenset({"llava", "qwen2_vl", "qwen2_5_vl"})

CONCISE_SYSTEM_PROMPT = ("You answer questions about an image. Reply with a short answer only: yes or no for yes/no "
                         "questions, otherwise a single word or short phrase.")


class ChatVLM(PromptedVQA):
    """``ChatVLM("Qwen/Qwen2-VL-2B-Instruct")``: ``answer`` (greedy) and ``yes_probability``; ``revision`` pins a
    Hub commit (used only when ``model`` is loaded from the Hub by id)."""

    yes_word = "Yes"  # chat models answer "Yes, ..." after the generation prompt

    def __init__(self, model: str, *, device: str | None = None, precision: str | None = None, batch_size: int = 16,
                 max_new_tokens: int = 16, system_prompt: str | None = CONCISE_SYSTEM_PROMPT,
                 prefix_cache: bool = True, revision: str | None = None):
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.device = pick_device(device)
        self.dtype = pick_dtype(precision, self.device)
        from scorers.models.loading import model_source

        with model_source(model) as source:
            pin = {"revision": revision} if revision and source == model else {}  # a Hub id: its pinned commit
            self.processor = AutoProcessor.from_pretrained(source, padding_side="left", **pin)
            self.model = AutoModelForImageTextToText.from_pretrained(source, dtype=self.dtype,
                                                                     **pin).to(self.device).eval()
        self.processor.tokenizer.padding_side = "left"
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.system_prompt = system_prompt
        self.name = str(model)
        self._set_prefix_cache(prefix_cache)

    def _prefix_cache_unsupported(self) -> str | None:
        model_type = self.model.config.model_type
        if model_type not in SHARED_PREFIX_MODEL_TYPES:
            return (f"{model_type}: the shared image prefix is verified for {sorted(SHARED_PREFIX_MODEL_TYPES)} only; "
                    "each question runs its whole prompt")
        return None

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
