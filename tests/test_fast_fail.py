"""Bad arguments fail fast (issue 34.3): one line naming the flag, no traceback, before torch, Ray or Gradio load.

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


def test_check_model_source_accepts_none_and_served_models():
    assert check_model_source(None) is None
    assert check_model_source("openai:gpt-4o-mini") is None


@pytest.mark.parametrize("value", ["/nope", "./models/clp", "../x", "~/no_such_model_dir", "a/b/c", "nope dir",
                                   "owner/na--me"])
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
                                   "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        theirs, ours = done.stdout.split()
        assert os.path.realpath(theirs) == os.path.realpath(ours), env
