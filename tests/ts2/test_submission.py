"""``ts2 submit``: write a submission folder, ``--verify`` it (every number recomputed, every
sha256 checked), ``--rescore`` it with tiny models, ``--push`` it as a pull request to a loopback Hub
(``tests/helpers/loopback_hub.py``) and read the pull request back with ``snapshot_download``.

The scores are the release's ``clipscore`` column keyed by the release metadata (``shared_ts2``); tampered folders are
re-signed by the test (a manifest of sha256 computed here with hashlib), so each check is reached on its own.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from scorers.cli import main
from scorers.errors import ParameterError
from scorers.ts2.options import MetaOptions
from scorers.ts2.submission.folder import (MAX_SCORES_BYTES, METRIC_KEYS, SUBMISSION_FILES, check_name,
                                           verify_submission, write_submission)
from tests.helpers.loopback_hub import LoopbackHub

COLUMN = "clipscore"
#: a few SEGs of each partition: few numbers under results, so every one of them can be tampered with
TAMPER_SEGS = [0, 1, 2, 3, 120, 121, 150, 151]
TOKEN = "hf_loopbackSECRET0123456789"


# --- fixtures ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(shared_ts2, tmp_path_factory) -> Path:
    """The release's clipscore and llmscore_ec columns keyed by seg_id, file_name (rows of metadata.csv, in order)."""
    metadata = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    assert len(metadata) == len(released)
    path = tmp_path_factory.mktemp("keyed") / "scores.csv"
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], COLUMN: released[COLUMN],
                  "llmscore_ec": released["llmscore_ec"]}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def small_submission(keyed, shared_ts2, tmp_path_factory) -> Path:
    """A submission on TAMPER_SEGS with 20 bootstrap resamples (intervals are numbers too)."""
    out = tmp_path_factory.mktemp("small") / "clip-small"
    return write_submission(keyed, column=COLUMN, name="clip-small", out=out, metadata=shared_ts2 / "metadata.csv",
                            info={"metric": "CLIPScore", "license": "MIT"},
                            options=MetaOptions(seg_subset=TAMPER_SEGS, n_bootstrap=20, seed=3))


