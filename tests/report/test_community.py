"""The community leaderboard: ``scorers.report.community`` and ``ts2 leaderboard``.

Expected numbers come from outside the code under test: ``ts2 meta --json`` on the same keyed score file, run as its
own process, and the published rows from ``ts2 reproduce --json`` on the release. The listing logic (groups,
duplicates, rejected, a verifier that raises) is tested with a stand-in verifier of the agreed
``verify_submission`` signature; the real verifier (``scorers.ts2.submission.folder``) is used by the round-trip tests.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.errors import ParameterError
from scorers.report.community import (TABLE_COLUMNS, VALUE_COLUMNS, build_leaderboard, community_leaderboard,
                                      printable, read_submissions)
from scorers.ts2.submission.hub import fetch_submissions

ROOT = Path(__file__).resolve().parents[2]


def ts2(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    base = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "scorers.cli", *args], env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=300)
    if check:
        assert done.returncode == 0, done.stderr
    return done


@pytest.fixture(scope="module")
def scores(tmp_path_factory, shared_ts2) -> Path:
    """A keyed per-image score file of two made-up metrics over the release's 2,840 images."""
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    released = pd.read_csv(shared_ts2 / "released_scores.csv")
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"],
                          "noisy_clip": released["clipscore"].to_numpy() + rng.normal(0, 0.05, len(metadata)),
                          "noisy_align": released["alignscore"].to_numpy() + rng.normal(0, 0.05, len(metadata))})
    path = tmp_path_factory.mktemp("scores") / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def meta_numbers(scores: Path, column: str, data_dir: Path, *extra: str) -> dict[str, float]:
    """``{"rank_avg": %, ...}`` from ``ts2 meta --json`` (its own process)."""
    out = json.loads(ts2("meta", str(scores), "--column", column, "--data-dir", str(data_dir), "--n-bootstrap", "0",
                         "--json", *extra).stdout)[column]
    summary = {m: out[m]["summary"] for m in ("rank", "sep", "delta")}
    return {f"{m}_{p}": None if p not in summary[m] else 100.0 * summary[m][p] for m in summary
            for p in ("avg", "synth", "nat", "real")}


# ----------------------------------------------------------------------------- a stand-in verifier


def stand_in_verify(path, *, metadata=None, rescore=0, seed=0):
    """A verifier with the real one's result type: reads ``check.json`` (what the real verifier would conclude) and the ``ts2 meta --out`` result beside it;
    ``boom`` in the folder name raises, as a buggy verifier might."""
    path = Path(path)
    if "boom" in path.name:
        raise RuntimeError("verifier crashed\nsecond line")
    claim = json.loads((path / "check.json").read_text())
    result = json.loads((path / "result.json").read_text()) if (path / "result.json").is_file() else None
    from scorers.ts2.submission.folder import SubmissionCheck

    return SubmissionCheck(name=claim["name"], ok=claim["ok"], reason=claim.get("reason"), result=result,
                           metadata={"paper_url": "https://example.org/paper"}, variant=claim.get("variant"),
                           segs=claim.get("segs"), verified_by="0.1.0")


def stand_in_submission(root: Path, folder: str, *, name: str, ok: bool = True, reason: str | None = None,
                        result: Path | None = None, variant: str = "paper", segs: str = "0-163") -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "check.json").write_text(json.dumps({"name": name, "ok": ok, "reason": reason, "variant": variant,
                                                 "segs": segs}))
    if result is not None:
        (path / "result.json").write_bytes(result.read_bytes())
    return path


@pytest.fixture(scope="module")
def results(scores, shared_ts2, tmp_path_factory) -> dict[str, Path]:
    """``{"clip": path}``: the ``ts2 meta --out`` result of noisy_clip, for the stand-in verifier."""
    made = {"clip": tmp_path_factory.mktemp("results") / "clip.json"}
    ts2("meta", str(scores), "--column", "noisy_clip", "--data-dir", str(shared_ts2), "--n-bootstrap", "0",
        "--out", str(made["clip"]))
    return made


def edit(folder: Path, file: str, change, *, manifest: bool = True) -> None:
    """Change ``file`` of a submission (``change(text) -> text``), and its manifest sha256 too (``manifest``), so the
    check that follows the manifest's is the one that fails."""
    path = folder / file
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
    if manifest:
        listing = json.loads((folder / "manifest.json").read_text())
        listing["sha256"][file] = hashlib.sha256(path.read_bytes()).hexdigest()
        (folder / "manifest.json").write_text(json.dumps(listing))


