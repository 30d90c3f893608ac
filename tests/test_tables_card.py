"""Issue 33 items 12-15 and issue 34 section 5 (the card): duplicate header names are refused by every table read,
``ts2 meta --from`` re-derives the saved table from its results, the card's preference inputs are checked, the card
reads what ``ts2 score --set`` writes for every set, and the card's units, messages and figure labels.

Expected values come from hand-made files (the duplicated names are the ones written), from ``ts2 meta``'s own
``--json`` run on the same file (the saved table) and from hand counts of the pairs written."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main

from .test_demo_fixes import config  # noqa: F401  (fixture: the demo's settings on the release tables)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def release_columns(shared: Path, header: list[str], columns: list[str], target: Path) -> Path:
    """A score table of the release's rows (``id, image_id`` and ``columns`` copied verbatim) under ``header``."""
    raw = pd.read_csv(shared / "released_scores.csv", dtype=str, keep_default_na=False)
    body = raw[["id", "image_id", *columns]].to_csv(index=False, header=False)
    target.write_text(",".join(header) + "\n" + body)
    return target


# ---------------------------------------------------------------------------------------------- 12. duplicate headers


def test_meta_refuses_two_columns_of_one_name(capsys, tmp_path, shared_ts2):
    scores = release_columns(shared_ts2, ["id", "image_id", "my_metric", "my_metric"], ["clipscore", "alignscore"],
                             tmp_path / "dup.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2)
    line = one_line(err)
    assert code == 2 and not out
    assert str(scores) in line and "duplicate column name" in line and "'my_metric'" in line


def test_meta_refuses_a_duplicated_key_header(capsys, tmp_path, shared_ts2):
    """Before: the second ``id`` became a metric named ``id.1`` (all-constant numbers)."""
    scores = release_columns(shared_ts2, ["id", "id", "image_id", "my_metric"], ["id", "clipscore"],
                             tmp_path / "dupkey.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2)
    line = one_line(err)
    assert code == 2 and "'id'" in line and "duplicate column name" in line and "id.1" not in out


def test_a_real_dotted_name_is_not_a_duplicate(capsys, tmp_path, shared_ts2):
    """``x`` and ``x.1`` written as such are two names: read as given."""
    scores = release_columns(shared_ts2, ["id", "image_id", "x", "x.1"], ["clipscore", "alignscore"],
                             tmp_path / "dotted.csv")
    code, out, err = run_cli(capsys, "meta", scores, "--data-dir", shared_ts2, "--json")
    assert code == 0, err
    assert set(json.loads(out)) == {"x", "x.1"}


def test_metadata_with_a_duplicated_header_is_refused(tmp_path, shared_ts2):
    from scorers.tables.pandas_tables import DuplicateHeaderError, read_metadata

    text = (shared_ts2 / "metadata.csv").read_text(encoding="utf-8").splitlines()
    lines = [text[0] + ",rank"] + [line + ",x" for line in text[1:]]
    (tmp_path / "metadata.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(DuplicateHeaderError, match=r"duplicate column name.*'rank'"):
        read_metadata(tmp_path / "metadata.csv")


@pytest.mark.parametrize("header", [["image", "mine", "mine"], ["image", "image", "mine"], ["image", "mine", " mine"]])
def test_card_preference_scores_refuse_duplicate_headers(capsys, tmp_path, shared_ts2, header):
    (tmp_path / "pairs.csv").write_text("item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n")
    (tmp_path / "s.csv").write_text(",".join(header) + "\nu1,0.5,0.1\nu2,0.3,0.2\n")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"toy={tmp_path / 'pairs.csv'}",
                              "--preference-scores", f"toy={tmp_path / 's.csv'}", "--data-dir", shared_ts2,
                              "--n-bootstrap", 0, "--out", tmp_path / "o")
    line = one_line(err)
    assert code == 2 and "duplicate column name" in line and f"'{header[1].strip()}'" in line
    assert line.count(str(tmp_path / "s.csv")) == 1


def test_parquet_and_tsv_tables_refuse_duplicate_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scorers.report.card.inputs import read_table
    from scorers.tables.pandas_tables import DuplicateHeaderError

    table = pa.Table.from_arrays([pa.array(["u1"]), pa.array([0.5]), pa.array([0.1])], names=["image", "m", "m"])
    pq.write_table(table, tmp_path / "s.parquet")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.parquet")
    (tmp_path / "s.tsv").write_text("image\tm\tm\nu1\t0.5\t0.1\n")
    with pytest.raises(DuplicateHeaderError, match="'m'"):
        read_table(tmp_path / "s.tsv")


def test_duplicate_check_keeps_reading_fast(tmp_path, monkeypatch):
    """The check costs no second read of a table whose names pandas left alone, and one read of the header row (one
    row, not the table) when a name looks like pandas' rename of a repeat (``m.1``); the table itself is parsed by
    pandas' C reader once, never row by row in Python. Counted, not timed: the count does not depend on the load."""
    from scorers.tables import pandas_tables

    rng = np.random.default_rng(0)
    for names in (["m", "n"], ["m", "m.1"]):
        pd.DataFrame({"image": [f"i{k}" for k in range(20_000)], names[0]: rng.normal(size=20_000),
                      names[1]: rng.normal(size=20_000)}).to_csv(tmp_path / f"{names[1]}.csv", index=False)
    calls = []
    original = pd.read_csv

    def counted(*args, **kwargs):
        calls.append(kwargs.get("nrows"))
        return original(*args, **kwargs)

    monkeypatch.setattr(pandas_tables.pd, "read_csv", counted)
    pandas_tables.read_csv(tmp_path / "n.csv", dtype=str, keep_default_na=False)
    assert calls == [None]  # the table, once
    calls.clear()
    frame = pandas_tables.read_csv(tmp_path / "m.1.csv", dtype=str, keep_default_na=False)
    assert calls == [None, 1] and list(frame.columns) == ["image", "m", "m.1"]  # + the header row alone


# ------------------------------------------------------------------------------------------ 14. preference inputs


def card_with_pairs(capsys, tmp_path, shared, pairs_text: str, scores_text: str, *extra):
    (tmp_path / "pairs.csv").write_bytes(pairs_text.encode("utf-8") if isinstance(pairs_text, str) else pairs_text)
    (tmp_path / "s.csv").write_text(scores_text)
    mine = tmp_path / "mine.csv"
    if not mine.is_file():
        release_columns(shared, ["id", "image_id", "mine"], ["clipscore"], mine)
    return run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"toy={tmp_path / 'pairs.csv'}",
                   "--preference-scores", f"toy={tmp_path / 's.csv'}", "--baseline", "none", "--data-dir", shared,
                   "--n-bootstrap", 0, "--out", tmp_path / "o", *extra)


SCORES = "image,mine\nu1,0.9\nu2,0.1\nu3,0.4\nu4,0.6\nu5,0.5\nu6,0.5\n"


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


# ------------------------------------------------------------------------------------------------ 13. ts2 meta --from

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def saved(tmp_path, capsys):
    """A ts2 meta result saved with --out, and the numbers --json printed for the same command."""
    import shutil

    scores, metadata = tmp_path / "my_scores.csv", tmp_path / "sample_metadata.csv"
    shutil.copy(DATA / "my_scores.csv", scores)
    shutil.copy(DATA / "sample_metadata.csv", metadata)
    argv = ["meta", scores, "--metadata", metadata, "--on", "seg_id", "file_name", "--n-bootstrap", 20, "--seed", 7]
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    numbers = json.loads(out)
    code, printed, err = run_cli(capsys, *argv, "--out", tmp_path / "result.json")
    assert code == 0, err
    return tmp_path / "result.json", numbers, printed


def edit(path: Path, change) -> Path:
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))
    return path


