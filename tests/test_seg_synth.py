"""``ts2 seg plan | generate | check | push`` and the Synth path end to end, offline.

The text model and the judge are a real OpenAI-compatible server on 127.0.0.1 (tests/loopback_chat_server.py) that
answers from a script: the plan's elements for the prompt, a rewrite that deletes the removed words, and a judge
whose P(yes) is fixed per question. Images come from a tiny random Stable Diffusion pipeline built from configs (the
fixture of tests/test_tifa_bench_generate.py). Expected values are written out by hand from the script.
"""
from __future__ import annotations

import importlib.util
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from tests.loopback_chat_server import ChatServer, chat_reply, request_text
from tests.test_tifa_bench_generate import pipeline_dir  # noqa: F401  (the tiny pipeline fixture)

PROMPT = "A red dog chases a ball."
ELEMENTS_REPLY = """Element: dog | entity | animal/human
Q: is there a dog? | Choices: yes, no | A: yes
Q: what animal is in the picture? | Choices: dog, cat, horse, cow | A: dog
Element: red | attribute of dog | color
Q: is the dog red? | Choices: yes, no | A: yes
Q: what color is the dog? | Choices: red, black, white, brown | A: red
Element: ball | entity | object
Q: is there a ball? | Choices: yes, no | A: yes
Element: chases | action of dog, ball | activity
Q: what is the dog doing? | Choices: chasing a ball, sleeping, eating, swimming | A: chasing a ball
End
"""
#: by hand: removing dog also removes red and chases; removing ball removes chases; pairs without dependents
NODES = [[], ["dog"], ["red"], ["ball"], ["chases"], ["dog", "ball"], ["red", "ball"], ["red", "chases"]]
REMOVED = {("dog",): {"dog", "red", "chases"}, ("ball",): {"ball", "chases"}, ("dog", "ball"): {"dog", "red", "ball",
           "chases"}, ("red", "ball"): {"red", "ball", "chases"}}
#: the judge's P(yes) per question (anything else: 0.6)
JUDGE = {"is there a ball?": 0.95, "is the dog red?": 0.2}
CALL = ["--steps", "2", "--guidance-scale", "3", "--height", "32", "--width", "32"]


def scripted(body: dict, *, elements: str = ELEMENTS_REPLY) -> dict:
    """The loopback server's script: elements for an element request, a word-deleting rewrite for a rewrite
    request, the judge's P(yes) as first-token logprobs for a question about an image."""
    text = request_text(body)
    content = body["messages"][-1]["content"]
    if not isinstance(content, str):  # the judge: an image and a question
        question = text.strip()
        p = JUDGE.get(question, 0.6)
        return chat_reply("Yes" if p >= 0.5 else "No", top_logprobs=[
            {"token": "Yes", "logprob": math.log(p)}, {"token": "No", "logprob": math.log(1 - p)}])
    if text.rstrip().endswith("Rewritten:"):
        description = re.findall(r"Description: (.*)", text)[-1]
        removed = [part.split(" (")[0] for part in re.findall(r"Remove: (.*)", text)[-1].split("; ")]
        words = [w for w in description.split() if w.strip(".") not in removed]
        return chat_reply(" ".join(words).replace("  ", " "))
    return chat_reply(elements)


@pytest.fixture
def server():
    with ChatServer(scripted, model="tiny", lifetime=120) as chat:
        yield chat


def served(server) -> list[str]:
    return ["--api-base", server.url, "--max-retries", "0"]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------------------------------- plan
