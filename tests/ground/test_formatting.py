"""``scorers.formatting``'s CSV cells: OWASP's rule against formula injection, numbers left as numbers."""
from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from scorers.formatting import csv_safe, csv_text


@pytest.mark.parametrize("text", ['=HYPERLINK("http://evil.example","x")', "=cmd|' /C calc'!A0", "+1+cmd|x",
                                  "-2+3+cmd|' /C calc'!A0", "@SUM(A1:A9)", "\t=1+1", "\r=1+1", "-", "+", "=1"])
def test_text_that_a_spreadsheet_reads_as_a_formula_gets_a_leading_quote(text):
    assert csv_text(text) == "'" + text


@pytest.mark.parametrize("value", ["-0.12", "+3", "-1e-05", "0.5", "plain", "", "a=b", "x-y", -0.12, 3, None])
def test_numbers_and_plain_text_are_left_as_they_are(value):
    assert csv_text(value) == value


def test_a_frame_written_safe_keeps_its_numbers():
    frame = pd.DataFrame({"name": ["=cmd|x", "ok", "-0.5"], "delta": [-0.12, 0.3, -1e-5],
                          "=evil": ["@x", None, "fine"]})
    written = csv_safe(frame).to_csv(index=False)
    rows = list(csv.reader(io.StringIO(written)))
    assert rows[0] == ["name", "delta", "'=evil"]
    assert rows[1:] == [["'=cmd|x", "-0.12", "'@x"], ["ok", "0.3", ""], ["-0.5", "-1e-05", "fine"]]
    assert frame["name"].tolist() == ["=cmd|x", "ok", "-0.5"]  # the frame itself is not changed
