"""transformers dual encoders (CLIP, ALIGN, SigLIP) through ``AutoModel``/``AutoProcessor``: loading + batched encoders.

Returns raw (un-normalised) float32 embeddings from ``get_image_features``/``get_text_features`` (their
``pooler_output`` in transformers 5, the projected embedding). Text padding follows each family's training:
SigLIP pads to ``max_length`` and gets no attention mask (as in the original model); CLIP and ALIGN pad to the longest
prompt with a mask, so a prompt's embedding does not depend on which prompts share its batch.
"""
from __future__ import annotations

from typing import Sequence

import torch

from scorers.models.precision import dtype_of

__all__ = ["HFEmbedder", "HFImageTransform"]

#: model_type -> (padding, tokenizer outputs passed to get_text_features)
_TEXT_INPUTS = {
    "clip": (True, ("input_ids", "attention_mask")),
    "align": (True, ("input_ids", "attention_mask", "token_type_ids")),
    "siglip": ("max_length", ("input_ids",)),
}


class HFImageTransform:
    """PIL image -> ``(3, H, W)`` pixel tensor with the checkpoint's image processor (picklable for workers)."""

    def __init__(self, image_processor):
        self.image_processor = image_processor

    def __call__(self, image) -> torch.Tensor:
        return self.image_processor(images=[image], return_tensors="pt")["pixel_values"][0]


class HFEmbedder:
    """A transformers CLIP/ALIGN/SigLIP checkpoint, e.g. ``HFEmbedder("openai/clip-vit-base-patch16")``.

    ``family`` is the config's ``model_type``; ``logit_scale``/``logit_bias`` (SigLIP: bias too) are the model's
    learned temperature and bias as floats, for the sigmoid-probability rule.
    """

    def __init__(self, model: str, *, device: str | torch.device | None = None, precision: str = "fp32",
                 processor: str | None = None, revision: str | None = None,
                 processor_revision: str | None = None):
        from transformers import AutoModel, AutoProcessor

        from scorers.models.loading import model_source

        self.model_name = model
        self.dtype = dtype_of(precision)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        with model_source(model) as source:
            pin = {"revision": revision} if revision and source == model else {}  # a Hub id: its pinned commit
            self.model = AutoModel.from_pretrained(source, **pin).eval().to(self.device, self.dtype)
            if processor is None:  # the checkpoint's own; PickScore takes another repo's (``processor=``)
                processor = AutoProcessor.from_pretrained(source)
        if isinstance(processor, str):
            with model_source(processor, option="processor",
                              files=("preprocessor_config.json",)) as source:
                pin = {"revision": processor_revision} if processor_revision and source == processor else {}
                processor = AutoProcessor.from_pretrained(source, **pin)
        self.family = self.model.config.model_type
        if self.family not in _TEXT_INPUTS:
            raise ValueError(f"{model}: model type {self.family!r} is not a supported dual encoder "
                             f"({sorted(_TEXT_INPUTS)})")
        self.tokenizer = processor.tokenizer
        self.image_transform = HFImageTransform(processor.image_processor)
        self.image_mean = tuple(getattr(processor.image_processor, "image_mean", None) or ())
        self.image_std = tuple(getattr(processor.image_processor, "image_std", None) or ())
        self._padding, self._text_keys = _TEXT_INPUTS[self.family]
        text_config = self.model.config.text_config
        self._max_length = min(int(text_config.max_position_embeddings),
                               int(getattr(self.tokenizer, "model_max_length", 10**6) or 10**6))

    @property
    def logit_scale(self) -> float:
        """exp(learned log-temperature) for CLIP/SigLIP; 1/temperature for ALIGN."""
        if self.family == "align":
            return float(1.0 / self.model.temperature.detach().float())
        return float(self.model.logit_scale.detach().float().exp())

    @property
    def logit_bias(self) -> float:
        """SigLIP's learned bias (0 for the softmax-trained families)."""
        bias = getattr(self.model, "logit_bias", None)
        return float(bias.detach().float()) if bias is not None else 0.0

    def tensor_preprocessor(self, name: str):
        """The on-device twin of ``image_transform`` + the mean/std step: a function from float ``[B, 3, H, W]``
        pixels in [0, 1] to this model's normalised input, with differentiable torch ops
        (:func:`scorers.models.pixels.resize_short_crop`): a ``pixels.ResizeCropUint8`` (PickScore) or a
        ``CLIPImageProcessor`` (short-side resize + centre crop); any other processor is a ``ValueError`` (no tensor
        path; ``name``, the scorer's, heads the message)."""
        from scorers.models.pixels import ResizeCropUint8, channel_normalise, resize_short_crop

        transform = self.image_transform
        if isinstance(transform, ResizeCropUint8):  # PickScore
            size, crop, crop_size = transform.size, transform.crop, None
        else:  # a CLIPImageProcessor: resize the shortest edge, centre crop (other processors: no tensor path)
            processor = transform.image_processor
            short = _field(getattr(processor, "size", None), "shortest_edge")
            crop_size = _field(getattr(processor, "crop_size", None), "height")
            if (self.family != "clip" or short is None or crop_size is None
                    or not getattr(processor, "do_center_crop", True)):
                raise ValueError(f"{name}: {type(processor).__name__} is not a short-side resize + centre crop")
            size, crop = int(short), "floor"
        mean, std = self.image_mean, self.image_std
        return lambda x: channel_normalise(resize_short_crop(x, size, crop, crop_size), mean, std)

    def tensor_image_features(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``(n, 3, H, W)`` normalised pixels (:meth:`tensor_preprocessor`) -> ``(n, d)`` image embeddings in the
        model's dtype, keeping the autograd graph (no ``inference_mode``)."""
        return _features(self.model.get_image_features(pixel_values=pixel_values))

    @torch.inference_mode()
    def encode_images(self, pixel_values: torch.Tensor) -> torch.Tensor:
        """``(n, 3, H, W)`` processed images -> ``(n, d)`` float32 embeddings. uint8 crops (a scorer's own PIL-stage
        transform, e.g. ``pixels.ResizeCropUint8``) get the processor's ``/255`` + mean/std here, in float32."""
        from scorers.models.pixels import normalise

        pixel_values = normalise(pixel_values, self.image_mean, self.image_std, device=self.device, dtype=self.dtype)
        return self.model.get_image_features(pixel_values=pixel_values).pooler_output.float()

    @torch.inference_mode()
    def encode_texts(self, texts: Sequence[str]) -> torch.Tensor:
        """Prompts -> ``(n, d)`` float32 embeddings (truncated to the text tower's length)."""
        tokens = self.tokenizer(list(texts), padding=self._padding, truncation=True, max_length=self._max_length,
                                return_tensors="pt")
        inputs = {k: tokens[k].to(self.device) for k in self._text_keys if k in tokens}
        return self.model.get_text_features(**inputs).pooler_output.float()


def _field(value, key):
    """``value[key]`` of a processor's size dict (or attribute of a size object), ``None`` when absent."""
    found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
    return None if found is None else int(found)


def _features(output):
    """transformers 5 returns an output object from ``get_*_features``; 4.x a tensor."""
    return output if hasattr(output, "dim") else output.pooler_output
