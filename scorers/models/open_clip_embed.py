"""open_clip image/text towers: loading by open_clip name + tag (or ``local-dir:``/``hf-hub:``) and batched encoders.

Returns raw (un-normalised) float32 embeddings; how they become a score is ``scorers.metrics.embedding``'s job.

Image preprocessing, two ways (both feed ``encode_images``):

* ``decode="pil"`` (default): DataLoader workers decode with PIL and run open_clip's own resize + centre crop, then
  hand over **uint8** ``(3, H, W)`` tensors (:class:`Uint8Transform`); ``encode_images`` does ``/255`` and the
  mean/std normalisation on the model's device in float32, exactly the operations of open_clip's ``ToTensor`` +
  ``Normalize``, so the scores equal the all-float CPU path (``reference_transform``) to float32 rounding, with 4x less
  worker -> main-process traffic.
* ``decode="device"`` (opt-in): workers only read the file bytes (:class:`EncodedImageLoader`); the JPEGs are decoded
  in batches on the model's device with ``torchvision.io.decode_jpeg`` (nvJPEG on CUDA, libjpeg-turbo on CPU), then
  resized (bicubic, antialiased, rounded to uint8 like PIL) and centre-cropped there by the same torchvision transform
  objects. Decoders differ slightly, so scores differ slightly from the PIL path (measured in
  ``benchmarks/bench_embedding.py``); non-JPEG or unusual JPEG files are decoded by PIL in the worker as before.
"""
from __future__ import annotations

import io
import os
from typing import Any, Sequence

import torch

from scorers.models.images import to_rgb
from scorers.models.precision import dtype_of

__all__ = ["DECODES", "EncodedImageLoader", "OpenClipEmbedder", "Uint8Transform", "is_open_clip_name", "split_transform"]

DECODES = ("pil", "device")


def open_clip_local_dir(model: str) -> str:
    """``model`` with the ``local-dir:`` schema added when it is a folder saved by open_clip (has
    ``open_clip_config.json``), so a plain path works like open_clip's own ``local-dir:PATH``."""
    if not model.startswith(("local-dir:", "hf-hub:")) and os.path.isfile(os.path.join(model, "open_clip_config.json")):
        return f"local-dir:{model}"
    return model


def is_open_clip_name(model: str, pretrained: str | None = None) -> bool:
    """Whether ``model`` names an open_clip model (a built-in architecture, a schema path or an open_clip folder,
    or a tag was given)."""
    if pretrained is not None or open_clip_local_dir(model).startswith(("local-dir:", "hf-hub:")):
        return True
    try:
        import open_clip
    except ImportError:
        return False
    return model.replace("/", "-") in open_clip.list_models()


def split_transform(transform):
    """open_clip's eval ``Compose`` -> (PIL-stage transforms, mean, std), or ``None`` when it is not the usual
    ``[PIL transforms..., ToTensor, Normalize]`` shape (then the float transform is used unchanged)."""
    from torchvision import transforms as T

    steps = list(getattr(transform, "transforms", []))
    if len(steps) < 2 or not isinstance(steps[-1], T.Normalize) or not isinstance(steps[-2], T.ToTensor):
        return None
    if any(isinstance(s, (T.ToTensor, T.Normalize)) for s in steps[:-2]):
        return None
    normalize = steps[-1]
    return steps[:-2], tuple(float(m) for m in normalize.mean), tuple(float(s) for s in normalize.std)


class Uint8Transform:
    """PIL image -> uint8 ``(3, H, W)`` tensor: open_clip's resize/crop/RGB steps without ``ToTensor``/``Normalize``
    (picklable; runs in DataLoader workers)."""

    def __init__(self, pil_steps: Sequence[Any]):
        self.pil_steps = list(pil_steps)

    def __call__(self, image) -> torch.Tensor:
        import numpy as np

        for step in self.pil_steps:
            image = step(image)
        image = to_rgb(image)
        array = np.asarray(image, dtype=np.uint8)
        return torch.from_numpy(array.copy()).permute(2, 0, 1).contiguous()

    def __repr__(self) -> str:
        return f"Uint8Transform({self.pil_steps})"


def _is_jpeg(data: bytes) -> bool:
    """A complete baseline/progressive JPEG: SOI at the start and EOI near the end (a truncated file has no EOI and
    goes to PIL, which reports it)."""
    return data[:2] == b"\xff\xd8" and b"\xff\xd9" in data[-64:]


