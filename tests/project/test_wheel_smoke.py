"""Wheel smoke test: build a wheel from the checkout, install it into a fresh venv, and run it from a
folder outside the source tree with no source on the path.

The venv sees the site-packages of the interpreter running the tests (a ``.pth`` file listing them, so torch,
datasets, evaluate... need no download). Not ``--system-site-packages``: that shows the *base* interpreter's
site-packages, which lack the dependencies when the tests run in a virtualenv. Plain paths in a ``.pth`` are not
scanned for further ``.pth`` files, so an editable install of a checkout there stays invisible. The wheel goes into the
venv itself (``--no-deps``), and every step checks that ``scorers`` is the venv's copy, not the source tree nor the
editable install of another checkout. A loopback HTTP server stands in for the
Hub and GitHub (tests/tables/test_release.py's ``sources``).
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

import pytest

from scorers import __version__
from scorers.tables import release
from tests.helpers.ts2_fixture_data import make_data_dir

ROOT = Path(__file__).resolve().parents[2]
# what the wheel is built from (copied, so no build/ or *.egg-info is left in the checkout nor a stale one reused)
SOURCES = ["pyproject.toml", "setup.py", "README.md", "ts2_evaluate.py", "scorers", "dataset_script"]


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A venv (the running interpreter's site-packages visible) with the checkout's wheel installed; returns its
    python."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    env = _clean_env()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(work / "dist"), str(src)], env=env, check=True, capture_output=True, timeout=300)
    wheels = list((work / "dist").glob("ts2_evaluate-*.whl"))
    assert [w.name for w in wheels] == [f"ts2_evaluate-{__version__}-py3-none-any.whl"]
    venv.EnvBuilder(with_pip=True).create(work / "venv")
    python = work / "venv" / "bin" / "python"
    own_site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              env=env, check=True, capture_output=True, text=True).stdout.strip()
    (Path(own_site) / "_running_interpreter_site.pth").write_text("\n".join(running_site_packages()) + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                    str(wheels[0])], env=env, check=True, capture_output=True, timeout=300)
    return python


def running_site_packages() -> list[str]:
    """The site-packages folders of the interpreter running the tests (a venv's own, and the base's when it was made
    with --system-site-packages), in its sys.path order."""
    import site

    found = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]
    found += [p for p in site.getsitepackages() if p not in found and Path(p).is_dir()]
    return found


def _clean_env(**extra: str) -> dict[str, str]:
    """os.environ without anything that would put the source tree on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def _run(python: Path, args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    return done


def test_scorers_is_the_wheels_copy(wheel_venv, tmp_path):
    done = _run(wheel_venv, [str(wheel_venv), "-c", "import scorers, ts2_evaluate; print(scorers.__file__); "
                             "print(ts2_evaluate.__file__); print(scorers.__version__)"], tmp_path, _clean_env())
    scorers_file, entry_file, version = done.stdout.split()
    site = wheel_venv.parents[1]
    assert Path(scorers_file).is_relative_to(site) and Path(entry_file).is_relative_to(site), done.stdout
    assert not Path(scorers_file).is_relative_to(ROOT)
    assert version == __version__


def test_reproduce_from_the_wheel_downloads_once_then_makes_no_request(wheel_venv, sources, fresh_cache,  # noqa: F811
                                                                        tmp_path):
    env = _clean_env(HF_HUB_OFFLINE="0", HF_HOME=str(fresh_cache))  # HF_ENDPOINT / TS2_GITHUB_URL: the fixture
    env.pop(release.DATA_ENV, None)
    ts2 = str(wheel_venv.parent / "ts2")
    first = _run(wheel_venv, [ts2, "reproduce"], tmp_path, env)
    # Table 2 with residuals, no paths given: CLIPScore rank Avg, ours / the paper's 71.4 (from the official
    # full-precision table, served by the stand-in) / residual
    assert re.search(r"clipscore\s+rank\s+\d+\.\d / 71\.4 / -\d+\.\d", first.stdout), first.stdout[:2000]
    assert "only our values are shown" not in first.stdout
    downloads = _release_requests(sources)
    assert len(downloads) > 0
    second = _run(wheel_venv, [ts2, "reproduce"], tmp_path, env)
    assert _release_requests(sources) == downloads  # second run: 0 HTTP requests
    assert second.stdout == first.stdout


def _release_requests(sources) -> list:  # noqa: F811
    """The server's requests, less huggingface_hub's own agent-registry fetch (``/api/agent-harnesses``, made at most
    once a day when the shell sets an AI-agent variable such as ``AI_AGENT``; no part of ts2)."""
    return [r for r in sources.requests if r[1] != "/api/agent-harnesses"]


def test_load_ts2_from_the_wheel(wheel_venv, shared_ts2, tmp_path):
    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0, 1])
    env = _clean_env(HF_HOME=str(tmp_path / "hf"))
    expected = sum(1 for line in (data_dir / "metadata.csv").read_text().splitlines()[1:] if line.strip())
    done = _run(wheel_venv, [str(wheel_venv), "-c", "import sys, scorers.ts2.dataset as d; "
                             f"segs = d.load_ts2('segs', data_dir={str(data_dir)!r}); "
                             "print(len(segs), d.__file__)"], tmp_path, env)
    rows, module_file = done.stdout.split()
    assert int(rows) == expected  # one row per image of the two SEGs (counted from metadata.csv above)
    assert Path(module_file).is_relative_to(wheel_venv.parents[1])


