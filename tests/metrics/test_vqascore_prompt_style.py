"""VQAScore's ``prompt_style``: ``"short_answer"`` (default, the toolkit's VQA prompts) and ``"t2v_metrics"`` (the
VQAScore reference code's). The exact prompt sent is checked: against literal strings copied from t2v_metrics for
LLaVA (a tiny LLaVA built from a config, and its P(Yes) against a plain forward by hand), and on the messages a
loopback chat server receives for a served model."""
from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from scorers.metrics.qga.vqascore import VQAScorer, styled_backend, vqascore_question
from tests.helpers.loopback_chat_server import ChatServer, chat_reply, request_text

# t2v_metrics, copied as literals: t2v_metrics/constants.py SYSTEM_MSG, and the LLaVA-1.5 'chat' style of
# format_question in t2v_metrics/models/vqascore_models/llava_model.py: SYSTEM_MSG + " USER: " + "<image>" + "\n" +
# question + " ASSISTANT: ", then the answer "Yes" is scored from the token after "ASSISTANT:" (t2v_metrics drops the
# trailing space's token from the question, as Llama's tokenizer joins that space to "Yes")
T2V_SYSTEM_MSG = ("A chat between a curious user and an artificial intelligence assistant. The assistant gives "
                  "helpful, detailed, and polite answers to the user's questions.")
T2V_QUESTION = 'Does this figure show "{}"? Please answer yes or no.'


def t2v_metrics_llava_prompt(text: str) -> str:
    return (T2V_SYSTEM_MSG + " USER: " + "<image>" + "\n" + T2V_QUESTION.format(text) + " ASSISTANT: ").rstrip(" ")


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    import torch
    from scorers.models.llava import LlavaVQA
    from tests.helpers.tiny_vqa_models import make_llava

    torch.manual_seed(0)
    path = make_llava(tmp_path_factory.mktemp("llava"))
    return LlavaVQA(str(path), device="cpu", precision="fp32", batch_size=4)


def images(n=3):
    return [Image.new("RGB", (32, 32), (60 * i, 100, 200 - 50 * i)) for i in range(n)]


def test_llava_t2v_metrics_prompt_is_the_reference_string(tiny_llava):
    prompt = "a red cat on a mat"
    question = vqascore_question(prompt)
    assert question == T2V_QUESTION.format(prompt)  # the template already matched t2v_metrics
    scorer = VQAScorer(backend=tiny_llava, prompt_style="t2v_metrics")
    assert scorer.backend.prompt(question) == t2v_metrics_llava_prompt(prompt)
    assert scorer.backend.model is tiny_llava.model  # same weights
    # the default style: LLaVA-1.5's short-answer VQA prompt, no system message; the backend passed in is unchanged
    assert tiny_llava.prompt(question) == (f"USER: <image>\n{question}\nAnswer the question using a single word or "
                                           "phrase. ASSISTANT:")
    assert VQAScorer(backend=tiny_llava).backend is tiny_llava
    assert scorer.config["prompt_style"] == "t2v_metrics" and "prompt_style" not in VQAScorer(backend=tiny_llava).config


def _p_yes_by_hand(backend, image, prompt_text: str) -> float:
    """P(the tokens of "Yes" follow ``prompt_text``) from one plain forward of the model (no batching, no cache)."""
    import torch

    processor, model = backend.processor, backend.model
    answer = processor.tokenizer("Yes", add_special_tokens=False)["input_ids"]
    inputs = processor(images=[image], text=[prompt_text], return_tensors="pt")
    ids = torch.cat([inputs["input_ids"], torch.tensor([answer])], dim=1)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, pixel_values=inputs["pixel_values"]).logits[0]
    logp = logits.float().log_softmax(-1)
    start = inputs["input_ids"].shape[1]
    return math.exp(sum(float(logp[start - 1 + k, token]) for k, token in enumerate(answer)))


