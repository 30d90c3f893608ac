"""scorers.scoring.stream: a run streamed in chunks writes what the plain path (score_rows + write_outputs) writes for
the same rows, holds one chunk at a time, and resumes after a crash at any point (a torn last line included) with
nothing lost and nothing written twice."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from scorers.scoring.stream import STREAM_FILE, Chunk, committed_rows, score_stream
from tests.helpers.stream_parquet import png_variants

ROWS = 300
CHUNK = 25
BATCH = 5  # a chunk is whole batches: the model sees the plain run's batches


def make_rows(n: int, bad: set[int] = frozenset()):
    """``n`` rows: keys, key columns, prompts and PNG bytes (row ``i`` in ``bad``: bytes that are no image)."""
    pngs = png_variants(7)
    prompts = ["a photo of a cat", "two dogs in the snow", "an astronaut riding a horse"]
    return {"seg_id": [i // 15 for i in range(n)], "file_name": [f"{i // 15}/{i}.png" for i in range(n)],
            "node": [str(i % 4) for i in range(n)], "prompt": [prompts[(i // 15) % 3] for i in range(n)],
            "image": [b"not an image" if i in bad else pngs[i % 7] for i in range(n)]}


class ListReader:
    """A stream reader over in-memory rows; ``log`` records, at each chunk it yields, how many rows were yielded
    before it and how many lines the checkpoint then held (``checkpoint`` is set by the test)."""

    def __init__(self, rows, chunk=CHUNK, fail_after=None):
        self.data, self.chunk, self.fail_after, self.log, self.checkpoint = rows, chunk, fail_after, [], None

    def __call__(self, skip=0, images=True):
        n = len(self.data["seg_id"])
        for count, start in enumerate(range(skip, n, self.chunk)):
            if self.fail_after is not None and count == self.fail_after:
                raise KeyboardInterrupt("simulated kill")
            stop = min(n, start + self.chunk)
            if images and self.checkpoint is not None:
                held = sum(1 for _ in open(self.checkpoint, "rb")) if self.checkpoint.exists() else 0
                self.log.append((start, held))
            part = {k: v[start:stop] for k, v in self.data.items()}
            yield Chunk(rows={k: part[k] for k in ("seg_id", "file_name", "node")},
                        keys=[f"{s}:{f}" for s, f in zip(part["seg_id"], part["file_name"])],
                        prompts=part["prompt"], images=part["image"] if images else None)


def plain_outputs(scorer, rows, out, **kwargs):
    """The plain path's files for the same rows: score_rows (everything in memory) + write_outputs."""
    from scorers.scoring.rows import score_rows, write_outputs

    frame = pd.DataFrame({k: rows[k] for k in ("seg_id", "file_name", "node")})
    keys = [f"{s}:{f}" for s, f in zip(rows["seg_id"], rows["file_name"])]
    frame, result = score_rows(scorer, frame, rows["image"], rows["prompt"], keys, batch_size=BATCH, num_workers=0,
                               progress=False, **kwargs)
    write_outputs(frame, result, out)
    return out


def stream(scorer, reader, out, **kwargs):
    return score_stream(scorer, reader, out, batch_size=BATCH, num_workers=0, progress=False, **kwargs)


@pytest.fixture(scope="module")
def whole(scorer, tmp_path_factory):
    """The uninterrupted streamed run of ROWS rows: (its CSV's bytes, its result)."""
    out = tmp_path_factory.mktemp("whole") / "s.csv"
    result = stream(scorer, ListReader(make_rows(ROWS)), out)
    return out.read_bytes(), result


def test_streamed_csv_equals_the_plain_path(scorer, whole, tmp_path):
    streamed, result = whole
    plain = plain_outputs(scorer, make_rows(ROWS), tmp_path / "p.csv")
    assert streamed == plain.read_bytes()
    assert (result.rows, result.computed, result.resumed, result.skipped) == (ROWS, ROWS, 0, 0)
    assert result.score_columns == [scorer.name]


