"""open_clip image/text towers: loading by open_clip name + tag (or ``local-dir:``/``hf-hub:``) and batched encoders.

Returns raw (un-normalised) float32 embeddings; how they become a score is ``scorers.embedding``'s job.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ._precision import dtype_of

__all__ = ["OpenClipEmbedder", "is_open_clip_name"]


def is_open_clip_name(model: str, pretrained: str | None = None) -> bool:
    """Whether ``model`` names an open_clip model (a built-in architecture, a schema path, or a tag was given)."""
    if pretrained is not None or model.startswith(("local-dir:", "hf-hub:")):
        return True
    try:
        import open_clip
    except ImportError:
        return False
    return model.replace("/", "-") in open_clip.list_models()


class OpenClipEmbedder:
    """An open_clip CLIP model, e.g. ``OpenClipEmbedder("ViT-B-32", "openai")``.

    ``image_transform`` is open_clip's eval preprocessing (picklable, runs in DataLoader workers).
    ``pretrained=None`` with a built-in name gives random weights (used by the benchmark).
    """

    family = "open_clip"

    def __init__(self, model: str = "ViT-B-32", pretrained: str | None = "openai", *,
                 device: str | torch.device | None = None, precision: str = "fp32"):
        import open_clip

        self.model_name, self.pretrained = model, pretrained
        self.dtype = dtype_of(precision)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model, _, self.image_transform = open_clip.create_model_and_transforms(model, pretrained=pretrained)
        self.model = self.model.eval().to(self.device, self.dtype)
        self.tokenizer = open_clip.get_tokenizer(model)

    @torch.inference_mode()
    def encode_images(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``(n, 3, H, W)`` preprocessed images -> ``(n, d)`` float32 embeddings."""
        pixel_values = pixel_values.to(self.device, self.dtype, non_blocking=True)
        return self.model.encode_image(pixel_values).float()

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Prompts -> ``(n, d)`` float32 embeddings (open_clip's own tokenizer and context length)."""
        tokens = self.tokenizer(list(texts)).to(self.device)
        return self.model.encode_text(tokens).float()
