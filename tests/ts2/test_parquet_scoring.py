"""scorers.ts2.parquet_scoring (``ts2 score --parquet``): a ``ts2 dataset export`` streams to the CSV that ``ts2 score
--data-dir`` writes for the same images; the reader starts at any row and holds one row group at a time; a run killed
with SIGKILL at two points and resumed writes the uninterrupted run's CSV (nothing lost, nothing twice; scores equal
to 1e-6: a fresh process embeds the prompts in other batches, and float32's last digits follow the batches)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.scoring.stream import STREAM_FILE
from scorers.ts2.parquet_scoring import SegsParquet, parquet_files, score_parquet
from tests.helpers.cli import one_line, run_cli
from tests.helpers.stream_parquet import write_segs_export

ROWS = 3000


def expected_keys(start: int, stop: int = ROWS) -> list[str]:
    """The synthetic rows' keys by their rule (``seg_id = i // 15``, ``file_name = seg_id/i.png``)."""
    return [f"{i // 15}:{i // 15}/{i}.png" for i in range(start, stop)]


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    """3,000 synthetic rows: 3 shards of 1,000 rows, row groups of 100."""
    return write_segs_export(tmp_path_factory.mktemp("export"), ROWS, shard_rows=1000, row_group=100)


@pytest.fixture(scope="module")
def clip() -> str:
    from tests.helpers.tiny_embed_models import tiny_models

    return tiny_models()["clip"]


def test_an_export_streams_to_the_csv_of_its_data_dir(clip, tmp_path, cache_dir):
    from scorers.ts2.export import export_parquet
    from scorers.ts2.scoring import score_data_dir
    from tests.helpers.ts2_fixture_data import make_data_dir

    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0, 1, 2], image_size=16, with_questions=False)
    export_parquet(tmp_path / "export", data_dir=data_dir, cache_dir=cache_dir)
    options = dict(model=clip, scorer_options={"form": "cosine"}, batch_size=4, num_workers=0, progress=False)
    # chunks of 8 rows: the model sees the plain run's batches of 4 (a float32 forward's last digits depend on them)
    result = score_parquet("clip_score", tmp_path / "export", tmp_path / "streamed.csv", chunk_rows=8, **options)
    score_data_dir("clip_score", data_dir, tmp_path / "plain.csv", **options)
    assert (tmp_path / "streamed.csv").read_bytes() == (tmp_path / "plain.csv").read_bytes()
    assert result.rows == len(pd.read_csv(data_dir / "metadata.csv")) == result.computed


@pytest.mark.parametrize("skip", [0, 1, 99, 100, 101, 999, 1000, 1001, 2999, 3000])
def test_the_reader_starts_at_any_row(export, skip):
    reader = SegsParquet(parquet_files(export), chunk_rows=128)
    assert reader.rows == ROWS
    chunks = list(reader(skip))
    assert [k for c in chunks for k in c.keys] == expected_keys(skip)
    assert all(0 < len(c.keys) <= 128 and len(c.images) == len(c.prompts) == len(c.keys) for c in chunks)
    assert all(c.images[0].startswith(b"\x89PNG") for c in chunks)
    bare = list(reader(skip, images=False))
    assert [k for c in bare for k in c.keys] == expected_keys(skip) and all(c.images is None for c in bare)