def json_edit(change):
    def apply(text):
        payload = json.loads(text)
        change(payload)
        return json.dumps(payload)
    return apply


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory, scores, shared_ts2) -> Path:
    """Good and bad submissions side by side under ``submissions/`` (written by ``write_submission``, then
    damaged by hand)."""
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.submission.folder import write_submission

    dataset = tmp_path_factory.mktemp("dataset")
    root = dataset / "submissions"
    info = {"metric": "CLIP with noise", "paper_url": "https://example.org/paper", "code_url": None,
            "license": "MIT", "flops_per_image": None}

    def submit(folder, column, name, **options):
        return write_submission(scores, column=column, name=name, out=root / folder, info=info,
                                metadata=shared_ts2 / "metadata.csv",
                                options=MetaOptions(n_bootstrap=0, **options))

    submit("a-clip", "noisy_clip", "noisy-clip")
    submit("b-align", "noisy_align", "noisy-align")
    submit("c-official", "noisy_clip", "noisy-clip-official", variant="official")
    submit("d-segs", "noisy_clip", "noisy-clip-0-99", seg_subset="0-99")
    tampered = submit("e-tampered", "noisy_clip", "tampered")
    edit(tampered, "result.json", json_edit(lambda r: r["results"]["noisy_clip"]["rank"]["summary"]
                                            .__setitem__("avg", 0.9)))
    one_score = submit("f-one-score", "noisy_align", "one-score")
    edit(one_score, "scores.csv", lambda text: text.replace(",", ",9", 3).replace(",9", ",", 2))
    missing = submit("g-missing", "noisy_align", "missing")
    (missing / "metric.json").unlink()
    manifest = submit("h-manifest", "noisy_align", "manifest")
    edit(manifest, "manifest.json", json_edit(lambda m: m["sha256"].__setitem__("scores.csv", "0" * 64)),
         manifest=False)
    evil = submit("i-evil", "noisy_align", "evil")
    edit(evil, "metric.json", json_edit(lambda m: m.__setitem__("name", "../evil")))
    submit("j-dup", "noisy_align", "noisy-clip")  # the name of a-clip: the later one is rejected
    keys = submit("k-keys", "noisy_align", "keys")
    edit(keys, "metric.json", json_edit(lambda m: m.pop("license")))
    big = submit("l-big", "noisy_align", "big")
    with open(big / "scores.csv", "a", encoding="utf-8") as handle:
        handle.write("#" * (8 * 2**20))
    extra = submit("m-extra", "noisy_align", "extra")
    (extra / "notes.txt").write_text("hello")
    submit("n-published", "noisy_align", "clipscore")  # a published metric's name
    notes = submit("o-notes", "noisy_align", "notes")  # 3 MB of notes: over result.json's cap
    edit(notes, "result.json", json_edit(lambda r: r["results"]["noisy_align"].__setitem__("notes", ["n" * 3_000_000])))
    costly = submit("p-bootstrap", "noisy_align", "bootstrap")  # a verification asking for 20,000 resamples
    edit(costly, "result.json", json_edit(lambda r: r.__setitem__("n_bootstrap", 20_000)))
    (root / "stray.txt").write_text("not a submission")
    return dataset


#: folder -> the start of its reason (H4's wording names the field)
REJECTED = {
    "e-tampered": "results.noisy_clip.rank.summary.avg: claimed 0.9, recomputed 0.",
    "f-one-score": "inputs.scores.sha256: claimed ",
    "g-missing": "missing file: metric.json",
    "h-manifest": "sha256 mismatch: scores.csv: manifest 0000",
    "i-evil": "metric.json: name",  # then ='../evil' or '../evil': H4's wording of the name
    "j-dup": "duplicate name 'noisy-clip': submission a-clip has it already",
    "k-keys": "metric.json: missing key(s) license",
    "l-big": "scores.csv: ",
    "m-extra": "extra file: 'notes.txt'",
    "n-published": "duplicate name 'clipscore': the published metric clipscore has it already",
    "o-notes": "result.json: ",
    "p-bootstrap": "result.json: n_bootstrap is 20000; a submission may ask for at most 10000 bootstrap resamples",
    "stray.txt": "a file, not a submission folder",
}
#: the verified rows: name -> (column, ts2 meta's options)
VERIFIED = {"noisy-clip": ("noisy_clip", ()), "noisy-align": ("noisy_align", ()),
            "noisy-clip-official": ("noisy_clip", ("--variant", "official")),
            "noisy-clip-0-99": ("noisy_clip", ("--segs", "0-99"))}


