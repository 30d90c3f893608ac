"""Preference / reward models as TS2 scorers: PickScore, HPSv2(.1), ImageReward, and the rules that make their scores.

Rules (plain NumPy, tested without models):

* :func:`scaled_cosine` -- ``scale * cos(image, text)``: PickScore's raw score, with ``scale = logit_scale.exp()`` of
  the checkpoint (Kirstain et al., 2023; the official README's
  ``model.logit_scale.exp() * (text_embs @ image_embs.T)``).
* HPSv2 -- the plain cosine of the L2-normalised embeddings (official ``hpsv2.score``: ``image_features @
  text_features.T`` of the model's normalised outputs, no temperature). Leaderboards print it x 100.
* :func:`standardise` -- ``(raw - mean) / std``: ImageReward's output (official mean 0.16717362830052426, std
  1.0333394966054072).
* HPSv3 -- the head's first output ``mu`` (its second, ``sigma``, is the predicted uncertainty: kept in the records),
  as the official ``inference.py`` ("we select miu as the final output").

The scorer classes follow the runner's protocol (``scorers.scoring.runner``); model loading and forwards live in
``scorers.models`` (``hf_embed`` for PickScore, ``open_clip_embed`` for HPSv2, ``imagereward``). Every scorer gives one
score per (image, prompt) pair, whatever the repetitions of prompts or images in a batch.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from scorers.checks import check_pairs
from scorers.metrics.embedding import HESSEL_W, EmbeddingScorer, paired_cosine
from scorers.models.images import open_image

__all__ = ["HPSV2_CHECKPOINTS", "HPSv2Score", "HPSv3Score", "ImageRewardScore", "PickScore", "scaled_cosine",
           "standardise"]

#: PickScore: the model and, as the official README does, the processor of the CLIP-H it was fine-tuned from.
#: Revisions: the commits pinned by a public reward pipeline's checkpoint table (read with code search; this machine
#: cannot reach the Hub to confirm them -- see the evaluate module's card)
PICKSCORE_MODEL = "yuvalkirstain/PickScore_v1"
PICKSCORE_REVISION = "a4e4367c6dfa7288a00c550414478f865b875800"
PICKSCORE_PROCESSOR = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"
PICKSCORE_PROCESSOR_REVISION = "1c2b8495b28150b8a4922ee1c8edee224c284c0c"
#: HPSv2: the official package's ``hps_version_map`` (files of the Hub repo ``xswu/HPSv2``), revision as above
HPSV2_REPO = "xswu/HPSv2"
HPSV2_REVISION = "697403c78157020a1ae59d23f111aa58ced35b0a"
HPSV2_CHECKPOINTS = {"v2.0": "HPS_v2_compressed.pt", "v2.1": "HPS_v2.1_compressed.pt"}


def scaled_cosine(image_embeds: np.ndarray, text_embeds: np.ndarray, scale: float) -> np.ndarray:
    """``scale * cos`` per row of two ``(n, d)`` arrays (PickScore: ``scale`` = the checkpoint's
    ``exp(logit_scale)``)."""
    return float(scale) * paired_cosine(image_embeds, text_embeds)


def standardise(raw: np.ndarray, mean: float, std: float) -> np.ndarray:
    """``(raw - mean) / std`` (ImageReward's official output transform)."""
    if not std > 0:
        raise ValueError(f"std must be > 0, got {std}")
    return (np.asarray(raw, dtype=np.float64) - float(mean)) / float(std)


class _OneForm(EmbeddingScorer):
    """A preference model on embeddings: its score has one form, the official one (:attr:`form_note`); ``set_form``
    refuses the embedding scorers' others."""

    form_note: str

    def set_form(self, form: str = "cosine", w: float = HESSEL_W) -> None:
        if form != "cosine":
            raise ValueError(f"{self.name} has one form: {self.form_note}")
        super().set_form(form, w)


class PickScore(_OneForm):
    """PickScore (transformers ``CLIPModel``): ``exp(logit_scale) * cos(image, prompt)``, the official raw scale.

    ``model``: default ``yuvalkirstain/PickScore_v1``; ``processor``: default the official
    ``laion/CLIP-ViT-H-14-laion2B-s32B-b79K`` for that model, else the checkpoint's own (a local folder with both).
    Images: transformers 4.x ``CLIPImageProcessor``'s PIL pipeline (bicubic short-side resize, floor-offset centre
    crop) in the workers as uint8, normalised on the device (``scorers.models.pixels``).
    """

    name = "pickscore"
    form_note = "exp(logit_scale) * cos"

    def __init__(self, model: str = PICKSCORE_MODEL, processor: str | None = None, *, device: str | None = None,
                 precision: str = "fp32"):
        from scorers.models.hf_embed import HFEmbedder
        from scorers.models.pixels import ResizeCropUint8

        if processor is None and model == PICKSCORE_MODEL:
            processor = PICKSCORE_PROCESSOR
        embedder = HFEmbedder(model, device=device, precision=precision, processor=processor,
                              revision=PICKSCORE_REVISION if model == PICKSCORE_MODEL else None,
                              processor_revision=PICKSCORE_PROCESSOR_REVISION if processor == PICKSCORE_PROCESSOR
                              else None)
        if embedder.family != "clip":
            raise ValueError(f"pickscore: {model} is a {embedder.family!r} model, not CLIP")
        self.processor_name = processor or model
        image_processor = embedder.image_transform.image_processor
        size = _crop_size(image_processor)
        embedder.image_transform = ResizeCropUint8(size, crop="floor")
        super().__init__(embedder, form="cosine")

    @property
    def config(self) -> dict:
        return {**super().config, "processor": self.processor_name, "rule": "logit_scale.exp() * cos"}

    def score(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        return float(self.embedder.logit_scale) * self.cosine(images, prompts)  # scaled_cosine, pairs checked there

    def tensor_forward(self, pixels, prompts: list[str]):
        """:meth:`score` on preprocessed pixels (:func:`scaled_cosine` on tensors), keeping the autograd graph."""
        return self.embedder.logit_scale * self.tensor_cosine(pixels, prompts)


def _crop_size(image_processor) -> int:
    crop = getattr(image_processor, "crop_size", None) or {}
    size = crop.get("height") if isinstance(crop, dict) else getattr(crop, "height", None)
    if size is None:
        raise ValueError("pickscore: the processor has no crop_size")
    return int(size)


class HPSv2Score(_OneForm):
    """HPSv2 / HPSv2.1 (open_clip ViT-H-14 fine-tuned): the cosine of image and prompt, the official raw scale.

    ``model="ViT-H-14"`` with ``pretrained=None`` loads ``xswu/HPSv2``'s ``HPS_v2.1_compressed.pt`` (``version="v2.0"``
    for HPSv2.0); ``pretrained`` may name a local checkpoint file; ``model`` may also be an open_clip folder
    (``local-dir:PATH`` or a plain path with ``open_clip_config.json``). Images go through HPSv2's own preprocessing
    (``scorers.models.pixels.HPSv2Transform``: resize the longer side, zero-pad to square), not open_clip's.
    """

    name = "hpsv2"
    form_note = "the cosine (x 100 on the HPSv2 leaderboards)"

    def __init__(self, model: str = "ViT-H-14", pretrained: str | None = None, *, version: str = "v2.1",
                 device: str | None = None, precision: str = "fp32"):
        from scorers.models.open_clip_embed import OpenClipEmbedder, open_clip_local_dir
        from scorers.models.pixels import HPSv2Transform

        if version not in HPSV2_CHECKPOINTS:
            raise ValueError(f"hpsv2: version {version!r} is not one of {sorted(HPSV2_CHECKPOINTS)}")
        self.version = version
        model = open_clip_local_dir(model)
        if pretrained is None and not model.startswith(("local-dir:", "hf-hub:")):
            from scorers.models.open_clip_weights import hpsv2_checkpoint

            pretrained = hpsv2_checkpoint(HPSV2_REPO, HPSV2_CHECKPOINTS[version], HPSV2_REVISION)
        embedder = OpenClipEmbedder(model, pretrained, device=device, precision=precision)
        size = embedder.model.visual.image_size
        size = size[0] if isinstance(size, (tuple, list)) else size
        embedder.image_transform = HPSv2Transform(int(size))
        super().__init__(embedder, form="cosine")

    @property
    def config(self) -> dict:
        return {**super().config, "version": self.version, "preprocess": "hpsv2"}


class ImageRewardScore:
    """ImageReward: ``(MLP(BLIP text encoder with cross-attention to the image)[CLS] - mean) / std`` per pair.

    ``model``: ``THUDM/ImageReward`` (default, the official ``ImageReward.pt``), a local ``ImageReward.pt``, or a
    folder written by ``scorers.models.imagereward.save_pretrained``. Images: the official ``_transform(224)`` (PIL
    bicubic resize of the short side, torchvision centre crop) as uint8 in the workers, normalised on the device.
    """

    name = "imagereward"

    def __init__(self, model: str | None = None, *, device: str | None = None, precision: str = "fp32",
                 med_config: str | None = None, tokenizer: str | None = None, vision_heads: int | None = None):
        from scorers.models.imagereward import ImageRewardBackend
        from scorers.models.reward_checkpoints import DEFAULT_IMAGEREWARD_MODEL
        from scorers.models.pixels import ResizeCropUint8

        self.backend = ImageRewardBackend(model or DEFAULT_IMAGEREWARD_MODEL, device=device, precision=precision,
                                          med_config=med_config, tokenizer=tokenizer, vision_heads=vision_heads)
        # the official order: resize and crop in the image's own mode, then RGB (ResizeCropUint8's docstring)
        self.image_transform = ResizeCropUint8(self.backend.image_size, crop="round", rgb="after")
        self.config = {"name": self.name, "model": self.backend.model_name, "mean": self.backend.mean,
                       "std": self.backend.std, "max_length": self.backend.max_length,
                       "dtype": str(self.backend.dtype), "rgb": "after"}

    def pixels(self, images: Sequence[Any]):
        """PIL images / paths / uint8 crops / one stacked tensor -> normalised ``(n, 3, S, S)`` on the device."""
        import torch

        from scorers.models.pixels import CLIP_MEAN, CLIP_STD, normalise

        if not isinstance(images, torch.Tensor):
            images = torch.stack([im if isinstance(im, torch.Tensor) else
                                  self.image_transform(open_image(im, native=self.image_transform.native_mode))
                                  for im in images])
        return normalise(images, CLIP_MEAN, CLIP_STD, device=self.backend.device, dtype=self.backend.dtype)

    def score(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        """One standardised reward per (image, prompt) pair."""
        check_pairs(images, prompts, nonempty=True)
        if len(images) == 0:
            return np.zeros(0)
        raw = self.backend.raw_rewards(self.pixels(images), list(prompts)).cpu().numpy()
        return standardise(raw, self.backend.mean, self.backend.std)

    @property
    def tensor_model(self):
        """The model behind the tensor path (the reward API, ``scorers.rewards``): the backend (``model``,
        ``device``, ``dtype``, ``tensor_preprocessor(name)``, ``tensor_raw_rewards(pixels, prompts)``)."""
        return self.backend

    def tensor_forward(self, pixels, prompts: list[str]):
        """:meth:`score` on pixels preprocessed on the device (:func:`standardise` on tensors), keeping the autograd
        graph."""
        raw = self.backend.tensor_raw_rewards(pixels, prompts)
        return (raw.float() - self.backend.mean) / self.backend.std


class HPSv3Score:
    """HPSv3: ``mu`` of the reward head on Qwen2-VL-7B at the ``<|Reward|>`` token; ``sigma`` in the records.

    ``model``: ``MizzenAI/HPSv3`` (default), a local ``HPSv3.safetensors`` (with ``base``, default
    ``Qwen/Qwen2-VL-7B-Instruct``) or a folder (see ``scorers.models.hpsv3.HPSv3Backend``). Images: the official
    resize (``smart_resize`` to 256 * 28 * 28 pixels, PIL bicubic) in the workers as uint8; the Qwen2-VL processor
    normalises and patchifies them.
    """

    name = "hpsv3"

    def __init__(self, model: str | None = None, *, base: str | None = None, device: str | None = None,
                 precision: str | None = None, pixels: int | None = None):
        from scorers.models.hpsv3 import HPSv3Backend
        from scorers.models.reward_checkpoints import DEFAULT_HPSV3_MODEL

        self.backend = HPSv3Backend(model or DEFAULT_HPSV3_MODEL, base=base, device=device, precision=precision,
                                    pixels=pixels)
        self.image_transform = self.backend.image_transform
        self.config = {"name": self.name, "model": self.backend.model_name, "pixels": self.backend.pixels,
                       "dtype": str(self.backend.dtype), "rule": "mu"}

    def _items(self, images: Sequence[Any]) -> list:
        import torch

        if isinstance(images, torch.Tensor):
            return list(images)
        return [im if isinstance(im, torch.Tensor) else self.image_transform(open_image(im)) for im in images]

    def score_with_records(self, images: Sequence[Any], prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        """``mu`` per (image, prompt) pair, and ``{"hpsv3_sigma": sigma}`` per pair."""
        check_pairs(images, prompts, nonempty=True)
        if len(images) == 0:
            return np.zeros(0), []
        out = self.backend.rewards(self._items(images), list(prompts)).cpu().numpy().astype(np.float64)
        return out[:, 0], [{"hpsv3_sigma": float(sigma)} for sigma in out[:, 1]]

    def score(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        return self.score_with_records(images, prompts)[0]