def test_llava_scores_under_each_style_equal_a_forward_by_hand(tiny_llava):
    prompts = ["a red cat", "two dogs", "a blue house by the sea"]
    pictures = images()
    for style, render in (("t2v_metrics", t2v_metrics_llava_prompt),
                          ("short_answer", lambda p: f"USER: <image>\n{vqascore_question(p)}\nAnswer the question "
                                                     "using a single word or phrase. ASSISTANT:")):
        scores = VQAScorer(backend=tiny_llava, prompt_style=style).score(pictures, prompts)
        by_hand = [_p_yes_by_hand(tiny_llava, image, render(p)) for image, p in zip(pictures, prompts)]
        # 1e-5 relative: batched/prefix-cached fp32 forwards agree with single plain ones to that
        # (docs/scorers/qga.md, prefix cache)
        np.testing.assert_allclose(scores, by_hand, rtol=1e-5, atol=0)


def test_served_chat_model_gets_no_system_prompt_with_t2v_metrics():
    from scorers.models.chat_vlm import CONCISE_SYSTEM_PROMPT
    from scorers.scoring.registry import build_scorer

    top = [{"token": "Yes", "logprob": math.log(0.6)}, {"token": "No", "logprob": math.log(0.3)}]
    with ChatServer(lambda body: chat_reply("Yes", top_logprobs=top)) as server:
        ours = build_scorer("vqa_score", model="openai:tiny", api_base=server.url)
        theirs = build_scorer("vqa_score", model="openai:tiny", api_base=server.url, prompt_style="t2v_metrics")
        pictures = images(2)
        np.testing.assert_allclose(ours.score(pictures, ["a cat", "a dog"]), [0.6, 0.6], rtol=1e-12)
        np.testing.assert_allclose(theirs.score(pictures, ["a cat", "a dog"]), [0.6, 0.6], rtol=1e-12)
        bodies = list(server.bodies)
    assert len(bodies) == 4
    # the two requests of one score() call are sent concurrently, so they reach the server in either order: the
    # scorers ran one after the other, so the first two bodies are ours and the last two t2v_metrics', each pair
    # compared as a set of question texts
    default, styled = bodies[:2], bodies[2:]
    for body in default:  # ours: the short-answer system prompt, then the image and the question
        assert body["messages"][0] == {"role": "system", "content": CONCISE_SYSTEM_PROMPT}
        assert len(body["messages"]) == 2
    for body in styled:  # t2v_metrics: the user turn alone
        assert [m["role"] for m in body["messages"]] == ["user"]
    assert sorted(request_text(body) for body in styled) == [T2V_QUESTION.format(p) for p in ("a cat", "a dog")]


def test_local_chat_vlm_system_prompt_follows_the_style(tmp_path):
    from scorers.models.chat_vlm import CONCISE_SYSTEM_PROMPT, ChatVLM
    from tests.helpers.tiny_vqa_models import make_chat_vlm

    vlm = ChatVLM(str(make_chat_vlm(tmp_path)), device="cpu", precision="fp32")
    question = vqascore_question("a cat")
    # the tiny chat template renders "Role: text" per message (tests/helpers/tiny_vqa_models.py.CHAT_TEMPLATE; the saved
    # template comes back without its newlines)
    assert VQAScorer(backend=vlm).backend.prompt(question) == (
        f"System: {CONCISE_SYSTEM_PROMPT}User:<image> {question}Assistant:")
    assert VQAScorer(backend=vlm, prompt_style="t2v_metrics").backend.prompt(question) == (
        f"User:<image> {question}Assistant:")
    assert vlm.system_prompt == CONCISE_SYSTEM_PROMPT  # the backend passed in is unchanged


def test_style_errors_are_named():
    with pytest.raises(ValueError, match="prompt_style must be one of"):
        VQAScorer(backend=object(), prompt_style="llava")

    class BlipLike:
        def yes_probability(self, images, questions):
            return np.zeros(len(images))

    with pytest.raises(ValueError, match="BlipLike has no chat prompt to style"):
        styled_backend(BlipLike(), "t2v_metrics")
    assert styled_backend(BlipLike(), "short_answer").__class__ is BlipLike