@pytest.fixture
def copy(small_submission, tmp_path) -> Path:
    return Path(shutil.copytree(small_submission, tmp_path / "clip-small"))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resign(folder: Path) -> None:
    """Write the manifest a careful tamperer would: the sha256 of every file as it is now."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["sha256"] = {f: _sha(folder / f) for f in SUBMISSION_FILES if f != "manifest.json"}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def edit_json(folder: Path, name: str, change) -> None:
    data = json.loads((folder / name).read_text())
    change(data)
    (folder / name).write_text(json.dumps(data, indent=1))


def verify(folder: Path, shared_ts2: Path, **kwargs):
    return verify_submission(folder, metadata=shared_ts2 / "metadata.csv", **kwargs)


def number_paths(value, where: tuple = ()) -> list[tuple]:
    """Every number (int, float or null standing for NaN) under ``value``, as a key path."""
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in number_paths(v, where + (k,))]
    if isinstance(value, list):
        return [p for k, v in enumerate(value) for p in number_paths(v, where + (k,))]
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return [where]
    return []


def field_name(path: tuple) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else f".{key}"
    return text[1:]


# --- the round trip ----------------------------------------------------------------------------------------------


def test_round_trip_submit_verify_push_and_read_the_pull_request_back(keyed, shared_ts2, tmp_path, capsys,
                                                                      monkeypatch, caplog):
    import logging

    from huggingface_hub import constants, snapshot_download

    caplog.set_level(logging.DEBUG)  # huggingface_hub's request log included: the token is in no record

    out = tmp_path / "clip-test"
    argv = [str(keyed), "--column", COLUMN, "--data-dir", str(shared_ts2), "--n-bootstrap", "50", "--seed", "7"]
    assert main(["submit", *argv, "--name", "clip-test", "--out", str(out), "--metric", "CLIPScore",
                 "--paper-url", "https://arxiv.org/abs/2104.08718", "--license", "MIT",
                 "--flops-per-image", "4.4e9"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == sorted(SUBMISSION_FILES)
    # the numbers are those of `ts2 meta --json` on the same scores and options
    assert main(["meta", *argv, "--json"]) == 0
    meta_json = json.loads(capsys.readouterr().out)
    result = json.loads((out / "result.json").read_text())
    for key in ("rank", "sep", "delta", "segs", "variant", "higher_is_better", "score_std"):
        assert result["results"][COLUMN][key] == meta_json[COLUMN][key], key
    assert (result["seed"], result["n_bootstrap"], result["variant"]) == (7, 50, "paper")
    assert result["inputs"]["scores"]["sha256"] == _sha(out / "scores.csv")
    assert result["inputs"]["metadata"]["sha256"] == _sha(shared_ts2 / "metadata.csv")
    described = json.loads((out / "metric.json").read_text())
    assert (described["name"], described["metric"], described["license"], described["flops_per_image"],
            described["scorer"]) == ("clip-test", "CLIPScore", "MIT", 4.4e9, None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sha256"] == {f: _sha(out / f) for f in ("scores.csv", "result.json", "metric.json")}
    scores = pd.read_csv(out / "scores.csv", dtype=str, keep_default_na=False)
    assert list(scores.columns) == ["seg_id", "file_name", COLUMN] and len(scores) == 2840

    assert main(["submit", "--verify", str(out), "--data-dir", str(shared_ts2)]) == 0
    shown = capsys.readouterr().out
    assert "verified clip-test" in shown and "SEGs 0-163" in shown and "68.2" in shown

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    with LoopbackHub("ts2-bench/leaderboard", files={"README.md": b"# TS2 community leaderboard\n"},
                     token=TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        assert main(["submit", str(out), "--push", "--repo", "ts2-bench/leaderboard", "--data-dir",
                     str(shared_ts2)]) == 0
        printed = capsys.readouterr()
        assert f"{hub.base}/datasets/ts2-bench/leaderboard/discussions/1" in printed.out
        assert "ts2-bench/leaderboard@refs/pr/1" in printed.out
        assert TOKEN not in printed.out + printed.err
        assert hub.authorizations and set(hub.authorizations) == {f"Bearer {TOKEN}"}  # the client sent it
        # the pull request holds the four files, byte for byte, under submissions/NAME/; main is unchanged
        (pr,) = hub.pull_requests
        assert pr["title"] == "Submission clip-test"
        assert pr["files"] == {f"submissions/clip-test/{f}": (out / f).read_bytes() for f in SUBMISSION_FILES}
        assert set(hub.files_at("main")) == {"README.md"}
        # ... and reads back through snapshot_download at the PR's revision, where it verifies
        local = Path(snapshot_download("ts2-bench/leaderboard", repo_type="dataset", revision="refs/pr/1",
                                       cache_dir=tmp_path / "hub-cache", endpoint=hub.base))
    check = verify(local / "submissions" / "clip-test", shared_ts2)
    assert check.ok, check.reason
    assert check.name == "clip-test" and check.segs == "0-163" and check.variant == "paper"
    assert check.result["results"][COLUMN]["rank"]["summary"] == meta_json[COLUMN]["rank"]["summary"]
    for written in out.iterdir():
        assert TOKEN not in written.read_text()
    assert "api/datasets/ts2-bench/leaderboard/commit" in caplog.text and TOKEN not in caplog.text


def test_verify_check_fields_for_the_listing(small_submission, shared_ts2):
    from scorers import __version__

    check = verify(small_submission, shared_ts2)
    assert (check.ok, check.reason, check.name, check.variant) == (True, None, "clip-small", "paper")
    assert check.segs == "0-3,120-121,150-151"
    assert check.verified_by == __version__
    assert check.metadata["metric"] == "CLIPScore" and check.result["n_bootstrap"] == 20


def test_the_submissions_result_is_a_ts2_meta_result_file(small_submission, capsys):
    assert main(["meta", "--from", str(small_submission / "result.json")]) == 0
    assert "clipscore" in capsys.readouterr().out


def test_lower_is_better_and_the_variant_are_kept_and_recomputed(keyed, shared_ts2, tmp_path):
    out = write_submission(keyed, column="llmscore_ec", name="llmscore-ec", out=tmp_path / "ec",
                           metadata=shared_ts2 / "metadata.csv",
                           options=MetaOptions(lower_is_better=["llmscore_ec"], variant="official"))
    result = json.loads((out / "result.json").read_text())
    assert result["results"]["llmscore_ec"]["higher_is_better"] is False and result["variant"] == "official"
    assert "--lower-is-better llmscore_ec" in result["command"]
    check = verify(out, shared_ts2)
    assert check.ok, check.reason
    assert check.variant == "official"


# --- tampering: each rejected, the field named ---------------------------------------------------------------------


def _tampered(value):
    if value is None:
        return 0.5
    if isinstance(value, int):
        return value + 1
    return value + 0.01


@pytest.mark.parametrize("group", ["rank", "sep", "delta", "top"])
def test_every_number_under_results_changed_is_rejected_naming_it(small_submission, shared_ts2, tmp_path, group):
    claimed = json.loads((small_submission / "result.json").read_text())["results"][COLUMN]
    paths = [p for p in number_paths(claimed) if (p[0] == group) or (group == "top" and len(p) == 1)]
    # summary (4 partitions), ci (4 x 2), n_used/n_skipped/n_no_pair, per_seg and counts (8 SEGs each);
    # top: n_segs, score_std
    assert len(paths) == (2 if group == "top" else 4 + 8 + 3 + 8 + 8)
    failures = []
    for k, path in enumerate(paths):
        folder = Path(shutil.copytree(small_submission, tmp_path / f"t{k}"))

        def change(data, path=path):
            node = data["results"][COLUMN]
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = _tampered(node[path[-1]])

        edit_json(folder, "result.json", change)
        resign(folder)
        check = verify(folder, shared_ts2)
        field = f"results.{COLUMN}.{field_name(path)}"
        if check.ok or not check.reason.startswith(f"{field}: claimed ") or "recomputed" not in check.reason:
            failures.append((field, check.reason))
        shutil.rmtree(folder)
    assert failures == []


def test_a_changed_number_without_a_new_manifest_is_a_sha256_mismatch(copy, shared_ts2):
    edit_json(copy, "result.json", lambda d: d["results"][COLUMN]["rank"]["summary"].update(avg=0.99))
    check = verify(copy, shared_ts2)
    assert not check.ok
    assert check.reason.startswith("sha256 mismatch: result.json: manifest ")


def test_an_edited_table_is_rejected_after_the_numbers(copy, shared_ts2):
    edit_json(copy, "result.json", lambda d: d.update(table=d["table"].replace("clipscore", "clipscorf", 1)))
    resign(copy)
    check = verify(copy, shared_ts2)
    assert not check.ok and "field 'table' does not match 'results'" in check.reason


def _change_one_score(folder: Path) -> tuple[str, str]:
    scores = pd.read_csv(folder / "scores.csv", dtype=str, keep_default_na=False)
    row = scores.index[scores["seg_id"] == "2"][3]
    scores.loc[row, COLUMN] = str(float(scores.loc[row, COLUMN]) + 0.3)
    scores.to_csv(folder / "scores.csv", index=False)
    return scores.loc[row, "seg_id"], scores.loc[row, "file_name"]


def test_one_score_changed_is_rejected_at_each_layer(copy, shared_ts2):
    _change_one_score(copy)
    assert verify(copy, shared_ts2).reason.startswith("sha256 mismatch: scores.csv: manifest ")
    resign(copy)  # the manifest re-signed: the result's own record of its input differs
    reason = verify(copy, shared_ts2).reason
    assert reason.startswith(f"inputs.scores.sha256: claimed {_sha(copy / 'result.json') and ''}")
    assert f"recomputed {_sha(copy / 'scores.csv')}" in reason
    edit_json(copy, "result.json", lambda d: d["inputs"]["scores"].update(sha256=_sha(copy / "scores.csv")))
    resign(copy)  # every sha256 re-signed: the numbers recomputed from the scores differ
    check = verify(copy, shared_ts2)
    assert not check.ok
    assert check.reason.startswith(f"results.{COLUMN}.") and ": claimed " in check.reason
    assert ", recomputed " in check.reason


@pytest.mark.parametrize("removed", SUBMISSION_FILES)
def test_one_file_removed_is_named(copy, shared_ts2, removed):
    (copy / removed).unlink()
    check = verify(copy, shared_ts2)
    assert (check.ok, check.reason) == (False, f"missing file: {removed}")


@pytest.mark.parametrize("extra", ["notes.txt", "sub/scores.csv", ".hidden"])
def test_an_extra_file_is_named(copy, shared_ts2, extra):
    (copy / extra).parent.mkdir(exist_ok=True)
    (copy / extra).write_text("x")
    check = verify(copy, shared_ts2)
    assert not check.ok and check.reason.startswith(f"extra file: {extra!r}")


def test_the_manifest_edited_is_rejected(copy, shared_ts2):
    edit_json(copy, "manifest.json", lambda d: d["sha256"].update({"metric.json": "0" * 64}))
    check = verify(copy, shared_ts2)
    assert check.reason == f"sha256 mismatch: metric.json: manifest {'0' * 64}, file {_sha(copy / 'metric.json')}"


@pytest.mark.parametrize("edit, reason", [
    (lambda d: d["sha256"].pop("scores.csv"), "manifest.json: sha256.scores.csv is missing"),
    (lambda d: d["sha256"].update({"notes.txt": "0" * 64}), "manifest.json: sha256.'notes.txt' names no file"),
    (lambda d: d.update(sha256=["scores.csv"]), "manifest.json: field 'sha256' must map each file to its sha256"),
])
def test_a_manifest_that_lists_other_files_is_rejected(copy, shared_ts2, edit, reason):
    edit_json(copy, "manifest.json", edit)
    assert verify(copy, shared_ts2).reason.startswith(reason)


def test_a_manifest_that_is_not_json_is_rejected(copy, shared_ts2):
    (copy / "manifest.json").write_text("{not json")
    assert verify(copy, shared_ts2).reason.startswith("manifest.json: not readable JSON")


def test_a_result_computed_on_other_metadata_is_rejected(copy, shared_ts2):
    edit_json(copy, "result.json", lambda d: d["inputs"]["metadata"].update(sha256="ab" * 32))
    resign(copy)
    reason = verify(copy, shared_ts2).reason
    release = _sha(shared_ts2 / "metadata.csv")
    assert reason.startswith(f"inputs.metadata.sha256: claimed {'ab' * 32}, recomputed {release}")


# --- names, size cap, metadata keys --------------------------------------------------------------------------------

BAD_NAMES = ["../evil", "a/b", "a\\b", "..", "tab\there", "nul\x00x", "esc\x1b[31m", "line\nbreak", "rtl\u202eabc",
             "", ".hidden", "two words", "naïve", "x" * 65]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_name_is_refused_before_anything_is_written(keyed, shared_ts2, tmp_path, name):
    with pytest.raises(ParameterError, match="name"):
        write_submission(keyed, column=COLUMN, name=name, out=tmp_path / "out", metadata=shared_ts2 / "metadata.csv")
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == []  # no staging folder left either


@pytest.mark.parametrize("name", ["../evil", "a/b", "esc\x1b[31m"])
def test_a_bad_name_in_metric_json_is_rejected(copy, shared_ts2, name):
    edit_json(copy, "metric.json", lambda d: d.update(name=name))
    resign(copy)
    check = verify(copy, shared_ts2)
    assert not check.ok and check.reason.startswith("metric.json: name=")
    assert "\x1b" not in check.reason and "\x1b" not in check.name


def test_the_cli_refuses_a_bad_name_in_one_line(keyed, shared_ts2, tmp_path, capsys):
    assert main(["submit", str(keyed), "--column", COLUMN, "--name", "../evil", "--out", str(tmp_path / "o"),
                 "--data-dir", str(shared_ts2)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--name '../evil' has path characters ('..', '/')" in err


def test_good_names_pass():
    for name in ("clip", "CLIP-ViT-B_16.v2", "a" * 64, "x.y"):
        assert check_name(name) == name


@pytest.mark.parametrize("key", METRIC_KEYS)
def test_a_key_absent_from_the_metadata_is_named(copy, shared_ts2, key):
    edit_json(copy, "metric.json", lambda d: d.pop(key))
    resign(copy)
    assert verify(copy, shared_ts2).reason == f"metric.json: missing key(s) {key}"


def test_scores_over_the_size_cap_are_refused_both_ways(copy, keyed, shared_ts2, tmp_path, monkeypatch):
    with open(copy / "scores.csv", "a") as handle:
        handle.write("# padding\n" * (MAX_SCORES_BYTES // 10 + 1))
    resign(copy)
    size = (copy / "scores.csv").stat().st_size
    assert verify(copy, shared_ts2).reason == f"scores.csv: {size} bytes, over the cap of {MAX_SCORES_BYTES}"
    import scorers.ts2.submission.folder as submission

    monkeypatch.setattr(submission, "MAX_SCORES_BYTES", 1000)
    with pytest.raises(ParameterError, match="scores.csv may take at most 1000"):
        write_submission(keyed, column=COLUMN, name="big", out=tmp_path / "big", metadata=shared_ts2 / "metadata.csv")
    assert not (tmp_path / "big").exists()


# --- the checks of ts2 meta, before anything is written ------------------------------------------------------------


def test_scores_without_keys_are_refused(shared_ts2, tmp_path):
    released = shared_ts2 / "released_scores.csv"
    with pytest.raises(ParameterError, match="keyed by seg_id,file_name"):
        write_submission(released, column=COLUMN, name="x", out=tmp_path / "x", metadata=shared_ts2 / "metadata.csv")
    assert not (tmp_path / "x").exists()


def test_the_checks_of_ts2_meta_run_before_anything_is_written(keyed, shared_ts2, tmp_path, capsys):
    scores = pd.read_csv(keyed, dtype=str, keep_default_na=False)
    scores.loc[5, COLUMN] = "high"
    bad = tmp_path / "bad.csv"
    scores.to_csv(bad, index=False)
    before = set(tmp_path.iterdir())
    assert main(["submit", str(bad), "--column", COLUMN, "--name", "bad", "--out", str(tmp_path / "bad"),
                 "--data-dir", str(shared_ts2)]) == 2
    err = capsys.readouterr().err
    assert "non-numeric" in err and "'high'" in err and err.count("\n") == 1
    assert set(tmp_path.iterdir()) == before
    assert main(["submit", str(keyed), "--column", "nope", "--name", "x", "--out", str(tmp_path / "x"),
                 "--data-dir", str(shared_ts2)]) == 2
    assert "--column 'nope' is not a column" in capsys.readouterr().err
    assert set(tmp_path.iterdir()) == before


def test_an_existing_folder_is_not_overwritten(small_submission, keyed, shared_ts2):
    before = {f: _sha(small_submission / f) for f in SUBMISSION_FILES}
    with pytest.raises(ParameterError, match="exists and is not an empty folder"):
        write_submission(keyed, column=COLUMN, name="x", out=small_submission, metadata=shared_ts2 / "metadata.csv")
    assert {f: _sha(small_submission / f) for f in SUBMISSION_FILES} == before


def test_the_cli_exits_2_naming_the_first_mismatch(copy, shared_ts2, capsys):
    edit_json(copy, "result.json", lambda d: d["results"][COLUMN]["sep"]["summary"].update(avg=0.123))
    resign(copy)
    assert main(["submit", "--verify", str(copy), "--data-dir", str(shared_ts2)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"ts2 submit: rejected {copy}: results.{COLUMN}.sep.summary.avg: claimed 0.123, "
                          "recomputed 0.")


def test_the_cli_names_a_rejected_submission_by_its_folder(small_submission, shared_ts2, tmp_path, capsys):
    """metric.json says ``clip-small``; the folder is ``another-folder``: the rejection names the folder, as the
    leaderboard does."""
    folder = Path(shutil.copytree(small_submission, tmp_path / "another-folder"))
    edit_json(folder, "result.json", lambda d: d["results"][COLUMN]["sep"]["summary"].update(avg=0.123))
    resign(folder)
    assert main(["submit", "--verify", str(folder), "--data-dir", str(shared_ts2)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ts2 submit: rejected {folder}: results.{COLUMN}"), err
    assert "clip-small" not in err
    assert main(["submit", "--verify", str(tmp_path / "nope"), "--data-dir", str(shared_ts2)]) == 2
    assert capsys.readouterr().err == f"ts2 submit: rejected {tmp_path / 'nope'}: not a submission folder\n"


@pytest.mark.parametrize("argv, message", [
    (["--verify", "DIR", "--column", "c"], "--column: options of writing a submission"),
    (["DIR", "--push"], "--push needs --repo OWNER/NAME"),
    (["DIR", "--rescore", "3"], "--rescore: only with --verify"),
    (["DIR", "--push", "--rescore", "3", "--repo", "o/n"], "--rescore: only with --verify"),
    (["SCORES", "--repo", "o/n"], "--repo: only with --push"),
    (["SCORES", "--column", "c"], "--name, --out required"),
])
def test_the_cli_refuses_mixed_options_in_one_line(argv, message, tmp_path, capsys):
    argv = [str(tmp_path) if a in ("DIR", "SCORES") else a for a in argv]
    assert main(["submit", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_push_refuses_a_bad_repo_and_a_submission_that_does_not_verify(copy, shared_ts2, capsys):
    assert main(["submit", str(copy), "--push", "--repo", "no-owner", "--data-dir", str(shared_ts2)]) == 2
    assert "--repo 'no-owner' is not OWNER/NAME" in capsys.readouterr().err
    (copy / "metric.json").unlink()
    assert main(["submit", str(copy), "--push", "--repo", "o/n", "--data-dir", str(shared_ts2)]) == 2
    assert f"rejected {copy}: missing file: metric.json" in capsys.readouterr().err


def test_a_refused_push_names_the_error_without_the_token(small_submission, shared_ts2, monkeypatch, capsys):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_wrongTOKEN987654321")
    with LoopbackHub("o/board", token=TOKEN) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.base)
        assert main(["submit", str(small_submission), "--push", "--repo", "o/board", "--data-dir",
                     str(shared_ts2)]) == 2
        assert hub.pull_requests == []
    captured = capsys.readouterr()
    assert "401" in captured.err and "--push to o/board" in captured.err
    assert "hf_wrongTOKEN987654321" not in captured.out + captured.err


# --- --rescore with tiny models ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_scored(tmp_path_factory, shared_ts2):
    """A generated data dir (SEGs 0-1) scored by two tiny CLIP models (seeds 0 and 1) through ts2 score's path."""
    from scorers.ts2.scoring import score_data_dir
    from tests.helpers.tiny_embed_models import build_hf_clip
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("tiny")
    data = make_data_dir(root / "data", seg_ids=[0, 1], with_questions=False)
    for label, seed in (("a", 0), ("b", 1)):
        model = build_hf_clip(root / label, seed=seed)
        score_data_dir("clip_score", data, root / f"{label}.csv", model=model, batch_size=8, num_workers=0)
    return root, data


