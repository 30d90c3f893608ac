"""The runner: same numbers as direct scoring, crash-safe cache (SIGKILL + resume), 1 vs 2 accelerate processes,
bad input, per-item records, and the ``ts2 score`` command."""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.scoring.cache import ScoreCache
from scorers.metrics.embedding import CLIPScore
from scorers.scoring.runner import run
from scorers.scoring.rows import write_outputs
from scorers.ts2.scoring import score_table
from scorers.tables.pandas_tables import read_metadata
from tests.helpers.ts2_fixture_data import make_data_dir
from tests.helpers.counting_scorer import Counting
from tests.helpers.environment import console_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "helpers" / "embed_run_script.py"
N_IMAGES = 45  # SEGs 0, 1, 2


@pytest.fixture(scope="module")
def reference(scorer, metadata, data_dir):
    """Uninterrupted single-process run, no cache."""
    frame, _ = score_table(scorer, metadata, data_dir, batch_size=4, num_workers=0, progress=False)
    return frame


def test_run_equals_direct_scoring_with_workers(scorer, metadata, data_dir, reference):
    paths = [str(data_dir / f) for f in metadata["file_name"]]
    direct = scorer.score(paths, list(metadata["prompt"]))
    counting = Counting(scorer)
    result = run(counting, paths, list(metadata["prompt"]), batch_size=8, num_workers=2, progress=False)
    assert len(result.scores) == N_IMAGES and result.computed == N_IMAGES
    assert counting.calls == result.batches == math.ceil(N_IMAGES / 8)
    np.testing.assert_allclose(result.scores, direct, atol=1e-5)
    np.testing.assert_allclose(reference["clip_score"], direct, atol=1e-5)
    assert list(reference.columns) == ["seg_id", "file_name", "node", "clip_score"]
    assert list(reference["file_name"]) == list(metadata["file_name"])


def test_rerun_with_cache_computes_nothing(scorer, metadata, data_dir, reference, tmp_path):
    first = Counting(scorer)
    frame1, _ = score_table(first, metadata, data_dir, cache_dir=tmp_path / "c", batch_size=4, num_workers=0,
                            progress=False)
    second = Counting(scorer)
    frame2, result = score_table(second, metadata, data_dir, cache_dir=tmp_path / "c", batch_size=4, num_workers=0,
                                 progress=False)
    assert first.items == N_IMAGES and second.calls == 0 and result.computed == 0
    pd.testing.assert_frame_equal(frame1, frame2)
    np.testing.assert_allclose(frame2["clip_score"], reference["clip_score"], atol=1e-6)


def test_torn_last_line_is_dropped_and_only_missing_items_recomputed(scorer, metadata, data_dir, reference, tmp_path):
    cache = tmp_path / "c"
    score_table(scorer, metadata, data_dir, cache_dir=cache, batch_size=4, num_workers=0, progress=False)
    shard = cache / "rank0.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:10]) + lines[10][: len(lines[10]) // 2])  # killed mid-write of line 11
    assert len(ScoreCache(cache, scorer.config).load()) == 10
    counting = Counting(scorer)
    frame, _ = score_table(counting, metadata, data_dir, cache_dir=cache, batch_size=4, num_workers=0, progress=False)
    assert counting.items == N_IMAGES - 10
    np.testing.assert_allclose(frame["clip_score"], reference["clip_score"], atol=1e-6)
    assert len(ScoreCache(cache, scorer.config).load()) == N_IMAGES  # the writer started a fresh line


def test_cache_of_another_config_is_refused(clip_path, metadata, data_dir, tmp_path):
    score_table(CLIPScore(clip_path, form="cosine"), metadata.head(4), data_dir, cache_dir=tmp_path / "c",
                num_workers=0, progress=False)
    with pytest.raises(ValueError, match="different scorer configuration"):
        score_table(CLIPScore(clip_path, form="x100"), metadata.head(4), data_dir, cache_dir=tmp_path / "c",
                    num_workers=0, progress=False)


def _repaint(path: Path, colour) -> None:
    """Overwrite an image in place with another flat colour (same name, same pixel size, other content)."""
    from PIL import Image

    with Image.open(path) as image:
        size = image.size
    Image.new("RGB", size, colour).save(path, quality=90)