def test_plan_lists_elements_ablations_and_question_tables(server, tmp_path, capsys):
    code, out, err = run_cli(capsys, "seg", "plan", PROMPT, "--model", "openai:tiny", "--out", tmp_path / "plan.json",
                             *served(server))
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    seg = plan["segs"][0]
    assert seg["seg_id"] == 0 and seg["prompt"] == PROMPT and seg["reason"] is None
    assert [(e["label"], e["type"], e["of"]) for e in seg["elements"]] == [
        ("dog", "entity", []), ("red", "attribute", ["dog"]), ("ball", "entity", []),
        ("chases", "action", ["dog", "ball"])]
    assert [n["errors"] for n in seg["nodes"]] == NODES
    for node in seg["nodes"]:
        removed = REMOVED.get(tuple(node["errors"]), set(node["errors"]))
        assert set(node["removed"]) == removed
        expected = " ".join(w for w in PROMPT.split() if w.strip(".") not in removed) if node["errors"] else PROMPT
        assert node["prompt"] == expected
    assert "1 SEGs, 4 elements, 8 nodes with a prompt" in out
    tifa = pd.read_csv(tmp_path / "tifa_questions.csv")
    dsg = pd.read_csv(tmp_path / "dsg_questions.csv", dtype={"parent_question_id": str})
    assert list(tifa.columns) == ["id", "prompt", "question_id", "question", "choices", "answer"]
    assert list(dsg.columns) == ["id", "prompt", "question_id", "parent_question_id", "question", "choices", "answer"]
    # 6 TIFA questions written by the model + "does the image show dog and ball with chases?" (chases had no yes/no)
    assert len(tifa) == 7 and tifa["question_id"].tolist() == list(range(7))
    assert dsg["question"].tolist() == ["is there a dog?", "is the dog red?", "is there a ball?",
                                        "does the image show dog and ball with chases?"]
    assert dsg["parent_question_id"].tolist() == ["-1", "0", "-1", "0-2"]
    # the release's reader takes both tables
    from scorers.metrics.qga.questions import read_question_set

    assert len(read_question_set(tmp_path / "dsg_questions.csv", kind="dsg").for_seg(0)) == 4


@pytest.mark.parametrize("reply, reason", [
    ("I cannot help with that.", "lists no usable element"),
    ("", "lists no usable element"),
    ("Element: dog | colour\nQ: is there a dog? | Choices: yes, no | A: yes", "not one of entity"),
    ("Element: red | attribute of cat | color", "'cat', which is not a listed entity"),
])
def test_malformed_reply_gives_empty_plan_and_a_reason(reply, reason, tmp_path, capsys):
    with ChatServer(lambda body: scripted(body, elements=reply), model="tiny", lifetime=60) as chat:
        code, out, err = run_cli(capsys, "seg", "plan", PROMPT, "--model", "openai:tiny", "--out",
                                 tmp_path / "plan.json", *served(chat))
    assert code == 0 and "Traceback" not in err
    seg = json.loads((tmp_path / "plan.json").read_text())["segs"][0]
    assert seg["elements"] == [] and [n["errors"] for n in seg["nodes"]] == [[]]
    assert "lists no usable element" in seg["reason"] and reason in seg["reason"] + " ".join(seg["dropped"])
    assert "no elements" in err
    assert len(pd.read_csv(tmp_path / "tifa_questions.csv")) == 0


def test_bad_rewrite_leaves_the_node_without_prompt(tmp_path):
    from scorers.ts2.seg_plan import parse_rewrite, plan_segs

    assert parse_rewrite("", PROMPT) == ("", "the model's rewrite is empty: ''")
    assert parse_rewrite(f"Rewritten: {PROMPT}", PROMPT)[0] == ""
    assert parse_rewrite('  \n"A dog chases a ball."\nmore', PROMPT) == ("A dog chases a ball.", None)

    class Echo:
        def generate(self, prompts):
            return [ELEMENTS_REPLY if p.rstrip().endswith(PROMPT) else PROMPT for p in prompts]

    plan = plan_segs([PROMPT], Echo(), max_errors=1)
    nodes = plan["segs"][0]["nodes"]
    assert [n["prompt"] for n in nodes] == [PROMPT, "", "", "", ""]
    assert all("unchanged" in n["reason"] for n in nodes[1:])


def test_read_plan_names_the_bad_field(tmp_path):
    from scorers.ts2.seg_plan import read_plan

    base = {"seg_id": 0, "prompt": "p", "elements": [{"label": "dog", "type": "entity"}]}
    cases = [({"segs": [{**base, "nodes": [{"errors": ["cat"]}]}]}, "nodes[0]: error 'cat' is not the label"),
             ({"segs": [base, base]}, "segs[1]: seg_id 0 is used twice"),
             ({"segs": [{**base, "nodes": [{"errors": []}, {"errors": []}]}]}, "error set [] is planned twice"),
             ({"segs": [{"seg_id": 0, "prompt": " "}]}, "segs[0]: needs an integer 'seg_id' and a non-empty"),
             ({"nope": 1}, "a plan is a JSON object with a 'segs' list")]
    for plan, message in cases:
        (tmp_path / "p.json").write_text(json.dumps(plan))
        with pytest.raises(ValueError, match=re.escape(message)):
            read_plan(tmp_path / "p.json")
