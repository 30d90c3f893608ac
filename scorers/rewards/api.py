"""Rewards in a training loop: the scorers as ``reward(images, prompts) -> torch.Tensor[B]`` (issue 28, item 1).

``load("pickscore")`` or ``load({"pickscore": 1.0, "hpsv2": 0.5, "clip_score": 0.2})`` gives a callable::

    reward = load({"pickscore": 1.0, "hpsv2": 0.5}, normalize="running")
    r = reward(images, prompts)          # float32 tensor [B], on the reward models' device
    reward.last_info.components          # {name: raw reward [B]} for logging, with .weights and .stats

Models are built through ``scorers.scoring.registry.build_scorer`` (the same checkpoints, defaults and loading errors as
``ts2 score``); nothing here defines a model. What this module adds:

* **Tensor input.** ``images`` may be a float tensor ``[B, 3, H, W]`` in [0, 1] on any device. For ``pickscore``,
  ``clip_score`` (transformers or open_clip CLIP), ``hpsv2`` and ``imagereward`` it is preprocessed on that device
  with torch ops that mirror each model's official PIL pipeline (bicubic resize with ``antialias=True`` -- torch's
  antialiased bicubic uses PIL's kernel, a = -0.5 -- then the official centre crop or HPSv2's pad, then each model's
  mean/std); no CPU round-trip. The only difference from the PIL path is that PIL rounds the resized image to uint8
  (at most 1/255 per pixel, plus PIL's fixed-point rounding). Other rewards (VLM judges, HPSv3, ALIGN, SigLIP...)
  get tensors converted to uint8 PIL images on the CPU, as their processors need.
* **Tensor range.** Float tensors are read as ``[0, 1]``; values outside it by more than :data:`RANGE_TOLERANCE`
  (``2**-7``: one bfloat16 step above 1.0, about two 8-bit steps; far below the ``-1`` or ``255`` of the other usual
  encodings) are refused with one line, unless ``input_range=(-1, 1)`` (a VAE decoder's output) or ``(0, 255)`` says
  how to read them (any finite ``(low, high)``: ``x -> (x - low) / (high - low)``, checked the same way after).
* **PIL images or paths** go through each scorer's own ``score`` (the official preprocessing, as ``ts2 score``).
* **Gradients.** ``differentiable=True`` (tensor input only) keeps the graph through the reward for the CLIP-family
  rewards (:data:`DIFFERENTIABLE`), for direct reward backpropagation (ReFL, DRaFT, AlignProp); the reward models'
  own parameters are frozen (``requires_grad_(False)``). Other rewards are refused with a one-line error. Otherwise
  every forward runs under ``torch.inference_mode``.
* **Weighted sums and normalisation.** ``total = sum_k w_k * n_k(r_k)`` where ``n_k`` is ``normalize``: ``"none"``
  (identity), a fixed affine ``{name: (shift, scale)}`` giving ``(r - shift) / scale`` (names left out: identity), or
  ``"running"``: ``(r - mean) / std`` with the mean and population std (ddof 0) of every finite reward seen so far,
  this batch included (``r - mean`` while std is 0): :mod:`scorers.rewards.normalisation`. Each call's :class:`RewardOutput` (``reward.last_info``, or
  ``reward.detailed(...)``) carries the raw components, the normalised ones, the weights and the stats.

One reward per (image, prompt) pair, in order, whatever the repetitions of prompts in a batch.
"""
from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scorers.models.redaction import redact_cut, redact_url
from scorers.rewards.normalisation import RewardNormaliser, weighted_sum

__all__ = ["DIFFERENTIABLE", "RANGE_TOLERANCE", "RemoteReward", "Reward", "RewardOutput", "check_input_range",
           "check_normalize", "load"]

#: how far a float image tensor may stray outside its input range (after mapping it to [0, 1]) before it is refused:
#: 2**-7 is one bfloat16 step above 1.0 (a bf16 VAE decode rounds 1.0 up by that much) and about two 8-bit steps;
#: a [-1, 1] or [0, 255] image lies far outside it unless it is nearly blank
RANGE_TOLERANCE = 2 ** -7

#: rewards with an on-device tensor path that can keep the autograd graph
DIFFERENTIABLE = ("pickscore", "hpsv2", "clip_score", "imagereward")
NORMALIZE = ("none", "running")


