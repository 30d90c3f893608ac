"""ImageReward (Xu et al., 2023) on transformers' BLIP parts: loading, the official checkpoint's converter, batched
forward.

The official model (``THUDM/ImageReward``, package ``image-reward``, ``ImageReward/ImageReward.py``) is BLIP's ViT-L
image encoder, BLIP's BERT text encoder ("med", cross-attention to the image tokens in every layer) and an MLP on the
text encoder's first token; the reward is the MLP output, standardised by the official mean and std (that rule lives
in ``scorers.metrics.reward_models``). Here the two encoders are transformers' ``BlipVisionModel`` and ``BlipTextModel``
(``is_decoder=True`` in the config builds the cross-attention layers; the forward runs bidirectionally, as the
official ``mode="multimodal"`` encoder does), with the official MLP unchanged.

:func:`convert_official_state_dict` maps the official ``ImageReward.pt`` keys (``blip.visual_encoder.*``,
``blip.text_encoder.*``, ``mlp.layers.*``) onto this module; the BLIP contrastive projections (``vision_proj``,
``text_proj``), unused by the reward, are dropped. :func:`official_configs` gives the official shapes (ViT-L/16 at
224 px; the BERT of ``med_config.json`` with ``encoder_width`` 1024).

One reward per (image, prompt) pair: row ``i`` of the text batch attends to image ``i`` only, so repeated prompts and
repeated images never change the number of rewards (the ``image-reward`` package's list path returned one reward
per image for one prompt; batching several prompts through it gave images x prompts rewards).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from scorers.models.precision import dtype_of
from scorers.models.reward_checkpoints import DEFAULT_IMAGEREWARD_MODEL, DEFAULT_IMAGEREWARD_REVISION

__all__ = ["CONFIG_NAME", "IMAGEREWARD_MEAN", "IMAGEREWARD_STD", "ImageRewardBackend",
           "ImageRewardModel", "convert_official_state_dict", "official_configs", "save_pretrained"]

#: the official checkpoint repo and its pinned revision: :mod:`scorers.models.reward_checkpoints` (no torch there)
#: the official reward standardisation (``ImageReward.__init__``: ``self.mean``, ``self.std``)
IMAGEREWARD_MEAN = 0.16717362830052426
IMAGEREWARD_STD = 1.0333394966054072
#: official text handling: ``tokenizer(prompt, padding="max_length", truncation=True, max_length=35)``
MAX_LENGTH = 35
CONFIG_NAME = "imagereward_config.json"
WEIGHTS_NAME = "model.safetensors"

#: the official MLP head's sizes after the input (``ImageReward.MLP``); Dropouts sit between, as in the original
_MLP_SIZES = (1024, 128, 64, 16, 1)


class RewardMLP(nn.Module):
    """The official head: Linear(d, 1024), Dropout, Linear(1024, 128), Dropout, Linear(128, 64), Dropout,
    Linear(64, 16), Linear(16, 1) -- no activations (they are commented out upstream). Same ``layers.N`` keys."""

    def __init__(self, input_size: int):
        super().__init__()
        a, b, c, d, e = _MLP_SIZES
        self.layers = nn.Sequential(nn.Linear(input_size, a), nn.Dropout(0.2), nn.Linear(a, b), nn.Dropout(0.2),
                                    nn.Linear(b, c), nn.Dropout(0.1), nn.Linear(c, d), nn.Linear(d, e))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.layers(features)


class ImageRewardModel(nn.Module):
    """BLIP image encoder + cross-attending BERT + MLP; ``forward`` returns the raw (un-standardised) rewards."""

    def __init__(self, vision_config: dict, text_config: dict):
        super().__init__()
        from transformers import BlipTextConfig, BlipTextModel, BlipVisionConfig, BlipVisionModel

        self.vision_config, self.text_config = dict(vision_config), dict(text_config)
        self.vision_model = BlipVisionModel(BlipVisionConfig(**vision_config))
        text = BlipTextConfig(**{**text_config, "is_decoder": True})  # builds the cross-attention layers
        self.text_encoder = BlipTextModel(text, add_pooling_layer=False)
        self.mlp = RewardMLP(text.hidden_size)

    def forward(self, pixel_values: torch.Tensor, input_ids: torch.Tensor, attention_mask: torch.Tensor):
        image_embeds = self.vision_model(pixel_values=pixel_values).last_hidden_state
        image_mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        text = self.text_encoder(input_ids=input_ids, attention_mask=attention_mask, encoder_hidden_states=image_embeds,
                                 encoder_attention_mask=image_mask, is_decoder=False)
        features = text.last_hidden_state[:, 0, :]  # the head runs in its own dtype (the model's: bf16 too)
        return self.mlp(features.to(self.mlp.layers[0].weight.dtype)).squeeze(-1)


def vision_config_from_state_dict(state_dict: dict, heads: int | None = None) -> dict:
    """The ViT shapes of an official-layout state dict (width, depth, patch, image size, MLP width). The head count
    is not in the weights: the official ViTs have 64-wide heads (base 12, large 16), so ``width // 64`` unless
    ``heads`` is given."""
    prefix = "blip.visual_encoder."
    width = int(state_dict[prefix + "cls_token"].shape[-1])
    patch = int(state_dict[prefix + "patch_embed.proj.weight"].shape[-1])
    positions = int(state_dict[prefix + "pos_embed"].shape[1]) - 1
    depth = len({k.split(".")[3] for k in state_dict if k.startswith(prefix + "blocks.")})
    return dict(hidden_size=width, intermediate_size=int(state_dict[prefix + "blocks.0.mlp.fc1.weight"].shape[0]),
                num_hidden_layers=depth, num_attention_heads=int(heads or max(1, width // 64)),
                image_size=int(round(positions ** 0.5)) * patch, patch_size=patch, hidden_act="gelu",
                layer_norm_eps=1e-6)


def official_configs(med_config: dict | None = None, *, vit: str = "large", image_size: int = 224) -> tuple[dict, dict]:
    """``(vision_config, text_config)`` of the official model: BLIP's ``create_vit(vit, image_size)`` (patch 16,
    LayerNorm eps 1e-6, GELU, MLP ratio 4) and the BERT of ``med_config`` (the official ``med_config.json``; the
    defaults below are its values) with ``encoder_width`` = the ViT width."""
    widths = {"base": (768, 12, 12), "large": (1024, 24, 16)}
    if vit not in widths:
        raise ValueError(f"vit {vit!r} is not one of {sorted(widths)}")
    width, depth, heads = widths[vit]
    vision = dict(hidden_size=width, intermediate_size=4 * width, num_hidden_layers=depth, num_attention_heads=heads,
                  image_size=image_size, patch_size=16, hidden_act="gelu", layer_norm_eps=1e-6)
    med = {"vocab_size": 30524, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
           "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 512,
           "layer_norm_eps": 1e-12, "pad_token_id": 0, **(med_config or {})}
    text = dict(vocab_size=med["vocab_size"], hidden_size=med["hidden_size"],
                num_hidden_layers=med["num_hidden_layers"], num_attention_heads=med["num_attention_heads"],
                intermediate_size=med["intermediate_size"], hidden_act=med["hidden_act"],
                max_position_embeddings=med["max_position_embeddings"], layer_norm_eps=med["layer_norm_eps"],
                pad_token_id=med.get("pad_token_id", 0), encoder_hidden_size=width)
    return vision, text


_VISION_RENAMES = (
    ("cls_token", "embeddings.class_embedding"),
    ("pos_embed", "embeddings.position_embedding"),
    ("patch_embed.proj.", "embeddings.patch_embedding."),
    ("norm.", "post_layernorm."),
)
_BLOCK_RENAMES = (("norm1.", "layer_norm1."), ("norm2.", "layer_norm2."), ("attn.qkv.", "self_attn.qkv."),
                  ("attn.proj.", "self_attn.projection."), ("mlp.fc1.", "mlp.fc1."), ("mlp.fc2.", "mlp.fc2."))
#: official keys that the reward does not use
_UNUSED = ("blip.vision_proj.", "blip.text_proj.", "blip.text_encoder.embeddings.position_ids")


def convert_official_state_dict(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The official ``ImageReward.pt`` state dict -> :class:`ImageRewardModel`'s (tensors shared, not copied).

    A key that is neither mapped nor known to be unused raises ``ValueError`` naming it (a silent skip would load a
    model with random weights where the checkpoint had some)."""
    out: dict[str, torch.Tensor] = {}
    for key, value in state_dict.items():
        if key.startswith(_UNUSED):
            continue
        if key.startswith("mlp."):
            out[key] = value
        elif key.startswith("blip.text_encoder."):
            out["text_encoder." + key[len("blip.text_encoder."):]] = value
        elif key.startswith("blip.visual_encoder."):
            rest = key[len("blip.visual_encoder."):]
            if rest.startswith("blocks."):
                _, index, tail = rest.split(".", 2)
                for old, new in _BLOCK_RENAMES:
                    if tail.startswith(old):
                        out[f"vision_model.encoder.layers.{index}.{new}{tail[len(old):]}"] = value
                        break
                else:
                    raise ValueError(f"ImageReward checkpoint: unexpected vision key {key!r}")
            else:
                for old, new in _VISION_RENAMES:
                    if rest == old or rest.startswith(old) and old.endswith("."):
                        out["vision_model." + new + rest[len(old):]] = value
                        break
                else:
                    raise ValueError(f"ImageReward checkpoint: unexpected vision key {key!r}")
        else:
            raise ValueError(f"ImageReward checkpoint: unexpected key {key!r}")
    return out


