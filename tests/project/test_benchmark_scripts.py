"""The benchmark scripts run at their check sizes: ``benchmarks/gpu.sh --dry-run`` (CPU, tiny sizes, random weights, no
downloads: the script a GPU machine runs, checked on every CI run) and ``benchmarks/bench_engines.py --quick``. The
figures they print are not asserted (speed is measured in benchmarks/, never in tests): only their lines' form."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu.sh"

#: one line per figure, in order (the numbers of a dry run mean nothing; their presence and form are checked)
FIGURES = [
    r"clipscore bf16: default path [0-9.]+ img/s, image tower alone [0-9.]+ img/s \([0-9]+% of the tower\)",
    r"qwen-vl shared prefix: speed-up [0-9.]+x; answers identical: True \(per-question prefill [0-9.]+ "
    r"questions/s, shared [0-9.]+ questions/s\)",
    r"pickscore bf16: [0-9.]+ pairs/s \(batched\)",
    r"hpsv2 bf16: [0-9.]+ pairs/s \(batched\)",
    r"imagereward bf16: [0-9.]+ pairs/s \(batched\)",
    r"ts2 serve: [0-9.]+ requests/s at concurrency 16 \([0-9.]+ at 1\)",
]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHON": sys.executable, "GPU_LOGS": str(tmp_path / "logs"), "HF_HOME": str(tmp_path / "hf"),
            "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def test_dry_run_prints_one_line_per_figure(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run"], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=600)  # a safety bound: about 2 minutes on 2 busy cores
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("gpu.sh: dry run: CPU, tiny sizes") and re.match(r"gpu\.sh: done in \d+ s$", lines[-1])
    figures = lines[1:-1]
    assert len(figures) == len(FIGURES), done.stdout
    for line, pattern in zip(figures, FIGURES):
        assert re.fullmatch(pattern, line), (line, pattern)
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == ["clipscore.log", "qwen.log", "rewards.log", "serve.log"]  # each benchmark's full output is kept


def test_an_unknown_option_is_one_usage_line(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT), "--gpu"], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "usage: bash benchmarks/gpu.sh [--dry-run]"


@pytest.mark.release_files("metadata.csv")  # the benchmark lays its images out as the release's SEGs
def test_engines_benchmark_quick_run_prints_both_engines_and_equal_scores(tmp_path):
    """``bench_engines.py --quick --model tiny``: both engines (the Ray one on a local loopback Ray) in child
    processes, their wall times, images/s, peak memory, Ray's start-up apart, and the same scores."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_engines.py"), "--quick", "--model", "tiny",
                           "--image-size", "64", "--unique-images", "4"], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)  # a safety bound: under a minute here
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert re.search(r"^\d+ images, 64 px JPEGs \(4 distinct\), tiny ", out, re.M), out
    assert re.search(r"^default engine .* wall +[0-9.]+ s \(model load [0-9.]+ s \+ scoring [0-9.]+ s\) +[0-9.]+ "
                     r"images/s +peak RSS [0-9.]+ GiB", out, re.M), out
    assert re.search(r"^ray engine .* wall +[0-9.]+ s \(start-up [0-9.]+ s \+ describe [0-9.]+ s \+ scoring [0-9.]+ "
                     r"s\) +[0-9.]+ images/s +peak RSS [0-9.]+ GiB", out, re.M), out
    diff = re.search(r"^ratio ray / default wall time: [0-9.]+x .* max \|score difference\| (\S+)$", out, re.M)
    assert diff and float(diff.group(1)) < 1e-5, out  # same model, same images: the engines agree (float32)