def test_skipped_images_are_listed_as_the_plain_path_lists_them(scorer, tmp_path):
    rows = make_rows(120, bad={3, 77})
    result = stream(scorer, ListReader(rows), tmp_path / "s.csv", on_error="skip")
    plain_outputs(scorer, rows, tmp_path / "p.csv", on_error="skip")
    assert (tmp_path / "s.csv").read_bytes() == (tmp_path / "p.csv").read_bytes()
    streamed, plain = pd.read_csv(tmp_path / "s.errors.csv"), pd.read_csv(tmp_path / "p.errors.csv")
    assert list(streamed.columns) == list(plain.columns) == ["seg_id", "file_name", "node", "error"]
    assert list(streamed["file_name"]) == list(plain["file_name"]) == ["0/3.png", "5/77.png"]
    unaddressed = [[re.sub(r" at 0x[0-9a-f]+", "", m) for m in f["error"]] for f in (streamed, plain)]
    assert unaddressed[0] == unaddressed[1] and unaddressed[0][1].startswith("cannot read image #77: ")
    assert result.skipped == 2


def test_the_reader_is_one_chunk_ahead_at_most(scorer, tmp_path):
    """The counting hook: when the reader is asked for a chunk, every row before it is already in the checkpoint,
    so no more than one chunk of rows is ever held (whatever the number of rows)."""
    reader = ListReader(make_rows(ROWS))
    reader.checkpoint = tmp_path / "s.csv.cache" / STREAM_FILE
    stream(scorer, reader, tmp_path / "s.csv")
    assert [start for start, _ in reader.log] == list(range(0, ROWS, CHUNK))
    assert all(held == start for start, held in reader.log), reader.log


@pytest.mark.parametrize("crash_after, torn", [(1, False), (5, True), (11, True)])
def test_a_crashed_run_resumes_to_the_uninterrupted_output(scorer, whole, tmp_path, crash_after, torn):
    rows = make_rows(ROWS)
    out = tmp_path / "s.csv"
    with pytest.raises(KeyboardInterrupt):
        stream(scorer, ListReader(rows, fail_after=crash_after), out)
    checkpoint = tmp_path / "s.csv.cache" / STREAM_FILE
    assert not out.exists() and sum(1 for _ in open(checkpoint)) == crash_after * CHUNK
    if torn:  # a kill in the middle of writing a line
        with open(checkpoint, "ab") as handle:
            handle.write(b'{"key": "9:1')
    result = stream(scorer, ListReader(rows), out)
    assert out.read_bytes() == whole[0]
    assert (result.resumed, result.computed, result.rows) == (crash_after * CHUNK, ROWS - crash_after * CHUNK, ROWS)
    keys = [json.loads(line)["key"] for line in open(checkpoint)]
    assert len(keys) == len(set(keys)) == ROWS


def test_a_checkpoint_of_other_rows_is_refused(scorer, tmp_path):
    rows = make_rows(ROWS)
    with pytest.raises(KeyboardInterrupt):
        stream(scorer, ListReader(rows, fail_after=2), tmp_path / "s.csv")
    other = dict(rows, file_name=[f"x{name}" for name in rows["file_name"]])
    with pytest.raises(ValueError, match=r"row 50 was '3:3/49.png' when scored, and is '3:x3/49.png'"):
        stream(scorer, ListReader(other), tmp_path / "s.csv")


def test_committed_rows_cuts_a_torn_line(tmp_path):
    path = tmp_path / STREAM_FILE
    whole = b"".join(json.dumps({"key": str(i), "score": i}).encode() + b"\n" for i in range(3))
    path.write_bytes(whole + b'{"key": "3", "sco')
    n, last = committed_rows(path)
    assert (n, last["key"]) == (3, "2")
    assert path.read_bytes() == whole
    assert committed_rows(tmp_path / "none.jsonl") == (0, None)


class WordCounter:
    """A scorer with records: a scalar number, a scalar string and a nested list per item (no model)."""

    name, config = "words", {"name": "words"}

    def score_with_records(self, images, prompts):
        scores = [len(p.split()) + image.size[0] / 100 for image, p in zip(images, prompts)]
        return scores, [{"n_words": len(p.split()), "first": p.split()[0], "words": p.split()} for p in prompts]


def test_record_columns_and_the_records_file_are_the_plain_paths(tmp_path):
    rows = make_rows(80)
    result = stream(WordCounter(), ListReader(rows), tmp_path / "s.csv")
    plain_outputs(WordCounter(), rows, tmp_path / "p.csv")
    for suffix in (".csv", ".records.jsonl"):
        assert (tmp_path / f"s{suffix}").read_bytes() == (tmp_path / f"p{suffix}").read_bytes(), suffix
    assert result.score_columns == ["words", "n_words"]
    assert pd.read_csv(tmp_path / "s.csv").columns.tolist() == ["seg_id", "file_name", "node", "words", "n_words",
                                                                "first"]