def test_rescore_accepts_the_claimed_model_and_catches_another(tiny_scored, tmp_path, capsys):
    from scorers.ts2.submission.folder import scorer_config_of

    root, data = tiny_scored
    claimed = scorer_config_of(root / "a.csv")
    assert claimed["registry"] == "clip_score" and claimed["model"] == str(root / "a" / "clip")
    honest = write_submission(root / "a.csv", column="clip_score", name="tiny-a", out=tmp_path / "a",
                              metadata=data / "metadata.csv")
    assert json.loads((honest / "metric.json").read_text())["scorer"] == claimed
    assert json.loads((honest / "result.json").read_text())["scorer_config"] == {"scores": claimed["config"]}
    check = verify_submission(honest, metadata=data / "metadata.csv", rescore=4, seed=5, data_dir=data)
    assert check.ok, check.reason
    assert len(check.rescored) == 4 and len(set(check.rescored)) == 4
    again = verify_submission(honest, metadata=data / "metadata.csv", rescore=4, seed=5, data_dir=data)
    assert again.rescored == check.rescored  # a fixed seed: the same images
    # scores of model b, claimed as model a's
    dishonest = write_submission(root / "b.csv", column="clip_score", name="tiny-b", out=tmp_path / "b",
                                 metadata=data / "metadata.csv", info={"scorer": claimed})
    assert verify_submission(dishonest, metadata=data / "metadata.csv", data_dir=data).ok  # numbers alone agree
    check = verify_submission(dishonest, metadata=data / "metadata.csv", rescore=4, seed=5, data_dir=data)
    assert not check.ok
    assert check.reason.startswith("--rescore: clip_score of ") and "(tolerance 0.002 of clip_score)" in check.reason
    # the CLI lists the images it rescored
    assert main(["submit", "--verify", str(honest), "--data-dir", str(data), "--rescore", "3"]) == 0
    out = capsys.readouterr().out
    assert "rescored 3 image(s) (seed 0) within the scorer's tolerance: " in out
    assert main(["submit", "--verify", str(dishonest), "--data-dir", str(data), "--rescore", "3"]) == 2
    assert f"rejected {dishonest}: --rescore: clip_score of " in capsys.readouterr().err  # its folder, not its name


