"""LLaVA-1.5 (``llava-hf/llava-1.5-7b-hf``): the chat VLM backend with LLaVA-1.5's own short-answer prompt.

LLaVA-1.5 was trained on ``USER: <image>\\n{question}\\nAnswer the question using a single word or phrase. ASSISTANT:``
for short-answer VQA, so that literal prompt is used instead of a system prompt; batching is left-padded.

``prompt_style="t2v_metrics"`` renders the prompt of the VQAScore reference code instead (``t2v_metrics``:
``format_question`` in ``t2v_metrics/models/vqascore_models/llava_model.py``, its ``SYSTEM_MSG`` from
``t2v_metrics/constants.py``): LLaVA's Vicuna system message, then ``USER: <image>\\n{question} ASSISTANT:``, no
short-answer suffix (:data:`T2V_METRICS_PROMPT`).
"""
from __future__ import annotations

from scorers.models.chat_vlm import ChatVLM

__all__ = ["LLAVA_PROMPT", "LlavaVQA", "PROMPT_STYLES", "T2V_METRICS_PROMPT", "T2V_METRICS_SYSTEM_MESSAGE"]

LLAVA_PROMPT = "USER: <image>\n{question}\nAnswer the question using a single word or phrase. ASSISTANT:"
#: LLaVA-1.5's (Vicuna v1) system message, as t2v_metrics sends it
T2V_METRICS_SYSTEM_MESSAGE = ("A chat between a curious user and an artificial intelligence assistant. The assistant "
                              "gives helpful, detailed, and polite answers to the user's questions.")
#: t2v_metrics' LLaVA prompt. Its own string ends in "ASSISTANT: " and it then scores the answer "Yes" from the token
#: after that space (it drops the space's token from the prompt, as Llama's tokenizer joins it to "Yes"), which is
#: this prompt followed by the answer token.
T2V_METRICS_PROMPT = T2V_METRICS_SYSTEM_MESSAGE + " USER: <image>\n{question} ASSISTANT:"
#: ``prompt_style`` -> prompt template
PROMPT_STYLES = {"short_answer": LLAVA_PROMPT, "t2v_metrics": T2V_METRICS_PROMPT}


class LlavaVQA(ChatVLM):
    """``LlavaVQA("llava-hf/llava-1.5-7b-hf")``."""

    #: which prompt :meth:`prompt` renders (see the module docstring)
    prompt_style = "short_answer"

    def __init__(self, model: str = "llava-hf/llava-1.5-7b-hf", *, prompt_style: str = "short_answer", **kwargs):
        if prompt_style not in PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {sorted(PROMPT_STYLES)}, got {prompt_style!r}")
        kwargs.setdefault("system_prompt", None)
        super().__init__(model, **kwargs)
        self.prompt_style = prompt_style

    def prompt(self, question: str) -> str:
        return PROMPT_STYLES[self.prompt_style].format(question=question)
