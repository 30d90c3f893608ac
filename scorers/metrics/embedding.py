"""Embedding scorers: CLIPScore, ALIGNScore, SigLIPScore, and the rules that turn two embeddings into a score.

Rules (plain NumPy, tested without models):

* ``cosine``  -- cos(image, text) of L2-normalised embeddings.
* ``paper``   -- max(cos, 0): TS2 paper eq. 6 (the default).
* ``hessel``  -- w * max(cos, 0) with w = 2.5 (Hessel et al., 2021, "CLIPScore").
* ``x100``    -- 100 * max(cos, 0) (torchmetrics' ``CLIPScore`` convention).
* SigLIP's probability: sigmoid(cos * exp(t) + b) with the checkpoint's learned t and b (Zhai et al., 2023).

The scorer classes follow the runner's protocol (see ``scorers.scoring.runner``): ``score(images, prompts) -> np.ndarray``,
a picklable ``image_transform`` that DataLoader workers apply, and ``config`` (what the cache fingerprints).
Each distinct prompt is embedded once and kept for the scorer's lifetime (TS2: 165 prompts for 2,840 images).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scorers.checks import check_pairs
from scorers.models.images import open_image

__all__ = [
    "FORMS",
    "HESSEL_W",
    "ALIGNScore",
    "CLIPScore",
    "EmbeddingScorer",
    "SigLIPScore",
    "apply_form",
    "paired_cosine",
    "sigmoid_probability",
]

FORMS = ("paper", "cosine", "hessel", "x100")
#: Hessel et al.'s CLIPScore weight w in ``w * max(cos, 0)`` (form ``"hessel"``): the one place 2.5 is written
HESSEL_W = 2.5


def paired_cosine(image_embeds: np.ndarray, text_embeds: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of two ``(n, d)`` arrays (each row L2-normalised first).

    Raises:
        ValueError: the arrays are not two-dimensional or differ in shape.

    Examples:
        cos([1, 0], [1, 1]) = 1 / sqrt(2) and cos([1, 1], [1, 2]) = 3 / sqrt(10):

        >>> paired_cosine([[1.0, 0.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 2.0]]).round(6)
        array([0.707107, 0.948683])
        >>> paired_cosine([[1.0, 0.0]], [[1.0, 0.0, 0.0]])
        Traceback (most recent call last):
        ...
        ValueError: expected two (n, d) arrays of the same shape, got (1, 2) and (1, 3)
    """
    a = np.asarray(image_embeds, dtype=np.float64)
    b = np.asarray(text_embeds, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"expected two (n, d) arrays of the same shape, got {a.shape} and {b.shape}")
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.einsum("nd,nd->n", a, b)


def apply_form(cosine: np.ndarray, form: str = "paper", *, w: float = HESSEL_W) -> np.ndarray:
    """Cosine similarities -> scores in one of :data:`FORMS` (``w`` is used by ``"hessel"`` only).

    Raises:
        ValueError: ``form`` is not one of :data:`FORMS`.

    Examples:
        >>> apply_form([-0.2, 0.3]), apply_form([-0.2, 0.3], "cosine"), apply_form([-0.2, 0.3], "hessel")
        (array([0. , 0.3]), array([-0.2,  0.3]), array([0.  , 0.75]))
        >>> apply_form([0.3], "logit")
        Traceback (most recent call last):
        ...
        ValueError: form 'logit' is not one of ('paper', 'cosine', 'hessel', 'x100')
    """
    cosine = np.asarray(cosine, dtype=np.float64)
    if form == "cosine":
        return cosine
    clipped = np.maximum(cosine, 0.0)
    if form == "paper":
        return clipped
    if form == "hessel":
        return w * clipped
    if form == "x100":
        return 100.0 * clipped
    raise ValueError(f"form {form!r} is not one of {FORMS}")


def sigmoid_probability(cosine: np.ndarray, logit_scale: float, logit_bias: float) -> np.ndarray:
    """SigLIP's pairwise match probability sigmoid(cos * scale + bias); ``logit_scale`` is already exponentiated.

    Raises:
        ValueError: ``cosine`` is not numeric (NumPy's message).

    Examples:
        sigmoid(0 * 10 - 1) = 1 / (1 + e) and sigmoid(0.1 * 10 - 1) = sigmoid(0) = 0.5:

        >>> sigmoid_probability([0.0, 0.1], logit_scale=10.0, logit_bias=-1.0).round(6)
        array([0.268941, 0.5     ])
    """
    logits = np.asarray(cosine, dtype=np.float64) * logit_scale + logit_bias
    return 1.0 / (1.0 + np.exp(-logits))


def _load(loader, image: Any):
    """``loader(image)`` with errors naming the file (as :func:`scorers.models.images.open_image`)."""
    from PIL import Image

    if not isinstance(image, (str, Path, Image.Image)):
        raise TypeError(f"expected a PIL image, a path or a preprocessed tensor, got {type(image).__name__}")
    try:
        return loader(image)
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read image {str(image)!r}: {error}") from None