def test_rescore_without_a_registry_scorer_rescores_nothing(small_submission, shared_ts2, capsys):
    assert main(["submit", "--verify", str(small_submission), "--data-dir", str(shared_ts2), "--rescore", "2"]) == 0
    assert "nothing rescored: metric.json names no registered scorer" in capsys.readouterr().out


def test_every_registered_scorer_states_a_tolerance():
    from scorers.scoring.registry import SCORER_INFO

    assert all(info.tolerance > 0 for info in SCORER_INFO.values())


# --- the docs text: its commands run (as tests/docs/test_commands.py will run them once the page is on the site) -


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "leaderboard.md"


def test_the_docs_commands_run_offline(shared_ts2, tmp_path):
    """Every ```bash command of docs/leaderboard.md's submitting part (up to "List the leaderboard") is classified by test_readme_commands' RULES; the runnable
    ones run in order, in a folder holding its placeholder ``my_keyed_scores.csv`` (seeded random scores, shuffled
    rows), exactly as that test runs them."""
    import subprocess

    import numpy as np

    from tests.helpers.doc_commands import block_env, classify, readme_commands

    submitting = DOCS_PAGE.read_text(encoding="utf-8").split("\n## List the leaderboard")[0]
    commands = [c for _, c in readme_commands(submitting)]
    assert all(classify(c) is not None for c in commands), [c for c in commands if classify(c) is None]
    runnable = [c for c in commands if classify(c)[0] == "run"]
    assert [c.split()[:3] for c in runnable] == [["ts2", "submit", "my_keyed_scores.csv"],
                                                 ["ts2", "submit", "--verify"], ["ts2", "submit", "--verify"]]
    assert any("--push" in c and classify(c)[0] == "skip" for c in commands)
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    keyed = pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"],
                          "my_metric": rng.random(len(metadata))})
    keyed.iloc[rng.permutation(len(keyed))].to_csv(tmp_path / "my_keyed_scores.csv", index=False)
    for command in runnable:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=block_env(shared_ts2), capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert "nothing rescored" in done.stdout and "verified my-metric" in done.stdout