def test_what_the_reader_holds_does_not_grow_with_the_rows(export, tmp_path):
    """Arrow's own allocation count as the hook: at every chunk, what pyarrow holds for 30,000 rows is what it holds
    for 3,000 (a row group and its buffers), a small part of the table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    big = write_segs_export(tmp_path / "big", 10 * ROWS, shard_rows=1000, row_group=100)
    held = {}
    for name, folder in (("small", export), ("big", big)):
        reader = SegsParquet(parquet_files(folder), chunk_rows=50)
        base = pa.total_allocated_bytes()
        held[name] = [pa.total_allocated_bytes() - base for _ in reader()]
    assert (len(held["small"]), len(held["big"])) == (ROWS // 50, 10 * ROWS // 50)
    whole = sum(pq.read_table(f).nbytes for f in parquet_files(big))
    assert max(held["big"]) <= 1.1 * max(held["small"]) and max(held["big"]) < whole / 20, (held, whole)


def test_parquet_files_of_an_export_a_folder_or_a_file(export, tmp_path):
    shards = sorted((export / "segs").glob("*.parquet"))
    assert parquet_files(export) == shards == parquet_files(export / "segs")
    assert parquet_files(shards[1]) == [shards[1]]
    with pytest.raises(ValueError, match="no Parquet files"):
        parquet_files(tmp_path)


def cli_score(export, model, out):
    return [sys.executable, "-m", "scorers.cli", "score", "clip_score", "--parquet", str(export), "--model", model,
            "--option", "form=cosine", "--out", str(out), "--chunk-rows", "100", "--batch-size", "50",
            "--num-workers", "0", "--no-progress"]


def kill_after(command, checkpoint: Path, rows: int) -> int:
    """Start ``command``, SIGKILL it once the checkpoint holds ``rows`` lines (bounded: 120 s); the lines then."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if checkpoint.exists() and checkpoint.read_bytes().count(b"\n") >= rows:
                process.send_signal(signal.SIGKILL)
                break
            assert process.poll() is None, f"the run ended before {rows} rows: {process.stderr.read()[-2000:]}"
            time.sleep(0.005)
        else:
            pytest.fail("no kill within 120 s")
    finally:
        process.kill()
        process.wait(30)
        process.stderr.close()
    return checkpoint.read_bytes().count(b"\n")


def test_a_run_killed_twice_resumes_to_the_uninterrupted_csv(clip, tmp_path):
    rows = 1200
    export = write_segs_export(tmp_path / "export", rows, shard_rows=500, row_group=100)
    whole = tmp_path / "whole.csv"
    score_parquet("clip_score", export, whole, model=clip, scorer_options={"form": "cosine"}, chunk_rows=100,
                  batch_size=50, num_workers=0, progress=False)
    out = tmp_path / "killed.csv"
    checkpoint = tmp_path / "killed.csv.cache" / STREAM_FILE
    first = kill_after(cli_score(export, clip, out), checkpoint, 300)
    second = kill_after(cli_score(export, clip, out), checkpoint, first + 400)
    assert 300 <= first < second < rows and not out.exists()
    done = subprocess.run(cli_score(export, clip, out), env=dict(os.environ, HF_HUB_OFFLINE="1"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    resumed = int(done.stderr.split(" scored now, ")[1].split(" by an earlier run")[0])
    assert second <= resumed < rows
    frame, reference = pd.read_csv(out), pd.read_csv(whole)
    assert [f"{s}:{f}" for s, f in zip(frame["seg_id"], frame["file_name"])] == expected_keys(0, rows)  # each once
    pd.testing.assert_frame_equal(frame.drop(columns="clip_score"), reference.drop(columns="clip_score"))
    # a fresh process embeds each prompt anew, in other batches: float32 digits past 1e-7 may differ (as in the
    # default engine's own resume tests); every score is there, from one scoring
    np.testing.assert_allclose(frame["clip_score"], reference["clip_score"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("extra, message", [
    (["--data-dir", "."], "--parquet reads its rows from the export; drop --data-dir"),
    (["--engine", "ray"], "--parquet streams on the default engine"),
])
def test_wrong_companions_are_one_line(capsys, export, tmp_path, extra, message):
    code, _, err = run_cli(capsys, "score", "clip_score", "--parquet", export, "--out", tmp_path / "s.csv", *extra)
    assert code != 0 and message in one_line(err)


def test_chunk_rows_without_parquet_is_one_line(capsys, tmp_path):
    code, _, err = run_cli(capsys, "score", "clip_score", "--data-dir", ".", "--out", tmp_path / "s.csv",
                           "--chunk-rows", "5")
    assert code != 0 and "--chunk-rows applies to --parquet" in one_line(err)
