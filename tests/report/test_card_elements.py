"""`ts2 card --elements`: the "finds the error" section. The card takes each metric's entry of a `ts2 elements --json`
file (or records) as the file holds it; Markdown, HTML and JSON show the false-alarm rate on heads, the wrong-answer
rate by error count and, for built SEGs, the detection figures with intervals; without the flag the card is byte for
byte what it was."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.cli import run_cli

N_BOOT = 20

#: a hand-made built-SEG summary in the contract's shape (fractions; one SEG type "color", one "count")
BUILT = {
    "unit": "fraction", "truth": "built", "interval": {"confidence": 0.95, "n_bootstrap": 1000, "over": "SEGs"},
    "my_vqa": {
        "by_error_count": {"0": {"wrong_rate": 0.125, "n": 8, "low": 0.0, "high": 0.25},
                           "1": {"wrong_rate": 0.5, "n": 6, "low": 0.25, "high": 0.75}},
        "false_alarm_rate_node0": {"wrong_rate": 0.125, "n": 8, "low": 0.0, "high": 0.25},
        "detection_by_error_count": {"1": {"detection_rate": 2 / 3, "n": 3, "low": 0.5, "high": 1.0}},
        "detection": {
            "overall": {"precision": 0.5, "recall": 2 / 3, "f1": 4 / 7, "balanced_accuracy": 0.7,
                        "accuracy": 0.75, "auroc": 0.8, "n": 12, "n_wrong": 3,
                        "intervals": {"precision": [0.25, 0.75], "recall": [0.5, 1.0]}},
            "by_type": {"color": {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "balanced_accuracy": 0.75,
                                  "accuracy": 0.8, "auroc": None, "n": 5, "n_wrong": 2, "intervals": {}}}},
    },
}


def _card(elements):
    from scorers.report.card import Card

    provenance = {"command": "ts2 card", "ts2_evaluate_version": "0", "segs": "0-1", "n_bootstrap": 0, "seed": 0,
                  "inputs": {}}
    return Card(metric="my_vqa", baseline=None, verdict="no baseline: no paired tests", sets={},
                provenance=provenance, elements=elements)


def test_section_takes_the_entry_named_as_the_card(tmp_path):
    from scorers.report.card.elements import ElementSource, element_section

    other = {**{k: BUILT[k] for k in ("unit", "truth", "interval")}, "other": BUILT["my_vqa"]}
    plain, named = ElementSource("built.json"), ElementSource("other.json", metric="my_vqa")
    section = element_section([(plain, BUILT)], "my_vqa")
    assert section["status"] == "evaluated" and section["entry"] == "my_vqa" and section["truth"] == "built"
    assert section["by_error_count"] == BUILT["my_vqa"]["by_error_count"]
    assert section["source"] == "built.json" and section["interval"]["over"] == "SEGs"
    # NAME=FILE: the file's only entry is that card's, whatever it is called
    assert element_section([(named, other)], "my_vqa")["entry"] == "other"
    # a plain file whose entry is another metric: listed with the reason, naming what the file holds
    missing = element_section([(plain, other)], "my_vqa")
    assert missing["status"] == "not evaluated" and "other" in missing["reason"] and "--elements my_vqa=" in \
        missing["reason"]
    # ... unless it is the only card and the file has one entry
    assert element_section([(plain, other)], "my_vqa", only_card=True)["entry"] == "other"
    assert element_section([], "my_vqa") is None


def test_finds_the_error_blocks_in_markdown_html_and_json():
    from scorers.report.card import Card, card_html, card_markdown
    from scorers.report.card.elements import ElementSource, element_section

    card = _card(element_section([(ElementSource("built.json"), BUILT)], "my_vqa"))
    md = card_markdown(card)
    block = md.split("## finds the error\n", 1)[1].split("## Provenance", 1)[0]
    # by error count: 0.125 -> 12.5 %, [0, 0.25] -> [0.0, 25.0]; detection beside: 2/3 -> 66.7
    assert "| 0 | 12.5 | [0.0, 25.0] | 8 |  |  |  |" in block
    assert "| 1 | 50.0 | [25.0, 75.0] | 6 | 66.7 | [50.0, 100.0] | 3 |" in block
    assert "false alarms on heads (node 0, every element shown): 12.5% [0.0, 25.0] of 8 answers" in block
    assert "CIs: 95% bootstrap over SEGs (1000 resamples); built.json, entry my_vqa" in block
    detection = md.split("## finds the error: detection\n", 1)[1]
    # precision 0.5 [0.25, 0.75], recall 2/3 [0.5, 1], F1 4/7 = 57.1, AUROC 0.8; color: no AUROC
    assert "| all | 50.0 [25.0, 75.0] | 66.7 [50.0, 100.0] | 57.1 | 70.0 | 75.0 | 80.0 | 12 | 3 |" in detection
    assert "| color | 100.0 | 50.0 | 66.7 | 75.0 | 80.0 | - | 5 | 2 |" in detection
    page = card_html(card)
    assert "<h2>finds the error</h2>" in page and "<h2>finds the error: detection</h2>" in page
    assert "<td>57.1</td>" in page
    data = json.loads(json.dumps(card.to_dict()))
    assert data["elements"]["detection"] == BUILT["my_vqa"]["detection"]
    assert Card.from_dict(data).elements == card.elements


def test_a_card_without_elements_has_no_trace_of_them():
    from scorers.report.card import card_html, card_markdown

    card = _card(None)
    assert "elements" not in card.to_dict()
    assert "finds the error" not in card_markdown(card) and "finds the error" not in card_html(card)


def _release_column(shared: Path, column: str, target: Path) -> Path:
    raw = pd.read_csv(shared / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", column]].to_csv(target, index=False)
    return target


def test_cli_card_with_the_release_elements_and_unchanged_without(tmp_path, capsys, shared_ts2):
    """The section holds the file's entry as written; removing it (and the file's provenance line) leaves the card
    of the same command without --elements byte for byte."""
    from scorers.ts2.elements import released_elements

    scores = _release_column(shared_ts2, "mplug_tifa", tmp_path / "mplug.csv")
    summary = released_elements(["mplug_tifa", "llava_dsg"], data_dir=shared_ts2, n_bootstrap=N_BOOT)
    (tmp_path / "el.json").write_text(json.dumps(summary))
    common = ["card", "--scores", f"mplug_tifa={scores}", "--baseline", "none", "--data-dir", shared_ts2,
              "--n-bootstrap", N_BOOT]
    code, _out, err = run_cli(capsys, *common, "--out", tmp_path / "with", "--elements", tmp_path / "el.json")
    assert code == 0, err
    code, _out, err = run_cli(capsys, *common, "--out", tmp_path / "with")
    assert code == 0, err
    plain = {k: (tmp_path / "with" / f"mplug_tifa.{k}").read_text(encoding="utf-8") for k in ("md", "json")}
    code, _out, err = run_cli(capsys, *common, "--out", tmp_path / "with", "--elements", tmp_path / "el.json")
    assert code == 0, err
    found = {k: (tmp_path / "with" / f"mplug_tifa.{k}").read_text(encoding="utf-8") for k in ("md", "json")}

    card = json.loads(found["json"])
    entry = summary["mplug_tifa"]["by_error_count"]
    assert card["elements"]["by_error_count"] == entry and card["elements"]["truth"] == "released"
    head = entry["0"]
    assert (f"false alarms on heads (node 0, every element shown): {100 * head['wrong_rate']:.1f}% "
            f"[{100 * head['low']:.1f}, {100 * head['high']:.1f}] of {head['n']} answers") in found["md"]
    for count, cell in entry.items():
        assert f"| {count} | {100 * cell['wrong_rate']:.1f} |" in found["md"]

    md = re.sub(r"## finds the error\n.*?\n(?=!\[|## Provenance)", "", found["md"], flags=re.S)
    md = "\n".join(line for line in md.splitlines() if not line.startswith("- elements[0]:"))
    md = md.replace(f" --elements {tmp_path / 'el.json'}", "")
    assert md + "\n" == plain["md"]
    card.pop("elements")
    card["provenance"]["inputs"].pop("elements[0]")
    card["provenance"]["command"] = json.loads(plain["json"])["provenance"]["command"]
    assert json.dumps(card, indent=1) == plain["json"]


@pytest.mark.parametrize("argv, needle", [
    (["--elements", "nope=MISSING"], "--elements nope=MISSING: nope is not a --scores name"),
    (["--elements", "missing.json"], "--elements missing.json: no such file"),
])
def test_bad_elements_arguments_are_one_line(argv, needle, tmp_path, capsys, shared_ts2, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scores = _release_column(shared_ts2, "mplug_tifa", tmp_path / "mplug.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mplug_tifa={scores}", "--baseline", "none",
                              "--data-dir", shared_ts2, "--out", tmp_path / "out", *argv)
    assert code != 0 and needle in err and "Traceback" not in err


def test_evalmuse_accuracy_and_the_paired_test_are_lines_of_the_section():
    from scorers.report.card import card_markdown
    from scorers.report.card.elements import ElementSource, element_section

    fig = {"precision": 0.6, "recall": 0.75, "f1": 2 / 3, "balanced_accuracy": 0.7, "accuracy": 0.7, "auroc": None,
           "n": 10, "n_wrong": 4, "intervals": {}}
    summary = {"unit": "fraction", "truth": "evalmuse",
               "interval": {"confidence": 0.9, "n_bootstrap": 50, "over": "prompts"},
               "my_vqa": {"element_accuracy": {"accuracy": 0.7, "n": 10, "low": 0.5, "high": 0.9},
                          "detection": {"overall": fig, "by_type": {"object": fig}}},
               "paired": {"a": "my_vqa", "b": "other", "on": "elements", "test": "McNemar exact binomial",
                          "statistic": 1.0, "p_value": 0.625, "difference": 0.125, "low": -0.1, "high": 0.3}}
    md = card_markdown(_card(element_section([(ElementSource("em.json"), summary)], "my_vqa")))
    assert "- element accuracy (as EvalMuse reports it): 70.0% [50.0, 90.0] of 10 elements" in md
    assert ("- paired test my_vqa vs other (McNemar exact binomial): statistic 1.000, p = 0.625; accuracy difference "
            "12.5 pp [-10.0, 30.0]") in md
    assert "CIs: 90% bootstrap over prompts (50 resamples)" in md
    assert "| object | 60.0 | 75.0 | 66.7 | 70.0 | 70.0 | - | 10 | 4 |" in md
    assert "| error count |" not in md  # EvalMuse has no error counts
