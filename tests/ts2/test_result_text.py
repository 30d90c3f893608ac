"""``ts2 meta``'s table (:mod:`scorers.ts2.result_text`): by default one row per metric and meta-metric, Avg with its
interval and one value per partition, within 100 columns; ``--wide`` the one-row-per-metric table; a partition with no
evaluated SEG is no column in either. Cells are checked against ``--json``'s fractions."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = [DATA / "my_scores.csv", "--metadata", DATA / "sample_metadata.csv", "--on", "seg_id", "file_name"]


def _table(stdout: str) -> list[str]:
    """The table's lines: header, rule, rows (between the SEGs line and the unit line)."""
    lines = stdout.splitlines()
    return lines[1:lines.index("values in % (--json gives fractions)")]


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def test_default_table_fits_in_100_columns_with_avg_intervals(shared_ts2, capsys):
    argv = ["meta", shared_ts2 / "released_scores.csv", "--metadata", shared_ts2 / "metadata.csv", "--clean-quotes",
            "--n-bootstrap", "50"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    table = _table(out)
    assert max(len(line) for line in table) <= 100, max(table, key=len)
    assert table[0].split() == ["metric", "meta", "avg", "[95%", "CI]", "synth", "nat", "real", "segs",
                                "used/skipped"]
    code, printed, err = run_cli(capsys, *argv, "--json")
    numbers = json.loads(printed)
    assert len(table) == 2 + 3 * len(numbers)  # three rows (rank, sep, delta) per metric
    rows = iter(table[2:])
    for column, result in numbers.items():
        for k, meta in enumerate(("rank", "sep", "delta")):
            cells = next(rows).split()
            if k == 0:
                assert cells[0] == column and cells[-1] == f"{result['rank']['n_used']}/{result['rank']['n_skipped']}"
                cells = cells[1:-1]
            summary, interval = result[meta]["summary"], result[meta]["ci"]
            low, high = interval["avg"]
            assert cells == [meta, _pct(summary["avg"]), f"[{_pct(low)},", f"{_pct(high)}]",
                             *(_pct(summary[p]) for p in ("synth", "nat", "real"))]


def test_partitions_without_segs_are_no_column(capsys):
    code, out, err = run_cli(capsys, "meta", *SAMPLE, "--segs", "0-1")  # SEGs 0 and 1 are both synth
    assert code == 0, err
    assert _table(out)[0].split() == ["metric", "meta", "avg", "[95%", "CI]", "synth", "segs", "used/skipped"]
    code, out, err = run_cli(capsys, "meta", *SAMPLE, "--segs", "0-1", "--wide")
    assert code == 0, err
    assert _table(out)[0].split() == ["metric", "rank:avg", "rank:synth", "sep:avg", "sep:synth", "delta:avg",
                                      "delta:synth", "segs", "used/skipped"]
    assert " - " not in out and not re.search(r" -$", out, re.M)  # no blank cell


def test_wide_is_one_row_per_metric_with_every_interval(capsys):
    code, out, err = run_cli(capsys, "meta", *SAMPLE, "--wide", "--n-bootstrap", "20")
    assert code == 0, err
    header, _rule, row = _table(out)
    assert header.split()[:5] == ["metric", "rank:avg", "rank:synth", "rank:nat", "rank:real"]
    assert row.split()[0] == "my_metric" and row.count("[") == 12  # 3 meta-metrics x (avg + 3 partitions)


def test_from_accepts_a_table_saved_wide(tmp_path, capsys):
    code, _, err = run_cli(capsys, "meta", *SAMPLE, "--wide", "--out", tmp_path / "r.json")
    assert code == 0, err
    code, out, err = run_cli(capsys, "meta", "--from", tmp_path / "r.json")
    assert code == 0, err
    assert "rank:synth" in out