def test_from_refuses_a_table_edited_by_hand(saved, capsys):
    path, _numbers, printed = saved
    payload = json.loads(path.read_text())
    cell = payload["table"].split("\n")[3].split()[1]  # the first metric's rank:avg, as printed
    assert cell in printed
    edit(path, lambda p: p.update(table=p["table"].replace(cell, "99.9", 1)))
    code, out, err = run_cli(capsys, "meta", "--from", path)
    line = one_line(err)
    assert code == 2 and not out
    assert str(path) in line and "'table' does not match 'results'" in line and "99.9" in line and "edited" in line


def test_from_refuses_results_edited_by_hand(saved, capsys):
    path, numbers, _printed = saved
    column = next(iter(numbers))
    edit(path, lambda p: p["results"][column]["rank"]["summary"].update(avg=0.999))
    code, _out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 2 and "does not match" in one_line(err) and "99.9" in err


def test_from_reprints_an_untouched_result(saved, capsys):
    path, _numbers, printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 0, err
    assert out.startswith(printed.rstrip("\n")) and out.count("(unchanged)") == 2


def test_from_with_json_prints_the_saved_numbers(saved, capsys):
    path, numbers, _printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path, "--json")
    assert code == 0, err
    assert json.loads(out) == numbers  # what --json printed for the saved command