@pytest.fixture()
def own_data_dir(data_dir, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    return copy


def test_changed_image_or_prompt_is_rescored_not_served_from_cache(scorer, metadata, own_data_dir, reference,
                                                                  tmp_path):
    cache = tmp_path / "c"
    score_table(scorer, metadata, own_data_dir, cache_dir=cache, batch_size=4, num_workers=0, progress=False)
    changed = [metadata["file_name"][3], metadata["file_name"][20]]
    for name in changed:
        _repaint(own_data_dir / name, (250, 5, 130))
    edited = metadata.copy()
    edited.loc[7, "prompt"] = "a completely different prompt"
    counting = Counting(scorer)
    frame, result = score_table(counting, edited, own_data_dir, cache_dir=cache, batch_size=4, num_workers=0,
                                progress=False)
    assert counting.items == 3 and result.computed == 3  # the two repainted images and the edited prompt
    fresh, _ = score_table(scorer, edited, own_data_dir, batch_size=4, num_workers=0, progress=False)  # no cache
    np.testing.assert_allclose(frame["clip_score"], fresh["clip_score"], atol=1e-6)  # float32 model, batch shapes
    changed_scores = frame["clip_score"].to_numpy()[[3, 20]]
    assert np.abs(changed_scores - reference["clip_score"].to_numpy()[[3, 20]]).min() > 1e-3  # really other scores


def test_cache_of_another_data_dir_is_refused(scorer, metadata, data_dir, own_data_dir, tmp_path):
    cache = tmp_path / "c"
    score_table(scorer, metadata.head(4), data_dir, cache_dir=cache, num_workers=0, progress=False)
    with pytest.raises(ValueError, match=r"holds scores of other inputs: data_dir .*data.* \(this run: .*data'\)"):
        score_table(scorer, metadata.head(4), own_data_dir, cache_dir=cache, num_workers=0, progress=False)


def test_second_run_on_a_locked_cache_stops_with_a_message(scorer, metadata, data_dir, tmp_path):
    holder = ScoreCache(tmp_path / "c", scorer.config)
    holder.lock()  # flock locks belong to an open file: a second open in this same process conflicts too
    try:
        counting = Counting(scorer)
        with pytest.raises(ValueError, match=rf"in use by another run \(pid {os.getpid()}\).*another out / cache_dir"):
            score_table(counting, metadata.head(4), data_dir, cache_dir=tmp_path / "c", num_workers=0,
                        progress=False)
        assert counting.calls == 0
    finally:
        holder.unlock()
    score_table(scorer, metadata.head(4), data_dir, cache_dir=tmp_path / "c", num_workers=0, progress=False)


def test_sigkill_mid_run_then_resume(scorer, metadata, data_dir, reference, clip_path, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "scores.csv"
    command = [sys.executable, str(SCRIPT), "--data-dir", str(data_dir), "--model", clip_path, "--out", str(out),
               "--cache-dir", str(cache), "--batch-size", "4", "--kill-after", "3"]
    killed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not out.exists()
    assert len(ScoreCache(cache, scorer.config).finished()) == 12  # 3 finished batches of 4; the 4th died in flight

    counting = Counting(scorer)
    frame, result = score_table(counting, metadata, data_dir, cache_dir=cache, batch_size=4, num_workers=0,
                                progress=False)
    assert counting.items == N_IMAGES - 12 and counting.calls == math.ceil((N_IMAGES - 12) / 4)
    assert result.computed == N_IMAGES - 12
    assert len(frame) == N_IMAGES and list(frame["file_name"]) == list(reference["file_name"])
    np.testing.assert_allclose(frame["clip_score"], reference["clip_score"], atol=1e-6)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_accelerate_processes_equal_one(data_dir, reference, clip_path, tmp_path):
    out, cache = tmp_path / "scores.csv", tmp_path / "cache"
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    # `accelerate launch --cpu --num_processes 2` silently runs ONE process; this form really starts two (gloo).
    command = [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
               console_script("ts2"), "score", "clip_score", "--data-dir", str(data_dir), "--out", str(out),
               "--model", clip_path, "--form", "cosine", "--batch-size", "4", "--num-workers", "0",
               "--cache-dir", str(cache), "--no-progress"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shards = {p.name: len(p.read_text().splitlines()) for p in cache.glob("*.jsonl")}
    assert shards == {"rank0.jsonl": 23, "rank1.jsonl": 22}  # both processes worked, disjoint halves
    frame = pd.read_csv(out)
    assert len(frame) == N_IMAGES and not frame.duplicated(["seg_id", "file_name"]).any()
    assert list(frame["file_name"]) == list(reference["file_name"])
    np.testing.assert_allclose(frame["clip_score"], reference["clip_score"], atol=1e-6)


# ----------------------------------------------------------------------------------------------- bad input

@pytest.fixture()
def broken_dir(data_dir, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    (copy / "images" / "001-02.jpg").write_bytes(b"\x00 truncated")
    return copy


def test_unreadable_image_raises_naming_the_file(scorer, metadata, broken_dir):
    with pytest.raises(ValueError, match=r"001-02\.jpg.*on_error='skip'"):
        score_table(scorer, metadata, broken_dir, batch_size=4, num_workers=1, progress=False)


def test_unreadable_image_skipped_is_recorded_and_retried(scorer, metadata, broken_dir, reference, tmp_path):
    cache = tmp_path / "c"
    frame, result = score_table(scorer, metadata, broken_dir, cache_dir=cache, batch_size=4, num_workers=0,
                                on_error="skip", progress=False)
    bad = frame["file_name"] == "images/001-02.jpg"
    assert bad.sum() == 1 and np.isnan(frame.loc[bad, "clip_score"]).all()
    assert "001-02.jpg" in frame.loc[bad, "error"].item()
    np.testing.assert_allclose(frame.loc[~bad, "clip_score"], reference.loc[~bad, "clip_score"], atol=1e-6)
    written = write_outputs(frame, result, tmp_path / "scores.csv")
    assert [p.name for p in written] == ["scores.csv", "scores.errors.csv"]
    assert list(pd.read_csv(tmp_path / "scores.csv").columns) == ["seg_id", "file_name", "node", "clip_score"]
    assert pd.read_csv(tmp_path / "scores.errors.csv")["file_name"].tolist() == ["images/001-02.jpg"]
    counting = Counting(scorer)  # a rerun retries the failed image only
    score_table(counting, metadata, broken_dir, cache_dir=cache, num_workers=0, on_error="skip", progress=False)
    assert counting.items == 0  # still unreadable: reported again, nothing else recomputed


def test_missing_file_empty_prompt_duplicate_keys(scorer, metadata, data_dir, tmp_path):
    moved = tmp_path / "data"
    shutil.copytree(data_dir, moved)
    (moved / "images" / "002-00.jpg").unlink()
    with pytest.raises(FileNotFoundError, match=r"row \d+: image file .*002-00\.jpg"):
        score_table(scorer, metadata, moved, num_workers=0, progress=False)
    with pytest.raises(ValueError, match=r"item 1 \(b\): empty prompt"):
        run(scorer, ["x.jpg", "y.jpg"], ["ok", " "], ["a", "b"], progress=False)
    with pytest.raises(ValueError, match="key 'a' appears more than once"):
        run(scorer, ["x.jpg", "y.jpg"], ["ok", "ok"], ["a", "a"], progress=False)


# ----------------------------------------------------------------------------------------------- records contract

class RecordingScorer:
    """A model-free scorer with per-item records (the shape QG/A scorers use): score = number of words."""

    name = "words"
    config = {"name": "words"}

    def __init__(self):
        self.calls = 0

    def score_with_records(self, images, prompts):
        self.calls += 1
        assert all(hasattr(im, "size") for im in images)  # no image_transform: RGB PIL images
        words = [p.split() for p in prompts]
        return (np.array([len(w) for w in words], dtype=float),
                [{"first_word": w[0], "n_chars": np.int64(len(p)),
                  "answers": [{"q": x, "a": "yes", "p": np.float32(0.5)} for x in w[:2]]}
                 for w, p in zip(words, prompts)])

    def score(self, images, prompts):
        return self.score_with_records(images, prompts)[0]


def test_records_become_columns_and_jsonl_and_survive_resume(metadata, data_dir, tmp_path):
    first = RecordingScorer()
    frame, result = score_table(first, metadata, data_dir, cache_dir=tmp_path / "c", batch_size=16, num_workers=0,
                                progress=False)
    expected_words = [len(p.split()) for p in metadata["prompt"]]
    assert frame["words"].tolist() == expected_words
    assert frame["first_word"].tolist() == [p.split()[0] for p in metadata["prompt"]]
    assert result.extra["score_columns"] == ["words", "n_chars"]
    written = write_outputs(frame, result, tmp_path / "out.csv")
    assert [p.name for p in written] == ["out.csv", "out.records.jsonl"]
    lines = [json.loads(x) for x in (tmp_path / "out.records.jsonl").read_text().splitlines()]
    assert lines[0]["key"] == f"0:{metadata['file_name'][0]}"
    assert lines[0]["record"]["answers"][0] == {"q": metadata["prompt"][0].split()[0], "a": "yes", "p": 0.5}
    again = RecordingScorer()
    frame2, result2 = score_table(again, metadata, data_dir, cache_dir=tmp_path / "c", num_workers=0, progress=False)
    assert again.calls == 0 and result2.records == result.records
    pd.testing.assert_frame_equal(frame, frame2)


def test_cli_score_then_meta_table(clip_path, data_dir, tmp_path, capsys):
    from scorers.cli import main

    out = tmp_path / "s.csv"
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(out), "--model", clip_path,
                 "--num-workers", "0", "--no-progress", "--meta"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    frame = pd.read_csv(out)
    assert len(frame) == N_IMAGES and (frame["clip_score"] >= 0).all()  # default form: max(cos, 0)
    # the printed table against the plain scipy loop on the written scores (not the code under test)
    from tests.helpers.reference_meta import reference_meta, reference_summary

    lines = captured.out.splitlines()
    segs = sorted(set(frame["seg_id"]))
    assert lines[0] == f"SEGs: {segs[0]}-{segs[-1]} ({len(segs)} SEGs)" and segs == list(range(segs[0], segs[-1] + 1))
    header = lines[1].split()  # metric, meta, avg, one column per partition present, segs used/skipped
    parts = header[2:header.index("segs")]
    first = next(k for k, line in enumerate(lines) if line.startswith("clip_score"))
    shown = {}
    for line in lines[first:first + 3]:  # one row per meta-metric: rank (named), sep, delta
        cells = line.split()[1:] if line.startswith("clip_score") else line.split()
        shown[cells[0]] = dict(zip(parts, cells[1:1 + len(parts)]))
    ref = reference_meta(frame["clip_score"].to_numpy(), frame["seg_id"].to_numpy(), frame["node"].astype(str))
    wants = {metric: reference_summary(ref[metric]) for metric in ("rank", "sep", "delta")}
    present = [p for p in ("synth", "nat", "real") if any(not np.isnan(w[p]) for w in wants.values())]
    assert parts == ["avg", *present]  # no empty partition column
    for metric, want in wants.items():
        for part in parts:
            assert shown[metric][part] == ("-" if np.isnan(want[part]) else f"{100 * want[part]:.1f}"), (metric, part)
    assert main(["score", "nope", "--data-dir", str(data_dir), "--out", str(out)]) == 2
    assert "unknown scorer 'nope'" in capsys.readouterr().err


def test_jpeg_draft_decodes_smaller_and_is_fingerprinted(scorer, metadata, tmp_path):
    from scorers.models.images import open_rgb

    big = make_data_dir(tmp_path / "big", seg_ids=[0], image_size=64, with_questions=False)
    path = str(big / metadata["file_name"][0])
    assert open_rgb(path).size == (64, 64) and open_rgb(path, 16).size == (16, 16)
    meta0 = read_metadata(big / "metadata.csv")
    full, _ = score_table(scorer, meta0, big, cache_dir=tmp_path / "c", num_workers=0, progress=False)
    with pytest.raises(ValueError, match="different scorer configuration"):
        score_table(scorer, meta0, big, cache_dir=tmp_path / "c", num_workers=0, progress=False, jpeg_draft=16)
    draft, _ = score_table(scorer, meta0, big, num_workers=0, progress=False, jpeg_draft=16)
    assert np.isfinite(draft["clip_score"]).all()
    np.testing.assert_allclose(draft["clip_score"], full["clip_score"], atol=0.05)  # approximate by design


def test_registry_builds_every_embedding_scorer_lazily(clip_path):
    import scorers.scoring.registry as registry

    assert {"clip_score", "align_score", "siglip_score"} <= set(registry.SCORERS)
    built = registry.build_scorer("clip_score", model=clip_path, form="x100", pretrained=None)
    assert isinstance(built, CLIPScore) and built.form == "x100" and built.name == "clip_score"
    with pytest.raises(ValueError, match="unknown scorer 'nope'; available: align_score"):
        registry.get_factory("nope")


def test_ts2_score_help_imports_no_model_library():
    code = ("import sys, scorers.scoring.registry, scorers.scoring.runner, scorers.cli.score, scorers.models; "
            "print(sorted(m for m in ('torch', 'transformers', 'open_clip', 'accelerate') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def make_recording_scorer(data_dir, device=None, precision="default", suffix="", **options):
    """A registry factory that declares ``data_dir`` (as question-based scorers do)."""
    scorer = RecordingScorer()
    scorer.name = "words" + suffix
    scorer.config = {"name": scorer.name, "data_dir": data_dir, "precision": precision, **options}
    return scorer


def test_registry_passes_data_dir_and_cli_options(data_dir, tmp_path, monkeypatch):
    import scorers.scoring.registry as registry
    from scorers.cli import main

    monkeypatch.setitem(registry.SCORERS, "words", "tests.scoring.test_runner:make_recording_scorer")
    out = tmp_path / "w.csv"
    assert main(["score", "words", "--data-dir", str(data_dir), "--out", str(out), "--num-workers", "0",
                 "--no-progress", "--option", "suffix=_x", "--option", "limit=3", "--precision", "bf16"]) == 0
    fingerprint = json.loads((tmp_path / "w.csv.cache" / "fingerprint.json").read_text())
    assert fingerprint == {"name": "words_x", "data_dir": str(data_dir), "precision": "bf16", "limit": 3}
    assert "words_x" in pd.read_csv(out).columns and (tmp_path / "w.records.jsonl").exists()


def test_only_processes_started_by_a_launcher_watch_their_parent(monkeypatch):
    from scorers.scoring import runner

    monkeypatch.setattr(runner, "_watcher", None)
    for name in runner._LAUNCHER_ENV:
        monkeypatch.delenv(name, raising=False)
    assert runner.watch_launcher() is False and runner._watcher is None  # `nohup ts2 score &` outlives its shell


def _fork_holding_the_lock() -> int:
    """A child that keeps the inherited lock descriptor open (as a forked DataLoader worker would) until killed."""
    child = os.fork()
    if child == 0:
        try:
            time.sleep(60)
        finally:
            os._exit(0)  # never return into the test runner
    return child


def test_release_locks_frees_the_cache_even_while_a_forked_child_shares_the_lock(tmp_path):
    """A rank stopping because its launcher died calls ``release_locks`` first, so the next run can lock the cache at
    once, even while a forked child still holds the inherited lock file. Control: a plain ``unlock`` (close) does not
    free it while the child lives."""
    from scorers.scoring.cache import CacheBusyError, release_locks

    children = []
    try:
        plain = ScoreCache(tmp_path / "plain", {"name": "x"})
        plain.lock()
        children.append(_fork_holding_the_lock())
        plain.unlock()
        with pytest.raises(CacheBusyError):
            ScoreCache(tmp_path / "plain", {"name": "x"}).lock()

        released = ScoreCache(tmp_path / "released", {"name": "x"})
        released.lock()
        children.append(_fork_holding_the_lock())
        release_locks()
        again = ScoreCache(tmp_path / "released", {"name": "x"})
        again.lock()  # no CacheBusyError although the child still has the file open
        again.unlock()
    finally:
        for child in children:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)


def test_record_columns_one_rule_for_csv_and_evaluate():
    """Issue 25: score_table kept str/bool/None fields, score_pairs numbers only, so failed_questions was lost."""
    from scorers.scoring.runner import RunResult, pairs_output, record_columns

    records = [{"failed_questions": "1|2", "p": 0.5, "ok": True, "questions": [{"q": 1}]}, None,
               {"failed_questions": "", "p": None}]
    expected = {"failed_questions": ["1|2", None, ""], "p": [0.5, None, None], "ok": [True, None, None]}
    assert record_columns(records) == expected
    result = RunResult(keys=["a", "b", "c"], scores=np.array([1.0, np.nan, 0.0]), records=records,
                       errors=[None, "bad", None])
    out = pairs_output(result)
    scores = out.pop("scores")
    assert scores[0::2] == [1.0, 0.0] and math.isnan(scores[1])
    assert out == {"mean": 0.5, **expected}  # mean over the two scored items: (1 + 0) / 2