@pytest.mark.parametrize("key, value, reason", [
    ("paper_url", "javascript:alert(1)", "paper_url must be an http(s) URL"),
    ("code_url", 5, "code_url must be text or null"),
    ("license", "MIT\x1b[2J", "license must be printable text"),
    ("metric", "", "metric must be non-empty text"),
    ("flops_per_image", -3, "flops_per_image must be a positive number or null"),
    ("flops_per_image", True, "flops_per_image must be a positive number or null"),
    ("scorer", "clip_score", "scorer must be an object or null"),
    ("format", "other/1", "format must be 'ts2-evaluate submission/1'"),
])
def test_a_bad_metadata_field_is_named(copy, shared_ts2, key, value, reason):
    edit_json(copy, "metric.json", lambda d: d.update({key: value}))
    resign(copy)
    assert verify(copy, shared_ts2).reason.startswith(f"metric.json: {reason}")


def test_a_bad_metadata_field_is_refused_when_writing(keyed, shared_ts2, tmp_path, capsys):
    assert main(["submit", str(keyed), "--column", COLUMN, "--name", "x", "--out", str(tmp_path / "x"),
                 "--data-dir", str(shared_ts2), "--paper-url", "javascript:alert(1)"]) == 2
    assert "--paper-url 'javascript:alert(1)' must be an http(s) URL" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_scores_with_other_columns_are_rejected(copy, shared_ts2):
    scores = pd.read_csv(copy / "scores.csv", dtype=str, keep_default_na=False)
    scores["extra"] = "1"
    scores.to_csv(copy / "scores.csv", index=False)
    resign(copy)
    assert verify(copy, shared_ts2).reason == ("scores.csv: columns must be seg_id, file_name, clipscore "
                                               "(metric.json's column); found 'seg_id', 'file_name', 'clipscore', "
                                               "'extra'")