class EncodedImageLoader:
    """Worker side of ``decode="device"``: a path -> its JPEG bytes as a 1-D uint8 tensor (decoded later, in batches,
    on the model's device). Anything else (PIL images, PNGs, CMYK JPEGs...) is decoded here by PIL and returned as
    ``uint8_transform`` gives it, a ``(3, H, W)`` uint8 tensor. Unreadable files raise, naming nothing (the caller
    names them)."""

    def __init__(self, uint8_transform: Uint8Transform):
        self.uint8_transform = uint8_transform

    def __call__(self, ref) -> torch.Tensor:
        from PIL import Image

        if isinstance(ref, Image.Image):
            return self.uint8_transform(to_rgb(ref))
        with open(ref, "rb") as handle:
            data = handle.read()
        with Image.open(io.BytesIO(data)) as image:  # header only: rejects non-images early, gives format/mode
            if image.format == "JPEG" and image.mode in ("RGB", "L") and _is_jpeg(data):
                return torch.frombuffer(bytearray(data), dtype=torch.uint8)
            return self.uint8_transform(to_rgb(image))


def _create(model: str, pretrained: str | None, allow_random_weights: bool = False):
    """``open_clip.create_model_and_transforms`` with ``scorers.models.loading``'s checks and one-line errors: a
    ``local-dir:`` folder must exist, an ``hf-hub:`` repo loads from its cached snapshot when the Hub cannot be
    reached, and a missing tag, file or download is a :class:`~scorers.models.loading.ModelLoadError`."""
    import open_clip

    from scorers.models.loading import model_source

    label = model if pretrained is None else f"{model} --pretrained {pretrained}"
    if model.startswith("local-dir:"):
        with model_source(model[len("local-dir:"):], files=("open_clip_config.json",)) as source:
            return open_clip.create_model_and_transforms(f"local-dir:{source}", pretrained=pretrained)
    if model.startswith("hf-hub:"):
        repo = model[len("hf-hub:"):]
        with model_source(repo, files=("open_clip_config.json",)) as source:
            name = model if source == repo else f"local-dir:{source}"
            return open_clip.create_model_and_transforms(name, pretrained=pretrained)
    if model.replace("/", "-") in open_clip.list_models():  # a built-in architecture: no silent random weights, no minute of retries
        from scorers.models.open_clip_weights import builtin_weights

        with builtin_weights(model, pretrained, allow_random_weights=allow_random_weights) as weights:
            return open_clip.create_model_and_transforms(model, pretrained=weights)
    with model_source(label, resolve=False, errors=(RuntimeError,)):
        return open_clip.create_model_and_transforms(model, pretrained=pretrained)


