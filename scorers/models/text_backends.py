"""Model names -> backend objects for the judges (VIEScore, LLMScore): ``openai:MODEL`` is a served model
(``openai_compat.OpenAIChat``), anything else a local checkpoint. Loading only; prompts live in ``scorers.metrics.judges``."""
from __future__ import annotations

from typing import Any

from scorers.models.openai_compat import SERVED_OPTIONS, OpenAIChat, is_served

__all__ = ["load_free_text_vlm", "load_text_lm"]

#: local VQA backend families that can write free text about an image given a whole instruction
FREE_TEXT_KINDS = ("chat_vlm", "instructblip")


def _served(model: str, served: dict, **options) -> OpenAIChat:
    unknown = sorted(set(served) - set(SERVED_OPTIONS))
    if unknown:
        raise ValueError(f"unknown served-model option(s) {unknown}; known: {list(SERVED_OPTIONS)}")
    return OpenAIChat(model, **served, **options)


def load_free_text_vlm(model: str, kind: str = "chat_vlm", *, max_new_tokens: int = 512, device: Any = None,
                       precision: str | None = None, batch_size: int | None = None, served: dict | None = None,
                       revision: str | None = None):
    """A VLM whose ``answer(images, instructions)`` returns free text (no short-answer prompt): a served model with
    no system prompt, a local chat VLM (LLaVA-1.5 and other ``llava-hf`` checkpoints load as chat VLMs through their
    chat template) without system prompt, or InstructBLIP with the instruction as the whole prompt."""
    if is_served(model):
        return _served(model, served or {}, system_prompt=None, max_new_tokens=max_new_tokens)
    if served:
        raise ValueError(f"option(s) {sorted(served)} apply to served models only (openai:MODEL), not {model!r}")
    if kind not in FREE_TEXT_KINDS:
        raise ValueError(f"judge VLM backend {kind!r} cannot write free text; use one of {FREE_TEXT_KINDS} "
                         "(short-answer VQA models such as BLIP VQA cannot)")
    from scorers.models.vqa_base import load_vqa_backend

    options: dict = {"device": None if device is None else str(device), "precision": precision,
                     "max_new_tokens": max_new_tokens}
    options.update({"system_prompt": None} if kind == "chat_vlm" else {"prompt": "{question}"})
    if batch_size:
        options["batch_size"] = batch_size
    if revision and kind == "chat_vlm":
        options["revision"] = revision
    return load_vqa_backend(model, kind, **options)


def load_text_lm(model: str, *, max_new_tokens: int = 512, device: Any = None, precision: str | None = None,
                 batch_size: int | None = None, served: dict | None = None):
    """A text LM with ``generate(prompts) -> list[str]``: served (``openai:MODEL``) or a local ``TextLM``."""
    if is_served(model):
        return _served(model, served or {}, text_max_new_tokens=max_new_tokens)
    if served:
        raise ValueError(f"option(s) {sorted(served)} apply to served models only (openai:MODEL), not {model!r}")
    from scorers.models.text_lm import TextLM

    options: dict = {"device": None if device is None else str(device), "precision": precision,
                     "max_new_tokens": max_new_tokens}
    if batch_size:
        options["batch_size"] = batch_size
    return TextLM(model, **options)