class EmbeddingScorer:
    """Cosine of an embedder's image and text embeddings, mapped by a form (see module docstring).

    ``embedder`` is any object with ``encode_images(tensor)``, ``encode_texts(list[str])`` and ``image_transform``
    (``scorers.models.open_clip_embed.OpenClipEmbedder``, ``scorers.models.hf_embed.HFEmbedder``).

    Raises:
        ValueError: ``form`` is not one of :data:`FORMS` (here or in :meth:`set_form`); :meth:`score` refuses images
            and prompts of different lengths and images it cannot read (naming the file).

    Examples:
        A stand-in embedder (no model): an image's embedding is the mean of its first two channels, a text's is
        ``[1, len(text)]``; so the two pairs below have cosines 1 / sqrt(2) and 3 / sqrt(10):

        >>> import torch
        >>> class Toy:
        ...     family, model_name, dtype, image_transform = "toy", "toy", torch.float32, None
        ...     def encode_images(self, pixels):
        ...         return pixels.mean(dim=(2, 3))[:, :2]
        ...     def encode_texts(self, texts):
        ...         return torch.tensor([[1.0, float(len(t))] for t in texts])
        >>> pixels = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])[:, :, None, None]  # two 1x1 RGB images
        >>> EmbeddingScorer(Toy(), form="cosine").score(pixels, ["a", "ab"]).round(6)
        array([0.707107, 0.948683])
        >>> EmbeddingScorer(Toy(), form="x100").score(pixels, ["a", "ab"]).round(4)
        array([70.7107, 94.8683])
    """

    name = "embedding_score"

    def __init__(self, embedder, *, form: str = "paper", w: float = HESSEL_W):
        self.embedder = embedder
        self.set_form(form, w)
        self.image_transform = embedder.image_transform
        loader = getattr(embedder, "image_loader", None)
        if loader is not None:  # the runner's workers call it instead of PIL + image_transform
            self.image_loader = loader
        self._text_cache: dict[str, Any] = {}

    def set_form(self, form: str = "paper", w: float = HESSEL_W) -> None:
        """Choose the score form (the embeddings, and the prompt cache, do not depend on it)."""
        if form not in FORMS:
            raise ValueError(f"form {form!r} is not one of {FORMS}")
        self.form, self.w = form, float(w)

    @property
    def config(self) -> dict:
        """What identifies this scorer's numbers (the runner's cache refuses to mix configs)."""
        config = {"name": self.name, "family": self.embedder.family, "model": self.embedder.model_name,
                  "pretrained": getattr(self.embedder, "pretrained", None), "form": self.form, "w": self.w,
                  "dtype": str(self.embedder.dtype)}
        decode = getattr(self.embedder, "decode", "pil")
        if decode != "pil":  # numbers differ slightly from PIL decoding: never mixed in one cache
            config["decode"] = decode
        return config

    def text_embeddings(self, prompts: Sequence[str]):
        """``(n, d)`` embeddings of ``prompts``; only prompts never seen before go through the text tower."""
        import torch

        new = [p for p in dict.fromkeys(prompts) if p not in self._text_cache]
        if new:
            for prompt, row in zip(new, self.embedder.encode_texts(new)):
                self._text_cache[prompt] = row
        return torch.stack([self._text_cache[p] for p in prompts])

    def image_embeddings(self, images: Sequence[Any]):
        """``(n, d)`` embeddings of PIL images, paths, transformed ``(3, H, W)`` tensors, or one stacked tensor.

        With an ``image_loader`` (open_clip ``decode="device"``) the items may also be what it returns in the runner's
        workers (1-D JPEG byte tensors, stacked to 2-D when of equal length); they are decoded on the device.
        """
        import torch

        loader = getattr(self, "image_loader", None)
        if isinstance(images, torch.Tensor):
            if images.dim() == 4:
                return self.embedder.encode_images(images)
            images = list(images)
        if loader is None:
            pixels = [im if isinstance(im, torch.Tensor) else self.image_transform(open_image(im)) for im in images]
            return self.embedder.encode_images(torch.stack(pixels))
        items = [im if isinstance(im, torch.Tensor) else _load(loader, im) for im in images]
        return self.embedder.encode_images(self.embedder.decode_images(items))

    def cosine(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        """Cosine similarity of each image with its prompt."""
        check_pairs(images, prompts, nonempty=True)
        if len(images) == 0:
            return np.zeros(0)
        image = self.image_embeddings(images).cpu().numpy()
        text = self.text_embeddings(prompts).cpu().numpy()
        return paired_cosine(image, text)

    def score(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        """One score per (image, prompt) pair, in the configured form."""
        return apply_form(self.cosine(images, prompts), self.form, w=self.w)

    # the differentiable tensor path (the reward API, ``scorers.rewards``): pixels already preprocessed on the device
    # by ``tensor_model.tensor_preprocessor``; the rules as in :meth:`score`, with torch ops

    @property
    def tensor_model(self):
        """The model behind the tensor path: the embedder (``model``, ``device``, ``dtype``,
        ``tensor_preprocessor(name)``, ``tensor_image_features(pixels)``)."""
        return self.embedder

    def tensor_cosine(self, pixels, prompts: list[str]):
        """:meth:`cosine` on preprocessed pixels, as a float32 tensor ``[B]`` keeping the autograd graph."""
        import torch.nn.functional as F

        image = self.embedder.tensor_image_features(pixels)
        text = self.text_embeddings(prompts).clone().to(image.device)  # cached under inference mode: clone for a graph
        return (F.normalize(image.float(), dim=-1) * F.normalize(text.float(), dim=-1)).sum(-1)

    def tensor_forward(self, pixels, prompts: list[str]):
        """:meth:`score` on preprocessed pixels (:func:`apply_form` on tensors), keeping the autograd graph."""
        cosine = self.tensor_cosine(pixels, prompts)
        if self.form == "cosine":
            return cosine
        clipped = cosine.clamp(min=0.0)
        return {"paper": clipped, "hessel": self.w * clipped, "x100": 100.0 * clipped}[self.form]


class CLIPScore(EmbeddingScorer):
    """CLIPScore on open_clip (``model="ViT-B-32", pretrained="openai"``) or a transformers CLIP checkpoint.

    ``backend="auto"`` picks open_clip when ``pretrained`` is given or ``model`` is an open_clip name or a
    ``local-dir:``/``hf-hub:`` path, else transformers (``"openai/clip-vit-base-patch16"``, the official TS2 choice).
    ``device=None`` uses CUDA when available. ``decode="device"`` (open_clip only, opt-in) decodes JPEGs in batches
    on the model's device (nvJPEG on CUDA) instead of with PIL in the DataLoader workers: faster when the CPU is the
    limit, scores differ slightly from PIL decoding (see ``scorers.models.open_clip_embed``). A built-in open_clip
    architecture without ``pretrained`` is refused (it would have random weights) unless ``allow_random_weights=True``.

    Raises:
        ValueError: an unknown ``backend``, ``decode="device"`` with the transformers backend, an open_clip
            architecture without ``pretrained`` (unless ``allow_random_weights``), or what :class:`EmbeddingScorer`
            refuses; loading errors name the model (see ``scorers.models.loading``).
    """

    name = "clip_score"

    def __init__(self, model: str = "openai/clip-vit-base-patch16", pretrained: str | None = None, *,
                 backend: str = "auto", form: str = "paper", w: float = HESSEL_W, device: str | None = None,
                 precision: str = "fp32", decode: str = "pil", allow_random_weights: bool = False):
        from scorers.models.open_clip_embed import is_open_clip_name

        if backend == "auto":
            backend = "open_clip" if is_open_clip_name(model, pretrained) else "transformers"
        if backend == "open_clip":
            from scorers.models.open_clip_embed import OpenClipEmbedder

            embedder = OpenClipEmbedder(model, pretrained, device=device, precision=precision, decode=decode,
                                        allow_random_weights=allow_random_weights)
        elif backend == "transformers":
            from scorers.models.hf_embed import HFEmbedder

            if decode != "pil":
                raise ValueError(f"decode={decode!r} is available with the open_clip backend only")

            embedder = HFEmbedder(model, device=device, precision=precision)
        else:
            raise ValueError(f"backend {backend!r} is not one of 'auto', 'open_clip', 'transformers'")
        super().__init__(embedder, form=form, w=w)


class ALIGNScore(EmbeddingScorer):
    """ALIGN (transformers ``AlignModel``, default ``kakaobrain/align-base``) cosine score."""

    name = "align_score"

    def __init__(self, model: str = "kakaobrain/align-base", *, form: str = "paper", w: float = HESSEL_W,
                 device: str | None = None, precision: str = "fp32"):
        from scorers.models.hf_embed import HFEmbedder

        super().__init__(HFEmbedder(model, device=device, precision=precision), form=form, w=w)


class SigLIPScore(EmbeddingScorer):
    """SigLIP cosine score (default ``google/siglip-so400m-patch14-384``) plus the sigmoid match probability.

    ``score`` returns the configured form of the cosine; ``probability`` the sigmoid; the runner gets both through
    ``score_with_records`` (column ``siglip_probability``).
    """

    name = "siglip_score"

    def __init__(self, model: str = "google/siglip-so400m-patch14-384", *, form: str = "paper", w: float = HESSEL_W,
                 device: str | None = None, precision: str = "fp32"):
        from scorers.models.hf_embed import HFEmbedder

        super().__init__(HFEmbedder(model, device=device, precision=precision), form=form, w=w)

    def probability(self, images: Sequence[Any], prompts: Sequence[str]) -> np.ndarray:
        """sigmoid(cos * exp(t) + b) per pair."""
        return sigmoid_probability(self.cosine(images, prompts), self.embedder.logit_scale, self.embedder.logit_bias)

    def score_with_records(self, images: Sequence[Any], prompts: Sequence[str]) -> tuple[np.ndarray, list[dict]]:
        """Scores and, per item, ``{"siglip_probability": p}`` from one forward pass."""
        cosine = self.cosine(images, prompts)
        probability = sigmoid_probability(cosine, self.embedder.logit_scale, self.embedder.logit_bias)
        return apply_form(cosine, self.form, w=self.w), [{"siglip_probability": float(p)} for p in probability]
