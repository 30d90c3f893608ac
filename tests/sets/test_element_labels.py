"""EvalMuse's per-element labels (scorers.sets.element_labels) against a hand loop of EvalMuse's own rule."""
from __future__ import annotations

import ast
import json

import numpy as np
import pytest

from scorers.sets.element_labels import evalmuse_elements, read_evalmuse_elements
from tests.helpers.cli import one_line, run_cli
from tests.helpers.element_files import write_evalmuse


def _hand_accuracy(train, predictions) -> tuple[float, dict[str, float]]:
    """EvalMuse's rule (process_train.py, eval.py): each element's raters averaged (6 places), both sides binarised
    at >= 0.5, accuracy = the fraction that agree; per category too."""
    labels = {}
    for entry in json.loads(train.read_text()):
        for element, values in ast.literal_eval(entry["element_score"]).items():
            labels[(entry["img_path"], element)] = round(float(np.mean(values)), 6)
    agree, by_category = [], {}
    for entry in json.loads(predictions.read_text()):
        image = entry["img_path"].split("/data/EvalMuse/")[1]
        for element, score in entry["element_score"].items():
            same = (1 if labels[(image, element)] >= 0.5 else 0) == (1 if score >= 0.5 else 0)
            agree.append(same)
            by_category.setdefault(element.rpartition("(")[2].rstrip(")"), []).append(same)
    return sum(agree) / len(agree), {c: sum(v) / len(v) for c, v in by_category.items()}


def test_element_accuracy_equals_evalmuse_rule(tmp_path):
    train, predictions = write_evalmuse(tmp_path)
    accuracy, by_category = _hand_accuracy(train, predictions)
    summary = evalmuse_elements(predictions, evalmuse=train, n_bootstrap=100)
    assert summary["truth"] == "evalmuse" and summary["interval"]["over"] == "prompts"
    block = summary["predictions"]
    assert block["element_accuracy"]["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert block["element_accuracy"]["n"] == 11
    assert sorted(block["detection"]["by_type"]) == sorted(by_category)
    for category, value in by_category.items():
        assert block["detection"]["by_type"][category]["accuracy"] == pytest.approx(value, abs=1e-12)
    # by hand: 3 of 11 disagree: red on p0_a (mean 1/3, score 0.6), red on p0_b (5/6, 0.4), running (0, 0.5)
    assert accuracy == pytest.approx(8 / 11)


def test_labels_read_element_score_as_evalmuse_does(tmp_path):
    train, _ = write_evalmuse(tmp_path)
    labels = read_evalmuse_elements(train)
    red = labels[(labels["image"] == "images/p0_b.png") & (labels["element"] == "red (color)")].iloc[0]
    assert red["label"] == pytest.approx(0.833333) and red["n_raters"] == 3 and not red["truly_wrong"]
    two = labels[labels["element"] == "two (counting)"].iloc[0]
    assert two["label"] == pytest.approx(0.333333) and two["truly_wrong"]
    assert labels["human_total"].iloc[0] == pytest.approx(3.0)


def test_cli_set_evalmuse_and_an_unknown_element(tmp_path, capsys):
    train, predictions = write_evalmuse(tmp_path)
    code, out, err = run_cli(capsys, "elements", predictions, "--set", "evalmuse", "--evalmuse-file", train, "--json",
                             "--n-bootstrap", "20")
    assert code == 0, err
    assert json.loads(out)["predictions"]["element_accuracy"]["accuracy"] == pytest.approx(8 / 11)
    payload = json.loads(predictions.read_text())
    payload[0]["element_score"]["a horse (animal)"] = 0.3
    predictions.write_text(json.dumps(payload))
    code, _, err = run_cli(capsys, "elements", predictions, "--set", "evalmuse", "--evalmuse-file", train)
    assert code == 2 and "'a horse (animal)'" in one_line(err) and "no EvalMuse label" in one_line(err)