def check_board(board, scores: Path, shared_ts2: Path, *, big_from_hub: bool = False) -> None:
    """The mixed folder's leaderboard: 19 published + 4 verified rows (ts2 meta's numbers), groups, rejected."""
    rows = {row["name"]: row for row in board.rows}
    assert [r["name"] for r in board.rows if r["source"] == "published"] == [
        r["name"] for r in board.rows[:21] if r["source"] == "published"]
    assert len([r for r in board.rows if r["source"] == "published"]) == 19
    assert {r["name"] for r in board.rows if r["source"] == "community"} == set(VERIFIED)
    for name, (column, extra) in VERIFIED.items():
        expected = meta_numbers(scores, column, shared_ts2, *extra)
        for key in VALUE_COLUMNS:
            assert rows[name][key] == (None if expected[key] is None else pytest.approx(expected[key], abs=1e-9)), \
                (name, key)
        assert rows[name]["verified_by"] == "ts2-evaluate 0.1.0"
        assert rows[name]["paper_url"] == "https://example.org/paper"
        assert (rows[name]["metric"], rows[name]["license"], rows[name]["flops_per_image"]) == (
            "CLIP with noise", "MIT", None)
    assert (rows["clipscore"]["metric"], rows["clipscore"]["paper_url"]) == ("clipscore", "")
    # groups: the other variant / SEG set apart, each ranked on its own
    assert rows["noisy-clip"]["group"] == rows["noisy-align"]["group"] == rows["clipscore"]["group"] == "default"
    assert rows["noisy-clip-official"]["group"] == "variant official, SEGs 0-163"
    assert rows["noisy-clip-0-99"]["group"] == "variant paper, SEGs 0-99"
    assert rows["noisy-clip-official"]["#"] == rows["noisy-clip-0-99"]["#"] == 1
    default = [r for r in board.rows if r["group"] == "default"]
    assert [r["#"] for r in default] == list(range(1, 22))
    ranks = [r["rank_avg"] for r in default]
    assert ranks == sorted(ranks, reverse=True)
    assert [r["group"] for r in board.rows[:21]] == ["default"] * 21  # the default group comes first
    # rejected, one line each, in folder order
    assert [r.folder for r in board.rejected] == list(REJECTED)
    for rejected in board.rejected:
        if big_from_hub and rejected.folder == "l-big":
            assert rejected.reason == ("scores.csv: 8503125 bytes on the Hub, over the cap of 8388608 (not "
                                       "downloaded)")
            continue
        if rejected.folder == "o-notes":  # refused by its size: locally before it is read, on the Hub from the list
            hub = " on the Hub" if big_from_hub else ""
            assert re.fullmatch(rf"result\.json: 30\d{{5}} bytes{hub}, over the cap of 2097152"
                                + (r" \(not downloaded\)" if big_from_hub else ""), rejected.reason), rejected
        assert rejected.reason.startswith(REJECTED[rejected.folder]), rejected
        if rejected.folder == "i-evil":
            assert "'../evil' has path characters" in rejected.reason
        assert "\n" not in rejected.reason


def test_several_bad_and_good_submissions_in_one_folder(mixed_folder, scores, shared_ts2, monkeypatch):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    check_board(community_leaderboard(mixed_folder), scores, shared_ts2)


def test_a_verifier_that_raises_stops_nothing(tmp_path, results):
    root = tmp_path / "subs"
    stand_in_submission(root, "a-boom", name="whatever")
    stand_in_submission(root, "b-good", name="good", result=results["clip"])
    rows, rejected = read_submissions(root, verify=stand_in_verify)
    assert [r["name"] for r in rows] == ["good"]
    assert [(r.folder, r.reason) for r in rejected] == [
        ("a-boom", "the verification failed: RuntimeError: verifier crashed")]


def test_published_rows_equal_ts2_reproduce(shared_ts2, tmp_path, monkeypatch):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    (tmp_path / "submissions").mkdir()
    board = community_leaderboard(tmp_path, verify=stand_in_verify)
    assert board.rejected == [] and len(board.rows) == 19
    reproduced = json.loads(ts2("reproduce", "--data-dir", str(shared_ts2), "--json").stdout)["rows"]
    expected = {(r["column"], f"{r['meta_metric']}_{r['partition']}"): r["ours"] for r in reproduced}
    for row in board.rows:
        for key in VALUE_COLUMNS:
            got = row[key]
            want = expected[(row["name"], key)]
            assert (got is None and want is None) or got == pytest.approx(100.0 * want, abs=1e-6), (row["name"], key)


def test_without_the_release_scores_the_community_rows_come_with_a_note(tmp_path, results, shared_ts2, monkeypatch):
    only_metadata = tmp_path / "release"
    only_metadata.mkdir()
    (only_metadata / "metadata.csv").write_bytes((shared_ts2 / "metadata.csv").read_bytes())
    monkeypatch.setenv("TS2_DATA", str(only_metadata))
    stand_in_submission(tmp_path / "subs", "a", name="good", result=results["clip"])
    board = community_leaderboard(tmp_path / "subs", verify=stand_in_verify)
    assert [r["name"] for r in board.rows] == ["good"] and board.rejected == []
    assert len(board.notes) == 1
    assert board.notes[0].startswith("the published rows are not listed: the TS2 release tables are not available (")
    assert "released_scores.csv" in board.notes[0]
    assert board.text().splitlines()[-1] == "note: " + board.notes[0]