@pytest.mark.parametrize("flags, named", [
    (["--seed", "0"], "--seed"), (["--seed", "3"], "--seed"), (["--n-bootstrap", "5"], "--n-bootstrap"),
    (["--lower-is-better", "my_metric"], "--lower-is-better"), (["--lower-is-better"], "--lower-is-better"),
    (["--variant", "official"], "--variant"), (["--segs", "0-5"], "--segs"),
])
def test_from_refuses_options_that_would_compute(saved, capsys, flags, named):
    path, _numbers, _printed = saved
    code, out, err = run_cli(capsys, "meta", "--from", path, *flags)
    line = one_line(err)
    assert code == 2 and not out and named in line and "computes nothing" in line


@pytest.mark.parametrize("change, needle", [
    (lambda p: p.update(inputs=["a", "b"]), "field 'inputs' must be an object {role: {\"path\": text, \"sha256\": text}}, got a list"),
    (lambda p: p.update(table=5), "field 'table' must be text, got a number"),
    (lambda p: p.pop("table"), "missing field(s) 'table'"),
    (lambda p: [p.pop(k) for k in ("results", "seed")], "missing field(s) 'seed', 'results'"),
    (lambda p: p.update(inputs={"scores": {"path": 1}}), "field 'inputs' must be"),
    (lambda p: p.update(seed="7"), "field 'seed' must be an integer or null, got text"),
    (lambda p: p.update(results=[]), "field 'results' must be an object, got a list"),
    (lambda p: p["results"][next(iter(p["results"]))]["rank"].pop("per_seg"), "field 'results' is not the results of ts2 meta"),
])
def test_from_names_a_malformed_field_in_one_line(saved, capsys, change, needle):
    path, _numbers, _printed = saved
    edit(path, change)
    code, out, err = run_cli(capsys, "meta", "--from", path)
    line = one_line(err)
    assert code == 2 and not out and needle in line and str(path) in line, line


def test_from_prints_the_saved_command_with_control_characters_escaped(saved, capsys):
    path, _numbers, _printed = saved
    edit(path, lambda p: p.update(command="ts2 meta x.csv\x1b[2J\x1b[31m\rEVIL\n\u202eabc"))
    code, out, err = run_cli(capsys, "meta", "--from", path)
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("saved by:"))
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert "x.csv\\x1b[2J\\x1b[31m\\rEVIL\\n\\u202eabc" in line


# ---------------------------------------------------------------------- 15. the card reads what score --set writes


def _stable(key: str) -> float:
    import hashlib

    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 2 ** 32


@pytest.fixture
def fake_scoring(monkeypatch):
    """``score_set``'s own path with the model call replaced: each item's score is a hash of its cache key
    (``image|prompt``), so one image under two prompts gets two scores, as a real scorer gives."""
    from scorers.scoring.runner import RunResult
    from scorers.sets import scoring

    class Fake:
        name = "mine"
        higher_is_better = {}

    def fake_run(scorer, images, prompts, keys, **_options):
        scores = np.asarray([_stable(k) for k in keys])
        n = len(keys)
        return RunResult(keys=list(keys), scores=scores, records=[None] * n, errors=[None] * n, computed=n)

    monkeypatch.setattr(scoring, "build_run_scorer", lambda *a, **k: (Fake(), fake_run))
    return scoring