class OpenClipEmbedder:
    """An open_clip CLIP model, e.g. ``OpenClipEmbedder("ViT-B-32", "openai")``.

    ``image_transform`` is open_clip's eval preprocessing up to the uint8 crop (picklable, runs in DataLoader
    workers); ``reference_transform`` is open_clip's full float transform (``encode_images`` accepts both outputs).
    ``decode="device"`` adds ``image_loader`` (workers read bytes) and ``decode_images`` (batched JPEG decode +
    resize + crop on ``device``); see the module docstring. ``pretrained=None`` with a built-in name is an error
    naming ``--pretrained`` unless ``allow_random_weights=True`` (the benchmark times random weights on purpose).
    """

    family = "open_clip"

    def __init__(self, model: str = "ViT-B-32", pretrained: str | None = "openai", *,
                 device: str | torch.device | None = None, precision: str = "fp32", decode: str = "pil",
                 allow_random_weights: bool = False):
        import open_clip

        if decode not in DECODES:
            raise ValueError(f"decode {decode!r} is not one of {DECODES}")
        model = open_clip_local_dir(model)
        self.model_name, self.pretrained, self.decode = model, pretrained, decode
        self.dtype = dtype_of(precision)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model, _, self.reference_transform = _create(model, pretrained, allow_random_weights)
        self.model = self.model.eval().to(self.device, self.dtype)
        self.tokenizer = open_clip.get_tokenizer(model)
        split = split_transform(self.reference_transform)
        self.image_transform = self.reference_transform
        self.image_loader = None
        self._mean = self._std = None
        if split is not None:
            pil_steps, mean, std = split
            self.image_transform = Uint8Transform(pil_steps)
            self._mean = torch.tensor(mean, dtype=torch.float32, device=self.device).view(-1, 1, 1)
            self._std = torch.tensor(std, dtype=torch.float32, device=self.device).view(-1, 1, 1)
        if decode == "device":
            self._device_steps = self._tensor_steps(split)
            self.image_loader = EncodedImageLoader(self.image_transform)

    def with_decode(self, decode: str) -> "OpenClipEmbedder":
        """A copy sharing this model's weights, with another ``decode`` (used to compare paths in one process)."""
        import copy

        if decode not in DECODES:
            raise ValueError(f"decode {decode!r} is not one of {DECODES}")
        other = copy.copy(self)
        other.decode, other.image_loader = decode, None
        if decode == "device":
            other._device_steps = self._tensor_steps(split_transform(self.reference_transform))
            other.image_loader = EncodedImageLoader(self.image_transform)
        return other

    @staticmethod
    def _tensor_steps(split):
        """The PIL-stage transforms that also run on uint8 tensors (torchvision Resize/CenterCrop; RGB mode steps
        are no-ops on decoded RGB tensors); anything else cannot be reproduced on the device."""
        from torchvision import transforms as T

        if split is None:
            raise ValueError("decode='device' needs open_clip's usual [Resize, CenterCrop, ToTensor, Normalize] "
                             "preprocessing; this model's transform has another shape")
        steps = []
        for step in split[0]:
            if isinstance(step, (T.Resize, T.CenterCrop)):
                if isinstance(step, T.Resize) and not step.antialias:
                    raise ValueError(f"decode='device': {step} without antialias does not match PIL")
                steps.append(step)
            elif getattr(step, "__name__", type(step).__name__) not in ("MaybeConvertMode", "_convert_to_rgb"):
                raise ValueError(f"decode='device' cannot run {step!r} on the device")
        return steps

    def tensor_preprocessor(self, name: str):
        """The on-device twin of ``image_transform`` + the mean/std step: a function from float ``[B, 3, H, W]``
        pixels in [0, 1] to this model's normalised input, with differentiable torch ops. HPSv2's transform
        (``pixels.HPSv2Transform``): :func:`scorers.models.pixels.hpsv2_resize_pad`; open_clip's usual
        ``Resize(S)`` + ``CenterCrop(S)``: PIL's two-pass resize (:func:`scorers.models.pixels.resize_short_crop`);
        other shapes: torchvision's own tensor steps. ``ValueError`` when there is no tensor twin (``name``, the
        scorer's, heads that message)."""
        from torchvision import transforms as T

        from scorers.models.pixels import HPSv2Transform, channel_normalise, hpsv2_resize_pad, resize_short_crop

        transform = self.image_transform
        if isinstance(transform, HPSv2Transform):
            return lambda x: channel_normalise(hpsv2_resize_pad(x, transform.size), transform.mean, transform.std)
        split = split_transform(self.reference_transform)
        if split is None:
            raise ValueError(f"{name}: this open_clip model's preprocessing has no tensor twin")
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
        steps = self._tensor_steps(split)
        mean, std = split[1], split[2]

        def pre(x):
            for step in steps:
                x = step(x)
                if isinstance(step, T.Resize):
                    x = x.clamp(0, 1)
            return channel_normalise(x, mean, std)

        return pre

    def tensor_image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``(n, 3, H, W)`` normalised pixels (:meth:`tensor_preprocessor`) -> ``(n, d)`` image embeddings in the
        model's dtype, keeping the autograd graph (no ``inference_mode``)."""
        return self.model.encode_image(pixel_values)

    def decode_images(self, items: Sequence[torch.Tensor]) -> torch.Tensor:
        """``decode="device"``: a list of 1-D uint8 JPEG byte tensors and/or ``(3, H, W)`` uint8 crops (what
        ``image_loader`` returns) -> ``(n, 3, S, S)`` uint8 crops on ``device``, in order."""
        from torchvision.io import ImageReadMode, decode_jpeg

        items = list(items)
        out: list[torch.Tensor | None] = [None] * len(items)
        encoded = [i for i, x in enumerate(items) if x.dim() == 1]
        for i, x in enumerate(items):
            if x.dim() != 1:
                out[i] = x.to(self.device, non_blocking=True)
        if encoded:
            decoded = decode_jpeg([items[i] for i in encoded], mode=ImageReadMode.RGB, device=self.device)
            groups: dict[tuple, list[int]] = {}
            for j, image in enumerate(decoded):
                groups.setdefault(tuple(image.shape), []).append(j)
            for members in groups.values():  # one resize per distinct source size (TS2: usually one)
                batch = torch.stack([decoded[j] for j in members])
                for step in self._device_steps:
                    batch = step(batch)
                for j, crop in zip(members, batch):
                    out[encoded[j]] = crop
        return torch.stack(out)

    @torch.inference_mode()
    def encode_images(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``(n, 3, H, W)`` images -> ``(n, d)`` float32 embeddings. uint8 crops (``image_transform``) are scaled
        and normalised here, on the device, in float32 (as open_clip's ``ToTensor`` + ``Normalize`` do); float input
        is taken as already normalised (``reference_transform``)."""
        if pixel_values.dtype == torch.uint8:
            if self._mean is None:
                raise ValueError("uint8 pixels given but this model's transform has no Normalize step to apply")
            pixels = pixel_values.to(self.device, non_blocking=True).float().div_(255)
            pixel_values = pixels.sub_(self._mean).div_(self._std).to(self.dtype)
        else:
            pixel_values = pixel_values.to(self.device, self.dtype, non_blocking=True)
        return self.model.encode_image(pixel_values).float()

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Prompts -> ``(n, d)`` float32 embeddings (open_clip's own tokenizer and context length)."""
        tokens = self.tokenizer(list(texts)).to(self.device)
        return self.model.encode_text(tokens).float()
