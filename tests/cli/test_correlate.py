"""`ts2 correlate` and the rating-set loaders: TIFA160 (real JSON format, pinned download from a loopback HTTP server),
GenAI-Bench (real Parquet layout), generic CSV/Parquet; JSON shape; errors."""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from scorers.sets import ratings as R
from scorers.tables.release import ChecksumMismatch, PinnedFile
from tests.helpers.pin_override import pin_tifa160
from tests.helpers.cli import run_cli
from tests.helpers.loopback_http import FolderServer
from tests.helpers.rating_files import MODELS, tifa160_cache_copy, write_genai_parquet, write_tifa_json

ROW_KEYS = {"metric", "coefficient", "grouping", "value", "ci_low", "ci_high", "n_items", "n_groups_skipped"}


@pytest.fixture()
def tifa_json(tmp_path):
    return write_tifa_json(tmp_path / "human_annotations_with_scores.json")


@pytest.fixture()
def served(tmp_path, monkeypatch):
    folder = tmp_path / "served"
    folder.mkdir()
    # the TIFA160 URL's path (owner/repo/commit/path) under the server root; TS2_GITHUB_URL sends the real URL here
    served_file = folder / R.TIFA160.url.removeprefix("https://raw.githubusercontent.com/")
    served_file.parent.mkdir(parents=True)
    write_tifa_json(served_file)
    server = FolderServer(folder)
    monkeypatch.setenv("TS2_GITHUB_URL", server.base)
    yield server, served_file
    server.stop()


def _source(server, path: Path, sha256: str | None) -> PinnedFile:
    return replace(R.TIFA160, sha256=sha256)  # the real URL (through TS2_GITHUB_URL), pinned or not


# ----------------------------------------------------------------------------------------------------------------------
# loaders
# ----------------------------------------------------------------------------------------------------------------------

def test_tifa_json_reads_as_canonical_rows(tifa_json):
    frame = R.read_tifa_annotations(tifa_json)
    raw = json.loads(tifa_json.read_text())
    assert len(frame) == len(raw) == 60
    assert set(frame["system"]) == set(MODELS)
    assert frame["item"].nunique() == 12
    first_key = next(iter(raw))
    row = frame.iloc[0]
    assert [row["human_1"], row["human_2"]] == raw[first_key]["human_scores"]
    assert row["tifa_mplug-large"] == raw[first_key]["tifa_mplug-large"]
    assert {"meteor", "clipscore_vitb32", "tifa_vilt", "human_avg"} <= set(frame.columns)


def test_tifa_json_errors_name_the_entry(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"coco_1_vq_diffusion": {"text_id": "coco_1"}}))
    with pytest.raises(ValueError, match="coco_1_vq_diffusion.*human_scores"):
        R.read_tifa_annotations(bad)
    bad.write_text(json.dumps({"k": {"text_id": "k", "human_scores": [3, "x"]}}))
    with pytest.raises(ValueError, match="human_2 has 1 non-numeric"):
        R.read_tifa_annotations(bad)


def test_pinned_download_once_checks_sha_and_then_serves_the_cache(served, tmp_path):
    server, original = served
    digest = hashlib.sha256(original.read_bytes()).hexdigest()
    cache = tmp_path / "hf-cache"
    source = _source(server, original, digest)
    path = R.fetch_tifa160(offline=False, cache_dir=cache, source=source)
    assert path.read_bytes() == original.read_bytes()
    assert R.fetch_tifa160(offline=False, cache_dir=cache, source=source) == path
    assert server.requests == 1  # downloaded once
    server.stop()
    assert R.fetch_tifa160(offline=True, cache_dir=cache, source=source) == path  # offline: cache only
    assert path == cache / digest / R.TIFA160.filename  # release_download.fetch's layout for pinned files


def test_unpinned_download_records_digest_and_never_serves_a_changed_file(served, tmp_path, caplog):
    server, original = served
    digest = hashlib.sha256(original.read_bytes()).hexdigest()
    cache = tmp_path / "hf-cache"
    source = _source(server, original, None)
    with caplog.at_level("WARNING", logger="scorers.tables.release_download"):
        path = R.fetch_tifa160(offline=False, cache_dir=cache, source=source)
    assert path == cache / "unpinned" / R.TIFA160.revision / R.TIFA160.filename
    assert path.with_name(path.name + ".sha256").read_text().strip() == digest  # trust on first use
    assert digest in caplog.text and "pin it" in caplog.text
    assert R.fetch_tifa160(offline=False, cache_dir=cache, source=source) == path
    assert server.requests == 1  # second read: from the cache, checked against the record
    path.write_text(path.read_text().replace("prompt number 1", "prompt number X"))  # an edited cached copy
    assert R.fetch_tifa160(offline=False, cache_dir=cache, source=source).read_bytes() == original.read_bytes()
    assert server.requests == 2  # refused and fetched again, like a damaged pinned copy
    original.write_text(original.read_text().replace("prompt number 1", "prompt number X"))  # the source changed
    path.write_bytes(b"{}")
    with pytest.raises(ChecksumMismatch, match="sha256 .* does not match the recorded " + digest):
        R.fetch_tifa160(offline=False, cache_dir=cache, source=source)
    assert not path.exists()  # the changed download was not kept