@pytest.mark.parametrize("content, reason", [
    ("[" * 100000, "result.json: not readable JSON"),
    ('{"format": "ts2-evaluate result/1"}', "result.json: missing field(s)"),
    ("[]", "result.json: not a saved ts2 result"),
])
def test_a_broken_result_file_is_a_reason_never_an_exception(copy, shared_ts2, content, reason):
    (copy / "result.json").write_text(content)
    resign(copy)
    check = verify(copy, shared_ts2)
    assert not check.ok and check.reason.startswith(reason)


def test_a_manifest_of_another_format_is_rejected(copy, shared_ts2):
    edit_json(copy, "manifest.json", lambda d: d.update(format="x"))
    assert verify(copy, shared_ts2).reason == "manifest.json: field 'format' must be 'ts2-evaluate submission/1'"


def test_a_path_that_is_no_folder_is_rejected(tmp_path, shared_ts2):
    check = verify(tmp_path / "nothing", shared_ts2)
    assert (check.ok, check.name) == (False, "nothing") and check.reason.endswith("not a submission folder")


def test_the_docstring_examples_run():
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    files = [str(root / "scorers" / "ts2" / "submission" / f) for f in ("folder.py", "hub.py", "rescore.py")]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--doctest-modules", "-p", "no:cacheprovider",
                           *files], cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.parametrize("options, message", [
    (MetaOptions(clean_quotes=True), "clean_quotes=True: a submission's scores are numbers as written"),
    (MetaOptions(on=["seg_id", "file_name"]), "on: a submission is joined on seg_id, file_name"),
    (MetaOptions(confidence=0.9), "confidence must be 0.95"),
])
def test_options_that_the_result_does_not_record_are_refused(keyed, shared_ts2, tmp_path, options, message):
    with pytest.raises(ParameterError, match=message):
        write_submission(keyed, column=COLUMN, name="x", out=tmp_path / "x", metadata=shared_ts2 / "metadata.csv",
                         options=options)
    assert list(tmp_path.iterdir()) == []


def test_the_folder_is_an_ordinary_one(small_submission):
    import os
    import stat

    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(small_submission.stat().st_mode) == 0o777 & ~umask


def test_the_loopback_hub_stops_by_itself_and_is_bounded():
    import time
    import urllib.error
    import urllib.request

    with LoopbackHub("o/n", files={"a.txt": b"a"}, max_requests=2, lifetime=0.5) as hub:
        url = f"{hub.base}/datasets/o/n/resolve/main/a.txt"
        assert urllib.request.urlopen(url, timeout=5).read() == b"a"
        urllib.request.urlopen(url, timeout=5)
        with pytest.raises(urllib.error.HTTPError, match="503"):  # beyond max_requests
            urllib.request.urlopen(url, timeout=5)
        time.sleep(1.0)
        with pytest.raises(OSError):  # its lifetime is over: nothing listens any more
            urllib.request.urlopen(url, timeout=2)


