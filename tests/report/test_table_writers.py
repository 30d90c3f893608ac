"""Small pieces of the report: FLOPs parsing, the Pareto front, Markdown/LaTeX layout on a hand-made board."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from scorers.report.costs import flops_from_paper, merged_flops, parse_flops, parse_flops_overrides
from scorers.report.figures import pareto_front
from scorers.report.table_writers import to_latex, to_markdown, value_columns


@pytest.mark.parametrize("text, value", [("604M", 6.04e8), ("224T", 2.24e14), ("1.66P", 1.66e15), ("7.01T", 7.01e12),
                                         ("2.5e9", 2.5e9), (" 12 ", 12.0), ("3k", 3e3), (5, 5.0), ("1.2T FLOPs", 1.2e12)])
def test_parse_flops(text, value):
    assert parse_flops(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["abc", "", "1.2X", "-3T", "0", "nan"])
def test_parse_flops_rejects(text):
    with pytest.raises(ValueError):
        parse_flops(text)


def test_flops_from_paper_and_overrides():
    paper = pd.DataFrame({"column": ["a", "a", "b", "c"], "flop_per_image": ["604M", "604M", "1.66P", float("nan")]})
    assert flops_from_paper(paper) == {"a": 6.04e8, "b": 1.66e15}
    assert merged_flops(paper, parse_flops_overrides(["b=1T", "d = 2G"])) == {"a": 6.04e8, "b": 1e12, "d": 2e9}
    with pytest.raises(ValueError, match="row 3: a has two FLOPs"):
        flops_from_paper(pd.DataFrame({"column": ["a", "a"], "flop_per_image": ["1M", "2M"]}))
    with pytest.raises(ValueError, match="expected COLUMN=VALUE"):
        parse_flops_overrides(["1.2T"])


def test_pareto_front():
    costs = [1, 2, 3, 4, 10, 10]
    values = [5, 4, 6, 6, 7, 3]
    # (2, 4) is beaten by (1, 5); (4, 6) by (3, 6); (10, 3) by everything cheaper
    assert pareto_front(costs, values) == [0, 2, 4]
    assert pareto_front([1.0], [math.nan]) == []


def _board():
    rows = []
    for k, (column, hib) in enumerate([("a_metric", True), ("b", False)]):
        row = {"column": column, "name": column, "family": "x&y", "higher_is_better": hib}
        for j, key in enumerate(value_columns()):
            row[key] = 50.0 + 10 * k - j if key != "sep_nat" else (70.0 if k == 0 else 70.04)
        row["rank_avg_ci_low"], row["rank_avg_ci_high"] = row["rank_avg"] - 2, row["rank_avg"] + 3
        rows.append(row)
    return pd.DataFrame(rows)


def test_markdown_layout_and_ties():
    text = to_markdown(_board())
    lines = [l for l in text.splitlines() if l.startswith("|")]
    assert len(lines) == 4
    a, b = lines[2].split("|"), lines[3].split("|")
    assert a[1].strip() == "a_metric" and b[1].strip() == "b†"
    assert b[3].strip() == "**60.0** <sub>[58.0, 63.0]</sub>" and a[3].strip() == "50.0 <sub>[48.0, 53.0]</sub>"
    # 70.0 and 70.04 display the same, so both are bold
    sep_nat = value_columns().index("sep_nat") + 3
    assert a[sep_nat].strip() == b[sep_nat].strip() == "**70.0**"
    assert "† lower-is-better" in text
    assert "sub" not in to_markdown(_board(), ci="none")


def test_latex_escapes_names():
    text = to_latex(_board())
    assert r"a\_metric & x\&y" in text and r"b$^\dagger$ & x\&y" in text
    assert r"\textbf{60.0}\,{\scriptsize[58.0, 63.0]}" in text


def test_one_suffix_parser_for_flops_and_sizes():
    """--flops and --max-shard-size share scorers.units.parse_quantity (values from the SI / IEC definitions)."""
    from scorers.ts2.export import parse_size
    from scorers.units import parse_quantity

    assert parse_quantity("604M") == 604e6 and parse_quantity("64KiB", units=("B",), binary=True) == 64 * 1024
    assert parse_size("2MiB") == 2 * 1024**2 and parse_size("2MB") == 2 * 1000**2
    with pytest.raises(ValueError, match="cannot parse FLOPs value '2Mi'"):
        parse_flops("2Mi")  # a binary prefix is not a FLOPs count
    with pytest.raises(ValueError, match="cannot parse size '2 apples'"):
        parse_size("2 apples")



def test_the_csv_neutralises_formulas_in_names(tmp_path):
    """A metric named like a spreadsheet formula is written with a leading quote; the numbers (negative ones
    included) stay numbers."""
    import csv

    from scorers.report.table_writers import write_tables

    board = pd.DataFrame({"column": ["=cmd|' /C calc'!A0"], "name": ['=HYPERLINK("http://evil.example")'],
                          "family": ["@x"], "higher_is_better": [True], "segs": ["0-163"],
                          **{key: [-12.5] for key in value_columns()}})
    paths = write_tables(board, tmp_path)
    with open(paths["csv"], newline="", encoding="utf-8") as handle:
        row = next(csv.DictReader(handle))
    assert (row["column"], row["name"], row["family"]) == ("'=cmd|' /C calc'!A0",
                                                          '\'=HYPERLINK("http://evil.example")', "'@x")
    assert row["rank_avg"] == "-12.5" and row["delta_real"] == "-12.5"
