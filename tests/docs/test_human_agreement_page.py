"""The `ts2 correlate` section of docs/human-agreement.md (between its agreement markers): every command block runs
(offline: a generated ratings.csv, and the TIFA160 file generated in its real format and placed in the Hugging Face cache, pinned to its own digest for the
test: tests/helpers/pin_override.py), and the benchmark script runs."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.sets.ratings import TIFA160
from tests.helpers.pin_override import ENV as PIN_ENV
from tests.helpers.environment import env_with_scripts
from tests.helpers.rating_files import tifa160_cache_copy, write_tifa_json

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    page = (ROOT / "docs" / "human-agreement.md").read_text(encoding="utf-8")
    section = page.split("<!-- agreement:start -->", 1)[1].split("<!-- agreement:end -->", 1)[0]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        joined = block.replace("\\\n", " ")
        commands += [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]
    return commands


def test_readme_section_has_the_documented_commands():
    commands = _commands()
    assert sum(c.startswith("ts2 correlate") for c in commands) == 4
    assert any(c.startswith("ts2 report") and "--ratings" in c for c in commands)


def test_readme_commands_run(shared_ts2, tmp_path):
    for name in sorted({n for c in _commands() for n in re.findall(r"\$TS2_DATA/([\w./-]+)", c)}):
        if not (shared_ts2 / name).is_file():
            pytest.skip(f"{name} is not in the release folder {shared_ts2}: set TS2_DATA to a local copy of the "
                        f"release that holds it")
    rng = np.random.default_rng(0)
    quality = rng.normal(0, 1, 200)
    pd.DataFrame({
        "item": np.repeat([f"p{k}" for k in range(40)], 5), "system": np.tile(list("abcde"), 40),
        "human_1": np.clip(np.round(3 + quality + rng.normal(0, .5, 200)), 1, 5),
        "human_2": np.clip(np.round(3 + quality + rng.normal(0, .5, 200)), 1, 5),
        "clipscore": 0.3 + 0.01 * quality + rng.normal(0, 0.01, 200),
        "mplug_tifa": np.round(np.clip(0.6 + 0.2 * quality, 0, 1) * 4) / 4,
    }).to_csv(tmp_path / "ratings.csv", index=False)
    cached, digest = tifa160_cache_copy(write_tifa_json(tmp_path / TIFA160.filename))
    env = env_with_scripts({**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                            # test-only pin of the stand-in (pin_override); the page names the release tables as "$TS2_DATA/..."
                            PIN_ENV: json.dumps({"tifa160": digest}), "TS2_DATA": str(shared_ts2)})
    try:
        for command in _commands():
            assert command.startswith("ts2 "), command
            command = f"{shlex.quote(sys.executable)} -m tests.helpers.pin_override {command[len('ts2 '):]}"
            done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, (command, done.stderr[-2000:])
            assert done.stdout.strip(), command
    finally:
        cached.unlink()
    assert (tmp_path / "report" / "human_agreement.md").is_file()


def test_benchmark_script_runs_small_and_agrees_with_the_plain_loop():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_agreement.py"), "--items", "300",
                           "--metrics", "2", "--n-bootstrap", "20", "--baseline-resamples", "2"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "speed-up" in done.stdout and "extrapolated" in done.stdout
    worst = float(re.search(r"max \|ours - baseline\| over every value compared: (\S+)", done.stdout).group(1))
    assert worst < 1e-9  # same resamples, same statistics: only floating-point summation order differs