def test_a_later_duplicate_is_rejected_even_when_the_first_is_rejected(tmp_path, results):
    root = tmp_path / "subs"
    stand_in_submission(root, "a", name="m", ok=False, reason="metadata.json: key licence absent")
    stand_in_submission(root, "b", name="m", result=results["clip"])
    rows, rejected = read_submissions(root, verify=stand_in_verify)
    assert rows == []
    assert [(r.folder, r.reason) for r in rejected] == [
        ("a", "metadata.json: key licence absent"), ("b", "duplicate name 'm': submission a has it already")]


def test_names_are_printed_without_control_characters(tmp_path, results):
    root = tmp_path / "subs"
    stand_in_submission(root, "evil\x1b[2J", name="evil\x1b[2Jname\nline", ok=False, reason="name: bad\ncharacters")
    rows, rejected = read_submissions(root, verify=stand_in_verify)
    assert rejected[0].folder == "evil\\x1b[2J"
    assert rejected[0].name == "evil\\x1b[2Jname\\nline"
    assert rejected[0].reason == "name: bad characters"
    assert printable("x" * 100, limit=10) == "x" * 9 + "…"


def test_sources_and_errors(tmp_path):
    with pytest.raises(ParameterError, match=r"no such folder, and not a Hub dataset id") as error:
        fetch_submissions(str(tmp_path / "missing" / "deeper" / "x"))
    assert error.value.parameters == ("submissions",)
    file = tmp_path / "file.txt"
    file.write_text("x")
    with pytest.raises(ParameterError, match="a file, not a folder"):
        fetch_submissions(file)
    one = tmp_path / "one"
    one.mkdir()
    assert fetch_submissions(one).folder == one
    (one / "submissions").mkdir()
    assert fetch_submissions(one).folder == one / "submissions"
    with pytest.raises(ParameterError, match="sort_by must be one of rank, sep, delta"):
        build_leaderboard([], sort_by="flops")


def test_a_hub_dataset_read_at_a_pinned_revision(mixed_folder, scores, shared_ts2, tmp_path, monkeypatch):
    """The same listing from a loopback Hub serving the folder as a dataset, read at its commit sha; the file over
    the size cap is refused from the tree listing, never downloaded; a second read of the same commit, offline, is
    served from the cache; an unknown revision or dataset is one line naming it."""
    from huggingface_hub import constants

    from tests.helpers.loopback_hub import LoopbackHub, point_hub_at

    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    local = community_leaderboard(mixed_folder)
    with LoopbackHub("ts2-community/submissions", files=mixed_folder) as hub:
        commit = hub.refs["main"]
        point_hub_at(monkeypatch, hub.base)
        cache = tmp_path / "hf-cache"
        board = community_leaderboard(f"ts2-community/submissions@{commit}", cache_dir=cache)
        check_board(board, scores, shared_ts2, big_from_hub=True)
        assert board.rows == local.rows
        assert board.source == f"Hub dataset ts2-community/submissions@{commit}"
        resolved = [p for _, p in hub.requests if "/resolve/" in p]
        assert resolved and not [p for p in resolved if "l-big" in p or "o-notes" in p]  # refused, never downloaded
        assert [p for p in resolved if "a-clip/scores.csv" in p]
        # the Space's setting names the same dataset: its tab lists the same community rows and rejections
        from scorers.demo.config import AppConfig
        from scorers.demo.leaderboard_tab import community_board

        space = AppConfig.from_env({"TS2_SUBMISSIONS": f"ts2-community/submissions@{commit}",
                                    "TS2_METADATA": str(shared_ts2 / "metadata.csv")})
        tab = community_board(space, None)
        assert tab.problem is None
        def numbers(rows):
            return {r["name"]: [r[k] for k in VALUE_COLUMNS] for r in rows if r["source"] == "community"}

        assert numbers(tab.board.rows) == numbers(local.rows) and len(numbers(local.rows)) == len(VERIFIED)
        assert [(r.folder, r.reason) for r in tab.board.rejected] == [(r.folder, r.reason) for r in board.rejected]
        # a branch: resolved to its commit, named in the source
        by_branch = community_leaderboard("ts2-community/submissions@main", cache_dir=cache)
        assert by_branch.rows == local.rows
        assert by_branch.source == f"Hub dataset ts2-community/submissions@main (commit {commit})"
        with pytest.raises(ParameterError) as error:
            community_leaderboard("ts2-community/submissions@v9", cache_dir=cache)
        assert str(error.value) == ("submissions='ts2-community/submissions@v9': no such local folder, and the Hub "
                                    "dataset could not be read (revision v9 not found in ts2-community/submissions)")
        with pytest.raises(ParameterError) as error:
            community_leaderboard(f"someone/else@{commit}", cache_dir=cache)
        assert str(error.value).endswith("(no dataset someone/else (a private or gated one needs HF_TOKEN))")
        # the same commit again, offline: from the cache, no request
        before = len(hub.requests)
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        again = community_leaderboard(f"ts2-community/submissions@{commit}", cache_dir=cache)
        assert again.rows == local.rows and len(hub.requests) == before