def test_score_from_the_wheel_without_paths(wheel_venv, shared_ts2, tmp_path):
    """The README's third command from the wheel: ``ts2 score clip_score --out clip.csv --meta`` with no --data-dir.
    A loopback stand-in of the Hub dataset serves two generated SEGs; the model is a tiny local CLIP (the default is a
    Hub download) and the release tables come from TS2_DATA (their download is tested above)."""
    from scorers.tables.release import HUB_REPO, HUB_REVISION
    from tests.helpers.loopback_hub import LoopbackHubDataset
    from tests.helpers.tiny_embed_models import build_hf_clip

    data_dir = make_data_dir(tmp_path / "data", seg_ids=[0, 1], with_questions=False)
    clip = build_hf_clip(tmp_path / "clip")
    ts2 = str(wheel_venv.parent / "ts2")
    with LoopbackHubDataset(data_dir, HUB_REPO, HUB_REVISION) as hub:
        env = _clean_env(HF_HOME=str(tmp_path / "hf"), HF_DATASETS_CACHE=str(tmp_path / "hf" / "datasets"),
                         HF_HUB_OFFLINE="0", HF_ENDPOINT=hub.base, TS2_DATA=str(shared_ts2))
        done = _run(wheel_venv, [ts2, "score", "clip_score", "--model", clip, "--out", "clip.csv", "--meta",
                                 "--num-workers", "0", "--no-progress"], tmp_path, env)
        assert any(p.endswith("images/001-00.jpg") for _, p in hub.requests)  # the images came from the Hub
    expected = sum(1 for line in (data_dir / "metadata.csv").read_text().splitlines()[1:] if line.strip())
    assert f"wrote clip.csv: {expected} rows ({expected} scored now" in done.stderr
    assert ">> clip_score" in done.stdout and "clipscore" in done.stdout  # beside the published rows


def test_evaluate_load_of_a_copied_module_from_the_wheel(wheel_venv, tmp_path):
    module = tmp_path / "modules" / "ts2_meta"
    shutil.copytree(ROOT / "evaluate_modules" / "ts2_meta", module)
    env = _clean_env(HF_HOME=str(tmp_path / "hf"))
    # two SEGs, nodes 0 < 1 < 2 errors, scores falling with the error count: a perfect ranking, rank = 1 by hand
    code = ("import evaluate, scorers; m = evaluate.load(%r); "
            "r = m.compute(scores=[3, 2, 1, 3, 2, 1], seg_ids=[0, 0, 0, 1, 1, 1], nodes=['0', '1', '2', '0', '1', '2']); "
            "print(r['rank'], scorers.__file__)" % str(module))
    done = _run(wheel_venv, [str(wheel_venv), "-c", code], tmp_path, env)
    rank, scorers_file = done.stdout.split()[-2:]
    assert float(rank) == pytest.approx(1.0)
    assert Path(scorers_file).is_relative_to(wheel_venv.parents[1])


@pytest.mark.parametrize("command", ["ts2", "ts2-evaluate"])
def test_both_command_names_are_installed_and_name_the_package(wheel_venv, tmp_path, command):
    """The upstream T2IScoreScore package also installs a ``ts2``: the wheel installs the same entry as
    ``ts2-evaluate`` too, and ``--version`` says which package answers."""
    script = wheel_venv.parent / command
    assert script.is_file(), sorted(p.name for p in wheel_venv.parent.iterdir())
    done = _run(wheel_venv, [str(script), "--version"], tmp_path, _clean_env())
    assert done.stdout.strip() == f"ts2-evaluate {__version__}"


@pytest.mark.parametrize("command", ["ts2", "ts2-evaluate"])
def test_both_command_names_check_that_scorers_is_this_package(wheel_venv, tmp_path, command):
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "scorers.py").write_text("x = 1  # someone's own module, named like the package\n")
    done = subprocess.run([str(wheel_venv.parent / command), "--version"], cwd=tmp_path,
                          env={**_clean_env(), "PYTHONPATH": str(stray)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"{command}: error: a file scorers.py in {stray} shadows the ts2-evaluate package "
                                   "(import name `scorers`); rename it")


def test_demo_help_from_the_wheel(wheel_venv, tmp_path):
    done = _run(wheel_venv, [str(wheel_venv.parent / "ts2"), "demo", "--help"], tmp_path, _clean_env())
    assert "usage: ts2 demo" in done.stdout


def test_demo_serves_from_the_wheel(wheel_venv, shared_ts2, tmp_path):
    """``ts2 demo`` starts from the installed wheel (the app is ``scorers.demo``) and answers on loopback."""
    import gradio  # noqa: F401  (the [demo] extra: a test dependency, never skipped)

    from tests.helpers.loopback_http import poll_url

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = [str(wheel_venv.parent / "ts2"), "demo", "--port", str(port), "--metadata", str(shared_ts2 / "metadata.csv"),
            "--scores-csv", str(shared_ts2 / "released_scores.csv"), "--paper", str(shared_ts2 / "paper_table2.csv")]
    env = _clean_env(HF_HOME=str(tmp_path / "hf"), GRADIO_ANALYTICS_ENABLED="False")
    process = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    lines: list[str] = []  # read as they come: the server answers inside gradio's launch, before the command prints

    def read() -> None:
        for line in process.stdout:
            lines.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    serving = f"ts2 demo: serving on http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 120
        config = poll_url(f"http://127.0.0.1:{port}/config", process, deadline)
        assert "19 published metrics" in config, "the demo from the wheel did not answer on loopback"
        while time.time() < deadline and process.poll() is None and not any(serving in line for line in lines):
            time.sleep(0.2)  # the line follows launch's return
    finally:
        process.terminate()
        process.wait(timeout=30)
        reader.join(timeout=30)
    assert any(serving in line for line in lines), "".join(lines)[-2000:]