@dataclass
class RewardOutput:
    """One call's result: ``rewards`` (the weighted sum, ``[B]``), ``components`` (each reward's raw value),
    ``normalized`` (each after normalisation), ``weights``, and ``stats`` (``{name: {"count", "mean", "std"}}`` for
    ``normalize="running"``, ``{name: {"shift", "scale"}}`` for a fixed affine, empty for ``"none"``)."""

    rewards: Any
    components: dict = field(default_factory=dict)
    normalized: dict = field(default_factory=dict)
    weights: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)

    def log_dict(self, prefix: str = "reward") -> dict:
        """Flat floats for a logger: the batch means of the total and of each component, the weights and stats."""
        out = {f"{prefix}/total": _mean(self.rewards)}
        for name, value in self.components.items():
            out[f"{prefix}/{name}"] = _mean(value)
            out[f"{prefix}/{name}_weight"] = float(self.weights[name])
            for key, stat in self.stats.get(name, {}).items():
                out[f"{prefix}/{name}_{key}"] = float(stat)
        return out


def _mean(tensor) -> float:
    finite = tensor.detach().float()
    finite = finite[finite.isfinite()]
    return float(finite.mean()) if finite.numel() else math.nan


# ----------------------------------------------------------------------------- on-device preprocessing (torch ops)

def resize_short_crop(pixels, size: int, crop: str = "round", crop_size: int | None = None):
    """``[B, 3, H, W]`` floats in [0, 1] -> ``[B, 3, size, size]``: bicubic antialiased resize of the short side to
    ``size`` (long side ``int(size * long / short)``), clamped to [0, 1] as PIL's uint8 output is, then the centre
    crop (``"floor"``: transformers 4.x ``CLIPImageProcessor``; ``"round"``: torchvision ``CenterCrop``) -- the
    tensor twin of ``scorers.models.pixels.ResizeCropUint8``. ``crop_size`` (default ``size``): the crop's side when
    it differs from the resized short side (a CLIP processor with ``shortest_edge`` 256 and ``crop_size`` 224)."""
    height, width = pixels.shape[-2:]
    short, long = (width, height) if width <= height else (height, width)
    if short != size:
        new_short, new_long = size, int(size * long / short)
        new_w, new_h = (new_short, new_long) if width <= height else (new_long, new_short)
        pixels = pil_bicubic_resize(pixels, new_h, new_w)
    height, width = pixels.shape[-2:]
    size = int(crop_size or size)
    if crop == "floor":
        top, left = (height - size) // 2, (width - size) // 2
    else:
        top, left = int(round((height - size) / 2.0)), int(round((width - size) / 2.0))
    return pixels[..., top:top + size, left:left + size]


def pil_bicubic_resize(pixels, height: int, width: int):
    """PIL's ``Image.resize(..., BICUBIC)`` on float tensors: two separable antialiased passes, horizontal first,
    each clamped to [0, 1] as PIL clips each pass to uint8 (one pass without the intermediate clamp differs from PIL
    by up to 19/255 on noisy images: the bicubic overshoot PIL clips between its passes). PIL's uint8 rounding is
    not copied (it would stop gradients): the result differs from PIL's by at most 0.5/255 (final rounding) + 0.5/255
    x 1.25 (the intermediate rounding through the vertical kernel, whose absolute weights sum to at most 1.25 for
    a = -0.5) = 1.125/255 per pixel."""
    import torch.nn.functional as F

    if pixels.shape[-1] != width:
        pixels = F.interpolate(pixels, size=(pixels.shape[-2], width), mode="bicubic", antialias=True,
                               align_corners=False).clamp(0, 1)
    if pixels.shape[-2] != height:
        pixels = F.interpolate(pixels, size=(height, width), mode="bicubic", antialias=True,
                               align_corners=False).clamp(0, 1)
    return pixels


