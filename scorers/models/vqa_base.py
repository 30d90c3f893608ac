"""The small interface every VQA backend implements, and the helpers they share (batching, devices, answer probability).

A backend is ``answer(images, questions) -> list[str]`` (``images[i]`` is asked ``questions[i]``; greedy decoding) and,
where it can, ``yes_probability(images, questions) -> np.ndarray`` (the probability of the answer "Yes", used by
VQAScore). Backends batch many questions per forward with the padding side their model needs, so a batched answer
equals the one-question-per-forward answer (tested per family).
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import torch

from ._precision import dtype_of

__all__ = ["BACKENDS", "VQABackend", "answer_log_probability", "check_pairs", "chunks", "load_vqa_backend",
           "pick_device", "pick_dtype", "unique_images"]


@runtime_checkable
class VQABackend(Protocol):
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        ...


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


def check_pairs(images: Sequence, questions: Sequence[str]) -> None:
    if len(images) != len(questions):
        raise ValueError(f"got {len(images)} images but {len(questions)} questions (one question per image entry)")


def answer_log_probability(logits: torch.Tensor, answer_ids: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``answer_ids`` (k tokens, appended at the end of every row) from next-token ``logits``.

    ``logits``: ``(batch, seq, vocab)`` of sequences ending with the answer tokens; positions ``-k-1 .. -2`` predict
    them.
    """
    k = answer_ids.numel()
    steps = logits[:, -k - 1:-1, :].float().log_softmax(-1)
    target = answer_ids.to(logits.device).view(1, k, 1).expand(logits.shape[0], k, 1)
    return steps.gather(-1, target).squeeze(-1).sum(-1)


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

        backend = _AUTO.get(AutoConfig.from_pretrained(model).model_type, "chat_vlm")
    if backend not in BACKENDS:
        raise ValueError(f"unknown VQA backend {backend!r}; choose one of {['auto', *BACKENDS]}")
    module, name = BACKENDS[backend]
    return getattr(importlib.import_module(module), name)(model, **kwargs)
