"""Stand-ins for the question-answering metrics' inputs: a bag-of-letters sentence encoder and a two-prompt question
table with its metadata."""
from __future__ import annotations

import numpy as np


class FakeEncoder:
    """Bag-of-letters embeddings: deterministic, so SBERT-style matching can be hand-checked without a model."""

    def __init__(self):
        self.calls = []

    def encode(self, texts, **_):
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norm == 0, 1, norm)


QUESTIONS_CSV = ("id,prompt,question_id,question,choices,answer\n"
                 "0,a red cat,0,is there a cat?,yes|no,yes\n"
                 "0,a red cat,1,what color is the cat?,red|blue,red\n"
                 "1,a dog,0,is there a dog?,yes|no,yes\n")
METADATA_CSV = ("id,target_prompt,file_name,image_source,rank\n"
                "0,a red cat,images/000-00.jpg,SD,0\n0,a red cat,images/000-01.jpg,SD,1\n"
                "1,a dog,images/001-00.jpg,SD,0\n")