def test_wrong_sha_keeps_nothing(served, tmp_path):
    server, original = served
    cache = tmp_path / "hf-cache"
    with pytest.raises(ValueError, match="pinned"):
        R.fetch_tifa160(offline=False, cache_dir=cache, source=_source(server, original, "0" * 64))
    assert not [p for p in cache.rglob("*") if p.is_file()]


def test_offline_without_cache_and_missing_file_are_clear_errors(served, tmp_path):
    server, original = served
    with pytest.raises(FileNotFoundError, match="offline"):
        R.fetch_tifa160(offline=True, cache_dir=tmp_path / "empty", source=_source(server, original, None))
    missing = replace(R.TIFA160, url=R.TIFA160.url.replace(R.TIFA160.filename, "nope.json"))
    with pytest.raises(FileNotFoundError, match="could not download"):
        R.fetch_tifa160(offline=False, cache_dir=tmp_path / "c2", source=missing)


def test_cli_tifa160_offline_uses_the_hf_cache(tifa_json, capsys, monkeypatch):
    code, _, err = run_cli(capsys, "correlate", "tifa160", "--offline", "--human", "human_avg",
                           "--metric", "tifa_vilt", "--n-bootstrap", "0")
    assert code == 2 and "offline" in err and "Traceback" not in err
    target, digest = tifa160_cache_copy(tifa_json)
    try:
        # under the real pin the stand-in (cached at its own digest's place) is not the file: offline, a clear error
        code, _, err = run_cli(capsys, "correlate", "tifa160", "--offline", "--human", "human_avg",
                               "--metric", "tifa_vilt", "--n-bootstrap", "0")
        assert code == 2 and "offline" in err and "Traceback" not in err
        pin_tifa160(monkeypatch, digest)  # test-only: the stand-in's own digest (tests/helpers/pin_override.py)
        code, out, _ = run_cli(capsys, "correlate", "tifa160", "--offline", "--human", "human_avg",
                               "--metric", "tifa_vilt", "--coefficients", "kendall_b", "--n-bootstrap", "0", "--json")
        assert code == 0
        frame = R.read_tifa_annotations(tifa_json)
        want = stats.kendalltau(frame["human_avg"], frame["tifa_vilt"], variant="b").statistic
        assert json.loads(out)["rows"][0]["value"] == pytest.approx(want, abs=1e-12)
    finally:
        target.unlink()


def test_tifa160_is_pinned_and_a_stand_in_is_refused(served, tmp_path):
    """The real pin (sha256 of TIFA's file at d20b200): the loopback stand-in is refused, nothing is kept."""
    server, _ = served
    assert R.TIFA160.sha256 == "1720bb802c3c0821dd56df0d8c20a1214ff5085d7e5d9236a75736b1d39b7b3c"
    assert "/d20b20066a593183f3436ce5cbff33982bb8d02f/human_annotations/" in R.TIFA160.url
    cache = tmp_path / "hf-cache"
    with pytest.raises(ChecksumMismatch, match="human_annotations_with_scores.json: sha256 .* pinned 1720bb80"):
        R.fetch_tifa160(offline=False, cache_dir=cache)
    assert server.requests == 1
    assert not [p for p in cache.rglob("*") if p.is_file()]


def test_genai_bench_parquet_reads_ratings_only(tmp_path):
    path = write_genai_parquet(tmp_path / "genai.parquet")
    frame = R.read_ratings(path)
    assert len(frame) == 18 and set(frame["system"]) == {"DALLE_3", "SDXL_Turbo", "Midjourney_6"}
    assert {"human_1", "human_2", "human_3"} <= set(frame.columns)
    assert "DALLE_3" not in frame.columns  # images are not read
    import pyarrow.parquet as pq

    first = pq.read_table(path, columns=["HumanRatings"]).to_pylist()[0]["HumanRatings"]["DALLE_3"]
    row = frame[(frame["item"] == "0") & (frame["system"] == "DALLE_3")].iloc[0]
    assert [row["human_1"], row["human_2"], row["human_3"]] == first


def test_genai_bench_joined_with_metric_scores_correlates(tmp_path, capsys):
    ratings = R.read_ratings(write_genai_parquet(tmp_path / "genai.parquet"))
    rng = np.random.default_rng(1)
    scores = ratings[["item", "system"]].assign(my_metric=rng.random(len(ratings)))
    merged = ratings.merge(scores, on=["item", "system"])
    merged.to_csv(tmp_path / "genai_with_scores.csv", index=False)
    code, out, _ = run_cli(capsys, "correlate", tmp_path / "genai_with_scores.csv", "--human", "human_1,human_2,human_3",
                           "--metric", "my_metric", "--group-by", "item", "--coefficients", "spearman", "--json",
                           "--n-bootstrap", "50")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert [r["metric"] for r in rows] == ["inter-rater", "my_metric"]


# ----------------------------------------------------------------------------------------------------------------------
# CLI
# ----------------------------------------------------------------------------------------------------------------------

