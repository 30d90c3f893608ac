"""A user's own SEGs on every path: build, score with a tiny CLIP (and a second score file keyed by the user's own
file names), then ``ts2 meta``, ``report``, ``card``, ``submit --verify``, ``leaderboard``, the ``ts2_meta``
evaluate module and ``seg push --dry-run``; the export unpacked and ``ts2 meta`` again. Every path gives the numbers
of the plain reference loops (``tests/helpers/reference_meta.py``: scipy per walk and per node pair, by TS2's levels
or along the built edges) to 1e-9, under both walk rules, and nothing is ranked against the published rows.

The set: three partitions; SEG 0 has two error sets of the same size (``1a``, ``1b``) that do not nest
(0 -> 1a -> 2a, 0 -> 1b -> 2b: the level rule also walks 0 -> 1a -> 2b, which no edge joins); images sit in
sub-folders under the user's own names (``ts2 seg build`` renames them).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.reference_meta import built_dir_reference
from tests.helpers.seg_files import write_images

METRICS = ("rank", "sep", "delta")
TOL = 1e-9  # float64 sums of a few dozen terms: far below; the same numbers by two independent codes
#: (seg_id, partition, [(errors, error_types, images), ...])
SEGS = (
    (0, "alpha", [("", "", 3), ("cat", "missing", 2), ("red", "attribute", 2), ("cat;hat", "missing;missing", 2),
                  ("red;mat", "attribute;missing", 2)]),
    (1, "beta", [("", "", 2), ("dog", "missing", 2), ("dog;ball", "missing;missing", 2)]),
    (2, "gamma", [("", "", 2), ("sun", "missing", 2), ("blue", "attribute", 2), ("sun;blue", "missing;attribute", 2)]),
)


def _annotations(work: Path) -> Path:
    rows = []
    for seg, partition, nodes in SEGS:
        for errors, types, n in nodes:
            for k in range(n):
                rows.append({"seg_id": seg, "prompt": f"prompt {seg}", "partition": partition, "errors": errors,
                             "error_types": types,
                             "file_name": f"set{seg}/{errors.replace(';', '-') or 'none'}/take {k}.png"})
    frame = pd.DataFrame(rows)
    write_images(work / "mine", frame["file_name"].tolist(), size=(16, 16))
    frame.to_csv(work / "annotations.csv", index=False)
    return work / "annotations.csv"


def _check(got: dict, expected: dict, where: str, *, per_seg: bool = True) -> None:
    """``got`` in ``ts2 meta --json``'s layout (fractions) against the reference, per partition (and per SEG)."""
    for metric in METRICS:
        assert set(got[metric]["summary"]) == set(expected[metric]["summary"]), (where, metric)
        for part, want in expected[metric]["summary"].items():
            assert got[metric]["summary"][part] == pytest.approx(want, abs=TOL), (where, metric, part)
        if per_seg:
            for seg, want in expected[metric]["per_seg"].items():
                assert got[metric]["per_seg"][str(seg)] == pytest.approx(want, abs=TOL), (where, metric, seg)


