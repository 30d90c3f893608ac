"""The card's preference inputs: self pairs, repeated and contradictory pairs, numeric preferences, malformed and
missing files, and pairs a human called a tie.

Expected values come from hand counts of the pairs written and a plain loop."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import one_line, run_cli
from tests.helpers.score_tables import SCORES, card_with_pairs, release_columns


def test_self_pair_is_refused_naming_the_row(capsys, tmp_path, shared_ts2):
    pairs = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n2,q,u3,u3,a\n"
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES)
    line = one_line(err)
    assert code == 2 and "row 1" in line and "'u3'" in line and "same image" in line
    assert line.count(str(tmp_path / "pairs.csv")) == 1


def test_duplicated_and_contradictory_pairs_are_counted_and_reported(capsys, tmp_path, shared_ts2):
    # rows 0-1: the same pair twice (a duplicate); rows 2-3: u3 over u4, then (u4, u3, b) = u3 over u4 again (a
    # duplicate written reversed); rows 4-5: u5 over u6, then (u6, u5, a) = u6 over u5 (a contradiction);
    # rows 6-7: a tie written both ways (a duplicate). By hand: 3 duplicated rows, 1 contradictory pair.
    pairs = ("item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n1,p,u1,u2,a\n2,q,u3,u4,a\n2,q,u4,u3,b\n"
             "3,r,u5,u6,a\n3,r,u6,u5,a\n4,s,u1,u3,tie\n4,s,u3,u1,tie\n")
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES, "--json")
    assert code == 0, err
    section = json.loads(out)["mine"]["sets"]["toy"]
    assert section["n_pairs"] == 8  # every row still counts
    notes = " | ".join(section["notes"])
    assert "3 duplicated pair row(s)" in notes and "first: rows 0 and 1" in notes
    assert "1 contradictory pair(s)" in notes and "rows 4 and 5" in notes
    markdown = (tmp_path / "o" / "mine.md").read_text()
    assert "3 duplicated pair row(s)" in markdown and "1 contradictory pair(s)" in markdown


def test_pair_repeats_against_a_plain_loop():
    """The vectorised counts equal a loop over the rows on a random table with many repeats."""
    from scorers.sets import pair_repeats

    rng = np.random.default_rng(5)
    rows = [{"item": str(rng.integers(3)), "image_a": f"i{rng.integers(4)}", "image_b": f"i{rng.integers(4)}",
             "preference": str(rng.choice(["a", "b", "tie"]))} for _ in range(300)]
    rows = [r for r in rows if r["image_a"] != r["image_b"]]
    seen, duplicated, prefs = {}, 0, {}
    for r in rows:
        lo, hi = sorted((r["image_a"], r["image_b"]))
        sign = {"a": 1, "b": -1, "tie": 0}[r["preference"]] * (1 if r["image_a"] == lo else -1)
        key = (r["item"], lo, hi)
        duplicated += sign in seen.get(key, set())
        seen.setdefault(key, set()).add(sign)
    contradictory = sum(len(v) > 1 for v in seen.values())
    got = pair_repeats(pd.DataFrame(rows))
    assert (got["duplicated"], got["contradictory"]) == (duplicated, contradictory)


def test_numeric_preferences_read_as_the_library_reads_them(capsys, tmp_path, shared_ts2):
    """1 / -1 / 0 (1 = image A preferred) give the card of the same pairs written a / b / tie."""
    letters = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n2,q,u3,u4,b\n3,r,u5,u6,tie\n4,s,u2,u3,b\n"
    numbers = letters.replace(",a\n", ",1\n").replace(",b\n", ",-1\n").replace(",tie\n", ",0\n")
    assert numbers.count(",-1\n") == 2
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, numbers, SCORES, "--json")
    assert code == 0, err
    rows = {r["ties"]: r for r in json.loads(out)["mine"]["sets"]["toy"]["rows"]}
    # by hand, scores u1 .9 u2 .1 u3 .4 u4 .6 u5 .5 u6 .5: pair 1 right, 2 right (u4 > u3), 3 a metric tie of a
    # human tie, 4 right (u3 > u2): excluded 3 of 3; calibrated (epsilon 0) 4 of 4
    assert rows["excluded"]["statistic"] == 1.0 and rows["excluded"]["n_pairs"] == 3
    assert rows["calibrated"]["statistic"] == 1.0 and rows["calibrated"]["n_pairs"] == 4


def test_numeric_preferences_flip_the_accuracy_when_negated(capsys, tmp_path, shared_ts2):
    """A check that 1 means A: every decided pair negated orders all of them wrong."""
    numbers = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,-1\n2,q,u3,u4,1\n3,r,u2,u3,1.0\n"
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, numbers, SCORES, "--json")
    assert code == 0, err
    rows = {r["ties"]: r for r in json.loads(out)["mine"]["sets"]["toy"]["rows"]}
    assert rows["excluded"]["statistic"] == 0.0 and rows["excluded"]["n_pairs"] == 3


@pytest.mark.parametrize("pairs, needle", [
    ("item,prompt,image_a,image_b,preference\n1,p,u1,u2,left\n", "row 0: preference 'left' is not a/b/tie"),
    ("item,prompt,image_a,image_b,preference\n1,p,u1,u2,2\n", "row 0: preference '2' is not a/b/tie"),
    (b"item,prompt,image_a,image_b,preference\n1,p,u1,u2,\xff\n", "not UTF-8"),
    ("item,prompt,image_a,image_b,preference,preference\n1,p,u1,u2,a,b\n", "duplicate column name"),
    ("item,prompt,image_a\n1,p,u1\n", "not a pair table"),
])
def test_malformed_preferences_file_is_an_error_naming_it_once(capsys, tmp_path, shared_ts2, pairs, needle):
    """Before: exit 0 with the set "not evaluated", its file named twice."""
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES)
    line = one_line(err)
    assert code == 2 and needle in line, line
    assert line.count(str(tmp_path / "pairs.csv")) == 1, line


def test_missing_preferences_file_is_an_error(capsys, tmp_path, shared_ts2):
    (tmp_path / "s.csv").write_text(SCORES)
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"toy={tmp_path / 'no.csv'}",
                              "--preference-scores", f"toy={tmp_path / 's.csv'}", "--data-dir", shared_ts2,
                              "--out", tmp_path / "o")
    assert code == 2 and "--preferences toy=" in one_line(err) and "no such file" in err


def test_every_pair_a_human_tie_gets_a_note(capsys, tmp_path, shared_ts2):
    pairs = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,tie\n2,q,u3,u4,tie\n3,r,u1,u4,tie\n"
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES, "--json")
    assert code == 0, err
    section = json.loads(out)["mine"]["sets"]["toy"]
    rows = {r["ties"]: r for r in section["rows"]}
    assert rows["calibrated"]["statistic"] == 1.0  # the triviality the note explains
    assert any("every scored human pair is a tie" in n and "trivially 1.000" in n for n in section["notes"])
