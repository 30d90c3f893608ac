"""``ts2 seg check``'s review list (:func:`scorers.ts2.seg.check.check_images`) with a scripted judge: each
disagreement says the designed error's type (an attribute error is "attribute", an entity's removal "missing")."""
from __future__ import annotations

import numpy as np
import pandas as pd
from PIL import Image

from scorers.ts2.seg.check import check_images

PLAN = {"segs": [{"seg_id": 0, "prompt": "a red dog", "elements": [
    {"label": "dog", "name": "dog", "type": "entity", "of": []},
    {"label": "red", "name": "red", "type": "attribute", "of": ["dog"]},
]}]}


class SaysYes:
    """A judge that sees everything it is asked about: P(yes) = 0.9 to every question."""

    def yes_probability(self, images, questions):
        return np.full(len(questions), 0.9)


def test_each_disagreement_names_the_designed_error_type(tmp_path):
    for name in ("a.png", "b.png"):
        Image.new("RGB", (8, 8)).save(tmp_path / name)
    annotations = pd.DataFrame({"seg_id": [0, 0], "prompt": ["a red dog"] * 2, "file_name": ["a.png", "b.png"],
                                "errors": ["red", "dog"]})
    review = check_images(annotations, tmp_path, PLAN, SaysYes()).set_index("file_name")
    # a.png: red designed away (an attribute error), the judge says yes to "is the dog red?"
    assert review.loc["a.png", "details"] == "red: designed attribute, judge says yes to 'is the dog red?' (P(yes)=0.90)"
    # b.png: the dog designed away (it goes missing; red left with it, not asked)
    assert review.loc["b.png", "details"] == "dog: designed missing, judge says yes to 'is there a dog?' (P(yes)=0.90)"
