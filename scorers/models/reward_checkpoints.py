"""The default checkpoints of the reward models whose model files import torch at load (ImageReward, HPSv3): names
and pinned revisions only, no torch, so the ``evaluate`` modules and the registry can name them on an install
without the ``models`` extra. :mod:`scorers.models.imagereward` and :mod:`scorers.models.hpsv3` use them; import
them from here."""
from __future__ import annotations

__all__ = ["DEFAULT_HPSV3_BASE", "DEFAULT_HPSV3_BASE_REVISION", "DEFAULT_HPSV3_MODEL", "DEFAULT_HPSV3_REVISION",
           "DEFAULT_IMAGEREWARD_MODEL", "DEFAULT_IMAGEREWARD_REVISION"]

#: the official checkpoint repo (files ``ImageReward.pt`` and ``med_config.json``; the Hub now also names it
#: ``zai-org/ImageReward``). Revision: the commit pinned for ``zai-org/ImageReward`` by a public reward pipeline's
#: checkpoint table (read with code search; not confirmed against the Hub from this machine), used for the default
#: repo only
DEFAULT_IMAGEREWARD_MODEL = "THUDM/ImageReward"
DEFAULT_IMAGEREWARD_REVISION = "5736be03b2652728fb87788c9797b0570450ab72"

#: the official HPSv3 checkpoint repo (file ``HPSv3.safetensors``) and the base model whose config and processor it
#: uses. Revisions: the Hub commits that public HPSv3 reward pipelines pin (read with code search, e.g. revision
#: tables ``MizzenAI/HPSv3@4f81e3e0...`` beside ``Qwen/Qwen2-VL-7B-Instruct@eed13092...``, and an HF cache path
#: ``models--MizzenAI--HPSv3/snapshots/4f81e3e0...``); this machine cannot reach the Hub to confirm them
DEFAULT_HPSV3_MODEL = "MizzenAI/HPSv3"
DEFAULT_HPSV3_REVISION = "4f81e3e09edd82fe3c5f636444c721b592a735ca"
DEFAULT_HPSV3_BASE = "Qwen/Qwen2-VL-7B-Instruct"
DEFAULT_HPSV3_BASE_REVISION = "eed13092ef92e448dd6875b2a00151bd3f7db0ac"