# ----------------------------------------------------------------------------- ts2 leaderboard


def run_cli(capsys, *args: str) -> str:
    from scorers.cli import main

    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def check_same_table(text: str, payload: dict, csv_path: Path) -> None:
    """The CSV's rows (%) are the JSON's (fractions x 100), and the text shows each row rounded to 0.1, group by
    group; the rejected lines are the JSON's."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == list(TABLE_COLUMNS)
        table = list(reader)
    assert len(table) == len(payload["rows"])
    for got, want in zip(table, payload["rows"]):
        for column in TABLE_COLUMNS:
            if column in VALUE_COLUMNS:
                assert (got[column] == "" and want[column] is None) or \
                    float(got[column]) == pytest.approx(100.0 * want[column], rel=1e-12, abs=1e-12)
            else:
                assert got[column] == str(want[column] if want[column] is not None else "")
    lines = text.splitlines()
    for want in payload["rows"]:
        shown = [f"{want['#']}", want["name"], want["source"], want["verified_by"]]
        shown += [f"{100.0 * want[k]:.1f}" for k in ("rank_avg", "sep_avg", "delta_avg")]
        assert any(line.split() == " ".join(shown).split() for line in lines), shown
    for group in {r["group"] for r in payload["rows"]}:
        assert any(line.startswith(f"== {group}") for line in lines)
    for rejected in payload["rejected"]:
        assert f"  {rejected['folder']}: {rejected['reason']}" in lines


def test_cli_text_json_and_csv_give_the_same_table(mixed_folder, shared_ts2, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    out_csv = tmp_path / "board.csv"
    text = run_cli(capsys, "leaderboard", "--submissions", str(mixed_folder), "--csv", str(out_csv))
    payload = json.loads(run_cli(capsys, "leaderboard", "--submissions", str(mixed_folder), "--json"))
    assert payload["unit"] == "fraction" and len(payload["rows"]) == 23 and len(payload["rejected"]) == len(REJECTED)
    check_same_table(text, payload, out_csv)
    assert "== variant official, SEGs 0-163 (not ranked with the default) ==" in text.splitlines()


def test_cli_sort_by_and_no_published(mixed_folder, shared_ts2, monkeypatch, capsys):
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    payload = json.loads(run_cli(capsys, "leaderboard", "--submissions", str(mixed_folder), "--no-published",
                                 "--sort-by", "sep", "--json"))
    assert payload["sort_by"] == "sep"
    assert {row["name"] for row in payload["rows"]} == set(VERIFIED)
    default = [row for row in payload["rows"] if row["group"] == "default"]
    assert [row["name"] for row in default] == [row["name"] for row in sorted(default, key=lambda r: -r["sep_avg"])]
    assert [row["#"] for row in default] == [1, 2]
    # without the published rows, a published metric's name is still reserved
    assert [r["folder"] for r in payload["rejected"]] == list(REJECTED)


def test_cli_unknown_source_is_one_line(tmp_path):
    done = ts2("leaderboard", "--submissions", str(tmp_path / "nope" / "x" / "y"), check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"ts2 leaderboard: error: --submissions {tmp_path / 'nope' / 'x' / 'y'}: no such folder, and not a Hub "
        "dataset id OWNER/NAME[@REVISION]"]


def test_cli_mistyped_local_folder_says_so_before_the_hub(tmp_path, shared_ts2, monkeypatch, capsys):
    """``lb/boardd`` beside ``lb/board`` reads like OWNER/NAME: the error says first that no such folder exists."""
    from huggingface_hub import constants

    from scorers.cli import main

    (tmp_path / "lb" / "board").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)  # no request: what the Hub answered is the offline cache
    assert main(["leaderboard", "--submissions", "lb/boardd", "--metadata", str(shared_ts2 / "metadata.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ts2 leaderboard: error: --submissions lb/boardd: no such local folder, and the Hub "
                          "dataset could not be read ("), err
    assert len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- the round trip


def test_round_trip_submit_verify_push_then_list(scores, shared_ts2, tmp_path):
    """``ts2 submit`` on a keyed score file -> ``ts2 submit --verify`` accepts it -> ``ts2 submit DIR --push`` opens
    a pull request on the loopback Hub -> ``ts2 leaderboard --submissions REPO@refs/pr/1 --json`` lists it verified,
    with the numbers of ``ts2 meta`` on the same scores (each command its own process, HF_ENDPOINT at the loopback
    Hub); the base branch, not yet merged, lists no community row."""
    from tests.helpers.loopback_hub import LoopbackHub

    repo = "ts2-community/leaderboard"
    folder = tmp_path / "round-trip"
    env = {"HF_HOME": str(tmp_path / "hf"), "TS2_DATA": str(shared_ts2)}
    ts2("submit", str(scores), "--column", "noisy_clip", "--name", "round-trip", "--out", str(folder),
        "--paper-url", "https://example.org/p", "--license", "MIT", "--n-bootstrap", "0", env=env)
    verified = ts2("submit", "--verify", str(folder), env=env)
    assert "verified round-trip" in verified.stdout
    with LoopbackHub(repo, files={"README.md": b"# TS2 community leaderboard\n"}, token="hf_loopback") as hub:
        env.update(HF_ENDPOINT=hub.base, HF_HUB_OFFLINE="0", HF_TOKEN="hf_loopback")
        pushed = ts2("submit", str(folder), "--push", "--repo", repo, env=env)
        assert f"ts2 leaderboard --submissions {repo}@refs/pr/1" in pushed.stdout
        assert [p["num"] for p in hub.pull_requests] == [1]
        listed = json.loads(ts2("leaderboard", "--submissions", f"{repo}@refs/pr/1", "--json", env=env).stdout)
        before = json.loads(ts2("leaderboard", "--submissions", f"{repo}@main", "--json", env=env).stdout)
        pr_commit = hub.refs["refs/pr/1"]
    expected = meta_numbers(scores, "noisy_clip", shared_ts2)
    community = [row for row in listed["rows"] if row["source"] == "community"]
    assert len(community) == 1 and listed["rejected"] == []
    row = community[0]
    assert (row["name"], row["group"], row["verified_by"]) == ("round-trip", "default", "ts2-evaluate 0.1.0")
    assert row["paper_url"] == "https://example.org/p"
    for key in VALUE_COLUMNS:
        assert 100.0 * row[key] == pytest.approx(expected[key], abs=1e-9), key
    assert listed["source"] == f"Hub dataset {repo}@refs/pr/1 (commit {pr_commit})"
    assert [r for r in before["rows"] if r["source"] == "community"] == [] and before["rejected"] == []
    assert len(before["rows"]) == 19


# ----------------------------------------------------------------------------- the demo's settings


def test_the_demo_reads_its_submissions_source(mixed_folder, shared_ts2, tmp_path):
    """``TS2_SUBMISSIONS`` (a Space variable) sets ``AppConfig.submissions``; the tab's board is the library's, with
    the published rows the tab computed; a source that cannot be read is one line naming the setting."""
    from scorers.demo.config import AppConfig
    from scorers.demo.leaderboard_tab import community_board, community_view, published_reproduction, rejected_view
    from scorers.demo.sources import load_tables

    assert AppConfig.from_env({}).submissions is None
    assert AppConfig.from_env({"TS2_SUBMISSIONS": " owner/name@abc "}).submissions == "owner/name@abc"
    config = AppConfig.resolve(metadata=shared_ts2 / "metadata.csv", scores_csv=shared_ts2 / "released_scores.csv",
                               submissions=str(mixed_folder))
    assert "- community submissions: `" + str(mixed_folder) + "`" in config.describe()
    assert community_board(config.with_(submissions=None), None).configured is False
    published = published_reproduction(load_tables(config), config)
    community = community_board(config, published)
    assert community.problem is None
    view = community_view(community.board)
    assert set(view["submission"]) == set(VERIFIED)  # the verified submissions alone: the published rows are above
    assert list(rejected_view(community.board)["submission"]) == list(REJECTED)
    missing = community_board(config.with_(submissions=str(tmp_path / "no" / "such" / "x")), published)
    assert missing.board is None
    assert missing.problem == (f"submissions source {tmp_path / 'no' / 'such' / 'x'}: no such folder, and not a "
                               "Hub dataset id OWNER/NAME[@REVISION]")


def test_ts2_demo_refuses_a_bad_submissions_source_before_starting(tmp_path):
    from tests.helpers.environment import free_port

    missing = tmp_path / "no" / "such" / "folder"
    done = ts2("demo", "--submissions", str(missing), "--port", str(free_port()), check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"ts2 demo: error: --submissions {missing}: no such folder, and not a Hub dataset id OWNER/NAME[@REVISION]"]


# ----------------------------------------------------------------------------- hostile submissions

#: the group of the incomplete rows (``scorers.report.community.INCOMPLETE_GROUP``)
INCOMPLETE_GROUP = "incomplete (not ranked)"


def worst_ordered(scores: np.ndarray, seg_ids: np.ndarray, nodes: np.ndarray, fraction: float) -> np.ndarray:
    """Positions of the ``fraction`` of images a metric orders worst: most pairs of its SEG that it puts in the
    wrong order (a worse node scored higher, or a better one lower): what an attacker blanks."""
    level = np.array([int("".join(ch for ch in str(n) if ch.isdigit())) for n in nodes])
    wrong = np.zeros(len(scores))
    for seg in np.unique(seg_ids):
        at = np.flatnonzero(seg_ids == seg)
        lv, sc = level[at][:, None], scores[at][:, None]
        wrong[at] = (((lv.T > lv) & (sc.T > sc)) | ((lv.T < lv) & (sc.T < sc))).sum(axis=1)
    return np.argsort(-wrong, kind="stable")[:int(round(fraction * len(scores)))]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, scores, shared_ts2) -> dict:
    """Submissions an attacker would make: CLIPScore with the 5% of its cells it orders worst blanked, CLIPScore
    with 25 SEGs blanked, CLIPScore itself under a new name, two names that are one name, one score file under two
    names, and formula text in metric.json."""
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.submission.folder import write_submission

    metadata = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    seg_ids = metadata["id"].astype(int).to_numpy()
    clip = released["clipscore"].astype(float).to_numpy()
    picked = released["clipscore"].copy()
    blanked = worst_ordered(clip, seg_ids, metadata["rank"].to_numpy(), 0.05)
    picked.iloc[blanked] = ""
    segs25 = released["clipscore"].where(seg_ids >= 25, "")
    base = tmp_path_factory.mktemp("hostile")
    table = pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "picked": picked,
                          "segs25": segs25, "copy": released["clipscore"]})
    table.to_csv(base / "scores.csv", index=False)
    root = base / "dataset" / "submissions"

    def submit(folder, source, column, name, **info):
        write_submission(source, column=column, name=name, out=root / folder, metadata=shared_ts2 / "metadata.csv",
                         info=info, options=MetaOptions(n_bootstrap=0))

    submit("a-picked", base / "scores.csv", "picked", "clip-picked")
    submit("b-segs25", base / "scores.csv", "segs25", "clip-25")
    submit("c-copy", base / "scores.csv", "copy", "my-clip")
    submit("d-ref", scores, "noisy_clip", "clip-ref")
    submit("e-ref", scores, "noisy_align", "clip_ref")
    submit("f-same", scores, "noisy_clip", "another-name")
    submit("g-formula", scores, "noisy_align", "formula", metric='=HYPERLINK("http://evil.example","x")',
           license="=cmd|' /C calc'!A0", code_url="https://example.org/-x")
    in_set = seg_ids <= 163
    return {"folder": base / "dataset", "cells_total": int(in_set.sum()),
            "picked_scored": int(in_set.sum()) - int(in_set[blanked].sum()),
            "segs25_scored": int((in_set & (seg_ids >= 25)).sum())}


def test_incomplete_submissions_are_listed_apart_with_their_coverage(hostile, shared_ts2, monkeypatch, capsys):
    """Blanking the cells CLIPScore orders worst raises its numbers (above CLIPScore's own), and today it was
    ranked in the default group: it is listed apart, unranked, with its coverage, in the text, JSON, CSV and the
    demo's table; so is a copy with 25 SEGs blank. Every ranked row is complete."""
    from scorers.demo.leaderboard_tab import community_view

    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    board = community_leaderboard(hostile["folder"])
    rows = {row["name"]: row for row in board.rows}
    total = hostile["cells_total"]
    picked, segs25 = rows["clip-picked"], rows["clip-25"]
    assert picked["rank_avg"] > rows["clipscore"]["rank_avg"]  # the attack works on the numbers
    assert (picked["group"], picked["#"]) == (INCOMPLETE_GROUP, None)
    assert (picked["cells_scored"], picked["cells_total"], picked["segs_used"], picked["segs_total"]) == (
        hostile["picked_scored"], total, 164, 164)
    assert picked["coverage"] == f"{hostile['picked_scored']}/{total} cells scored, 164/164 SEGs used"
    assert (segs25["group"], segs25["#"], segs25["segs_used"], segs25["cells_scored"]) == (
        INCOMPLETE_GROUP, None, 139, hostile["segs25_scored"])
    ranked = [row for row in board.rows if row["group"] != INCOMPLETE_GROUP]
    assert ranked and all(r["cells_scored"] == r["cells_total"] == total for r in ranked if r["segs"] == "0-163")
    assert [r["group"] for r in board.rows][-2:] == [INCOMPLETE_GROUP] * 2  # listed last
    # the text, JSON and CSV
    out_csv = hostile["folder"].parent / "board.csv"
    text = run_cli(capsys, "leaderboard", "--submissions", str(hostile["folder"]), "--csv", str(out_csv))
    lines = text.splitlines()
    block = lines[lines.index(f"== {INCOMPLETE_GROUP} =="):]
    assert any(line.split()[:2] == ["-", "clip-picked"] and line.endswith(picked["coverage"]) for line in block)
    payload = json.loads(run_cli(capsys, "leaderboard", "--submissions", str(hostile["folder"]), "--json"))
    listed = {row["name"]: row for row in payload["rows"]}
    assert (listed["clip-picked"]["group"], listed["clip-picked"]["#"], listed["clip-picked"]["cells_scored"]) == (
        INCOMPLETE_GROUP, None, hostile["picked_scored"])
    with open(out_csv, newline="", encoding="utf-8") as handle:
        in_csv = {row["name"]: row for row in csv.DictReader(handle)}
    assert (in_csv["clip-25"]["group"], in_csv["clip-25"]["#"], in_csv["clip-25"]["segs_used"]) == (
        INCOMPLETE_GROUP, "", "139")
    # the demo's table
    view = community_view(board).set_index("submission")
    assert (view.loc["clip-picked", "group"], view.loc["clip-picked", "#"]) == (INCOMPLETE_GROUP, "-")
    assert view.loc["clip-picked", "coverage"] == picked["coverage"]


def test_the_published_rows_state_their_coverage(hostile, shared_ts2, monkeypatch, capsys):
    """Every published row states its coverage: the release scores every image of SEGs 0-163, and LLMScore's
    overall score has 6 cells with a stray quote (``"3``), read once it is stripped: stated."""
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    quoted = released.loc[released["id"].astype(int) <= 163, "llmscore_over"].str.contains('"').sum()
    assert quoted == 6
    board = community_leaderboard(hostile["folder"])
    published = {row["name"]: row for row in board.rows if row["source"] == "published"}
    total = hostile["cells_total"]
    assert len(published) == 19
    assert all((r["cells_scored"], r["cells_total"], r["segs_used"], r["group"]) == (total, total, 164, "default")
               for r in published.values())
    assert published["llmscore_over"]["coverage"] == (f"{total}/{total} cells scored, 164/164 SEGs used, 6 read "
                                                      "after stripping stray quotes")
    assert published["clipscore"]["coverage"] == f"{total}/{total} cells scored, 164/164 SEGs used"
    assert f"coverage of llmscore_over: {published['llmscore_over']['coverage']}" in board.text().splitlines()


def test_copies_and_names_that_are_one_name_are_rejected(hostile, shared_ts2, monkeypatch):
    """CLIPScore's scores under a new name are a duplicate of the published metric; the same scores as an earlier
    submission are a duplicate of it; ``clip_ref`` is ``clip-ref``."""
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    board = community_leaderboard(hostile["folder"])
    reasons = {r.folder: r.reason for r in board.rejected}
    assert reasons == {
        "c-copy": "duplicate of the published metric clipscore: the same scores under another name ('my-clip')",
        "e-ref": "duplicate name 'clip_ref': submission d-ref has it already",
        "f-same": "duplicate of submission d-ref: the same scores under another name ('another-name')"}
    assert {r["name"] for r in board.rows if r["source"] == "community"} == {"clip-picked", "clip-25", "clip-ref",
                                                                           "formula"}


def test_the_csv_neutralises_formulas_from_submissions(hostile, shared_ts2, monkeypatch, capsys):
    """``metric.json`` text starting with ``=`` is written with a leading quote (OWASP's rule), the numbers stay
    numbers; the text and JSON show it as given."""
    monkeypatch.setenv("TS2_DATA", str(shared_ts2))
    out_csv = hostile["folder"].parent / "formula.csv"
    run_cli(capsys, "leaderboard", "--submissions", str(hostile["folder"]), "--csv", str(out_csv))
    with open(out_csv, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    row = next(r for r in rows if r["name"] == "formula")
    assert row["metric"] == """'=HYPERLINK("http://evil.example","x")"""
    assert row["license"] == "'=cmd|' /C calc'!A0"
    assert row["code_url"] == "https://example.org/-x"
    bad = [(r["name"], k, v) for r in rows for k, v in r.items() if v[:1] in ("=", "+", "-", "@", "\t", "\r")
           and not re.fullmatch(r"-?\d+(\.\d+)?(e-?\d+)?", v)]
    assert bad == []
    for r in rows:
        for key in VALUE_COLUMNS:
            assert r[key] == "" or isinstance(float(r[key]), float)
    payload = json.loads(run_cli(capsys, "leaderboard", "--submissions", str(hostile["folder"]), "--json"))
    assert next(r for r in payload["rows"] if r["name"] == "formula")["license"] == "=cmd|' /C calc'!A0"
