"""A new user's first model runs: a core install names the extra instead of a traceback;
an open_clip architecture without ``--pretrained`` is refused (it would score with random weights); a tag whose
weights cannot be fetched fails in seconds, naming ``--model`` and ``--pretrained`` separately."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scorers.cli import main
from tests.helpers.environment import refused_port
from tests.helpers.ts2_fixture_data import make_data_dir

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("data"), seg_ids=[0], image_size=16, with_questions=False)


def _run_cli(argv: list[str], env: dict, blocked: str | None = None, timeout: float = 120):
    """``ts2 ARGV`` in a fresh interpreter (this one); ``blocked`` makes that top-level module unimportable, as on a
    core install without it (a meta-path finder first in line raises ModuleNotFoundError for it, as the import
    system does for a module that is not installed; a ``None`` in sys.modules would trip scipy's torch probe)."""
    code = "import sys\n"
    if blocked:
        code += (
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            f"        if name.split('.')[0] == {blocked!r}:\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, Block())\n"
        )
    code += f"from scorers.cli import main\nsys.exit(main({argv!r}))\n"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done, time.monotonic() - start


def _last_line(done) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines, done.stderr
    return lines[-1]


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra)


@pytest.mark.parametrize("module", ["torch", "open_clip"])
def test_score_without_the_models_extra_names_it(module, data_dir, tmp_path):
    done, _ = _run_cli(["score", "clip_score", "--model", "ViT-B-32", "--pretrained", "openai", "--data-dir",
                        str(data_dir), "--out", str(tmp_path / "s.csv")], _env(), blocked=module)
    line = _last_line(done)
    assert done.returncode == 2
    assert line.startswith("ts2 score: error: ") and module in line
    assert "pip install '.[models]'" in line and "ts2-evaluate[models]" in line


def test_report_without_matplotlib_names_the_report_extra(tmp_path):
    (tmp_path / "s.csv").write_text("seg_id,file_name,node,x\n0,a.jpg,0,1\n")
    done, _ = _run_cli(["report", str(tmp_path / "s.csv"), "--metadata", str(tmp_path / "s.csv"), "--out",
                        str(tmp_path / "r")], _env(),
                       blocked="matplotlib")
    line = _last_line(done)
    assert done.returncode == 2 and "pip install '.[report]'" in line


def test_open_clip_architecture_without_pretrained_is_refused(data_dir, tmp_path, capsys):
    """The acceptance command of issue 23: exit 2 naming --pretrained (open_clip would build random weights)."""
    code = main(["score", "clip_score", "--model", "ViT-B-32", "--data-dir", str(data_dir), "--out",
                 str(tmp_path / "s.csv"), "--num-workers", "0", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("ts2 score: error: --model ViT-B-32: ") and "--pretrained" in line
    assert "--allow-random-weights" in line and "openai" in line  # a tag of ViT-B-32 to try
    assert not (tmp_path / "s.csv").exists()


def test_allow_random_weights_scores_on_purpose(data_dir, tmp_path, capsys):
    """The benchmarks' escape hatch: the smallest open_clip architecture with random weights runs and writes rows."""
    pytest.importorskip("open_clip")
    import pandas as pd

    out = tmp_path / "s.csv"
    code = main(["score", "clip_score", "--model", "RN50", "--allow-random-weights", "--data-dir", str(data_dir),
                 "--out", str(out), "--num-workers", "0", "--no-progress", "--batch-size", "64"])
    assert code == 0, capsys.readouterr().err
    metadata = pd.read_csv(data_dir / "metadata.csv")
    assert len(pd.read_csv(out)) == len(metadata)


@pytest.fixture()
def empty_hub(tmp_path, monkeypatch):
    """An empty Hub cache for this process (huggingface_hub reads these constants at call time)."""
    pytest.importorskip("open_clip")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return constants


def _timed_main(argv: list[str], capsys) -> tuple[int, str, float]:
    import open_clip  # noqa: F401  (imported before the clock starts: the import is not the failure's time)
    import torch  # noqa: F401

    start = time.monotonic()
    code = main(argv)
    seconds = time.monotonic() - start
    return code, capsys.readouterr().err, seconds


def test_pretrained_tag_offline_fails_fast_naming_both_options(empty_hub, monkeypatch, data_dir, tmp_path, capsys):
    """HF_HUB_OFFLINE=1 and nothing cached: one line at once (it was 58 s and 20 retry lines)."""
    monkeypatch.setattr(empty_hub, "HF_HUB_OFFLINE", True)
    code, err, seconds = _timed_main(["score", "clip_score", "--model", "ViT-B-32", "--pretrained", "openai",
                                      "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv")], capsys)
    line = err.strip().splitlines()[-1]
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert line.startswith("ts2 score: error: --model ViT-B-32 --pretrained openai: ")
    assert "'ViT-B-32 --pretrained openai'" not in line  # not quoted as one path
    assert "HF_HUB_OFFLINE=1" in line and "--pretrained FILE" in line and str(tmp_path / "hf" / "hub") in line
    assert seconds < 5  # the bound for an offline failure


def test_pretrained_tag_with_an_unreachable_hub_fails_after_one_probe(empty_hub, monkeypatch, data_dir, tmp_path,
                                                                      capsys):
    """A Hub endpoint that refuses connections (a closed loopback port), HF_HUB_OFFLINE not set."""
    with refused_port() as port:  # held while the CLI runs: refused, never taken by another socket meanwhile
        monkeypatch.setattr(empty_hub, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(empty_hub, "ENDPOINT", f"http://127.0.0.1:{port}")
        code, err, seconds = _timed_main(["score", "clip_score", "--model", "ViT-B-32", "--pretrained", "openai",
                                          "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv")], capsys)
    line = err.strip().splitlines()[-1]
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"http://127.0.0.1:{port} did not answer" in line and "--pretrained FILE" in line
    assert "HF_HUB_OFFLINE" not in line  # it was not set: do not blame it
    assert seconds < 5


def test_unknown_tag_lists_the_architectures_tags(data_dir, tmp_path, capsys):
    code = main(["score", "clip_score", "--model", "ViT-B-32", "--pretrained", "nosuchtag", "--data-dir",
                 str(data_dir), "--out", str(tmp_path / "s.csv")])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2 and "nosuchtag" in line and "laion2b_s34b_b79k" in line
