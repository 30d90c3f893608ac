"""Bad arguments fail fast: one line naming the flag, no traceback, before torch, Ray or Gradio load.

Wall times are measured by ``benchmarks/bench_fast_fail.py``; these tests pin what makes them fast (one line, the exit
code, which heavy modules were imported) and never assert on time."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from scorers.errors import ParameterError
from scorers.models.loading import check_model_source


# --- check_model_source: the one cheap model-argument check (shared with ts2 serve) -----------------------------------

def test_check_model_source_accepts_an_existing_folder_and_file(tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "weights.pt").write_bytes(b"")
    assert check_model_source(str(tmp_path / "model")) is None
    assert check_model_source(str(tmp_path / "weights.pt"), flag="--clip-model") is None
    assert check_model_source(f"local-dir:{tmp_path / 'model'}") is None  # open_clip's schema for a saved folder


def test_check_model_source_accepts_none_and_served_models():
    assert check_model_source(None) is None
    assert check_model_source("openai:gpt-4o-mini") is None


@pytest.mark.parametrize("value", ["/nope", "./models/clp", "../x", "~/no_such_model_dir", "a/b/c", "nope dir",
                                   "owner/na--me", "local-dir:/nope", "local-dir:owner/name"])
def test_check_model_source_refuses_a_missing_path_naming_flag_and_value(value, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError) as caught:
        check_model_source(value, flag="--clip-model")
    message = str(caught.value)
    assert message.startswith(f"--clip-model {value!r}: no such file or folder"), message
    assert "\n" not in message


@pytest.mark.parametrize("value", ["openai/clip-vit-base-patch16", "hf-hub:laion/CLIP-ViT-B-32", "gpt2", "ViT-B-32"])
def test_check_model_source_accepts_hub_ids_online(value, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert check_model_source(value) is None


def test_check_model_source_offline_needs_the_id_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ParameterError) as caught:
        check_model_source("owner/model")
    message = str(caught.value)
    assert message.startswith("--model 'owner/model': not a local folder and not in the Hugging Face cache")
    assert str(tmp_path / "hub") in message and "HF_HUB_OFFLINE=1" in message and "\n" not in message
    # the layout huggingface_hub writes: models--owner--model/snapshots/<revision>/
    (tmp_path / "hub" / "models--owner--model" / "snapshots" / "abc123").mkdir(parents=True)
    assert check_model_source("owner/model") is None
    assert check_model_source("gpt2") is None  # a bare name (legacy id, open_clip architecture): its loader decides


def test_check_model_source_cache_folder_agrees_with_huggingface_hub(tmp_path, monkeypatch):
    """The cache folder is read from the environment without importing huggingface_hub: the same folder it uses."""
    import subprocess
    import sys

    for env in ({"HF_HOME": str(tmp_path / "home")}, {"HF_HUB_CACHE": str(tmp_path / "cache")},
                {"XDG_CACHE_HOME": str(tmp_path / "xdg")}):
        clean = {k: v for k, v in os.environ.items() if k not in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME",
                                                                  "HUGGINGFACE_HUB_CACHE")}
        code = ("from huggingface_hub import constants; from scorers.models.loading import check_model_source\n"
                "try:\n    check_model_source('owner/not-cached')\nexcept ValueError as e:\n"
                "    print(constants.HF_HUB_CACHE); print(str(e).split('cache (')[1].split('),')[0])")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**clean, **env, "HF_HUB_OFFLINE": "1",
                                   "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        theirs, ours = done.stdout.split()
        assert os.path.realpath(theirs) == os.path.realpath(ours), env


# --- bad arguments: one line naming the flag, exit 2, nothing heavy imported (issue 34.3) ----------------------------

#: what a bad argument must be refused before importing
HEAVY = ("torch", "transformers", "gradio", "ray", "open_clip", "accelerate")


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad")
    (folder / "garbage.csv").write_text("hello world\nthis is not, a table\n")
    (folder / "binary.csv").write_bytes(bytes(range(128, 256)) * 3)
    (folder / "short.csv").write_text("id,image_id,my_metric\n0,0,0.5\n")
    (folder / "a_file").write_text("x")
    return folder


#: (argv, the start of the one error line); paths are relative to the bad_files folder (the working directory)
BAD_ARGUMENTS = [
    (["demo", "--data-dir", "nope"], "ts2 demo: error: --data-dir nope: data dir does not exist"),
    (["demo", "--data-dir", "a_file"], "ts2 demo: error: --data-dir a_file: data dir is a file, not a folder"),
    (["demo", "--scores-csv", "nope.csv"], "ts2 demo: error: --scores-csv nope.csv: released_scores.csv path does "
                                           "not exist"),
    (["demo", "--scores-csv", "garbage.csv"], "ts2 demo: error: --scores-csv garbage.csv: column 'hello world' has 1 "
                                              "non-numeric value(s)"),
    (["demo", "--scores-csv", "binary.csv"], "ts2 demo: error: --scores-csv binary.csv: not UTF-8 text"),
    (["demo", "--metadata", "garbage.csv"], "ts2 demo: error: --metadata garbage.csv: missing column(s) id (or "
                                            "seg_id)"),
    (["demo", "--paper", "garbage.csv"], "ts2 demo: error: --paper garbage.csv: missing column(s)"),
    (["demo", "--clip-model", "nope_dir"], "ts2 demo: error: --clip-model nope_dir: no such folder, and not a Hub id"),
    (["demo", "--clip-model", "./nope_dir"], "ts2 demo: error: --clip-model './nope_dir': no such file or folder"),
    (["demo", "--vlm", "/nope/vlm"], "ts2 demo: error: --vlm '/nope/vlm': no such file or folder"),
    (["score", "clip_scor", "--out", "o.csv"], "ts2 score: error: unknown scorer 'clip_scor' (did you mean "
                                               "'clip_score'?); available: align_score, clip_score,"),
    (["score", "clip_score", "--model", "/nope", "--out", "o.csv"], "ts2 score: error: --model '/nope': no such file "
                                                                     "or folder"),
    (["score", "tifa", "--sbert", "./nope", "--out", "o.csv"], "ts2 score: error: --sbert './nope': no such file or "
                                                               "folder"),
    (["score", "clip_score", "--model", "owner/not-cached", "--out", "o.csv"],
     "ts2 score: error: --model 'owner/not-cached': not a local folder and not in the Hugging Face cache"),
]


def run_in_fresh_python(argv: list[str], cwd: Path, **env: str) -> tuple[int, list[str], list[str]]:
    """``ts2 ARGV`` in a fresh interpreter: its exit code, its non-blank stderr lines and the :data:`HEAVY` modules it
    had imported when it returned."""
    import json
    import subprocess
    import sys

    code = (f"import json, sys\nfrom scorers.cli import main\ncode = main({argv!r})\n"
            f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))\nsys.exit(code)")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(root), **env})
    return done.returncode, [l for l in done.stderr.splitlines() if l.strip()], json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv, start", BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS])
def test_bad_argument_is_one_line_before_torch_gradio_or_ray(argv, start, bad_files, tmp_path):
    code, lines, heavy = run_in_fresh_python(argv, bad_files, HF_HOME=str(tmp_path / "hf"))
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith(start), lines
    assert heavy == [], f"imported {heavy} before refusing {argv}"


def test_scores_that_do_not_pair_with_the_release_metadata_are_refused_at_start(bad_files, shared_ts2, tmp_path):
    code, lines, heavy = run_in_fresh_python(["demo", "--scores-csv", "short.csv"], bad_files,
                                             TS2_DATA=str(shared_ts2))
    assert code == 2 and heavy == []
    assert lines == ["ts2 demo: error: --scores-csv short.csv: 2839 metadata row(s) have no score row; first: (0, 1), "
                     "(0, 2), (0, 3), (0, 4), (0, 5) ..."]


@pytest.mark.parametrize("argv, start", [case for case in BAD_ARGUMENTS if "garbage.csv" in case[0]
                                         or "clip_scor" in case[0]])
def test_bad_argument_in_process(argv, start, bad_files, monkeypatch, capsys):
    from scorers.cli import main

    monkeypatch.chdir(bad_files)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and [l for l in err.splitlines() if l.strip()][0].startswith(start)


def test_did_you_mean():
    from scorers.checks import did_you_mean

    assert did_you_mean("clip_scor", ["clip_score", "align_score"]) == " (did you mean 'clip_score'?)"
    assert did_you_mean("PICKSCORE", ["pickscore", "hpsv2"]) == " (did you mean 'pickscore'?)"
    assert did_you_mean("tifa-v1", ["tifa_v1", "ts2"]) == " (did you mean 'tifa_v1'?)"
    assert did_you_mean("zzz", ["clip_score", "tifa"]) == ""


# --- the demo's one Hub probe ------------------------------------------------------------------------------------

class SilentServer:
    """A loopback TCP server that accepts connections and never answers (a Hub behind a dead proxy); counts them."""

    def __init__(self):
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.connections, self.held = 0, []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(connection)

    def close(self):
        for connection in self.held:
            connection.close()
        self.sock.close()


@pytest.fixture
def silent_hub():
    server = SilentServer()
    yield server
    server.close()


def test_hub_probe_is_one_connection_and_says_why(silent_hub, monkeypatch):
    from scorers.demo.config import hub_probe

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent_hub.port}")
    reason = hub_probe(timeout=0.5)
    assert reason == f"127.0.0.1:{silent_hub.port} did not answer within 0.5 s" or \
        reason == f"http://127.0.0.1:{silent_hub.port} did not answer within 0.5 s", reason
    assert silent_hub.connections == 1


def test_unreachable_hub_turns_the_demo_offline_in_one_line(silent_hub, monkeypatch, capsys):
    import huggingface_hub.constants as constants

    from scorers.cli.demo import go_offline_unless_the_hub_answers

    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent_hub.port}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    go_offline_unless_the_hub_answers()
    assert os.environ["HF_HUB_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE is True
    (line,) = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert line.startswith("ts2 demo: the Hugging Face Hub is not reachable (") and "working offline" in line
    assert silent_hub.connections == 1
    go_offline_unless_the_hub_answers()  # offline now: no second probe
    assert silent_hub.connections == 1


def test_demo_with_a_silent_hub_probes_once_and_never_retries(silent_hub, shared_ts2, tmp_path):
    """The whole start-up (tables from $TS2_DATA, images from the Hub dataset): one connection to the Hub, no
    huggingface_hub retry loop ("Retrying in 8s [Retry 5/5]"), then serving; Ctrl+C stops it with one line."""
    import signal
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TS2_DATA": str(shared_ts2), "HF_HOME": str(tmp_path / "hf"),
           "HF_ENDPOINT": f"http://127.0.0.1:{silent_hub.port}"}
    env.pop("HF_HUB_OFFLINE", None)
    process = subprocess.Popen([sys.executable, "-c", "import sys; from scorers.cli import main; sys.exit(main())",
                                "demo", "--port", str(port)], cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip())
            if "serving on" in line:
                break
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        lines += process.communicate(timeout=60)[0].splitlines()
    finally:
        if process.poll() is None:
            process.kill()
    text = "\n".join(lines)
    assert not any("Retry" in l for l in lines) and "Traceback" not in text, text
    assert silent_hub.connections == 1, text
    assert lines[0].startswith("ts2 demo: the Hugging Face Hub is not reachable"), text
    assert f"ts2 demo: serving on http://127.0.0.1:{port}/ (Ctrl+C to stop)" in lines, text
    assert lines[-1] == "ts2 demo: stopped", text
    assert process.returncode == 0


# --- Ctrl+C: one line, exit 130 ------------------------------------------------------------------------------------

def test_interrupt_in_a_finalizer_still_ends_the_command_in_one_line():
    """Python drops a KeyboardInterrupt raised in ``__del__`` ("Exception ignored in ...") and goes on: under
    ``interrupts_in_one_line`` it ends the process with the one line and 130."""
    import subprocess
    import sys

    code = ("import gc, time\nfrom scorers.cli._interrupt import interrupts_in_one_line\n"
            "class Finalised:\n    def __del__(self):\n        raise KeyboardInterrupt\n"
            "with interrupts_in_one_line('ts2 x: interrupted'):\n    Finalised()\n    gc.collect()\n"
            "    print('went on')\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == 130 and done.stderr == "ts2 x: interrupted\n" and "went on" not in done.stdout


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from tests.helpers.tiny_embed_models import build_hf_clip
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("run")
    return {"model": build_hf_clip(str(root)), "data": str(make_data_dir(root / "data", seg_ids=[0, 1, 2],
                                                                         image_size=16, with_questions=False))}


@pytest.mark.parametrize("command", ["score", "demo"])
@pytest.mark.parametrize("moment", [0.2, 1.0, 2.5, 5.0])
def test_ctrl_c_at_any_moment_of_start_up_is_one_line_and_130(command, moment, tiny_run, shared_ts2, tmp_path):
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[2]
    argv = (["score", "clip_score", "--data-dir", tiny_run["data"], "--model", tiny_run["model"], "--out",
             str(tmp_path / "s.csv")] if command == "score" else ["demo", "--port", str(free_port())])
    process = subprocess.Popen([sys.executable, "-c", "import sys, ts2_evaluate; sys.exit(ts2_evaluate.main())",
                                *argv], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(root), "TS2_DATA": str(shared_ts2)})
    time.sleep(moment)
    if process.poll() is not None:
        pytest.skip(f"ts2 {command} ended before {moment} s")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    lines = [l for l in err.replace("\r", "\n").splitlines() if l.strip() and "Loading weights" not in l
             and "clip_score:" not in l]  # transformers' and the run's progress bars
    if command == "demo" and lines == ["ts2 demo: stopped"]:  # already serving: Ctrl-C is the way to stop it
        assert process.returncode == 0, err
        return
    assert process.returncode == 130, err
    assert lines == [f"ts2 {command}: interrupted"], err


# --- 34.5: the demo's leaderboard notes, ts2 reproduce's swap note, Ray's console ---------------------------------

def test_reproduce_states_the_llmscore_swap_once(shared_ts2, capsys):
    import json

    from scorers.cli import main
    from scorers.ts2.reproduce import DELTA_SWAP_NOTE

    args = ["reproduce", "--data-dir", str(shared_ts2), "--paper", str(shared_ts2 / "paper_table2.csv"),
            "--n-bootstrap", "0"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("look swapped") == 1 and "not a reproduction failure" in out
    footnote = next(l for l in out.splitlines() if "look swapped" in l)
    mark = footnote.split()[0]
    assert mark.startswith("[") and mark in next(l for l in out.splitlines() if l.startswith("llmscore_ec")
                                                 and " delta " in l).split()[-1]
    assert main(args + ["--json"]) == 0  # JSON keeps the note (it has no footnotes) and the rows' notes
    assert DELTA_SWAP_NOTE in json.loads(capsys.readouterr().out)["notes"]


def test_demo_leaderboard_shows_no_pairing_note(shared_ts2):
    pytest.importorskip("gradio")
    import gradio as gr

    from scorers.demo import AppConfig, build_app
    from scorers.demo.leaderboard_tab import published_reproduction
    from scorers.demo.sources import load_tables

    config = AppConfig.resolve(metadata=shared_ts2 / "metadata.csv", scores_csv=shared_ts2 / "released_scores.csv",
                               paper_table=shared_ts2 / "paper_table2.csv")
    assert any("paired by row position" in n for n in published_reproduction(load_tables(config), config).notes)
    texts = [str(b.value() if callable(b.value) else b.value or "") for b in build_app(config).blocks.values()
             if isinstance(b, gr.Markdown)]
    assert not any("paired by row position" in t or "row position" in t for t in texts)


def test_quiet_ray_logging_keeps_warnings_that_matter():
    import logging

    pytest.importorskip("ray")
    import ray.data  # noqa: F401  (configures the ray.data loggers)

    from scorers.scoring.engines.ray_data import QUIETED, quiet_ray_logging

    quiet_ray_logging()
    quiet_ray_logging()  # idempotent
    for name, start in QUIETED.items():
        logger = logging.getLogger(name)
        assert len(logger.filters) == len({id(f) for f in logger.filters})
        dropped = logger.makeRecord(name, logging.WARNING, __file__, 1, start + " and more", (), None)
        kept = logger.makeRecord(name, logging.WARNING, __file__, 1, "a warning that matters", (), None)
        assert not logger.filter(dropped) and logger.filter(kept)
    console = [h for h in logging.getLogger("ray.data").handlers if not isinstance(h, logging.FileHandler)]
    assert console and all(h.level >= logging.WARNING for h in console)


def test_ray_engine_prints_one_progress_bar_and_no_ray_noise(tiny_run, tmp_path):
    """``ts2 score --engine ray`` on a small job (2 actors, fewer batches than the pool could take): no error-level
    core_worker.cc line, no "Progress bars disabled", no UserWarning, no Ray Data INFO lines; one bar."""
    pytest.importorskip("ray")
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    argv = ["score", "clip_score", "--engine", "ray", "--ray-workers", "2", "--batch-size", "32", "--data-dir",
            tiny_run["data"], "--model", tiny_run["model"], "--out", str(tmp_path / "r.csv")]
    done = subprocess.run([sys.executable, "-c", "import sys; from scorers.cli import main; sys.exit(main())", *argv],
                          cwd=root, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(root), "RAY_USAGE_STATS_ENABLED": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    for noise in ("core_worker.cc", "Progress bars disabled", "UserWarning", "streaming_executor", "Traceback",
                  "Token authentication", "Warning"):
        assert noise not in done.stderr, done.stderr[-3000:]
    bars = [line for line in done.stderr.split("\n") if "clip_score (ray)" in line]
    # one bar started (one 0/N line); its closing state may be drawn again on its own line (known, see the issue note)
    assert sum(" 0/" in line for line in bars) == 1 and all("clip_score (ray)" in line for line in bars), \
        done.stderr[-3000:]
    assert done.stderr.rstrip("\n").split("\n")[-1].startswith("wrote ")
