"""`ts2 report --elements` / `--elements-released`: elements.md / .csv and the figure elements_wrong_rate.png, the
wrong-answer rate against the image's error count, one line per metric. On the release, the table equals a plain loop
over the six per-question files (written here from the release's layout)."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import run_cli

HEADER = {"unit": "fraction", "truth": "released", "interval": {"confidence": 0.95, "n_bootstrap": 10, "over": "SEGs"}}
TWO = {**HEADER,
       "a": {"by_error_count": {"0": {"wrong_rate": 0.1, "n": 10, "low": 0.05, "high": 0.15},
                                "1": {"wrong_rate": 0.4, "n": 1234, "low": 0.3, "high": 0.5}}},
       "b": {"by_error_count": {"0": {"wrong_rate": 0.2, "n": 5, "low": None, "high": None},
                                "2": {"wrong_rate": 0.75, "n": 4, "low": 0.5, "high": 1.0}}}}
VARIANTS = ("mplug_tifa", "llava_tifa", "blip1_tifa", "mplug_dsg", "llava_dsg", "blip1_dsg")


def test_frame_is_one_row_per_metric_and_count_in_percent():
    from scorers.report.elements import wrong_rate_frame

    frame, notes = wrong_rate_frame([TWO])
    assert notes == []
    assert frame[["metric", "error_count", "n"]].values.tolist() == [["a", 0, 10], ["a", 1, 1234], ["b", 0, 5],
                                                                      ["b", 2, 4]]
    assert frame["wrong_rate"].tolist() == pytest.approx([10.0, 40.0, 20.0, 75.0])
    assert frame["ci_low"].tolist()[:2] == pytest.approx([5.0, 30.0]) and np.isnan(frame["ci_low"].iloc[2])
    evalmuse = {**HEADER, "truth": "evalmuse", "c": {"detection": {"overall": None, "by_type": {}}}}
    frame, notes = wrong_rate_frame([TWO, evalmuse])
    assert set(frame["metric"]) == {"a", "b"} and notes == [
        "elements: c has no rate by error count (truth evalmuse); not in the elements table"]
    with pytest.raises(ValueError, match="a is given twice"):
        wrong_rate_frame([TWO, TWO])


def test_markdown_has_a_column_per_error_count():
    from scorers.report.elements import element_markdown, wrong_rate_frame

    table = element_markdown(wrong_rate_frame([TWO])[0]).split("\n\n")[0].splitlines()
    assert table == ["| Metric | 0 errors | 1 error | 2 errors |",
                     "|:---|---:|---:|---:|",
                     "| a | 10.0 [5.0, 15.0] (10) | 40.0 [30.0, 50.0] (1,234) |  |",
                     "| b | 20.0 (5) |  | 75.0 [50.0, 100.0] (4) |"]


def test_figure_draws_one_line_per_metric(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from scorers.report.elements import wrong_rate_frame
    from scorers.report.figures import wrong_rate_figure

    drawn = []
    original = Figure.savefig

    def spy(fig, *args, **kwargs):
        drawn.append({line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
                      for line in fig.axes[0].get_lines()})
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    path = wrong_rate_figure(wrong_rate_frame([TWO])[0], tmp_path / "f.png", highlight=["b"])
    assert path.is_file() and path.stat().st_size > 1000
    lines = drawn[0]
    assert lines["a"] == ([0.0, 1.0], pytest.approx([10.0, 40.0]))
    assert lines["b (yours)"] == ([0.0, 2.0], pytest.approx([20.0, 75.0]))


def _plain_loop(shared) -> dict[str, dict[int, tuple[float, int]]]:
    """Per variant and error count: (wrong answers %, answers), from the files alone: an image's rows start at
    question 0, images in metadata order; its error count is the leading number of its metadata rank."""
    metadata = pd.read_csv(shared / "metadata.csv", dtype=str, keep_default_na=False)
    counts = [int(re.match(r"\d+", rank).group()) for rank in metadata["rank"]]
    out = {}
    for variant in VARIANTS:
        rows = pd.read_csv(shared / "per_question" / f"{variant}.csv", dtype=str, keep_default_na=False)
        tally: dict[int, list[int]] = {}
        image = -1
        for qid, correct in zip(rows["question_id"], rows["correct"]):
            if int(qid) == 0:
                image += 1
            cell = tally.setdefault(counts[image], [0, 0])
            cell[0] += int(float(correct)) == 0
            cell[1] += 1
        out[variant] = {c: (100.0 * w / n, n) for c, (w, n) in tally.items()}
    return out


def test_report_elements_released_equals_a_plain_loop(tmp_path, capsys, shared_ts2, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "clipscore"]].to_csv(tmp_path / "clip.csv", index=False)
    code, out, err = run_cli(capsys, "report", tmp_path / "clip.csv", "--data-dir", shared_ts2, "--no-published",
                             "--n-bootstrap", 0, "--out", tmp_path / "rep", "--elements-released")
    assert code == 0, err
    assert "elements_md" in out and "elements_figure" in out
    table = pd.read_csv(tmp_path / "rep" / "elements.csv")
    expected = _plain_loop(shared_ts2)
    assert list(dict.fromkeys(table["metric"])) == list(VARIANTS)
    for row in table.itertuples():
        rate, n = expected[row.metric][row.error_count]
        assert row.wrong_rate == pytest.approx(rate, abs=1e-10) and row.n == n
    assert len(table) == sum(len(v) for v in expected.values())
    assert (tmp_path / "rep" / "elements_wrong_rate.png").is_file()
    assert "| mplug_tifa | " in (tmp_path / "rep" / "elements.md").read_text(encoding="utf-8")
    saved = json.loads((tmp_path / "rep" / "result.json").read_text())
    assert saved["results"]["elements"]["llava_dsg"]["by_error_count"]["0"]["n"] == expected["llava_dsg"][0][1]


def test_report_elements_from_a_saved_json(tmp_path, capsys, shared_ts2, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    (tmp_path / "two.json").write_text(json.dumps(TWO))
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "clipscore"]].to_csv(tmp_path / "clip.csv", index=False)
    code, out, err = run_cli(capsys, "report", tmp_path / "clip.csv", "--data-dir", shared_ts2, "--no-published",
                             "--n-bootstrap", 0, "--out", tmp_path / "rep", "--elements", tmp_path / "two.json",
                             "--format", "png,svg")
    assert code == 0, err
    assert (tmp_path / "rep" / "elements_wrong_rate.svg").is_file()
    assert "| b | 20.0 (5) |  | 75.0 [50.0, 100.0] (4) |" in (tmp_path / "rep" / "elements.md").read_text()
    (tmp_path / "bad.json").write_text(json.dumps({"unit": "percent", "a": {}}))
    code, _out, err = run_cli(capsys, "report", tmp_path / "clip.csv", "--data-dir", shared_ts2, "--no-published",
                              "--n-bootstrap", 0, "--out", tmp_path / "rep2", "--elements", tmp_path / "bad.json")
    assert code != 0 and "not a ts2 elements --json file" in err and "Traceback" not in err
