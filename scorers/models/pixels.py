"""Image preprocessing of the reward models, as their official code does it (picklable: runs in DataLoader workers).

* :class:`ResizeCropUint8` -- PIL resize of the short side (bicubic) + centre crop, handed over as a **uint8**
  ``(3, S, S)`` tensor; the ``/255`` and mean/std normalisation happen on the model's device (:func:`normalise`;
  :func:`channel_normalise` is the mean/std step alone, for float pixels in ``[0, 1]``).
  ``crop="floor"`` is transformers 4.x ``CLIPImageProcessor``'s crop offset (``(h - S) // 2``: PickScore's processor),
  ``crop="round"`` torchvision ``CenterCrop``'s (``round((h - S) / 2)``: ImageReward's ``_transform``). Both resize the
  long side to ``int(S * long / short)``, as both official pipelines do.
* :class:`HPSv2Transform` -- HPSv2's ``preprocess_val`` (its open_clip fork, ``light_augmentation=True``): ``ToTensor``
  first, then a bicubic resize *of the float tensor* so the longer side is ``S`` (torchvision's tensor resize,
  antialiased), zero padding to ``S x S`` centred, then the mean/std normalisation. Returns float ``(3, S, S)``.
* :func:`resize_short_crop` (with :func:`pil_bicubic_resize`) and :func:`hpsv2_resize_pad` -- their twins on float
  ``[B, 3, H, W]`` tensors in ``[0, 1]``, on any device and differentiable (the models' tensor paths, used by the
  reward API :mod:`scorers.rewards`).
"""
from __future__ import annotations

from typing import Sequence

import torch

from scorers.models.images import to_rgb

__all__ = ["CLIP_MEAN", "CLIP_STD", "HPSv2Transform", "ResizeCropUint8", "channel_normalise", "hpsv2_resize_pad",
           "normalise", "pil_bicubic_resize", "resize_short_crop"]

#: OpenAI CLIP's normalisation constants (PickScore's, HPSv2's and ImageReward's preprocessing all use them)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

CROPS = ("floor", "round")


class ResizeCropUint8:
    """PIL image -> uint8 ``(3, size, size)``: bicubic resize of the short side to ``size``, centre crop.

    ``rgb``: when the image becomes RGB. ``"first"`` (PickScore: transformers' processor converts first);
    ``"after"`` the resize and crop (ImageReward's official ``_transform``: ``Resize``, ``CenterCrop``, then
    ``_convert_image_to_rgb``): PIL resizes an RGBA image with premultiplied alpha and a palette image with nearest
    neighbours, so the order changes the pixels. With ``"after"`` the transform wants the image in its own mode
    (``native_mode``: the runner opens it with :func:`scorers.models.images.open_for`); high-bit modes (16-bit, 32-bit,
    float) are still scaled to 8-bit RGB first (:func:`scorers.models.images.to_rgb`), where the official code would
    clip them."""

    def __init__(self, size: int, crop: str = "round", rgb: str = "first"):
        if crop not in CROPS:
            raise ValueError(f"crop {crop!r} is not one of {CROPS}")
        if rgb not in ("first", "after"):
            raise ValueError(f"rgb {rgb!r} is not one of ('first', 'after')")
        self.size, self.crop, self.rgb = int(size), crop, rgb

    @property
    def native_mode(self) -> bool:
        return self.rgb == "after"

    def __call__(self, image) -> torch.Tensor:
        import numpy as np
        from PIL import Image

        from scorers.models.images import HIGH_BIT_MODES

        if self.rgb == "first" or image.mode in HIGH_BIT_MODES:
            image = to_rgb(image)
        width, height = image.size
        short, long = (width, height) if width <= height else (height, width)
        if short != self.size:
            new_short, new_long = self.size, int(self.size * long / short)
            new_w, new_h = (new_short, new_long) if width <= height else (new_long, new_short)
            image = image.resize((new_w, new_h), resample=Image.BICUBIC)
        width, height = image.size
        if self.crop == "floor":
            top, left = (height - self.size) // 2, (width - self.size) // 2
        else:
            top, left = int(round((height - self.size) / 2.0)), int(round((width - self.size) / 2.0))
        if image.mode != "RGB":  # rgb="after": crop in the image's own mode (as torchvision's CenterCrop), then RGB
            image = to_rgb(image.crop((left, top, left + self.size, top + self.size)))
            top = left = 0
        array = np.asarray(image, dtype=np.uint8)
        array = array[top:top + self.size, left:left + self.size]
        return torch.from_numpy(array.copy()).permute(2, 0, 1).contiguous()

    def __repr__(self) -> str:
        shown = "" if self.rgb == "first" else f", rgb={self.rgb!r}"
        return f"ResizeCropUint8(size={self.size}, crop={self.crop!r}{shown})"


