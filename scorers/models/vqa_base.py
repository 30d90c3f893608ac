"""The small interface every VQA backend implements, and the helpers they share (batching, devices, answer probability).

A backend is ``answer(images, questions) -> list[str]`` (``images[i]`` is asked ``questions[i]``; greedy decoding) and,
where it can, ``yes_probability(images, questions) -> np.ndarray`` (the probability of the answer "Yes", used by
VQAScore). Backends batch many questions per forward with the padding side their model needs, so a batched answer
equals the one-question-per-forward answer (tested per family).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..checks import check_pairs
from ._precision import dtype_of

__all__ = ["BACKENDS", "PromptedVQA", "answer_log_probability", "chunks",
           "load_vqa_backend", "move_inputs", "pick_device", "pick_dtype", "unique_images"]


def pick_device(device: str | None) -> torch.device:
    """The requested device, else CUDA when available, else CPU."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def pick_dtype(precision: str | None, device: torch.device) -> torch.dtype:
    """``precision`` (fp32/bf16/fp16) or the default: bf16 on GPU, fp32 on CPU."""
    if precision is None:
        precision = "bf16" if device.type == "cuda" else "fp32"
    return dtype_of(precision)


def move_inputs(inputs, device: torch.device, dtype: torch.dtype) -> dict:
    """Processor outputs on ``device``: floating tensors (pixels) in the model's ``dtype``, ids/masks as they are."""
    return {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in inputs.items()}


def chunks(n: int, size: int) -> list[range]:
    """``range``s of at most ``size`` covering ``0..n-1`` in order."""
    if size < 1:
        raise ValueError(f"batch_size must be >= 1, got {size}")
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def unique_images(images: Sequence) -> tuple[list, list[int]]:
    """Distinct image objects (by identity) and, per item, the index of its image among them."""
    seen: dict[int, int] = {}
    uniques, index = [], []
    for image in images:
        key = id(image)
        if key not in seen:
            seen[key] = len(uniques)
            uniques.append(image)
        index.append(seen[key])
    return uniques, index


def answer_log_probability(logits: torch.Tensor, answer_ids: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``answer_ids`` (k tokens, appended at the end of every row) from next-token ``logits``.

    ``logits``: ``(batch, seq, vocab)`` of sequences ending with the answer tokens; positions ``-k-1 .. -2`` predict
    them.
    """
    k = answer_ids.numel()
    steps = logits[:, -k - 1:-1, :].float().log_softmax(-1)
    target = answer_ids.to(logits.device).view(1, k, 1).expand(logits.shape[0], k, 1)
    return steps.gather(-1, target).squeeze(-1).sum(-1)


class PromptedVQA:
    """Shared body of the backends that render each question into a text prompt for a processor + ``generate``
    model (InstructBLIP, chat VLMs, LLaVA): batched greedy answering and teacher-forced answer probabilities.

    Subclasses set ``model``, ``processor`` (its tokenizer left-padded), ``device``, ``dtype``, ``batch_size``,
    ``max_new_tokens``, ``name`` and :attr:`yes_word`, and implement :meth:`_inputs` (processor inputs of one batch).
    """

    #: the answer whose probability ``yes_probability`` reads (the spelling the model's answers start with)
    yes_word = "yes"

    def _inputs(self, images: Sequence, questions: Sequence[str]) -> dict:
        raise NotImplementedError

    def _check_answer_probability(self) -> None:
        """Raise when this model cannot give teacher-forced answer probabilities (default: it can)."""

    @torch.inference_mode()
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        check_pairs(images, questions, what="questions")
        out: list[str] = []
        tokenizer = self.processor.tokenizer
        for part in chunks(len(questions), self.batch_size):
            inputs = self._inputs([images[i] for i in part], [questions[i] for i in part])
            ids = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1,
                                      pad_token_id=tokenizer.pad_token_id)
            prompt = inputs["input_ids"]
            # decoder-only LMs return prompt + answer; encoder-decoder LMs the answer alone
            if ids.shape[1] >= prompt.shape[1] and torch.equal(ids[:, :prompt.shape[1]], prompt):
                ids = ids[:, prompt.shape[1]:]
            out.extend(t.strip() for t in tokenizer.batch_decode(ids, skip_special_tokens=True))
        return out

    @torch.inference_mode()
    def answer_probability(self, images: Sequence, questions: Sequence[str], answer: str | None = None) -> np.ndarray:
        """P(``answer``'s tokens follow the prompt | image, question), teacher-forced (default :attr:`yes_word`)."""
        self._check_answer_probability()
        check_pairs(images, questions, what="questions")
        answer = self.yes_word if answer is None else answer
        answer_ids = torch.as_tensor(self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"])
        out = []
        for part in chunks(len(questions), self.batch_size):
            inputs = self._inputs([images[i] for i in part], [questions[i] for i in part])
            tail = answer_ids.to(self.device).expand(inputs["input_ids"].shape[0], -1)
            inputs["input_ids"] = torch.cat([inputs["input_ids"], tail], dim=1)
            inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(tail)], dim=1)
            if "mm_token_type_ids" in inputs:  # multimodal token types (some chat VLMs): answer tokens are text
                inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(tail)], dim=1)
            logits = self.model(**inputs).logits
            out.append(answer_log_probability(logits, answer_ids).exp().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> np.ndarray:
        return self.answer_probability(images, questions, self.yes_word)


#: backend name -> (module, class) under scorers.models
BACKENDS = {
    "blip_vqa": ("scorers.models.blip_vqa", "BlipVQA"),
    "instructblip": ("scorers.models.instructblip", "InstructBlipVQA"),
    "llava": ("scorers.models.llava", "LlavaVQA"),
    "chat_vlm": ("scorers.models.chat_vlm", "ChatVLM"),
}
#: config.model_type -> backend name for ``backend="auto"`` (anything else: chat_vlm)
_AUTO = {"blip": "blip_vqa", "instructblip": "instructblip", "llava": "llava"}


def load_vqa_backend(model: str, backend: str = "auto", **kwargs):
    """Build the backend for ``model``: ``backend`` names one of :data:`BACKENDS`, or ``"auto"`` picks it from the
    checkpoint's ``model_type`` (``blip`` -> BLIP VQA, ``instructblip``, ``llava``, else any chat VLM)."""
    import importlib

    if backend == "auto":
        from transformers import AutoConfig

        from .loading import model_source

        with model_source(model) as source:
            backend = _AUTO.get(AutoConfig.from_pretrained(source).model_type, "chat_vlm")
    if backend not in BACKENDS:
        raise ValueError(f"unknown VQA backend {backend!r}; choose one of {['auto', *BACKENDS]}")
    module, name = BACKENDS[backend]
    return getattr(importlib.import_module(module), name)(model, **kwargs)
