"""The score cache's item stamp and its lines: an image rewritten with the same size and its
mtime restored is scored again (its bytes are hashed); ``--fast-stamp`` keeps the size + mtime stamp; a cache line
whose score is not a finite number or null (``"abc"``, ``NaN``, ``1e999``) is refused naming the file, line and key,
so it never reaches a score table as inf or NaN."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scorers.scoring.cache import item_stamp
from scorers.scoring.runner import run


class MeanRed:
    """Score = the image's mean red value (what each test expects is computed from the pixels it wrote)."""

    name = "mean_red"
    config = {"name": "mean_red"}
    image_transform = None

    def __init__(self):
        self.items = 0

    def score(self, images, prompts):
        self.items += len(images)
        return np.array([np.asarray(image, dtype=np.float64)[..., 0].mean() for image in images])


def _bmp(path: Path, red: int) -> None:
    """An 8x8 BMP of one colour: every such file has the same byte size, whatever the colour."""
    Image.new("RGB", (8, 8), (red, 10, 20)).save(path, format="BMP")


def _rewrite_keeping_size_and_mtime(path: Path, red: int) -> None:
    before = os.stat(path)
    _bmp(path, red)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


@pytest.fixture()
def images(tmp_path):
    paths = [tmp_path / f"{i}.bmp" for i in range(3)]
    for path, red in zip(paths, (10, 20, 30)):
        _bmp(path, red)
    return [str(p) for p in paths]


def _run(images, cache, **kwargs):
    scorer = MeanRed()
    result = run(scorer, images, ["a prompt"] * len(images), [f"k{i}" for i in range(len(images))], batch_size=2,
                 num_workers=0, cache_dir=cache, progress=False, **kwargs)
    return scorer, result


def test_an_image_rewritten_with_same_size_and_mtime_is_scored_again(images, tmp_path):
    cache = tmp_path / "cache"
    _, first = _run(images, cache)
    np.testing.assert_array_equal(first.scores, [10, 20, 30])
    _rewrite_keeping_size_and_mtime(Path(images[1]), 200)
    scorer, second = _run(images, cache)
    assert scorer.items == 1  # only the rewritten image
    np.testing.assert_array_equal(second.scores, [10, 200, 30])


def test_fast_stamp_trusts_size_and_mtime(images, tmp_path):
    cache = tmp_path / "cache"
    _run(images, cache, fast_stamp=True)
    _rewrite_keeping_size_and_mtime(Path(images[1]), 200)
    scorer, second = _run(images, cache, fast_stamp=True)
    assert scorer.items == 0  # the documented trade: no content read
    np.testing.assert_array_equal(second.scores, [10, 20, 30])
    Path(images[1]).touch()  # a new mtime is seen
    scorer, third = _run(images, cache, fast_stamp=True)
    assert scorer.items == 1
    np.testing.assert_array_equal(third.scores, [10, 200, 30])


def test_stamp_follows_content_not_file_times(images):
    before = item_stamp(images[0], "p")
    Path(images[0]).touch()
    assert item_stamp(images[0], "p") == before
    _bmp(Path(images[0]), 99)
    assert item_stamp(images[0], "p") != before
    assert item_stamp(images[0], "p") != item_stamp(images[0], "q")


@pytest.mark.parametrize("written", ['"abc"', "NaN", "1e999", "-Infinity", "true"])
def test_a_cache_line_with_a_non_number_score_names_file_line_and_key(images, tmp_path, written):
    cache = tmp_path / "cache"
    _run(images, cache)
    shard = cache / "rank0.jsonl"
    lines = shard.read_text(encoding="utf-8").splitlines()
    entry = json.loads(lines[1])
    lines[1] = lines[1].replace(json.dumps(entry["score"]), written, 1)
    assert written in lines[1]
    shard.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        _run(images, cache)
    message = str(caught.value)
    assert str(shard) in message and "line 2" in message and repr(entry["key"]) in message
    assert f"score {written}," in message and "\n" not in message