def _gecko(root: Path, monkeypatch) -> dict:
    """A Gecko2K ratings table and the prompts file it joins (the pinned prompts download replaced by a local
    copy)."""
    from scorers.sets import ratings
    from tests.test_score_set import _files

    root.mkdir(parents=True, exist_ok=True)
    prompts = root / "prompts.csv"
    pd.DataFrame({"prompt_id": ["1", "2"], "prompt": ["a red cube", "two birds"],
                  "prompt_type": ["color", "count"]}).to_csv(prompts, index=False)
    monkeypatch.setattr(ratings, "fetch", lambda *a, **k: prompts)
    table = root / "gecko_ratings.csv"
    pd.DataFrame({"prompt_id": ["1", "1", "2", "2"], "system": ["s1", "s2", "s1", "s2"],
                  "image": ["g1.png", "g2.png", "g3.png", "g4.png"], "human": [0.9, 0.2, 0.5, 0.7]}).to_csv(
        table, index=False)
    return {"file": table, "images_dir": _files(root / "images", ["g1.png", "g2.png", "g3.png", "g4.png"], start=300)}


def _hpdv2_shared_names(root: Path) -> dict:
    """HPDv2's layout where two prompts' lists name the same image file (``00000.jpg``), as the real test.json does:
    ``ts2 score --set hpdv2`` scores it once per prompt."""
    from tests.test_score_set import _files

    root.mkdir(parents=True, exist_ok=True)
    entries = [{"prompt": "a cat", "image_path": ["00000.jpg", "00001.jpg", "00002.jpg"], "rank": [1, 3, 2],
                "raw_annotations": []},
               {"prompt": "a dog", "image_path": ["00000.jpg", "00003.jpg"], "rank": [2, 1], "raw_annotations": []}]
    (root / "test.json").write_text(json.dumps(entries))
    return {"file": root / "test.json",
            "images_dir": _files(root / "images", [f"0000{k}.jpg" for k in range(4)], "JPEG", start=400)}


def loop_accuracy_excluded(pairs: pd.DataFrame, column: str) -> float:
    """Pairwise accuracy with human ties dropped and a metric tie wrong, one pair at a time."""
    right = total = 0
    for row in pairs.itertuples(index=False):
        human = row.preference
        if human == "tie":
            continue
        a, b = getattr(row, f"{column}_a"), getattr(row, f"{column}_b")
        total += 1
        right += (a > b and human == "a") or (b > a and human == "b")
    return right / total


def test_card_reads_what_score_set_writes_for_every_set(fake_scoring, tmp_path, monkeypatch, capsys, shared_ts2):
    from scorers.sets.registry import IMAGES, PAIRS, RATINGS, SEGS, REGISTRY
    from tests.test_score_set import make_sets

    sets = make_sets(tmp_path / "sets")
    sets["gecko2k"] = _gecko(tmp_path / "gecko", monkeypatch)
    sets["hpdv2"] = _hpdv2_shared_names(tmp_path / "hpdv2")
    # every set with a table: TS2 (its own path, read by --scores: tests/test_score_set.py's card test) and TIFA v1.0
    # (a bench without human judgments, never a card section) are the others
    tabled = {name for name, r in REGISTRY.items() if r.kind in (RATINGS, PAIRS)}
    assert tabled == set(sets), "a registered set without a generated file here"
    assert {r.kind for n, r in REGISTRY.items() if n not in tabled} <= {SEGS, IMAGES}
    argv = []
    written = {}
    for name, entry in sets.items():
        out = tmp_path / "scores" / f"{name}.csv"
        fake_scoring.score_set("fake", name, out, set_file=entry["file"], images_dir=entry["images_dir"],
                               batch_size=2, num_workers=0, progress=False)
        written[name] = out
        if REGISTRY[name].kind == PAIRS:
            argv += ["--preferences", f"{name}={out.with_name(name + '.pairs.csv')}",
                     "--preference-scores", f"{name}={out}"]
        else:
            argv += ["--ratings", f"{name}={out}"]
    frame = pd.read_csv(written["hpdv2"], dtype=str, keep_default_na=False)
    assert list(frame.columns[:3]) == ["item", "image", "prompt"]
    assert (frame["image"] == "00000.jpg").sum() == 2  # one score per (image, prompt), as score --set writes
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", *argv, "--baseline", "none",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    card = json.loads(out)["mine"]
    for name in sets:
        section = card["sets"][name]
        if name == "gecko2k" or REGISTRY[name].kind == RATINGS:
            assert section["status"] == "evaluated", (name, section.get("reason"))
            assert section["n_scored"] == len(pd.read_csv(written[name])), name
            continue
        assert section["status"] == "evaluated", (name, section.get("reason"))
        pairs = pd.read_csv(written[name].with_name(name + ".pairs.csv"), dtype={"preference": str})
        assert section["n_scored"] == len(pairs) and section["n_skipped"] == 0, name
        if section["headline_ties"] == "excluded":  # the set's own convention, by a plain loop over the pairs
            assert section["headline_value"] == pytest.approx(loop_accuracy_excluded(pairs, "mine"), abs=1e-12)


