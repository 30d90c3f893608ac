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
  mean/std); no CPU round-trip. Each scorer owns that path: its ``tensor_model.tensor_preprocessor`` (the models'
  files, kernels in ``scorers.models.pixels``) and its ``tensor_forward`` (the scoring rule, on tensors). The only
  difference from the PIL path is that PIL rounds the resized image to uint8 (at most 1/255 per pixel, plus PIL's
  fixed-point rounding). Other rewards (VLM judges, HPSv3, ALIGN, SigLIP...) get tensors converted to uint8 PIL
  images on the CPU, as their processors need.
* **Tensor range.** Float tensors are read as ``[0, 1]``; values outside it by more than :data:`RANGE_TOLERANCE`
  (``2**-7``: one bfloat16 step above 1.0, about two 8-bit steps; far below the ``-1`` or ``255`` of the other usual
  encodings) are refused with one line, unless ``input_range=(-1, 1)`` (a VAE decoder's output) or ``(0, 255)`` says
  how to read them (any ``(low, high)`` float32 pixels can be read in: ``x -> (x - low) / (high - low)``, checked the
  same way after; see :func:`check_input_range`). Integer tensors (uint8...) are read as float32 in that range.
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

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scorers.rewards.normalisation import RewardNormaliser, weighted_sum

__all__ = ["DIFFERENTIABLE", "MAX_RANGE_BOUND", "MIN_RANGE_WIDTH", "RANGE_TOLERANCE", "Reward", "RewardOutput",
           "check_images", "check_input_range", "check_normalize", "check_prompts", "load", "to_pil", "to_unit"]

#: how far a float image tensor may stray outside its input range (after mapping it to [0, 1]) before it is refused:
#: 2**-7 is one bfloat16 step above 1.0 (a bf16 VAE decode rounds 1.0 up by that much) and about two 8-bit steps;
#: a [-1, 1] or [0, 255] image lies far outside it unless it is nearly blank
RANGE_TOLERANCE = 2 ** -7

#: the largest size of an ``input_range`` bound or width: float32's largest number (beyond it pixels read as inf)
MAX_RANGE_BOUND = 3.4028234663852886e38
#: the narrowest ``input_range``: float32's smallest normal number (below it ``x / width`` overflows)
MIN_RANGE_WIDTH = 1.1754943508222875e-38

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


# ----------------------------------------------------------------------------- the tensor path

class _TensorPath:
    """A scorer's on-device path, asked of the scorer itself: ``preprocess(pixels in [0,1]) -> model input`` (its
    ``tensor_model.tensor_preprocessor``), ``forward(input, prompts) -> [B]`` (its ``tensor_forward``).
    ``ValueError`` when the scorer's preprocessing has no tensor twin."""

    def __init__(self, scorer):
        self.scorer = scorer
        model = scorer.tensor_model
        self.module, self.device, self.dtype = model.model, model.device, model.dtype
        self._pre = model.tensor_preprocessor(scorer.name)

    def preprocess(self, pixels):
        return self._pre(pixels.to(self.device, non_blocking=True).float()).to(self.dtype)

    def forward(self, pixels, prompts: list[str]):
        return self.scorer.tensor_forward(pixels, prompts)


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
            if kind in DIFFERENTIABLE and hasattr(scorer, "tensor_forward"):
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

        prompts = check_prompts(prompts)
        images = check_images(images)
        if len(images) != len(prompts):
            raise ValueError(f"reward: got {len(images)} images but {len(prompts)} prompts")
        is_tensor = isinstance(images, torch.Tensor)
        if is_tensor:
            images = to_unit(images, self.input_range if input_range is None else check_input_range(input_range))
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
            images = to_pil(images)
        with torch.inference_mode():
            scores = scorer.score(list(images), prompts)
        return torch.as_tensor(scores, dtype=torch.float32)

    def _normalise(self, name, value):
        """Reward ``name``'s values normalised (:mod:`scorers.rewards.normalisation`, the one implementation)."""
        return self._normaliser(name, value)


def check_prompts(prompts) -> list[str]:
    if isinstance(prompts, str):
        raise TypeError("reward: prompts must be a list of strings, one per image, not one string")
    prompts = list(prompts)
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise TypeError(f"reward: prompts[{i}] is a {type(prompt).__name__}, expected str")
        if not prompt.strip():  # refused on every path (tensor and PIL alike): a reward needs a prompt
            raise ValueError(f"reward: prompts[{i}] is empty ({prompt!r}); every image needs a non-empty prompt")
        try:
            prompt.encode("utf-8")  # a lone surrogate ("\\ud800" in JSON) breaks every tokenizer's encode
        except UnicodeEncodeError as error:
            raise ValueError(f"reward: prompts[{i}] is not valid Unicode text (a lone surrogate "
                             f"{prompt[error.start]!r} at character {error.start})") from None
    return prompts


def check_input_range(input_range) -> tuple[float, float]:
    """``input_range`` as ``(low, high)`` floats: two finite numbers with ``low < high`` (``(0, 1)``, ``(-1, 1)``,
    ``(0, 255)``) that float32 pixels can be read in: ``low``, ``high`` and ``high - low`` at most
    :data:`MAX_RANGE_BOUND` in size, and ``high - low`` at least :data:`MIN_RANGE_WIDTH` and ``2**-15`` of the larger
    bound (256 float32 steps there: room for 8-bit pixels). One ``ValueError`` naming ``input_range`` otherwise."""
    try:
        if isinstance(input_range, (str, bytes)):
            raise TypeError
        low, high = (float(v) for v in input_range)
    except (TypeError, ValueError):
        raise ValueError(f"reward: input_range must be (low, high), e.g. (0, 1), (-1, 1) or (0, 255); got "
                         f"{input_range!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"reward: input_range must be two finite numbers low < high, got {input_range!r}")
    width, bound = high - low, max(abs(low), abs(high))
    if not (bound <= MAX_RANGE_BOUND and width <= MAX_RANGE_BOUND and width >= max(MIN_RANGE_WIDTH, bound * 2 ** -15)):
        raise ValueError(f"reward: input_range={input_range!r} is no pixel range that float32 can read: low, high and "
                         f"high - low must be at most {MAX_RANGE_BOUND:.3g} in size, and high - low at least "
                         f"{MIN_RANGE_WIDTH:.3g} and 2**-15 of the larger bound, as (0, 1), (-1, 1) or (0, 255) are")
    return low, high


def to_unit(pixels, input_range: tuple[float, float]):
    """Pixels read in ``input_range`` -> float ``[0, 1]`` (``(x - low) / (high - low)``, differentiable; an integer
    tensor such as uint8 is read as float32 first), refusing values outside the range by more than
    :data:`RANGE_TOLERANCE` (and NaN/inf) with one line."""
    import torch

    low, high = input_range
    if not pixels.is_floating_point():  # uint8 0..255 with input_range=(0, 255), for one
        pixels = pixels.float()
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
                         "reward: image tensor holds NaN or infinite values")
    return pixels


def check_images(images):
    """A 4-D float or integer tensor, or a list of PIL images / paths (a list of equal-size ``[3, H, W]`` tensors is
    stacked)."""
    import torch

    if isinstance(images, torch.Tensor):
        if images.dim() == 3:
            images = images.unsqueeze(0)
        if images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"reward: images must be a tensor [B, 3, H, W], got shape {tuple(images.shape)}")
        if images.dtype == torch.bool or images.is_complex():
            raise ValueError(f"reward: image tensors must hold real numbers (floats, or integers such as uint8) read "
                             f"in input_range, got {images.dtype}")
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
        return check_images(torch.stack(images))
    return images


def to_pil(pixels) -> list:
    """``[B, 3, H, W]`` floats in [0, 1] (already checked and mapped by :func:`to_unit`) -> uint8 RGB PIL images (for
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