class HPSv2Transform:
    """HPSv2's evaluation preprocessing (see module docstring): PIL image -> normalised float ``(3, size, size)``."""

    def __init__(self, size: int = 224, mean: Sequence[float] = CLIP_MEAN, std: Sequence[float] = CLIP_STD):
        self.size, self.mean, self.std = int(size), tuple(mean), tuple(std)

    def __call__(self, image) -> torch.Tensor:
        import numpy as np
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as F

        pixels = torch.from_numpy(np.asarray(to_rgb(image), dtype=np.uint8).copy()).permute(2, 0, 1).float().div(255)
        height, width = pixels.shape[1:]
        scale = self.size / float(max(height, width))
        if scale != 1.0 or height != width:
            new_size = [round(height * scale), round(width * scale)]
            if scale != 1.0:
                pixels = F.resize(pixels, new_size, InterpolationMode.BICUBIC, antialias=True)
            pad_h, pad_w = self.size - new_size[0], self.size - new_size[1]
            pixels = F.pad(pixels, [pad_w // 2, pad_h // 2, pad_w - pad_w // 2, pad_h - pad_h // 2], fill=0)
        return F.normalize(pixels, self.mean, self.std)

    def __repr__(self) -> str:
        return f"HPSv2Transform(size={self.size})"


def channel_normalise(pixels: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """Float pixels in ``[0, 1]`` (``(..., 3, H, W)``) -> ``(x - mean) / std`` per channel, in their dtype and on their
    device; out of place, so gradients flow through it (the models' tensor paths, used by :mod:`scorers.rewards`)."""
    m = torch.as_tensor(mean, dtype=pixels.dtype, device=pixels.device).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=pixels.dtype, device=pixels.device).view(-1, 1, 1)
    return (pixels - m) / s


def normalise(pixels: torch.Tensor, mean: Sequence[float], std: Sequence[float], *, device, dtype) -> torch.Tensor:
    """uint8 ``(n, 3, H, W)`` -> ``((x / 255) - mean) / std`` (:func:`channel_normalise`) in float32 on ``device``,
    then cast to ``dtype``; float input is taken as already normalised and only moved."""
    if pixels.dtype != torch.uint8:
        return pixels.to(device, dtype, non_blocking=True)
    return channel_normalise(pixels.to(device, non_blocking=True).float().div_(255), mean, std).to(dtype)


# ----------------------------------------------------------------------------- on-device twins (torch ops)

def resize_short_crop(pixels, size: int, crop: str = "round", crop_size: int | None = None):
    """``[B, 3, H, W]`` floats in [0, 1] -> ``[B, 3, size, size]``: bicubic antialiased resize of the short side to
    ``size`` (long side ``int(size * long / short)``), clamped to [0, 1] as PIL's uint8 output is, then the centre
    crop (``"floor"``: transformers 4.x ``CLIPImageProcessor``; ``"round"``: torchvision ``CenterCrop``) -- the
    tensor twin of :class:`ResizeCropUint8`. ``crop_size`` (default ``size``): the crop's side when
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
    """HPSv2's ``preprocess_val`` on a batch (:class:`HPSv2Transform` without the normalisation):
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
