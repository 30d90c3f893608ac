"""LLaVA-1.5 (``llava-hf/llava-1.5-7b-hf``): the chat VLM backend with LLaVA-1.5's own short-answer prompt.

LLaVA-1.5 was trained on ``USER: <image>\\n{question}\\nAnswer the question using a single word or phrase. ASSISTANT:``
for short-answer VQA, so that literal prompt is used instead of a system prompt; batching is left-padded.
"""
from __future__ import annotations

from .chat_vlm import ChatVLM

__all__ = ["LLAVA_PROMPT", "LlavaVQA"]

LLAVA_PROMPT = "USER: <image>\n{question}\nAnswer the question using a single word or phrase. ASSISTANT:"


class LlavaVQA(ChatVLM):
    """``LlavaVQA("llava-hf/llava-1.5-7b-hf")``."""

    def __init__(self, model: str = "llava-hf/llava-1.5-7b-hf", **kwargs):
        kwargs.setdefault("system_prompt", None)
        super().__init__(model, **kwargs)

    def prompt(self, question: str) -> str:
        return LLAVA_PROMPT.format(question=question)
