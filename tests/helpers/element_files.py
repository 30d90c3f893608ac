"""A hand-made built SEG set with planted per-question answers (``ts2 elements`` on built SEGs), and an EvalMuse-layout
file with several raters per element. The hand-computed figures of the planted answers are in the tests."""
from __future__ import annotations

import json
from pathlib import Path

#: (seg_id, file_name, node, errors, error_types)
IMAGES = [
    (0, "a0.png", "0", "", ""),
    (0, "a1.png", "1a", "cat", "missing"),
    (0, "a2.png", "1b", "red", "attribute"),
    (0, "a3.png", "2", "cat;red", "missing;attribute"),
    (1, "b0.png", "0", "", ""),
    (1, "b1.png", "1a", "dog", "missing"),
    (1, "b2.png", "1b", "blue", "attribute"),
]
#: (seg_id, question_id, question, element, element_type)
QUESTIONS = [
    (0, 0, "is there a cat?", "cat", "missing"),
    (0, 1, "is the cat red?", "red", "attribute"),
    (0, 2, "is there a table?", "table", "missing"),
    (1, 0, "is there a dog?", "dog", "missing"),
    (1, 1, "is the dog blue?", "blue", "attribute"),
]
#: file_name -> per question (correct, probability of the expected answer "yes")
ANSWERS = {
    "a0.png": [(True, 0.9), (True, 0.8), (False, 0.3)],
    "a1.png": [(False, 0.2), (True, 0.7), (True, 0.6)],
    "a2.png": [(True, 0.9), (True, 0.55), (True, 0.8)],
    "a3.png": [(False, 0.1), (False, 0.4), (True, 0.7)],
    "b0.png": [(True, 0.95), (False, 0.45)],
    "b1.png": [(False, 0.3), (True, 0.85)],
    "b2.png": [(True, 0.9), (True, 0.6)],
}


def write_built_set(folder: Path, answers: dict | None = None, *, name: str = "m") -> dict[str, Path]:
    """``metadata.csv`` (a built dir's layout: errors, error_types, partition), ``dsg_questions.csv`` with its
    ``element`` / ``element_type`` columns and ``<name>.records.jsonl`` in ``ts2 score dsg``'s records layout (each
    question with ``p_expected``). Returns the paths by name."""
    folder.mkdir(parents=True, exist_ok=True)
    answers = ANSWERS if answers is None else answers
    meta = ["seg_id,prompt,file_name,node,errors,error_types,partition"]
    meta += [f"{s},a red cat and a blue dog {s},{f},{n},{e},{t},synth" for s, f, n, e, t in IMAGES]
    (folder / "metadata.csv").write_text("\n".join(meta) + "\n", encoding="utf-8")
    rows = ["id,prompt,question_id,parent_question_id,question,choices,answer,element,element_type"]
    rows += [f"{s},a red cat and a blue dog {s},{q},-1,{text},yes|no,yes,{e},{t}" for s, q, text, e, t in QUESTIONS]
    (folder / "dsg_questions.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    text = {(s, q): t for s, q, t, _, _ in QUESTIONS}
    lines = []
    for seg, file_name, *_ in IMAGES:
        questions = [{"question_id": q, "question": text[(seg, q)], "expected": "yes",
                      "answer": "yes" if ok else "no", "chosen": "yes" if ok else "no", "correct": ok,
                      "blank": False, "p_expected": p} for q, (ok, p) in enumerate(answers[file_name])]
        failed = "|".join(str(q["question_id"]) for q in questions if not q["correct"])
        lines.append(json.dumps({"key": f"{seg}:{file_name}", "record": {"failed_questions": failed,
                                                                          "questions": questions}}))
    records = folder / f"{name}.records.jsonl"
    records.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"metadata": folder / "metadata.csv", "questions": folder / "dsg_questions.csv", "records": records}


#: EvalMuse layout: per image its prompt id and, per element "name (category)", the raters' labels
EVALMUSE = [
    ("p0", "images/p0_a.png", {"cat (animal)": [1, 1, 0], "red (color)": [0, 0, 1], "table (object)": [1, 1, 1]}),
    ("p0", "images/p0_b.png", {"cat (animal)": [0, 0, 0], "red (color)": [1, 0.5, 1], "table (object)": [0, 1, 0]}),
    ("p1", "images/p1_a.png", {"dog (animal)": [1, 0, 0], "blue (color)": [1, 1, 0], "running (activity)": [0, 0, 0]}),
    ("p2", "images/p2_a.png", {"two (counting)": [0.5, 0.5, 0], "bird (animal)": [1, 1, 1]}),
]
#: a metric's element scores (EvalMuse's eval.py output layout; the image path joined under a dataset folder)
PREDICTED = {
    "images/p0_a.png": {"cat (animal)": 0.8, "red (color)": 0.6, "table (object)": 0.9},
    "images/p0_b.png": {"cat (animal)": 0.2, "red (color)": 0.4, "table (object)": 0.3},
    "images/p1_a.png": {"dog (animal)": 0.45, "blue (color)": 0.7, "running (activity)": 0.5},
    "images/p2_a.png": {"two (counting)": 0.1, "bird (animal)": 0.95},
}


def write_evalmuse(folder: Path) -> tuple[Path, Path]:
    """``(train_list.json, predictions.json)`` in EvalMuse's layouts: ``element_score`` a string holding a dict of
    per-rater labels, ``total_score`` a list; predictions as eval.py writes them (``img_path`` under a folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    train = [{"prompt_id": pid, "prompt": f"prompt {pid}", "type": "x", "img_path": img, "total_score": [3, 4, 2],
              "element_score": str(elements), "promt_meaningless": [0, 0, 0]} for pid, img, elements in EVALMUSE]
    predicted = [{"prompt": f"prompt {img}", "img_path": f"/data/EvalMuse/{img}", "total_score": 0.5,
                  "element_score": scores} for img, scores in PREDICTED.items()]
    (folder / "train_list.json").write_text(json.dumps(train), encoding="utf-8")
    (folder / "predictions.json").write_text(json.dumps(predicted), encoding="utf-8")
    return folder / "train_list.json", folder / "predictions.json"