def test_the_scorer_config_names_the_pinned_revision_of_a_default_checkpoint(tmp_path):
    from scorers.metrics.reward_models import PICKSCORE_REVISION
    from scorers.ts2.submission.folder import scorer_config_of

    scores = tmp_path / "ps.csv"
    (tmp_path / "ps.csv.cache").mkdir()
    config = {"name": "pickscore", "model": "yuvalkirstain/PickScore_v1", "dtype": "torch.float16"}
    (tmp_path / "ps.csv.cache" / "fingerprint.json").write_text(json.dumps(config))
    assert scorer_config_of(scores) == {"registry": "pickscore", "model": "yuvalkirstain/PickScore_v1",
                                        "revision": PICKSCORE_REVISION, "config": config}
    config.update(name="my_metric", model="/local/folder")
    (tmp_path / "ps.csv.cache" / "fingerprint.json").write_text(json.dumps(config))
    assert scorer_config_of(scores) == {"registry": None, "model": "/local/folder", "revision": None,
                                        "config": config}
    assert scorer_config_of(tmp_path / "other.csv") is None


def test_the_loopback_hub_serves_main_a_pull_request_and_a_commit(small_submission, tmp_path, monkeypatch):
    from huggingface_hub import constants, snapshot_download

    from scorers.ts2.submission.hub import push_submission

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with LoopbackHub("o/board", files={"README.md": b"# board\n", "submissions/old/x.txt": b"x"}) as hub:
        pushed = push_submission(small_submission, "o/board", name="clip-small", files=list(SUBMISSION_FILES),
                                 endpoint=hub.base)
        assert (pushed.pr_revision, pushed.repo) == ("refs/pr/1", "o/board")
        assert pushed.paths == tuple(f"submissions/clip-small/{f}" for f in SUBMISSION_FILES)

        def files(revision: str) -> set[str]:
            local = Path(snapshot_download("o/board", repo_type="dataset", revision=revision, endpoint=hub.base,
                                           cache_dir=tmp_path / "cache"))
            return {p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()}

        assert files("main") == {"README.md", "submissions/old/x.txt"}
        expected = {"README.md", "submissions/old/x.txt", *pushed.paths}
        assert files("refs/pr/1") == expected
        assert files(pushed.commit) == expected
        assert ("POST", "/api/datasets/o/board/commit/main?create_pr=1") in hub.requests


def test_rescore_reads_the_images_from_the_hub_dataset_without_a_data_dir(tiny_scored, tmp_path, monkeypatch):
    """No --data-dir and no TS2_DATA: the images come from the pinned Hub dataset (a loopback stand-in serving the
    generated data dir), as ``ts2 score`` without ``--data-dir`` reads them."""
    from scorers.tables.release import HUB_REPO, HUB_REVISION
    from tests.helpers.loopback_hub import LoopbackHubDataset, point_hub_at

    root, data = tiny_scored
    out = write_submission(root / "a.csv", column="clip_score", name="tiny-a", out=tmp_path / "a",
                           metadata=data / "metadata.csv")
    monkeypatch.delenv("TS2_DATA", raising=False)
    with LoopbackHubDataset(data, HUB_REPO, HUB_REVISION) as hub:
        point_hub_at(monkeypatch, hub.base, tmp_path / "hf" / "hub")
        check = verify_submission(out, metadata=data / "metadata.csv", rescore=3, seed=1)
        assert hub.count(f"/datasets/{HUB_REPO}/resolve/") > 0
    assert check.ok, check.reason
    assert len(check.rescored) == 3


def test_a_reason_is_one_printable_line_whatever_the_files_hold(copy, shared_ts2):
    edit_json(copy, "manifest.json", lambda d: d["sha256"].update({"metric.json": "0" * 10 + "\n\x1b[31mred\u202e"}))
    check = verify(copy, shared_ts2)
    assert not check.ok and check.reason.startswith("sha256 mismatch: metric.json: manifest 0000000000\\n\\x1b[31mred")
    assert check.reason.isprintable() and "\n" not in check.reason
    edit_json(copy, "result.json", lambda d: d["results"][COLUMN].update({"x" * 1000 + "\x07": 1}))
    resign(copy)
    check = verify(copy, shared_ts2)
    assert check.reason.startswith(f"results.{COLUMN}.xxx") and check.reason.isprintable()
    assert len(check.reason) <= 400


# --- hostile submissions: coverage, cost, size ----------------------------------------------------------------------


