"""Fast, clear failures before and while loading a model: no Hub (offline, or a Hub that never answers), a
``--model`` path typo, an unknown ``--option``, ``--batch-size 0``: each is one ``ts2 ...: error:`` line, exit 2,
no traceback, no minute of retries."""
from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from scorers.cli import main
from tests.helpers.ts2_fixture_data import make_data_dir
from tests.helpers.environment import console_script

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CLIP = "openai/clip-vit-base-patch16"  # CLIPScore's default
DEFAULT_SBERT = "sentence-transformers/all-mpnet-base-v2"  # TIFA's


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return make_data_dir(tmp_path_factory.mktemp("data"), seg_ids=[0], image_size=16, with_questions=False)


def _one_error_line(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err[-3000:]
    assert lines and lines[-1].startswith(f"ts2 {command}: error: "), err[-3000:]
    return lines[-1]


def test_default_clip_offline_names_model_cache_and_option(data_dir, tmp_path, capsys):
    from huggingface_hub import constants

    assert constants.is_offline_mode()  # tests/conftest.py sets HF_HUB_OFFLINE=1, HF_HOME to an empty folder
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv")])
    line = _one_error_line(capsys.readouterr().err, "score")
    assert code == 2
    assert f"'{DEFAULT_CLIP}'" in line and str(constants.HF_HUB_CACHE) in line
    assert "HF_HUB_OFFLINE=1" in line and "--model PATH" in line


def _answers_tables(folder: Path) -> Path:
    from tests.helpers.qga_fakes import METADATA_CSV, QUESTIONS_CSV

    (folder / "tifa_questions.csv").write_text(QUESTIONS_CSV)
    (folder / "metadata.csv").write_text(METADATA_CSV)
    raw = folder / "raw.csv"  # question 1 is multiple choice: matching it needs the SBERT model
    raw.write_text("0,000-00.jpg,0,Yes</s>\n0,000-00.jpg,1,red</s>\n0,000-01.jpg,0,no\n0,000-01.jpg,1,blue\n"
                   "1,001-00.jpg,0,yes\n")
    return raw


def test_default_sbert_offline_names_model_cache_and_option(tmp_path, capsys):
    from huggingface_hub import constants

    raw = _answers_tables(tmp_path)
    code = main(["answers-to-scores", str(raw), "--questions", "tifa", "--data-dir", str(tmp_path),
                 "--out", str(tmp_path / "s.csv")])
    line = _one_error_line(capsys.readouterr().err, "answers-to-scores")
    assert code == 2
    assert f"'{DEFAULT_SBERT}'" in line and str(constants.HF_HUB_CACHE) in line and "--sbert PATH" in line


class SilentHub:
    """A loopback TCP server that accepts connections and never answers (a Hub behind a dead network): counts the
    connections; stops in the fixture's teardown."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections, self.stop, self.open = 0, threading.Event(), []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            self.open.append(connection)  # held open, never read or answered

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        for connection in self.open:
            connection.close()
        self.sock.close()


@pytest.fixture()
def silent_hub():
    hub = SilentHub()
    yield hub
    hub.close()


@pytest.mark.parametrize("command", ["score", "answers-to-scores"])
def test_unreachable_hub_fails_after_one_probe_not_a_minute_of_retries(command, silent_hub, data_dir, tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="0", TRANSFORMERS_OFFLINE="0", HF_DATASETS_OFFLINE="0",
               HF_ENDPOINT=f"http://127.0.0.1:{silent_hub.port}", HF_HOME=str(tmp_path / "hf"))
    if command == "score":
        argv = ["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv")]
        model, option = DEFAULT_CLIP, "--model"
    else:
        argv = ["answers-to-scores", str(_answers_tables(tmp_path)), "--questions", "tifa", "--data-dir",
                str(tmp_path), "--out", str(tmp_path / "s.csv")]
        model, option = DEFAULT_SBERT, "--sbert"
    # the timeout only guards against a hang: without the probe, transformers retries for 30-90 s, then times out
    done = subprocess.run([console_script("ts2"), *argv], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=150)
    line = _one_error_line(done.stderr, command)
    assert done.returncode == 2
    assert f"'{model}'" in line and f"http://127.0.0.1:{silent_hub.port} did not answer within 3 s" in line
    assert str(tmp_path / "hf" / "hub") in line and f"{option} PATH" in line
    assert silent_hub.connections == 1  # one probe, no retries


def test_cached_model_loads_from_its_snapshot_when_the_hub_does_not_answer(tmp_path, monkeypatch):
    from scorers.models import loading

    snapshot = tmp_path / "models--owner--tiny" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    monkeypatch.setattr(loading, "_cached_snapshot", lambda repo, files: str(snapshot) if repo == "owner/tiny"
                        else None)
    monkeypatch.setattr(loading, "hub_reachable", lambda: False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)
    with loading.model_source("owner/tiny") as source:
        assert source == str(snapshot)
    with pytest.raises(loading.ModelLoadError, match=r"'owner/other'.*did not answer within 3 s"):
        with loading.model_source("owner/other"):
            pass


def test_model_path_typo_is_one_line(data_dir, tmp_path, capsys):
    typo = str(tmp_path / "models" / "clpi")
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv"),
                 "--model", typo])
    line = _one_error_line(capsys.readouterr().err, "score")
    assert code == 2 and line == f"ts2 score: error: --model {typo!r}: no such file or folder (a local model folder, " \
                                 "or a Hub id like owner/name)"  # checked before torch loads (check_model_source)


def test_unknown_option_lists_the_valid_ones_before_loading(data_dir, tmp_path, capsys):
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv"),
                 "--option", "foo=1", "--model", str(tmp_path)])  # a folder that is never loaded
    line = _one_error_line(capsys.readouterr().err, "score")
    assert code == 2
    assert line == ("ts2 score: error: scorer 'clip_score' has no option 'foo'; its options: allow_random_weights, "
                    "backend, decode, form, model, precision, pretrained, w (--option KEY=VALUE; model, precision, "
                    "pretrained, form, decode and allow_random_weights also have their own flags)")


@pytest.mark.parametrize("flag, value, message", [
    ("--batch-size", "0", "argument --batch-size: must be an integer >= 1, got '0'"),  # refused while parsing
    ("--num-workers", "-1", "argument --num-workers: must be an integer from 0 to 256, got '-1'"),
])
def test_bad_run_options_are_refused_before_loading_the_model(flag, value, message, data_dir, tmp_path, capsys):
    code = main(["score", "clip_score", "--data-dir", str(data_dir), "--out", str(tmp_path / "s.csv"),
                 "--model", str(tmp_path / "never" / "loaded"), flag, value])
    assert code == 2 and _one_error_line(capsys.readouterr().err, "score") == f"ts2 score: error: {message}"