def save_pretrained(model: ImageRewardModel, tokenizer, out: str | Path, *, mean: float = IMAGEREWARD_MEAN,
                    std: float = IMAGEREWARD_STD) -> Path:
    """Write a folder :class:`ImageRewardBackend` loads: ``imagereward_config.json``, ``model.safetensors`` and the
    tokenizer."""
    from safetensors.torch import save_file

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config = {"architecture": "ImageReward", "vision_config": model.vision_config, "text_config": model.text_config,
              "mean": mean, "std": std, "max_length": MAX_LENGTH}
    (out / CONFIG_NAME).write_text(json.dumps(config, indent=2))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / WEIGHTS_NAME))
    tokenizer.save_pretrained(out)
    return out


def _blip_tokenizer(source: str):
    """BLIP's tokenizer: BERT uncased + ``[DEC]`` bos + ``[ENC]`` (official ``init_tokenizer``)."""
    from transformers import BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(source)
    tokenizer.add_special_tokens({"bos_token": "[DEC]"})
    tokenizer.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
    return tokenizer


class ImageRewardBackend:
    """Loads ImageReward and computes raw rewards in batches.

    ``model``: a folder written by :func:`save_pretrained` (``imagereward_config.json``); an official ``.pt`` state
    dict (its ``med_config.json`` beside it or given as ``med_config``; tokenizer ``bert-base-uncased`` from the Hub
    cache unless ``tokenizer`` names a folder); or a Hub repo with the official files (default ``THUDM/ImageReward``).
    """

    family = "imagereward"

    def __init__(self, model: str = DEFAULT_IMAGEREWARD_MODEL, *, device: Any = None, precision: str = "fp32",
                 med_config: str | None = None, tokenizer: str | None = None, revision: str | None = None,
                 vision_heads: int | None = None):
        from scorers.models.loading import ModelLoadError

        self.model_name = str(model)
        self.dtype = dtype_of(precision)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        path = Path(model)
        if path.is_dir() and (path / CONFIG_NAME).is_file():
            config = json.loads((path / CONFIG_NAME).read_text())
            self.model = ImageRewardModel(config["vision_config"], config["text_config"])
            from safetensors.torch import load_file

            self.model.load_state_dict(load_file(str(path / WEIGHTS_NAME)))
            self.tokenizer = _load_tokenizer(tokenizer or str(path))
            self.mean, self.std = float(config["mean"]), float(config["std"])
            self.max_length = int(config.get("max_length", MAX_LENGTH))
        else:
            if path.is_file():
                weights, med = str(path), med_config or str(path.with_name("med_config.json"))
            elif path.exists() or str(model).startswith((".", "/")):
                raise ModelLoadError("{model=}: neither an ImageReward folder ({config}) nor an official "
                                     "ImageReward.pt file", model=model, config=CONFIG_NAME)
            else:
                pinned = DEFAULT_IMAGEREWARD_REVISION if str(model) == DEFAULT_IMAGEREWARD_MODEL else None
                weights, med = _hub_files(str(model), revision or pinned)
                med = med_config or med
            med_dict = json.loads(Path(med).read_text()) if med and os.path.isfile(med) else None
            state = torch.load(weights, map_location="cpu", weights_only=True)
            vision = vision_config_from_state_dict(state, vision_heads)  # official: ViT-L/16, 224 px
            _, text = official_configs(med_dict)
            text["encoder_hidden_size"] = vision["hidden_size"]
            self.model = ImageRewardModel(vision, text)
            missing, unexpected = self.model.load_state_dict(convert_official_state_dict(state), strict=False)
            missing = [k for k in missing if not k.endswith("position_ids")]
            if missing or unexpected:
                raise ModelLoadError("{model=}: checkpoint does not match ImageReward (missing {missing}, "
                                     "unexpected {unexpected})", model=model, missing=missing[:3],
                                     unexpected=unexpected[:3])
            self.tokenizer = _load_tokenizer(tokenizer or "bert-base-uncased", blip=True)
            self.mean, self.std, self.max_length = IMAGEREWARD_MEAN, IMAGEREWARD_STD, MAX_LENGTH
        self.model = self.model.eval().to(self.device, self.dtype)
        self.image_size = int(self.model.vision_model.config.image_size)

    @torch.inference_mode()
    def raw_rewards(self, pixel_values: torch.Tensor, prompts: Sequence[str]) -> torch.Tensor:
        """Normalised ``(n, 3, S, S)`` pixels + ``n`` prompts -> ``n`` raw rewards (float32, pair ``i`` = image ``i``
        with prompt ``i``)."""
        return self.tensor_raw_rewards(pixel_values.to(self.device, self.dtype), list(prompts)).float()

    def tensor_preprocessor(self, name: str):
        """The on-device twin of the official ``_transform`` + normalisation: a function from float
        ``[B, 3, H, W]`` pixels in [0, 1] to the model's normalised input, with differentiable torch ops
        (:func:`scorers.models.pixels.resize_short_crop`, torchvision's ``round`` crop). ``name``: the scorer's, for
        messages (this one always has a tensor twin)."""
        from scorers.models.pixels import CLIP_MEAN, CLIP_STD, channel_normalise, resize_short_crop

        size = self.image_size
        return lambda x: channel_normalise(resize_short_crop(x, size, "round"), CLIP_MEAN, CLIP_STD)

    def tensor_raw_rewards(self, pixel_values: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        """:meth:`raw_rewards` keeping the autograd graph: pixels already on the device in the model's dtype
        (:meth:`tensor_preprocessor`), raw rewards in the model's dtype (no ``inference_mode``)."""
        tokens = self.tokenizer(prompts, padding="max_length", truncation=True, max_length=self.max_length,
                                return_tensors="pt")
        return self.model(pixel_values, tokens["input_ids"].to(self.device), tokens["attention_mask"].to(self.device))


def _load_tokenizer(source: str, blip: bool = False):
    from scorers.models.loading import model_source

    with model_source(source, option="tokenizer", files=("vocab.txt", "tokenizer_config.json")) as where:
        if blip:
            return _blip_tokenizer(where)
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(where)


def _hub_files(repo: str, revision: str | None) -> tuple[str, str]:
    """``ImageReward.pt`` and ``med_config.json`` of a Hub repo (the Hub cache when offline); one-line errors."""
    from huggingface_hub import hf_hub_download

    from scorers.models.loading import ModelLoadError

    try:
        return (hf_hub_download(repo, "ImageReward.pt", revision=revision),
                hf_hub_download(repo, "med_config.json", revision=revision))
    except Exception as error:  # offline and not cached, no such repo/file...
        raise ModelLoadError("{model=}: cannot get ImageReward.pt / med_config.json ({kind}); pass a local "
                             "ImageReward.pt or a converted folder", model=repo, kind=type(error).__name__) from None