def test_an_incomplete_submission_states_its_coverage(keyed, shared_ts2, tmp_path, capsys):
    """Blank cells are skipped by rank/sep/delta: ``result.json`` states how many (``coverage``, counted here from
    the file), ``ts2 submit`` warns, ``--verify`` states it, and a changed coverage is a changed number."""
    scores = pd.read_csv(keyed, dtype=str, keep_default_na=False)
    metadata = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    blank = list(range(0, 600, 7)) + list(range(2830, 2840))  # some in SEG 164, outside the default SEGs
    scores.loc[blank, COLUMN] = ""
    scores.loc[scores["seg_id"].astype(int).isin([5, 6]), COLUMN] = ""  # two SEGs wholly blank
    path = tmp_path / "holes.csv"
    scores.to_csv(path, index=False)
    in_set = metadata["id"].astype(int) <= 163
    scored = in_set & (scores[COLUMN] != "")
    used = scores.loc[scored, "seg_id"].nunique()
    assert used < 163  # SEGs 5 and 6 are not used
    out = tmp_path / "holes"
    assert main(["submit", str(path), "--column", COLUMN, "--name", "holes", "--out", str(out), "--n-bootstrap", "0",
                 "--data-dir", str(shared_ts2)]) == 0
    coverage = json.loads((out / "result.json").read_text())["results"][COLUMN]["coverage"]
    assert coverage == {"cells_scored": int(scored.sum()), "cells_total": int(in_set.sum()),
                        "cells_skipped": int(in_set.sum() - scored.sum()), "segs_used": used, "segs_total": 164,
                        "cells_repaired": 0, "complete": False}
    text = f"{int(scored.sum())}/{int(in_set.sum())} cells scored, {used}/164 SEGs used"
    assert capsys.readouterr().err.startswith(f"warning: incomplete submission: {text}; the leaderboard lists it "
                                              "apart and does not rank it")
    assert main(["submit", "--verify", str(out), "--data-dir", str(shared_ts2)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (f"coverage: {text} (incomplete: listed apart on the "
                                                        "leaderboard, not ranked)")
    check = verify(out, shared_ts2)
    assert (check.coverage.cells_scored, check.coverage.complete) == (int(scored.sum()), False)
    edit_json(out, "result.json", lambda d: d["results"][COLUMN]["coverage"].update(cells_scored=2835,
                                                                                  complete=True))
    resign(out)
    assert verify(out, shared_ts2).reason == (f"results.{COLUMN}.coverage.cells_scored: claimed 2835, recomputed "
                                              f"{int(scored.sum())}")


def test_a_complete_submission_says_so(small_submission, shared_ts2, capsys):
    assert verify(small_submission, shared_ts2).coverage.complete
    assert main(["submit", "--verify", str(small_submission), "--data-dir", str(shared_ts2)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("cells scored, 8/8 SEGs used (complete)")


def test_a_costly_bootstrap_is_refused_before_any_work(copy, keyed, shared_ts2, tmp_path, monkeypatch):
    """``n_bootstrap`` of 1e6 took 9 s and 2.6 GB to verify: above MAX_N_BOOTSTRAP it is refused in one line, and
    nothing is recomputed (the recomputation, replaced here, is never called); writing one is refused too."""
    import scorers.ts2.meta_from_tables as tables
    from scorers.ts2.submission.folder import MAX_N_BOOTSTRAP

    assert MAX_N_BOOTSTRAP == 10_000
    edit_json(copy, "result.json", lambda d: d.update(n_bootstrap=10**6))
    resign(copy)

    def never(*args, **kwargs):
        raise AssertionError("recomputed")

    monkeypatch.setattr(tables, "meta_from_tables", never)
    check = verify(copy, shared_ts2)
    assert check.reason == ("result.json: n_bootstrap is 1000000; a submission may ask for at most 10000 bootstrap "
                            "resamples (its verification costs time and memory in proportion)")
    with pytest.raises(ParameterError, match="n_bootstrap is 10001; a submission may ask for at most 10000"):
        write_submission(keyed, column=COLUMN, name="x", out=tmp_path / "x", metadata=shared_ts2 / "metadata.csv",
                         options=MetaOptions(n_bootstrap=10_001))
    assert not (tmp_path / "x").exists()


def test_every_file_is_capped_before_it_is_read(copy, keyed, shared_ts2, tmp_path, monkeypatch):
    """``result.json`` with 50 MB of notes, or a 5 MB string in ``metric.json``'s ``scorer``, is refused by its
    size, before it is read (reading it, replaced here, is never reached); writing one is refused too."""
    from scorers.ts2.submission.folder import MAX_FILE_BYTES

    assert MAX_FILE_BYTES == {"scores.csv": 8 * 2**20, "result.json": 2 * 2**20, "metric.json": 64 * 2**10,
                              "manifest.json": 16 * 2**10}
    notes = Path(shutil.copytree(copy, tmp_path / "notes"))
    edit_json(notes, "result.json", lambda d: d["results"][COLUMN].update(notes=["x" * 50_000_000]))
    resign(notes)
    scorer = Path(shutil.copytree(copy, tmp_path / "scorer"))
    edit_json(scorer, "metric.json", lambda d: d.update(scorer={"registry": None, "model": "m" * 5_000_000}))
    resign(scorer)
    import scorers.ts2.submission.folder as folder

    def never(file, field):
        raise AssertionError(f"read {file}")

    monkeypatch.setattr(folder, "_read_json", never)
    for path, name in ((notes, "result.json"), (scorer, "metric.json")):
        size = (path / name).stat().st_size
        assert verify(path, shared_ts2).reason == f"{name}: {size} bytes, over the cap of {MAX_FILE_BYTES[name]}"
    monkeypatch.undo()
    with pytest.raises(ParameterError, match=r"metric.json would take \d+ bytes; a submission's metric.json may "
                                             "take at most 65536"):
        write_submission(keyed, column=COLUMN, name="x", out=tmp_path / "x", metadata=shared_ts2 / "metadata.csv",
                         info={"scorer": {"registry": None, "model": "m" * 5_000_000, "config": {}}},
                         options=MetaOptions(n_bootstrap=0))
    assert not (tmp_path / "x").exists()


def test_names_that_differ_only_by_separators_or_case_are_one_name():
    from scorers.ts2.submission.folder import name_key

    assert name_key("clip-ref") == name_key("clip_ref") == name_key("Clip.Ref") == name_key("clip--ref")
    assert name_key("clip-ref") != name_key("clipref")