def test_json_shape_values_and_raters(tifa_json, capsys):
    code, out, _ = run_cli(capsys, "correlate", tifa_json, "--human", "human_1", "--human", "human_2",
                           "--metric", "clipscore_vitb32", "--metric", "tifa_vilt", "--n-bootstrap", "100", "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    assert len(rows) == 15  # inter-rater + 2 metrics, 5 coefficients each
    assert all(ROW_KEYS <= set(r) for r in rows)
    assert [r["metric"] for r in rows[:5]] == ["inter-rater"] * 5
    frame = R.read_tifa_annotations(tifa_json)
    mean = (frame["human_1"] + frame["human_2"]) / 2
    by_key = {(r["metric"], r["coefficient"]): r for r in rows}
    assert by_key[("clipscore_vitb32", "spearman")]["value"] == pytest.approx(
        stats.spearmanr(mean, frame["clipscore_vitb32"]).statistic, abs=1e-12)
    assert by_key[("inter-rater", "pearson")]["value"] == pytest.approx(
        stats.pearsonr(frame["human_1"], frame["human_2"]).statistic, abs=1e-12)
    for r in rows:
        assert r["ci_low"] <= r["ci_high"] and r["grouping"] == "none" and r["n_items"] == 60
        assert (r["epsilon"] is not None) == (r["coefficient"] == "pairwise_acc")


def test_csv_and_parquet_give_the_same_rows_as_json(tifa_json, tmp_path, capsys):
    frame = R.read_tifa_annotations(tifa_json)
    frame.to_csv(tmp_path / "r.csv", index=False)
    frame.to_parquet(tmp_path / "r.parquet")
    outs = []
    for path in (tifa_json, tmp_path / "r.csv", tmp_path / "r.parquet"):
        code, out, _ = run_cli(capsys, "correlate", path, "--human", "human_avg", "--metric", "tifa_vilt",
                               "--group-by", "system", "--n-bootstrap", "30", "--json")
        assert code == 0
        outs.append(json.loads(out))
    assert outs[0] == outs[1] == outs[2]


def test_text_table_and_lower_is_better(tifa_json, capsys):
    code, out, _ = run_cli(capsys, "correlate", tifa_json, "--human", "human_avg", "--metric", "meteor",
                           "--lower-is-better", "meteor", "--group-by", "item", "--coefficients", "pearson",
                           "--n-bootstrap", "0")
    assert code == 0 and "meteor" in out and "pearson" in out
    frame = R.read_tifa_annotations(tifa_json)
    plain = np.mean([stats.pearsonr(g["human_avg"], g["meteor"]).statistic for _, g in frame.groupby("item")])
    code, out, _ = run_cli(capsys, "correlate", tifa_json, "--human", "human_avg", "--metric", "meteor",
                           "--lower-is-better", "meteor", "--group-by", "item", "--coefficients", "pearson",
                           "--n-bootstrap", "0", "--json")
    assert json.loads(out)["rows"][0]["value"] == pytest.approx(-plain, abs=1e-12)


@pytest.mark.parametrize("argv, message", [
    (["--metric", "nope"], "--metric 'nope': no such column"),
    (["--metric", "tifa_vilt", "--group-by", "item", "--item-col", "prompt_id"], "--item-col 'prompt_id'"),
    (["--metric", "tifa_vilt", "--group-by", "system", "--system-col", "model"], "--system-col 'model'"),
    (["--metric", "tifa_vilt", "--coefficients", "kendall"], "--coefficients"),
    (["--metric", "prompt"], "non-numeric"),
    (["--metric", "tifa_vilt", "--n-bootstrap", "-1"], "--n-bootstrap"),
])
def test_bad_options_exit_2_with_one_line(tifa_json, capsys, argv, message):
    code, _, err = run_cli(capsys, "correlate", tifa_json, "--human", "human_avg", *argv)
    assert code == 2
    assert err.startswith("ts2 correlate: error:") and message in err and len(err.strip().splitlines()) == 1


def test_missing_ratings_file_exits_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "correlate", tmp_path / "none.csv", "--human", "h", "--metric", "m")
    assert code == 2 and "not found" in err


def test_correlate_out_saves_the_numbers_and_how_they_were_made(tifa_json, tmp_path, capsys):
    """Issue 23 item 12: `ts2 correlate ... --out result.json` keeps the rows printed by --json, the command and the
    ratings file's sha256; `ts2 meta --from` re-prints it."""
    import hashlib

    argv = ["correlate", tifa_json, "--human", "human_1", "--metric", "clipscore_vitb32", "--n-bootstrap", "50"]
    code, out, _ = run_cli(capsys, *argv, "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    code, printed, _ = run_cli(capsys, *argv, "--out", str(tmp_path / "result.json"))
    assert code == 0
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["results"]["rows"] == rows and saved["segs"] is None and saved["n_bootstrap"] == 50
    assert saved["inputs"]["ratings"]["sha256"] == hashlib.sha256(Path(tifa_json).read_bytes()).hexdigest()
    code, again, _ = run_cli(capsys, "meta", "--from", str(tmp_path / "result.json"))
    assert code == 0 and again.startswith(printed.rstrip("\n")) and "(unchanged)" in again
