"""The release-table readers validate whole columns at once and still name the first bad cell's line."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scorers.checks import as_scores
from scorers.tables.pandas_tables import column_scores, read_table2_full_precision

PREFIXES, PARTS = ("spearman", "ks", "delta"), ("all", "synth", "nat", "real")


def _official(tmp_path, cell=None):
    """A two-metric ``pareto_information.csv``; value = metric index + part index / 10 + prefix index / 100."""
    rows = []
    for m, name in enumerate(("clip", "tifa")):
        row = {"metric": name, "cost": 1e9 * (m + 1)}
        for i, prefix in enumerate(PREFIXES):
            for j, part in enumerate(PARTS):
                row[f"{prefix}-{part}"] = str(m + j / 10 + i / 100)
        rows.append(row)
    frame = pd.DataFrame(rows)
    if cell is not None:
        (line, column), value = cell
        frame.loc[line - 2, column] = value
    path = tmp_path / "table2_full_precision.csv"
    frame.to_csv(path, index=False)
    return path


def test_values_in_percent_in_file_order(tmp_path):
    table = read_table2_full_precision(_official(tmp_path))
    assert table["column"].tolist() == ["clip"] * 3 + ["tifa"] * 3
    assert table["meta_metric"].tolist() == ["rank", "sep", "delta"] * 2
    tifa_sep = table[(table["column"] == "tifa") & (table["meta_metric"] == "sep")].iloc[0]
    # tifa (m = 1), ks (i = 1): 1 + j / 10 + 0.01 -> x 100
    assert [tifa_sep[p] for p in ("avg", "synth", "nat", "real")] == pytest.approx([101.0, 111.0, 121.0, 131.0])


@pytest.mark.parametrize("value, message", [
    ("x", "line 3, ks-nat has 1 non-numeric value(s): position 0: 'x'"),
    ("", "line 3, ks-nat has no valid score (all 1 values are NaN or empty)"),
    ("inf", "line 3, ks-nat has 1 infinite value(s), first at position 0: inf"),
])
def test_a_bad_cell_is_named_by_line_and_column(tmp_path, value, message):
    path = _official(tmp_path, ((3, "ks-nat"), value))
    with pytest.raises(ValueError) as error:
        read_table2_full_precision(path)
    assert str(error.value) == f"{path} {message}"


@pytest.mark.parametrize("cells, clean, expected", [
    ([" 1.5", "", "nan", "NaN", "-2e-3"], False, [1.5, np.nan, np.nan, np.nan, -0.002]),
    (['"3', "'4'", "5"], True, [3.0, 4.0, 5.0]),
])
def test_text_columns_parse_as_float_does(cells, clean, expected):
    got = column_scores(pd.DataFrame({"s": cells}, dtype=str), "s", clean_quotes=clean)
    np.testing.assert_array_equal(got, np.asarray(expected))


@pytest.mark.parametrize("cell", ["1_000", "１２"])
def test_a_column_reads_a_cell_as_one_cell_does(cell):
    """One rule for a score cell (issue 32): Python's float takes '1_000' and full-width digits, the cell rule does
    not, and a whole column read at once follows the cell rule (it used to give 1000.0)."""
    with pytest.raises(ValueError, match="non-numeric"):
        column_scores(pd.DataFrame({"s": [cell, "0.1"]}, dtype=str), "s")
    with pytest.raises(ValueError, match="non-numeric"):
        as_scores([cell, "0.1"], name="s")


def test_a_word_in_a_score_column_is_named_by_position():
    frame = pd.DataFrame({"s": ["0.5", "0.7", "high", "'3"]}, dtype=str)
    with pytest.raises(ValueError, match=r"column 's' has 2 non-numeric value\(s\): position 2: 'high', position 3: "
                                         r"\"'3\""):
        column_scores(frame, "s")
