"""Default checkpoints of hpsv3 and unifiedreward are fetched at pinned Hub commits.

The expected hashes are the ones public code pins (read with code search; see the comments at the constants):
``MizzenAI/HPSv3@4f81e3e0...`` with ``Qwen/Qwen2-VL-7B-Instruct@eed13092...``, and the
``CodeGoat24/UnifiedReward-2.0-qwen3vl-8b`` snapshot ``4175e6b7...``. The HPSv3 checkpoint is downloaded from a
loopback Hub that serves it only at the pinned commit; the base model and the chat VLM are checked at the
``from_pretrained`` call (a real download would need the Hub).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.loopback_hub import LoopbackHubDataset, point_hub_at

HPSV3_COMMIT = "4f81e3e09edd82fe3c5f636444c721b592a735ca"
QWEN2VL_7B_COMMIT = "eed13092ef92e448dd6875b2a00151bd3f7db0ac"
UNIFIEDREWARD_COMMIT = "4175e6b78d62f639282797d05ccea35d3be823cf"


class LoopbackHubModel(LoopbackHubDataset):
    """One model repo at one commit: ``/<repo>/resolve/<commit>/<file>`` (model repos have no ``datasets/`` prefix)."""

    def route(self, path: str):
        path = self.path_of(path)
        resolve = f"/{self.repo_id}/resolve/{self.commit}/"
        if path.startswith(resolve) and path[len(resolve):] in self.files:
            data = self.files[path[len(resolve):]]
            return 200, {"Content-Type": "application/octet-stream", "X-Repo-Commit": self.commit,
                         "ETag": f'"{self._oid(data)}"'}, data
        return 404, {}, b""


def test_the_pins_are_the_cited_commits():
    from scorers.metrics.judges.unifiedreward import DEFAULT_UNIFIEDREWARD_MODEL, DEFAULT_UNIFIEDREWARD_REVISION
    from scorers.models.reward_checkpoints import (DEFAULT_HPSV3_BASE, DEFAULT_HPSV3_BASE_REVISION, DEFAULT_HPSV3_MODEL,
                                                   DEFAULT_HPSV3_REVISION)

    assert (DEFAULT_HPSV3_MODEL, DEFAULT_HPSV3_REVISION) == ("MizzenAI/HPSv3", HPSV3_COMMIT)
    assert (DEFAULT_HPSV3_BASE, DEFAULT_HPSV3_BASE_REVISION) == ("Qwen/Qwen2-VL-7B-Instruct", QWEN2VL_7B_COMMIT)
    assert (DEFAULT_UNIFIEDREWARD_MODEL, DEFAULT_UNIFIEDREWARD_REVISION) == (
        "CodeGoat24/UnifiedReward-2.0-qwen3vl-8b", UNIFIEDREWARD_COMMIT)


def test_hpsv3_checkpoint_is_downloaded_at_the_pinned_commit(tmp_path, monkeypatch):
    import numpy as np
    from PIL import Image

    from scorers.models.hpsv3 import HPSv3Backend
    from tests.helpers.tiny_reward_models import build_hpsv3

    folder = Path(build_hpsv3(tmp_path / "tiny"))
    served = tmp_path / "served"
    served.mkdir()
    (served / "HPSv3.safetensors").write_bytes((folder / "HPSv3.safetensors").read_bytes())
    with LoopbackHubModel(served, "MizzenAI/HPSv3", HPSV3_COMMIT) as hub:
        point_hub_at(monkeypatch, hub.base, tmp_path / "hf" / "hub")
        from_hub = HPSv3Backend("MizzenAI/HPSv3", base=str(folder), device="cpu", pixels=16 * 28 * 28)
        files = [p for _, p in hub.requests if "/resolve/" in p]  # (huggingface_hub also asks /api/... endpoints)
    assert files and all(p == f"/MizzenAI/HPSv3/resolve/{HPSV3_COMMIT}/HPSv3.safetensors" for p in files)
    local = HPSv3Backend(str(folder), device="cpu")
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 50, 3), dtype=np.uint8))
    item = local.image_transform(image)
    np.testing.assert_array_equal(from_hub.rewards([item], ["a red cube"]).numpy(),
                                  local.rewards([item], ["a red cube"]).numpy())


class Stop(Exception):
    pass


def _record_from_pretrained(monkeypatch, target, calls):
    def fake(source, *args, **kwargs):
        calls.append((str(source), kwargs.get("revision")))
        raise Stop

    monkeypatch.setattr(target, "from_pretrained", fake)


def test_hpsv3_base_model_is_loaded_at_the_pinned_commit(tmp_path, monkeypatch):
    import transformers

    import scorers.models.loading as loading
    from scorers.models.hpsv3 import HPSv3Backend

    weights = tmp_path / "HPSv3.safetensors"
    weights.write_bytes(b"")
    monkeypatch.setattr(loading, "_resolve", lambda name, option, files: name)  # "the Hub answers"
    calls = []
    _record_from_pretrained(monkeypatch, transformers.AutoConfig, calls)
    with pytest.raises(Stop):
        HPSv3Backend(str(weights), device="cpu")
    assert calls == [("Qwen/Qwen2-VL-7B-Instruct", QWEN2VL_7B_COMMIT)]
    calls.clear()
    with pytest.raises(Stop):  # another base: no pin
        HPSv3Backend(str(weights), base="someone/other-base", device="cpu")
    assert calls == [("someone/other-base", None)]


@pytest.mark.parametrize("model, revision", [(None, UNIFIEDREWARD_COMMIT),
                                             ("someone/another-judge", None)])
def test_unifiedreward_default_model_is_loaded_at_the_pinned_commit(model, revision, monkeypatch):
    import transformers

    import scorers.models.loading as loading
    from scorers.metrics.judges.unifiedreward import UnifiedRewardScorer

    monkeypatch.setattr(loading, "_resolve", lambda name, option, files: name)
    calls = []
    _record_from_pretrained(monkeypatch, transformers.AutoProcessor, calls)
    with pytest.raises(Stop):
        UnifiedRewardScorer(model=model, device="cpu")
    assert calls == [(model or "CodeGoat24/UnifiedReward-2.0-qwen3vl-8b", revision)]