def test_hpdv2_scores_are_looked_up_by_image_and_prompt(fake_scoring, tmp_path, capsys, shared_ts2):
    """The image 00000.jpg has one score under 'a cat' and another under 'a dog': each pair takes its prompt's."""
    entry = _hpdv2_shared_names(tmp_path / "hpdv2")
    out = tmp_path / "hpdv2.csv"
    fake_scoring.score_set("fake", "hpdv2", out, set_file=entry["file"], images_dir=entry["images_dir"],
                           batch_size=2, num_workers=0, progress=False)
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, text, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"hpdv2={entry['file']}",
                              "--preference-scores", f"hpdv2={out}", "--baseline", "none", "--data-dir", shared_ts2,
                              "--n-bootstrap", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    section = json.loads(text)["mine"]["sets"]["hpdv2"]
    # by hand: the pairs of 'a cat' (ranks 1, 3, 2) and 'a dog' (2, 1), each image's score = hash of image|prompt
    score = {(i, p): _stable(f"{i}|{p}") for i, p in [("00000.jpg", "a cat"), ("00001.jpg", "a cat"),
                                                      ("00002.jpg", "a cat"), ("00000.jpg", "a dog"),
                                                      ("00003.jpg", "a dog")]}
    pairs = [("00000.jpg", "00001.jpg", "a cat", "a"), ("00000.jpg", "00002.jpg", "a cat", "a"),
             ("00001.jpg", "00002.jpg", "a cat", "b"), ("00000.jpg", "00003.jpg", "a dog", "b")]
    right = sum((score[(a, p)] > score[(b, p)]) == (h == "a") for a, b, p, h in pairs)
    assert section["n_scored"] == 4 and section["headline_value"] == pytest.approx(right / 4, abs=1e-12)


# ------------------------------------------------------------------------------------- 34.5: the card's messages


def test_tifa160_offline_names_the_file_and_how_to_get_it(capsys, tmp_path, monkeypatch, shared_ts2):
    """Before: "set TS2_DATA ... or run `ts2 release fetch --all`", neither of which provides TIFA160."""
    from scorers.sets.ratings import TIFA160
    from tests.conftest import use_hf_home

    use_hf_home(monkeypatch, tmp_path / "hf")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--ratings", "tifa160=tifa160", "--offline",
                             "--baseline", "none", "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out",
                             tmp_path / "o", "--json")
    assert code == 0, err
    reason = json.loads(out)["mine"]["not_evaluated"]["tifa160"]
    assert "\n" not in reason and TIFA160.filename in reason and TIFA160.url in reason
    assert "not a TS2 release file" in reason and "--ratings tifa160=PATH" in reason
    assert "release fetch --all" not in reason


