"""Test-only pin overrides, for tests that serve a *generated* stand-in of a pinned public file.

TIFA160's ``human_annotations_with_scores.json`` and TIFA v1.0's ``tifa_v1.0_text_inputs.json`` are pinned by their
real sha256, but the tests have no copy of the real files (no network): they write small files in the same format. A
stand-in cannot have the real digest, so a test that downloads or caches one pins *the stand-in's own digest* for
its duration, through this module only; the download path itself (cache layout, digest check, offline rule) runs
unchanged. The real pins are checked apart: the stand-in is refused under them (tests/cli/test_correlate.py,
tests/tifa_bench/test_tifa_bench.py).

In-process: :func:`pin_tifa160` / :func:`pin_tifa_v1` with pytest's ``monkeypatch`` (undone at teardown). In a
subprocess (the README's shell commands): run ``python -m tests.helpers.pin_override ARGS...`` in place of ``ts2 ARGS...``
with :data:`ENV` = a JSON object ``{"tifa160": digest, "tifa_v1:text_inputs": digest}``.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

#: environment variable read by ``python -m tests.helpers.pin_override`` (JSON: pin name -> the stand-in's sha256)
ENV = "TS2_TEST_PINS"


def pin_tifa160(monkeypatch, digest: str) -> None:
    """Pin ``scorers.sets.ratings.TIFA160`` to ``digest`` for this test."""
    from scorers.sets import ratings as ratings

    monkeypatch.setattr(ratings, "TIFA160", replace(ratings.TIFA160, sha256=digest))


def pin_tifa_v1(monkeypatch, name: str, digest: str | None) -> None:
    """Pin TIFA v1.0 file ``name`` (``"text_inputs"`` / ``"question_answers"``) to ``digest`` for this test."""
    from scorers.tifa_bench import tifa_v1_files as data

    monkeypatch.setitem(data.FILES, name, (data.FILES[name][0], digest))


def tifa160_cache_path(digest: str) -> Path:
    """Where ``release_download.fetch`` keeps a TIFA160 copy pinned to ``digest`` under the current ``HF_HOME``."""
    from huggingface_hub import constants

    from scorers.sets import ratings as ratings

    return Path(constants.HF_HOME) / "ts2-evaluate" / digest / ratings.TIFA160.filename


def _apply(pins: dict[str, str]) -> None:
    from scorers.sets import ratings as ratings
    from scorers.tifa_bench import tifa_v1_files as data

    for key, digest in pins.items():
        if key == "tifa160":
            ratings.TIFA160 = replace(ratings.TIFA160, sha256=digest)
        elif key.startswith("tifa_v1:"):
            name = key.split(":", 1)[1]
            data.FILES[name] = (data.FILES[name][0], digest)
        else:
            raise ValueError(f"{ENV}: unknown pin {key!r}")


if __name__ == "__main__":  # `python -m tests.helpers.pin_override ARGS...` = `ts2 ARGS...` with the test's pins
    _apply(json.loads(os.environ.get(ENV, "{}")))
    from scorers.cli import main

    sys.exit(main(sys.argv[1:]))
