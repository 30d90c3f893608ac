"""docs/elements.md: the release's table between its elements markers is what `ts2 elements --released` prints
(recomputed here from the release's files), and the rates the prose quotes are that table's."""
from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.cli import run_cli

PAGE = Path(__file__).resolve().parents[2] / "docs" / "elements.md"


def _block() -> str:
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("<!-- elements:start -->\n", 1)[1].split("<!-- elements:end -->", 1)[0]
    match = re.fullmatch(r"```text\n(.*)```\n", section, flags=re.S)
    assert match is not None, "the elements markers hold one ```text block"
    return match.group(1)


def test_the_pages_table_is_the_commands_output(capsys, shared_ts2, monkeypatch):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    code, out, err = run_cli(capsys, "elements", "--released")
    assert code == 0, err
    assert _block() == out


def test_the_prose_quotes_the_table():
    # a metric's first row is its 0-error row: metric, errors, wrong %, interval, answers
    rows = {line.split()[0]: line.split() for line in _block().splitlines() if line.strip() and line[0].isalpha()}
    page = PAGE.read_text(encoding="utf-8")
    for metric, quoted in (("mplug_tifa", "10.5%"), ("llava_dsg", "12.0%")):
        assert rows[metric][1] == "0" and rows[metric][2] == quoted.rstrip("%")
        assert quoted in page
