"""Helpers (no tests): TIFA v1.0 files in the real JSON formats, generated images, a scripted VQA backend and a
hashing sentence encoder, shared by the tifa-bench tests, the killed-run script and the notebook check.

The formats follow ``Yushi-Hu/tifa``: ``tifa_v1.0/tifa_v1.0_text_inputs.json`` (id, caption, coco_val_id for COCO)
and ``sample/sample_question_answers.json`` (id, caption, question, choices, answer, element_type, element,
coco_val_id for COCO).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

TEXTS = [
    {"id": "coco_1", "caption": "A red car on a street.", "coco_val_id": "11"},
    {"id": "coco_2", "caption": "Two dogs on the grass.", "coco_val_id": "22"},
    {"id": "drawbench_5", "caption": "A blue cube.", },
    {"id": "paintskill_7", "caption": "a photo of 2 bus"},
    {"id": "partiprompt_3", "caption": "a hot air balloon"},
]
YES_NO = ["yes", "no"]
# (text id, question, choices, answer, element_type, element)
QUESTIONS = [
    ("coco_1", "is there a car?", YES_NO, "yes", "object", "car"),
    ("coco_1", "what color is the car?", ["red", "blue", "green", "yellow"], "red", "color", "red"),
    ("coco_1", "is the car on a street?", YES_NO, "yes", "location", "street"),
    ("coco_2", "how many dogs are there?", ["1", "2", "3", "4"], "2", "counting", "two"),
    ("coco_2", "are there dogs?", YES_NO, "yes", "animal/human", "dogs"),
    ("drawbench_5", "is the object a cube?", YES_NO, "yes", "shape", "cube"),
    ("drawbench_5", "what color is the cube?", ["blue", "red", "green", "purple"], "blue", "color", "blue"),
    ("paintskill_7", "how many buses are there?", ["1", "2", "3", "4"], "2", "counting", "2"),
    ("paintskill_7", "is there a bus?", YES_NO, "yes", "object", "bus"),
    ("partiprompt_3", "is there a hot air balloon?", YES_NO, "yes", "object", "hot air balloon"),
]
# model "A": the answers it gives on a white image (a black image answers "no" to every yes/no question)
ANSWERS_A = {
    "is there a car?": "yes", "what color is the car?": "blue", "is the car on a street?": "yes",
    "how many dogs are there?": "2", "are there dogs?": "yes", "is the object a cube?": "no",
    "what color is the cube?": "blue", "how many buses are there?": "3", "is there a bus?": "yes",
    "is there a hot air balloon?": "yes",
}
ANSWERS_B = {q[1]: q[3] for q in QUESTIONS}  # model "B" answers everything as expected


def write_tifa_files(root: str | Path) -> tuple[Path, Path]:
    """``root/tifa_v1.0_text_inputs.json`` and ``root/tifa_v1.0_question_answers.json`` in the release format."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    captions = {t["id"]: t for t in TEXTS}
    entries = []
    for text_id, question, choices, answer, element_type, element in QUESTIONS:
        entry = {"id": text_id, "caption": captions[text_id]["caption"], "question": question, "choices": choices,
                 "answer": answer, "element_type": element_type, "element": element}
        if "coco_val_id" in captions[text_id]:
            entry["coco_val_id"] = captions[text_id]["coco_val_id"]
        entries.append(entry)
    texts, qas = root / "tifa_v1.0_text_inputs.json", root / "tifa_v1.0_question_answers.json"
    texts.write_text(json.dumps(TEXTS, indent=4), encoding="utf-8")
    qas.write_text(json.dumps(entries, indent=4), encoding="utf-8")
    return texts, qas


def write_images(root: str | Path, *, second_dark_image: bool = True) -> Path:
    """White 16 px PNGs for every text but ``partiprompt_3`` (missing); ``coco_2`` as a folder with a white ``0.png``
    and (``second_dark_image``) a black ``1.png``."""
    from PIL import Image

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    white, black = Image.new("RGB", (16, 16), "white"), Image.new("RGB", (16, 16), "black")
    for text_id in ("coco_1", "drawbench_5", "paintskill_7"):
        white.save(root / f"{text_id}.png")
    (root / "coco_2").mkdir(exist_ok=True)
    white.save(root / "coco_2" / "0.png")
    if second_dark_image:
        black.save(root / "coco_2" / "1.png")
    return root


class ScriptedVQA:
    """A VQA backend answering from a table; on a dark image every yes/no question gets "no". Logs every question.
    ``kill_after=n`` SIGKILLs its own process during answer call n + 1 (a killed-run test)."""

    name = "scripted"

    def __init__(self, answers: dict[str, str], kill_after: int | None = None):
        self.answers, self.asked, self.calls, self.kill_after = answers, [], 0, kill_after

    def answer(self, images, questions):
        if self.kill_after is not None and self.calls >= self.kill_after:  # die with this batch in flight
            import os
            import signal

            os.kill(os.getpid(), signal.SIGKILL)
        self.calls += 1
        out = []
        for image, question in zip(images, questions):
            dark = np.asarray(image.convert("L")).mean() < 128
            answer = self.answers[question]
            out.append("no" if dark and answer in ("yes", "no") else answer)
            self.asked.append(question)
        return out


class HashEncoder:
    """A sentence-transformers stand-in: each distinct string -> a fixed pseudo-random unit vector, so an answer equal
    to a choice matches it exactly (cosine 1) and nothing else (cosine well below 1 in 64 dimensions)."""

    def encode(self, texts, **_):
        vectors = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(64)
            vectors.append(v / np.linalg.norm(v))
        return np.asarray(vectors, dtype=np.float32)


def matcher():
    from scorers.metrics.qga.matching import AnswerMatcher

    return AnswerMatcher("hash-encoder", encoder=HashEncoder())