def test_own_segs_give_the_reference_numbers_on_every_path(tmp_path, capsys, monkeypatch):
    import evaluate

    from tests.helpers.tiny_embed_models import build_hf_clip

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    work = tmp_path
    out = work / "OUT"
    code, _, err = run_cli(capsys, "seg", "build", _annotations(work), "--images", work / "mine", "--out", out)
    assert code == 0, err
    metadata = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    assert sorted(set(metadata["partition"])) == ["alpha", "beta", "gamma"]

    # 1. score with a tiny CLIP; a second file keyed by the user's own file names (metadata's source_file)
    scores = work / "clip.csv"
    code, _, err = run_cli(capsys, "score", "clip_score", "--data-dir", out, "--model", build_hf_clip(work / "clip"),
                           "--out", scores, "--form", "cosine", "--num-workers", 0, "--no-progress")
    assert code == 0, err
    table = pd.read_csv(scores, dtype={"file_name": str})
    column = "clip_score"
    assert column in table.columns, list(table.columns)
    assert table[column].nunique() > len(table) // 2  # real, distinct scores
    source = dict(zip(metadata["file_name"], metadata["source_file"]))
    by_source = table.assign(file_name=table["file_name"].map(source))
    assert by_source["file_name"].str.startswith("set").all()
    by_source.to_csv(work / "by_source.csv", index=False)

    for walks in ("levels", "edges"):
        expected = built_dir_reference(out, scores, column, walks=walks)
        flags = ("--walks", walks)
        assert expected["rank"]["per_seg"][0] == expected["rank"]["per_seg"][0]  # defined

        # 2a. ts2 meta, on both keyings
        for keyed in (scores, work / "by_source.csv"):
            code, stdout, err = run_cli(capsys, "meta", keyed, "--metadata", out / "metadata.csv", "--json",
                                        "--n-bootstrap", 0, *flags)
            assert code == 0, err
            _check(json.loads(stdout)[column], expected, f"meta {keyed.name} {walks}")

        # 2b. ts2 report: full numbers in result.json; no published row beside them
        code, stdout, err = run_cli(capsys, "report", scores, "--metadata", out / "metadata.csv", "--out",
                                    work / f"report-{walks}", "--n-bootstrap", 0, "--offline", *flags)
        assert code == 0, err
        saved = json.loads((work / f"report-{walks}" / "result.json").read_text())
        _check(saved["results"]["meta"][column], expected, f"report {walks}")
        assert [row["column"] for row in saved["results"]["leaderboard"]] == [column]

        # 2c. ts2 card: no baseline from the release, no place among the published rows
        code, stdout, err = run_cli(capsys, "card", "--scores", f"mine={scores}", "--metadata",
                                    out / "metadata.csv", "--n-bootstrap", 0, "--offline", "--out",
                                    work / f"card-{walks}", "--json", *flags)
        assert code == 0, err
        card = json.loads(stdout)["mine"]
        _check(card["sets"]["ts2"]["meta"], expected, f"card {walks}", per_seg=False)
        assert " of 20" not in json.dumps(card) and " of 19" not in json.dumps(card)

        # 2d. ts2 submit and --verify
        folder = work / "board" / f"mine-{walks}"
        code, _, err = run_cli(capsys, "submit", scores, "--column", column, "--name", f"mine-{walks}", "--out",
                               folder, "--data-dir", out, "--n-bootstrap", 0, *flags)
        assert code == 0, err
        submitted = json.loads((folder / "result.json").read_text())["results"][column]
        _check(submitted, expected, f"submit {walks}")
        code, stdout, err = run_cli(capsys, "submit", "--verify", folder, "--data-dir", out)
        assert code == 0 and f"verified mine-{walks}" in stdout, err

        # 2e. the evaluate module, partitions and walks as inputs
        aligned = table.set_index("file_name").loc[metadata["file_name"], column]
        got = evaluate.load(str(Path(__file__).resolve().parents[2] / "evaluate_modules" / "ts2_meta")).compute(
            scores=aligned.tolist(), seg_ids=metadata["id"].astype(int).tolist(), nodes=metadata["rank"].tolist(),
            partitions=metadata["partition"].tolist(),
            **({"walks": "edges", "segs": str(out / "segs.json")} if walks == "edges" else {}))
        for metric in METRICS:
            assert got[metric] == pytest.approx(expected[metric]["summary"]["avg"], abs=TOL), (walks, metric)
            for part in ("alpha", "beta", "gamma"):
                assert got["partitions"][part][metric] == pytest.approx(expected[metric]["summary"][part], abs=TOL)

    # 2f. ts2 leaderboard: both submissions listed, each rule in its own group, no published row
    code, stdout, err = run_cli(capsys, "leaderboard", "--submissions", work / "board", "--metadata",
                                out / "metadata.csv", "--json")
    assert code == 0, err
    board = json.loads(stdout)
    rows = board["rows"]
    assert sorted(r["name"] for r in rows) == ["mine-edges", "mine-levels"] and board["rejected"] == []
    assert {r["source"] for r in rows} == {"community"}
    assert len({r["group"] for r in rows}) == 2 and all(r["#"] == 1 for r in rows)
    for row in rows:
        walks = row["name"].split("-")[1]
        expected = built_dir_reference(out, scores, column, walks=walks)
        for metric in METRICS:
            for part in ("avg", "alpha", "beta", "gamma"):
                # --json gives fractions: the verified numbers themselves, not a rounding of them
                assert row[f"{metric}_{part}"] == pytest.approx(expected[metric]["summary"][part], abs=TOL)

    # 3. push --dry-run keeps everything; the export unpacked gives the same numbers
    code, _, err = run_cli(capsys, "seg", "push", out, "--repo", "me/my-segs", "--dry-run")
    assert code == 0, err
    back = work / "back"
    code, _, err = run_cli(capsys, "dataset", "unpack", work / "OUT-hub", "--out", back, "--cache-dir",
                           work / "load")
    assert code == 0, err
    assert (back / "segs.json").read_bytes() == (out / "segs.json").read_bytes()
    for walks in ("levels", "edges"):
        expected = built_dir_reference(out, scores, column, walks=walks)
        for keyed in (scores, work / "by_source.csv"):
            code, stdout, err = run_cli(capsys, "meta", keyed, "--metadata", back / "metadata.csv", "--json",
                                        "--n-bootstrap", 0, "--walks", walks)
            assert code == 0, err
            _check(json.loads(stdout)[column], expected, f"unpacked meta {keyed.name} {walks}")