def hpsv2_resize_pad(pixels, size: int):
    """HPSv2's ``preprocess_val`` on a batch (``scorers.models.pixels.HPSv2Transform`` without the normalisation):
    bicubic antialiased resize of the longer side to ``size``, zero padding to a centred square."""
    import torch.nn.functional as F

    height, width = pixels.shape[-2:]
    scale = size / float(max(height, width))
    if scale == 1.0 and height == width:
        return pixels
    new_h, new_w = round(height * scale), round(width * scale)
    if scale != 1.0:
        pixels = F.interpolate(pixels, size=(new_h, new_w), mode="bicubic", antialias=True, align_corners=False)
    pad_h, pad_w = size - new_h, size - new_w
    return F.pad(pixels, [pad_w // 2, pad_w - pad_w // 2, pad_h // 2, pad_h - pad_h // 2], value=0.0)


def _field(value, key):
    """``value[key]`` of a processor's size dict (or attribute of a size object), ``None`` when absent."""
    found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
    return None if found is None else int(found)


def _features(output):
    """transformers 5 returns an output object from ``get_*_features``; 4.x a tensor."""
    return output if hasattr(output, "dim") else output.pooler_output


def _cosine(a, b):
    import torch.nn.functional as F

    return (F.normalize(a.float(), dim=-1) * F.normalize(b.float(), dim=-1)).sum(-1)


class _TensorPath:
    """A scorer's on-device path: ``preprocess(pixels in [0,1]) -> model input``, ``forward(input, prompts) -> [B]``."""

    def __init__(self, scorer):
        from scorers.models.pixels import channel_normalise

        self.scorer = scorer
        name = scorer.name
        if name == "imagereward":
            from scorers.models.pixels import CLIP_MEAN, CLIP_STD

            backend = scorer.backend
            self.module, self.device, self.dtype = backend.model, backend.device, backend.dtype
            self._pre = lambda x: channel_normalise(resize_short_crop(x, backend.image_size, "round"), CLIP_MEAN,
                                                    CLIP_STD)
            return
        embedder = scorer.embedder
        self.module, self.device, self.dtype = embedder.model, embedder.device, embedder.dtype
        if name == "hpsv2":
            transform = embedder.image_transform  # pixels.HPSv2Transform
            self._pre = lambda x: channel_normalise(hpsv2_resize_pad(x, transform.size), transform.mean,
                                                    transform.std)
        elif embedder.family == "open_clip":
            self._pre = self._open_clip_pre(embedder)
        else:  # transformers CLIP (pickscore, clip_score): short-side resize + centre crop, the processor's mean/std
            from scorers.models.pixels import ResizeCropUint8

            transform = embedder.image_transform
            if isinstance(transform, ResizeCropUint8):  # PickScore
                size, crop, crop_size = transform.size, transform.crop, None
            else:  # a CLIPImageProcessor: resize the shortest edge, centre crop (other processors: no tensor path)
                processor = transform.image_processor
                short = _field(getattr(processor, "size", None), "shortest_edge")
                crop_size = _field(getattr(processor, "crop_size", None), "height")
                if (embedder.family != "clip" or short is None or crop_size is None
                        or not getattr(processor, "do_center_crop", True)):
                    raise ValueError(f"{name}: {type(processor).__name__} is not a short-side resize + centre crop")
                size, crop = int(short), "floor"
            mean, std = embedder.image_mean, embedder.image_std
            self._pre = lambda x: channel_normalise(resize_short_crop(x, size, crop, crop_size), mean, std)

    @staticmethod
    def _open_clip_pre(embedder):
        from torchvision import transforms as T

        from scorers.models.open_clip_embed import OpenClipEmbedder, split_transform
        from scorers.models.pixels import channel_normalise

        split = split_transform(embedder.reference_transform)
        if split is None:
            raise ValueError("clip_score: this open_clip model's preprocessing has no tensor twin")
        steps = [s for s in split[0] if isinstance(s, (T.Resize, T.CenterCrop))]
        # Resize(S) / Resize([S]) resizes the short side (a 2-tuple would be an exact size); CenterCrop(S or (S, S))
        sizes = [s.size if isinstance(s.size, int) else s.size[0] if len(s.size) == 1 or
                 (isinstance(s, T.CenterCrop) and len(set(s.size)) == 1) else None for s in steps]
        if (len(steps) == 2 and isinstance(steps[0], T.Resize) and isinstance(steps[1], T.CenterCrop)
                and steps[0].interpolation == T.InterpolationMode.BICUBIC and sizes[0] == sizes[1]
                and getattr(steps[0], "max_size", None) is None and sizes[0] is not None):
            # open_clip's usual eval transform (Resize(S) + CenterCrop(S) on PIL): PIL's two-pass resize
            size, (mean, std) = sizes[0], split[1:]
            return lambda x: channel_normalise(resize_short_crop(x, size, "round"), mean, std)
        # other shapes: torchvision's own tensor Resize (antialiased) / CenterCrop objects, as decode="device" runs
        # them -- one resize pass, so not PIL's numbers to 1/255 on noisy images (ValueError: no tensor path at all)
        steps = OpenClipEmbedder._tensor_steps(split)
        mean, std = split[1], split[2]

        def pre(x):
            for step in steps:
                x = step(x)
                if isinstance(step, T.Resize):
                    x = x.clamp(0, 1)
            return channel_normalise(x, mean, std)

        return pre

    def preprocess(self, pixels):
        return self._pre(pixels.to(self.device, non_blocking=True).float()).to(self.dtype)

    def forward(self, pixels, prompts: list[str]):
        scorer, name = self.scorer, self.scorer.name
        if name == "imagereward":
            backend = scorer.backend
            tokens = backend.tokenizer(prompts, padding="max_length", truncation=True, max_length=backend.max_length,
                                       return_tensors="pt")
            raw = self.module(pixels, tokens["input_ids"].to(self.device), tokens["attention_mask"].to(self.device))
            return (raw.float() - backend.mean) / backend.std  # preference.standardise, on tensors
        embedder = scorer.embedder
        if embedder.family == "open_clip":
            image = self.module.encode_image(pixels)
        else:
            image = _features(self.module.get_image_features(pixel_values=pixels))
        text = scorer.text_embeddings(prompts).clone()  # cached under inference mode: clone to use in a graph
        cosine = _cosine(image, text.to(image.device))
        if name == "pickscore":
            return embedder.logit_scale * cosine  # preference.scaled_cosine
        if name == "hpsv2":
            return cosine
        form, w = scorer.form, scorer.w  # embedding.apply_form, on tensors
        if form == "cosine":
            return cosine
        clipped = cosine.clamp(min=0.0)
        return {"paper": clipped, "hessel": w * clipped, "x100": 100.0 * clipped}[form]


# ----------------------------------------------------------------------------- the callable

class Reward:
    """What :func:`load` returns: ``reward(images, prompts) -> torch.Tensor[B]`` (see the module docstring)."""

    def __init__(self, scorers: Mapping[str, Any], weights: Mapping[str, float], *, differentiable: bool = False,
                 normalize: Any = "none", input_range: Sequence[float] = (0, 1)):
        self.input_range = check_input_range(input_range)
        self.scorers = dict(scorers)
        self.weights = {name: float(weights[name]) for name in self.scorers}
        self.differentiable = bool(differentiable)
        self.normalize = normalize
        self._paths: dict[str, _TensorPath] = {}
        for name, scorer in self.scorers.items():
            kind = getattr(scorer, "name", None)
            if kind in DIFFERENTIABLE and hasattr(scorer, "backend" if kind == "imagereward" else "embedder"):
                try:
                    self._paths[name] = _TensorPath(scorer)
                except ValueError as error:  # an unusual preprocessing: tensors go through PIL instead
                    if self.differentiable:
                        raise ValueError(f"reward: differentiable=True impossible for {name}: {error}") from None
        if self.differentiable:
            missing = [name for name in self.scorers if name not in self._paths]
            if missing:
                raise ValueError(f"reward: differentiable=True impossible for {', '.join(missing)}: no tensor path")
            for path in self._paths.values():
                path.module.requires_grad_(False)
        self._normaliser = RewardNormaliser(normalize, list(self.scorers))
        self.last_info: RewardOutput | None = None
        #: the embedding scorers keep each prompt's text embedding; a training loop sees ever new prompts, so the
        #: cache is emptied whenever it holds more than this many (the current batch's are recomputed once)
        self.max_cached_prompts = 4096

    def __repr__(self) -> str:
        return (f"Reward(weights={self.weights}, differentiable={self.differentiable}, "
                f"normalize={self.normalize!r})")

    @property
    def device(self):
        """The device rewards are returned on (the first reward model's)."""
        import torch

        for path in self._paths.values():
            return path.device
        for scorer in self.scorers.values():
            for owner in (scorer, getattr(scorer, "embedder", None), getattr(scorer, "backend", None)):
                device = getattr(owner, "device", None)
                if isinstance(device, torch.device):
                    return device
        return torch.device("cpu")

    def reset_stats(self) -> None:
        """Forget the running mean/std (``normalize="running"``)."""
        self._normaliser.reset()

    @property
    def stats(self) -> dict:
        """The current normalisation statistics per reward (:class:`~scorers.rewards.normalisation.
        RewardNormaliser`)."""
        return self._normaliser.stats

    def __call__(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None):
        return self.detailed(images, prompts, input_range=input_range).rewards

    def detailed(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None) -> RewardOutput:
        """The total and everything behind it (also kept as ``self.last_info``). ``input_range``: this call's
        reading of float tensors (default: the one given to :func:`load`)."""
        import torch

        prompts = _prompts(prompts)
        images = _images(images)
        if len(images) != len(prompts):
            raise ValueError(f"reward: got {len(images)} images but {len(prompts)} prompts")
        is_tensor = isinstance(images, torch.Tensor)
        if is_tensor:
            images = _to_unit(images, self.input_range if input_range is None else check_input_range(input_range))
        if self.differentiable and not is_tensor:
            raise ValueError("reward: differentiable=True needs images as a float tensor [B, 3, H, W] in [0, 1] "
                             "(PIL images and paths carry no gradient)")
        out_device = self.device
        components = {}
        for name, scorer in self.scorers.items():
            components[name] = self._component(name, scorer, images, prompts, is_tensor).to(out_device)
        for scorer in self.scorers.values():
            cache = getattr(scorer, "_text_cache", None)
            if isinstance(cache, dict) and len(cache) > self.max_cached_prompts:
                cache.clear()
        normalized = {name: self._normalise(name, value) for name, value in components.items()}
        total = weighted_sum(normalized, self.weights)
        if total is None:
            total = torch.zeros(0, device=out_device)
        info = RewardOutput(total, components, normalized, dict(self.weights), self.stats)
        self.last_info = info
        return info

    def _component(self, name, scorer, images, prompts, is_tensor):
        import torch

        if len(prompts) == 0:
            return torch.zeros(0, dtype=torch.float32)
        path = self._paths.get(name)
        if is_tensor and path is not None:
            if self.differentiable:
                with torch.enable_grad():
                    return path.forward(path.preprocess(images), prompts)
            with torch.inference_mode():
                out = path.forward(path.preprocess(images), prompts)
            return out.clone()  # a normal tensor: callers may modify it in place outside inference mode
        if is_tensor:
            images = _to_pil(images)
        with torch.inference_mode():
            scores = scorer.score(list(images), prompts)
        return torch.as_tensor(scores, dtype=torch.float32)

    def _normalise(self, name, value):
        """Reward ``name``'s values normalised (:mod:`scorers.rewards.normalisation`, the one implementation)."""
        return self._normaliser(name, value)


def _prompts(prompts) -> list[str]:
    if isinstance(prompts, str):
        raise TypeError("reward: prompts must be a list of strings, one per image, not one string")
    prompts = list(prompts)
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise TypeError(f"reward: prompts[{i}] is a {type(prompt).__name__}, expected str")
        if not prompt.strip():  # refused on every path (tensor and PIL alike): a reward needs a prompt
            raise ValueError(f"reward: prompts[{i}] is empty ({prompt!r}); every image needs a non-empty prompt")
    return prompts


def check_input_range(input_range) -> tuple[float, float]:
    """``input_range`` as ``(low, high)`` floats: two finite numbers with ``low < high`` (``(0, 1)``, ``(-1, 1)``,
    ``(0, 255)``); ``ValueError`` otherwise."""
    try:
        if isinstance(input_range, (str, bytes)):
            raise TypeError
        low, high = (float(v) for v in input_range)
    except (TypeError, ValueError):
        raise ValueError(f"reward: input_range must be (low, high), e.g. (0, 1), (-1, 1) or (0, 255); got "
                         f"{input_range!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"reward: input_range must be two finite numbers low < high, got {input_range!r}")
    return low, high


def _to_unit(pixels, input_range: tuple[float, float]):
    """Float pixels read in ``input_range`` -> ``[0, 1]`` (``(x - low) / (high - low)``, differentiable), refusing
    values outside the range by more than :data:`RANGE_TOLERANCE` (and NaN/inf) with one line."""
    import torch

    low, high = input_range
    if (low, high) != (0.0, 1.0):
        pixels = (pixels - low) / (high - low)
    if pixels.numel() == 0:
        return pixels
    with torch.no_grad():
        least, most = (float(v) for v in torch.aminmax(pixels.detach().float()))
    if not (least >= -RANGE_TOLERANCE and most <= 1 + RANGE_TOLERANCE):  # NaN fails both
        span = f"[{least * (high - low) + low:.4g}, {most * (high - low) + low:.4g}]"
        hint = ("; a VAE decoder's [-1, 1] output needs input_range=(-1, 1), and 0..255 pixels input_range=(0, 255)"
                if (low, high) == (0.0, 1.0) else "")
        raise ValueError(f"reward: image tensor values lie in {span}, outside input_range=({low:g}, {high:g}) "
                         f"(tolerance {RANGE_TOLERANCE:g} of the range){hint}"
                         if math.isfinite(least) and math.isfinite(most) else
                         f"reward: image tensor holds NaN or infinite values")
    return pixels


def _images(images):
    """A 4-D float tensor, or a list of PIL images / paths (a list of equal-size ``[3, H, W]`` tensors is stacked)."""
    import torch

    if isinstance(images, torch.Tensor):
        if images.dim() == 3:
            images = images.unsqueeze(0)
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"reward: images must be a tensor [B, 3, H, W], got shape {tuple(images.shape)}")
        if not images.is_floating_point():
            raise ValueError(f"reward: image tensors must be floats in [0, 1], got {images.dtype}")
        return images
    if isinstance(images, (str, bytes)) or not hasattr(images, "__iter__"):
        raise TypeError(f"reward: images must be a float tensor [B, 3, H, W] or a list of PIL images / paths, got "
                        f"{type(images).__name__}")
    images = list(images)
    tensors = [i for i, im in enumerate(images) if isinstance(im, torch.Tensor)]
    if tensors and len(tensors) != len(images):
        other = next(i for i in range(len(images)) if i not in set(tensors))
        raise ValueError(f"reward: images mixes tensors (e.g. images[{tensors[0]}]) with PIL images or paths (e.g. "
                         f"images[{other}], a {type(images[other]).__name__}); pass one kind: a float tensor "
                         "[B, 3, H, W] or a list of PIL images / paths")
    if images and tensors:
        shapes = {tuple(im.shape) for im in images}
        if len(shapes) != 1:
            raise ValueError(f"reward: a list of image tensors must share one shape, got {sorted(shapes)}")
        return _images(torch.stack(images))
    return images


def _to_pil(pixels) -> list:
    """``[B, 3, H, W]`` floats in [0, 1] (already checked and mapped by :func:`_to_unit`) -> uint8 RGB PIL images (for
    rewards without a tensor path)."""
    from PIL import Image

    array = (pixels.detach().float().clamp(0, 1) * 255).round().to("cpu").byte().permute(0, 2, 3, 1).numpy()
    return [Image.fromarray(a, mode="RGB") for a in array]


def load(name_or_weights: str | Mapping[str, float], *, model: str | Mapping[str, str] | None = None,
         device: Any = None, differentiable: bool = False, normalize: Any = "none",
         options: Mapping[str, Any] | None = None, input_range: Sequence[float] = (0, 1)) -> Reward:
    """A reward callable (see the module docstring).

    ``name_or_weights``: a scorer name (``scorers.scoring.registry.SCORERS``: ``"pickscore"``, ``"hpsv2"``,
    ``"imagereward"``, ``"clip_score"``, ``"unifiedreward"``, ``"vqa_score"``...) or ``{name: weight}``.
    ``model``: the checkpoint (Hub id, local folder, or ``openai:MODEL`` for a served judge) for a single reward, or
    ``{name: model}`` for several. ``options``: the scorer's other arguments (``ts2 score --option``), as a dict for a
    single reward or ``{name: dict}`` for several (e.g. ``{"unifiedreward": {"api_base": URL}}``).
    ``normalize``: ``"none"``, ``"running"`` or ``{name: (shift, scale)}``. ``input_range``: how float image
    tensors are read (default ``(0, 1)``; ``(-1, 1)`` for a VAE decoder's output, ``(0, 255)``): see the module
    docstring.
    """
    from scorers.scoring.registry import SCORERS, build_scorer

    input_range = check_input_range(input_range)
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"reward: options must be a dict of the scorer's arguments (or {{name: dict}} for several "
                        f"rewards), got {type(options).__name__} {options!r}")

    if isinstance(name_or_weights, str):
        weights = {name_or_weights: 1.0}
        models = {name_or_weights: model} if model is None or isinstance(model, str) else dict(model)
        opts = {name_or_weights: _option_dict(options, name_or_weights)}
    elif isinstance(name_or_weights, Mapping):
        weights = dict(name_or_weights)
        if not weights:
            raise ValueError("reward: the weights mapping is empty")
        if model is not None and not isinstance(model, Mapping):
            if len(weights) > 1:
                raise ValueError("reward: with several rewards, model must be a mapping {name: model}")
            model = {next(iter(weights)): model}
        models = dict(model or {})
        if options is not None and len(weights) == 1 and not set(options) <= set(weights):
            options = {next(iter(weights)): options}
        opts = {name: _option_dict((options or {}).get(name), name) for name in weights}
    else:
        raise TypeError(f"reward: expected a scorer name or a {{name: weight}} mapping, got "
                        f"{type(name_or_weights).__name__}")
    for name, weight in weights.items():
        if name not in SCORERS:
            raise ValueError(f"reward: unknown reward {name!r}; available: {', '.join(sorted(SCORERS))}")
        if isinstance(weight, bool) or type(weight).__name__ == "bool_" or not isinstance(weight, numbers.Real) \
                or not math.isfinite(float(weight)):  # numpy and torch scalars are numbers.Real too
            raise ValueError(f"reward: the weight of {name!r} must be a finite number, got {weight!r}")
        weights[name] = float(weight)
    for mapping, what in ((models, "model"), (options or {}, "options")):
        if isinstance(name_or_weights, Mapping) and isinstance(mapping, Mapping):
            extra = sorted(set(mapping) - set(weights))
            if extra:
                raise ValueError(f"reward: {what} names {extra}, which are not among the rewards {sorted(weights)}")
    if differentiable:
        refused = [name for name in weights if name not in DIFFERENTIABLE]
        if refused:
            raise ValueError(f"reward: differentiable=True is available for {', '.join(DIFFERENTIABLE)} only; "
                             f"{', '.join(refused)} has no differentiable path (VLM judges and HPSv3 score through "
                             "generated text or a processor on the CPU)")
    normalize = check_normalize(normalize, weights)
    scorers = {name: build_scorer(name, model=models.get(name), device=device, **opts[name]) for name in weights}
    return Reward(scorers, weights, differentiable=differentiable, normalize=normalize, input_range=input_range)


def _option_dict(options, name: str) -> dict:
    """One reward's options as a dict; anything else is refused naming the reward."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"reward: the options of {name!r} must be a dict of its scorer's arguments, got "
                        f"{type(options).__name__} {options!r}")
    return dict(options)


def check_normalize(normalize, weights: Mapping[str, float]):
    """``normalize`` as :func:`load` takes it, checked against the rewards' names: ``"none"``, ``"running"``, or
    ``{name: (shift, scale)}`` with finite numbers and a non-zero scale (returned as float pairs). Raises
    ``ValueError`` naming the first bad entry."""
    if isinstance(normalize, str):
        if normalize not in NORMALIZE:
            raise ValueError(f"reward: normalize must be 'none', 'running' or {{name: (shift, scale)}}, "
                             f"got {normalize!r}")
    elif isinstance(normalize, Mapping):
        for name, pair in normalize.items():
            if name not in weights:
                raise ValueError(f"reward: normalize: {name} is not among the rewards {sorted(weights)}")
            try:
                shift, scale = (float(v) for v in pair)
            except (TypeError, ValueError):
                raise ValueError(f"reward: normalize[{name!r}] must be (shift, scale), got {pair!r}") from None
            if not (math.isfinite(shift) and math.isfinite(scale)) or scale == 0:
                raise ValueError(f"reward: normalize[{name!r}] needs a finite shift and a non-zero scale, "
                                 f"got {pair!r}")
        normalize = {name: tuple(float(v) for v in pair) for name, pair in normalize.items()}
    else:
        raise ValueError(f"reward: normalize must be 'none', 'running' or {{name: (shift, scale)}}, got {normalize!r}")
    return normalize


class RemoteReward:
    """A reward served by ``ts2 serve``, with :func:`load`'s callable interface: ``reward(images, prompts) ->
    torch.Tensor[B]`` (float32, CPU), ``detailed(...)`` / ``last_info`` (a :class:`RewardOutput` with the components;
    ``stats`` holds the service's timing). Images: PIL images, paths, or a float tensor ``[B, 3, H, W]`` read in
    ``input_range`` (default ``[0, 1]``, checked as :func:`load` checks it), sent as lossless 8-bit PNG (high-bit
    images scaled by :func:`scorers.models.images.to_rgb`). Plain HTTP with the standard library; ``token`` (or
    ``$TS2_SERVE_TOKEN``) is sent as a bearer token and never shown in ``repr`` or a message (nor are credentials
    written into ``url``).

    Every reply is checked before it is returned: a JSON object whose ``rewards`` (and each of its ``components``)
    is a flat list of one finite number per image; anything else raises one ``ValueError`` saying what is wrong. A
    refused connection or a timeout raises one ``ValueError`` naming the service. A busy service (HTTP 503 or 429)
    is asked again up to ``max_retries`` times, after its ``Retry-After`` (capped at ``max_retry_after`` seconds) or
    else an exponential backoff from ``backoff`` seconds."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 120.0, max_retries: int = 3,
                 backoff: float = 0.5, max_retry_after: float = 60.0, input_range: Sequence[float] = (0, 1)):
        import os
        import time

        self.url = url.rstrip("/")
        if not self.url.endswith("/score"):
            self.url += "/score"
        self._token = token if token is not None else os.environ.get("TS2_SERVE_TOKEN")
        self.timeout, self.last_info = timeout, None
        for option, value in (("max_retries", max_retries), ("backoff", backoff),
                              ("max_retry_after", max_retry_after)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= float(value) < math.inf:
                raise ValueError(f"RemoteReward: {option} must be a finite number >= 0, got {value!r}")
        self.max_retries, self.backoff, self.max_retry_after = int(max_retries), float(backoff), float(max_retry_after)
        self.input_range = check_input_range(input_range)
        self._sleep = time.sleep  # the wait between attempts (tests record it)

    @property
    def _secrets(self) -> tuple:
        from scorers.models.redaction import url_secrets

        return ((self._token,) if self._token else ()) + url_secrets(self.url)

    @property
    def where(self) -> str:
        """The service's URL, fit to print (credentials hidden)."""
        return redact_url(self.url)

    def __repr__(self) -> str:
        return f"RemoteReward({self.where!r})"

    def __call__(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None):
        return self.detailed(images, prompts, input_range=input_range).rewards

    def detailed(self, images, prompts: Sequence[str], *, input_range: Sequence[float] | None = None) -> RewardOutput:
        import base64
        import io

        import torch

        from scorers.models.images import open_rgb

        prompts = _prompts(prompts)
        images = _images(images)
        if len(images) != len(prompts):
            raise ValueError(f"reward: got {len(images)} images but {len(prompts)} prompts")
        if isinstance(images, torch.Tensor):
            images = _to_pil(_to_unit(images, self.input_range if input_range is None
                                      else check_input_range(input_range)))
        encoded = []
        for image in images:
            image = open_rgb(image)  # PIL image, path or file: 8-bit RGB (high-bit modes scaled)
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            encoded.append(base64.b64encode(buffer.getvalue()).decode("ascii"))
        body = json.dumps({"prompts": list(prompts), "images": encoded}).encode()
        reply = self._post(body)
        n = len(prompts)
        rewards = self._column(reply, "rewards", n)
        components = reply.get("components", {})
        if not isinstance(components, dict):
            raise ValueError(f"reward service {self.where}: invalid reply: 'components' is a "
                             f"{type(components).__name__}, expected an object {{name: [one number per image]}}")
        info = RewardOutput(rewards=rewards,
                            components={str(name): self._column(components, name, n, f"components[{name!r}]")
                                        for name in components},
                            stats={"timing": reply.get("timing", {})})
        self.last_info = info
        return info

    def _column(self, reply: dict, key: str, n: int, shown: str | None = None):
        """``reply[key]`` as a float32 tensor ``[n]``: a flat list of ``n`` finite numbers, else one ``ValueError``."""
        import torch

        shown = shown or repr(key)
        where = f"reward service {self.where}: invalid reply"
        if key not in reply:
            raise ValueError(f"{where}: no {shown} in it (keys: {sorted(map(str, reply))[:10]}); is this URL a "
                             "ts2 serve service?")
        values = reply[key]
        if not isinstance(values, list):
            raise ValueError(f"{where}: {shown} is a {type(values).__name__}, expected a list of {n} numbers")
        if len(values) != n:
            raise ValueError(f"{where}: {shown} has {len(values)} values for {n} images")
        for i, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}: {shown}[{i}] is {redact_cut(json.dumps(value), 80, self._secrets)}, "
                                 "expected one number per image (a flat list)")
            if not math.isfinite(value):
                raise ValueError(f"{where}: {shown}[{i}] is {value!r}, not a finite number")
        return torch.tensor(values, dtype=torch.float32)

    def _post(self, body: bytes) -> dict:
        """POST ``body``; the parsed JSON object of the reply. Busy answers (503, 429) are retried (class docstring);
        every failure is one ``ValueError`` naming the service, with secrets hidden."""
        import json
        import socket
        import urllib.error
        import urllib.request

        from scorers.models.openai_compat import retry_after_seconds

        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        attempt = 0
        while True:
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
                break
            except urllib.error.HTTPError as error:
                detail = error.read().decode("utf-8", "replace")
                if error.code in (429, 503) and attempt < self.max_retries:
                    wait = retry_after_seconds(error.headers.get("Retry-After"))
                    delay = min(self.max_retry_after, wait if wait is not None else self.backoff * 2 ** attempt)
                    attempt += 1
                    self._sleep(delay)
                    continue
                busy = (f" (still busy after {attempt} retries)" if error.code in (429, 503) and attempt else "")
                raise ValueError(f"reward service {self.where}: HTTP {error.code}{busy}: "
                                 f"{redact_cut(detail, 500, self._secrets)}") from None
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as error:
                reason = getattr(error, "reason", None) or error
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    raise ValueError(f"reward service {self.where}: no reply within timeout={self.timeout:g} s; is "
                                     "the service overloaded, or is this the right address?") from None
                raise ValueError(f"reward service {self.where}: cannot connect ("
                                 f"{redact_cut(f'{type(reason).__name__}: {reason}', 200, self._secrets)}); is "
                                 "ts2 serve running at that address?") from None
        try:
            reply = json.loads(raw)
        except ValueError:
            raise ValueError(f"reward service {self.where}: invalid reply: not JSON: "
                             f"{redact_cut(raw.decode('utf-8', 'replace'), 200, self._secrets)!r}") from None
        if not isinstance(reply, dict):
            raise ValueError(f"reward service {self.where}: invalid reply: a JSON {type(reply).__name__}, expected "
                             "an object with 'rewards'")
        return reply