def test_a_ratings_column_that_does_not_exist_is_an_error(capsys, tmp_path, shared_ts2):
    """Before: exit 0 with the set "not evaluated"."""
    from tests.test_agreement_cli import write_tifa_json

    tifa = write_tifa_json(tmp_path / "tifa.json", n_prompts=4)
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    argv = ["card", "--scores", f"mine={mine}", "--ratings", f"tifa160={tifa}", "--baseline", "none", "--data-dir",
            shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o"]
    code, _out, err = run_cli(capsys, *argv, "--ratings-column", "mine=nope")
    line = one_line(err)
    assert code == 2 and "--ratings-column mine=nope" in line and "'nope'" in line
    code, out, err = run_cli(capsys, *argv, "--ratings-column", "mine=clipscore_vitb32", "--json")  # a real column
    assert code == 0, err
    assert json.loads(out)["mine"]["sets"]["tifa160"]["column"] == "clipscore_vitb32"


# ----------------------------------------------------------------------------- 34.5: units, the figure's labels


@pytest.fixture(scope="module")
def one_set_card(tmp_path_factory, shared_ts2):
    """A TS2-only card of a release column against the release's clipscore (the suptitle case of issue 34: one
    panel, "better than clipscore on 0 of 1 sets, worse on 0, 95% paired intervals")."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("one_set")
    mine = release_columns(shared_ts2, ["id", "image_id", "a_rather_long_metric_name"], ["mplug_tifa"],
                           root / "mine.csv")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([str(a) for a in ["card", "--scores", f"a_rather_long_metric_name={mine}", "--data-dir",
                                      shared_ts2, "--n-bootstrap", 50, "--out", root / "out", "--json"]]) == 0
    return root, json.loads(buffer.getvalue())["a_rather_long_metric_name"]


def test_card_markdown_shows_percent_with_a_label_and_json_keeps_fractions(one_set_card, shared_ts2):
    from scorers.stats.meta import ts2_meta
    from scorers.tables.pandas_tables import read_metadata

    root, card = one_set_card
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    scores = pd.read_csv(shared_ts2 / "released_scores.csv")["mplug_tifa"].to_numpy(dtype=float)
    rank = ts2_meta(scores, metadata["seg_id"], metadata["node"], seg_subset=range(164)).rank.statistic["avg"]
    assert card["sets"]["ts2"]["meta"]["rank"]["summary"]["avg"] == pytest.approx(rank, abs=1e-12)  # a fraction
    text = (root / "out" / "a_rather_long_metric_name.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| meta-metric"))
    assert "| a_rather_long_metric_name (%) | CI (%) | clipscore (%) | CI (%) |" in header
    row = next(line for line in text.splitlines() if line.startswith("| rank | avg |"))
    assert row.split(" | ")[2] == f"{100 * rank:.1f}"  # 67.8, as ts2 meta prints it
    assert "values in % (the JSON holds fractions)" in text
    assert " pp [" in next(line for line in text.splitlines() if line.startswith("- paired vs clipscore (rank)"))


def _figure_boxes(fig):
    """Window extents of the figure's title, each panel's title, x label and tick labels (as the renderer lays them
    out) and of each panel's axes."""
    renderer = fig.canvas.get_renderer()
    boxes = {"suptitle": fig._suptitle.get_window_extent(renderer)}
    for k, ax in enumerate(fig.axes):
        boxes[f"title {k}"] = ax.title.get_window_extent(renderer)
        boxes[f"xlabel {k}"] = ax.xaxis.label.get_window_extent(renderer)
        boxes[f"axes {k}"] = ax.get_window_extent(renderer)
        for t, label in enumerate(ax.get_yticklabels()):
            boxes[f"ytick {k}.{t}"] = label.get_window_extent(renderer)
    return boxes


def drawn_figure(card, tmp_path, monkeypatch):
    """The figure ``card_figure`` saves (its ``savefig`` call captured), as the PNG shows it."""
    from matplotlib.figure import Figure

    from scorers.report.card import card_figure

    kept = []
    original = Figure.savefig

    def keep(fig, *args, **kwargs):
        kept.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    assert card_figure(card, tmp_path / "card.png") == tmp_path / "card.png"
    (fig,) = kept
    return fig


def _assert_laid_out(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    boxes = _figure_boxes(fig)
    frame = fig.bbox
    for name, box in boxes.items():  # every label inside the picture (1 px of anti-aliasing)
        assert box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 \
            and box.y1 <= frame.y1 + 1, f"{name} leaves the figure: {box} / {frame}"
    texts = [n for n in boxes if not n.startswith("axes")]
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not boxes[a].overlaps(boxes[b]), f"{a} and {b} overlap: {boxes[a]} / {boxes[b]}"
        for axes in (n for n in boxes if n.startswith("axes")):
            if a.startswith(("suptitle", "title")):
                assert not boxes[a].overlaps(boxes[axes]), f"{a} overlaps {axes}"


def test_card_title_breaks_between_phrases_and_labels_do_not_overlap(one_set_card, tmp_path, monkeypatch):
    from scorers.report.card import Card

    _root, data = one_set_card
    card = Card.from_dict(data)
    assert card.verdict.startswith("better than clipscore on ") and " of 1 sets" in card.verdict
    fig = drawn_figure(card, tmp_path, monkeypatch)
    title = fig._suptitle.get_text()
    lines = title.split("\n")
    # broken only after "metric vs baseline:" or after a comma, never inside "on 0 of 1 sets"
    assert all(line.endswith((":", ",")) for line in lines[:-1]), title
    assert " ".join(lines).replace(": ", ":\n", 1).split("\n")[1] == card.verdict
    assert any(f"on {n} of 1 sets" in line for line in lines for n in range(2))
    _assert_laid_out(fig)


def test_two_panel_figure_labels_do_not_overlap_and_read_in_percent(capsys, tmp_path, shared_ts2, monkeypatch):
    """TS2 and a preference set side by side: no label overlaps another, axes in %."""
    from scorers.report.card import Card

    pairs = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n2,q,u3,u4,b\n3,r,u5,u6,tie\n4,s,u2,u3,b\n"
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES, "--json")
    assert code == 0, err
    card = Card.from_dict(json.loads(out)["mine"])
    fig = drawn_figure(card, tmp_path, monkeypatch)
    assert [ax.get_xlabel() for ax in fig.axes] == ["rank (avg over SEGs) (%)",
                                                   "pairwise accuracy (ties calibrated) (%)"]
    mine = card.sets["toy"]["rows"][0]["statistic"]
    xs = [line.get_xdata()[0] for line in fig.axes[1].lines if len(line.get_xdata())]
    assert any(x == pytest.approx(100 * mine) for x in xs)
    _assert_laid_out(fig)


def test_demo_summary_shows_percent_and_the_figure_has_no_label_over_it(one_set_card):
    from scorers.demo.report_card_tab import card_summary_frame
    from scorers.report.card import Card

    _root, data = one_set_card
    row = card_summary_frame(Card.from_dict(data)).set_index("set").loc["ts2"]
    rank = data["sets"]["ts2"]["meta"]["rank"]["summary"]["avg"]
    assert row["value"] == f"{100 * rank:.1f} %" and row["headline"] == "rank (avg) (%)"
    assert row["paired difference"].endswith(" pp") and row["95% interval"].endswith(" pp")


def test_demo_card_figure_label_is_not_drawn_over_the_image(config):
    """gradio draws an Image's label on its top-left corner, over the start of the figure's title: the tab shows a
    caption above the image instead."""
    pytest.importorskip("gradio")
    from scorers.demo import build_app

    components = build_app(config).get_config_file()["components"]
    figure = next(c for c in components if c.get("props", {}).get("elem_id") == "card-figure")
    assert figure["props"]["show_label"] is False
    assert any(c.get("props", {}).get("elem_id") == "card-figure-label" for c in components)


def test_card_ratings_file_with_a_duplicated_header_is_an_error(capsys, tmp_path, shared_ts2):
    """Before: the set was listed as "not evaluated" and the card exited 0."""
    (tmp_path / "r.csv").write_text("item,system,image,prompt,human_1,mine,mine\n1,s,u1,p,3,0.5,0.4\n")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, _out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--ratings", f"myset={tmp_path / 'r.csv'}",
                              "--baseline", "none", "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out",
                              tmp_path / "o")
    line = one_line(err)
    assert code == 2 and "duplicate column name" in line and "'mine'" in line
    assert line.count(str(tmp_path / "r.csv")) == 1
