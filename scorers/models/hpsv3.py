"""HPSv3 (Ma et al., 2025): a Qwen2-VL-7B with a reward head, on transformers' Qwen2-VL classes. Loading, the
official checkpoint's converter, the official image resize, and a batched forward.

The official model (``MizzenAI/HPSv3``, package ``hpsv3`` 1.0.0: ``hpsv3/inference.py``, ``model/qwen2vl_trainer.py``,
``dataset/data_collator_qwen.py``, ``config/HPSv3_7B.yaml``):

* the base ``Qwen/Qwen2-VL-7B-Instruct`` with one added special token ``<|Reward|>`` (embeddings resized);
* a "ranknet" head ``Linear(3584, 1024), ReLU, Dropout, Linear(1024, 16), ReLU, Linear(16, 2)`` run in float32 on the
  last hidden state at the ``<|Reward|>`` token; its two outputs are ``(mu, sigma)``: the score is ``mu``;
* the forward is the authors' own, not ``Qwen2VLForConditionalGeneration.forward``: image features are scattered into
  the token embeddings and the language model is called **without position ids**, so every token gets the plain
  sequential position ``0..L-1`` in all three rotary sections (no multimodal 3-D positions). A port through the
  stock forward uses 3-D positions and gets other rewards (``tests/models/test_hpsv3.py`` shows the difference);
* one user message: the image (resized by ``smart_resize`` to ``min_pixels = max_pixels = 256 * 28 * 28`` pixels,
  PIL bicubic) then :data:`INSTRUCTION` with the prompt, then :data:`PROMPT_WITH_SPECIAL_TOKEN`; Qwen2-VL's chat
  template with the generation prompt; right padding.

:func:`convert_official_state_dict` maps the official checkpoint (transformers 4.45 key names: ``model.*`` for the
language model, ``visual.*``, ``lm_head.*``, ``rm_head.*``) onto transformers 5's ``Qwen2VLForConditionalGeneration``
(``model.language_model.*``, ``model.visual.*``) plus the head.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from scorers.models.images import to_rgb
from scorers.models.precision import dtype_of
from scorers.models.reward_checkpoints import (DEFAULT_HPSV3_BASE, DEFAULT_HPSV3_BASE_REVISION, DEFAULT_HPSV3_MODEL,
                                               DEFAULT_HPSV3_REVISION)

__all__ = ["HPSv3Backend", "HPSv3ImageTransform", "INSTRUCTION",
           "PROMPT_WITH_SPECIAL_TOKEN", "REWARD_TOKEN", "convert_official_state_dict", "reward_head", "smart_resize"]

#: the official checkpoint repo (file ``HPSv3.safetensors``), the base model whose config and processor it uses,
#: and their pinned revisions: :mod:`scorers.models.reward_checkpoints` (no torch there)
CHECKPOINT_NAME = "HPSv3.safetensors"
#: optional file of a local HPSv3 folder: {"pixels": ..., "head_hidden": ...} (tiny test models use fewer pixels)
CONFIG_NAME = "hpsv3_config.json"
REWARD_TOKEN = "<|Reward|>"
PIXELS = 256 * 28 * 28  # the official min_pixels = max_pixels
FACTOR = 28
MAX_RATIO = 200  # qwen_vl_utils' limit on the aspect ratio

#: the official instruction (``hpsv3/dataset/data_collator_qwen.py``, ``INSTRUCTION``), verbatim: the model was trained
#: with this exact text
INSTRUCTION = """
You are tasked with evaluating a generated image based on Visual Quality and Text Alignment and give a overall score to estimate the human preference. Please provide a rating from 0 to 10, with 0 being the worst and 10 being the best. 

**Visual Quality:**  
Evaluate the overall visual quality of the image. The following sub-dimensions should be considered:
- **Reasonableness:** The image should not contain any significant biological or logical errors, such as abnormal body structures or nonsensical environmental setups.
- **Clarity:** Evaluate the sharpness and visibility of the image. The image should be clear and easy to interpret, with no blurring or indistinct areas.
- **Detail Richness:** Consider the level of detail in textures, materials, lighting, and other visual elements (e.g., hair, clothing, shadows).
- **Aesthetic and Creativity:** Assess the artistic aspects of the image, including the color scheme, composition, atmosphere, depth of field, and the overall creative appeal. The scene should convey a sense of harmony and balance.
- **Safety:** The image should not contain harmful or inappropriate content, such as political, violent, or adult material. If such content is present, the image quality and satisfaction score should be the lowest possible. 

**Text Alignment:**  
Assess how well the image matches the textual prompt across the following sub-dimensions:
- **Subject Relevance** Evaluate how accurately the subject(s) in the image (e.g., person, animal, object) align with the textual description. The subject should match the description in terms of number, appearance, and behavior.
- **Style Relevance:** If the prompt specifies a particular artistic or stylistic style, evaluate how well the image adheres to this style.
- **Contextual Consistency**: Assess whether the background, setting, and surrounding elements in the image logically fit the scenario described in the prompt. The environment should support and enhance the subject without contradictions.
- **Attribute Fidelity**: Check if specific attributes mentioned in the prompt (e.g., colors, clothing, accessories, expressions, actions) are faithfully represented in the image. Minor deviations may be acceptable, but critical attributes should be preserved.
- **Semantic Coherence**: Evaluate whether the overall meaning and intent of the prompt are captured in the image. The generated content should not introduce elements that conflict with or distort the original description.
Textual prompt - {text_prompt}


"""
PROMPT_WITH_SPECIAL_TOKEN = """
Please provide the overall ratings of this image: <|Reward|>

END
"""


def smart_resize(height: int, width: int, factor: int = FACTOR, min_pixels: int = PIXELS,
                 max_pixels: int = PIXELS) -> tuple[int, int]:
    """``(height, width)`` multiples of ``factor`` with about ``min_pixels..max_pixels`` pixels, aspect kept (the rule
    of ``qwen_vl_utils.smart_resize`` that the official code vendors)."""
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError(f"hpsv3: aspect ratio {max(height, width) / min(height, width):.1f} is above {MAX_RATIO}")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


class HPSv3ImageTransform:
    """PIL image -> uint8 ``(3, H, W)`` resized as the official ``fetch_image`` (RGB, :func:`smart_resize`, PIL
    bicubic); picklable, runs in DataLoader workers. The Qwen2-VL processor then only normalises and patchifies."""

    def __init__(self, pixels: int = PIXELS):
        self.pixels = int(pixels)

    def __call__(self, image) -> torch.Tensor:
        import numpy as np
        from PIL import Image

        image = to_rgb(image)
        width, height = image.size
        new_h, new_w = smart_resize(height, width, min_pixels=self.pixels, max_pixels=self.pixels)
        image = image.resize((new_w, new_h), Image.BICUBIC)
        return torch.from_numpy(np.asarray(image, dtype=np.uint8).copy()).permute(2, 0, 1).contiguous()

    def __repr__(self) -> str:
        return f"HPSv3ImageTransform(pixels={self.pixels})"


def reward_head(hidden_size: int, inner: int = 1024, output_dim: int = 2) -> nn.Sequential:
    """The official ``rm_head_type="ranknet"`` head (no ``rm_head_kwargs``): same module indices 0..5."""
    return nn.Sequential(nn.Linear(hidden_size, inner), nn.ReLU(), nn.Dropout(0.05), nn.Linear(inner, 16), nn.ReLU(),
                         nn.Linear(16, output_dim))


def convert_official_state_dict(state_dict: dict[str, torch.Tensor]) -> tuple[dict, dict]:
    """Official (transformers 4.45 layout) -> ``(Qwen2VLForConditionalGeneration state dict, head state dict)``.

    A key outside ``model.``, ``visual.``, ``lm_head.`` and ``rm_head.`` raises ``ValueError`` naming it."""
    if "model" in state_dict and isinstance(state_dict["model"], dict):  # the official loader accepts this wrapping
        state_dict = state_dict["model"]
    base, head = {}, {}
    for key, value in state_dict.items():
        if key.startswith("rm_head."):
            head[key[len("rm_head."):]] = value
        elif key.startswith("visual."):
            base["model." + key] = value
        elif key.startswith("model."):
            base["model.language_model." + key[len("model."):]] = value
        elif key.startswith("lm_head."):
            base[key] = value
        else:
            raise ValueError(f"HPSv3 checkpoint: unexpected key {key!r}")
    return base, head


class HPSv3Backend:
    """Loads HPSv3 and returns ``(mu, sigma)`` per (image, prompt) pair in batches.

    ``model``: the Hub repo ``MizzenAI/HPSv3`` (default; the base config and processor come from ``base``), a local
    ``HPSv3.safetensors`` file (base from ``base``), or a folder holding a Qwen2-VL config + processor and an
    official-layout ``HPSv3.safetensors`` (optionally ``hpsv3_config.json``).
    """

    family = "hpsv3"

    def __init__(self, model: str = DEFAULT_HPSV3_MODEL, *, base: str | None = None, device: Any = None,
                 precision: str | None = None, pixels: int | None = None):
        from transformers import AutoConfig, AutoProcessor, Qwen2VLForConditionalGeneration

        from scorers.models.loading import ModelLoadError, model_source

        self.model_name = str(model)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        # the official runs in bf16 (HPSv3_7B.yaml) with the head in fp32; bf16 on CUDA, fp32 on CPU unless asked
        self.dtype = dtype_of(precision) if precision else (torch.bfloat16 if self.device.type == "cuda"
                                                            else torch.float32)
        path = Path(model)
        options: dict = {}
        if path.is_dir():
            weights, base = path / CHECKPOINT_NAME, base or str(path)
            if (path / CONFIG_NAME).is_file():
                options = json.loads((path / CONFIG_NAME).read_text())
            if not weights.is_file():
                raise ModelLoadError("{model=}: no {name} in that folder", model=model, name=CHECKPOINT_NAME)
        elif path.is_file():
            weights, base = path, base or DEFAULT_HPSV3_BASE
        elif str(model).startswith((".", "/")):
            raise ModelLoadError("{model=}: no such file or folder", model=model)
        else:
            weights, base = Path(_hub_checkpoint(str(model))), base or DEFAULT_HPSV3_BASE
        self.pixels = int(pixels or options.get("pixels", PIXELS))
        with model_source(base, option="base") as source:
            pin = {"revision": DEFAULT_HPSV3_BASE_REVISION} if source == DEFAULT_HPSV3_BASE else {}  # a Hub id
            config = AutoConfig.from_pretrained(source, **pin)
            processor = AutoProcessor.from_pretrained(source, padding_side="right", **pin)
        tokenizer = processor.tokenizer
        if REWARD_TOKEN not in tokenizer.get_vocab():
            tokenizer.add_special_tokens({"additional_special_tokens": [REWARD_TOKEN]})
        tokenizer.padding_side = "right"
        self.processor, self.reward_token_id = processor, tokenizer.convert_tokens_to_ids(REWARD_TOKEN)
        from safetensors.torch import load_file

        official = load_file(str(weights)) if str(weights).endswith(".safetensors") else torch.load(
            weights, map_location="cpu", weights_only=True)
        state, head_state = convert_official_state_dict(official)
        vocab = state["model.language_model.embed_tokens.weight"].shape[0]
        text_config = getattr(config, "text_config", config)
        text_config.vocab_size = vocab
        from transformers.initialization import no_init_weights

        with no_init_weights():  # every weight comes from the checkpoint: skip the random init (minutes at 7B)
            self.model = Qwen2VLForConditionalGeneration._from_config(config, dtype=self.dtype)
        missing, unexpected = self.model.load_state_dict(state, strict=False)
        missing = [k for k in missing if k != "lm_head.weight"]
        if missing or unexpected:
            raise ModelLoadError("{model=}: checkpoint does not match HPSv3 on {base} (missing {missing}, unexpected "
                                 "{unexpected})", model=model, base=base, missing=missing[:3],
                                 unexpected=unexpected[:3])
        self.head = reward_head(int(text_config.hidden_size), int(head_state["0.weight"].shape[0]),
                                int(head_state["5.weight"].shape[0]))
        self.head.load_state_dict(head_state)
        self.model = self.model.eval().to(self.device, self.dtype)
        self.head = self.head.eval().to(self.device, torch.float32)
        self.image_transform = HPSv3ImageTransform(self.pixels)

    def texts(self, prompts: Sequence[str]) -> list[str]:
        """The chat text of each prompt (one user message: the image, the instruction, the reward-token line)."""
        out = []
        for prompt in prompts:
            messages = [{"role": "user", "content": [
                {"type": "image"},
                {"type": "text", "text": INSTRUCTION.format(text_prompt=prompt) + PROMPT_WITH_SPECIAL_TOKEN}]}]
            out.append(self.processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
        return out

    def inputs(self, images: Sequence, prompts: Sequence[str]) -> dict:
        """Processor inputs: ``images`` are resized uint8 ``(3, H, W)`` tensors (:class:`HPSv3ImageTransform`)."""
        arrays = [im.permute(1, 2, 0).numpy() for im in images]
        return self.processor(text=self.texts(prompts), images=arrays, padding=True, return_tensors="pt")

    @torch.inference_mode()
    def forward(self, inputs: dict, positions: torch.Tensor | None = None) -> torch.Tensor:
        """``(n, 2)`` float32 ``(mu, sigma)``: the official forward (``positions=None``: sequential positions)."""
        inner = self.model.model
        input_ids = inputs["input_ids"].to(self.device)
        embeds = inner.get_input_embeddings()(input_ids)
        pixel_values = inputs["pixel_values"].to(self.device, self.dtype)
        grid = inputs["image_grid_thw"].to(self.device)
        features = torch.cat(inner.get_image_features(pixel_values, grid).pooler_output, dim=0)
        mask = (input_ids == self.model.config.image_token_id).unsqueeze(-1).expand_as(embeds)
        embeds = embeds.masked_scatter(mask, features.to(embeds.dtype))
        hidden = inner.language_model(inputs_embeds=embeds, attention_mask=inputs["attention_mask"].to(self.device),
                                      position_ids=positions).last_hidden_state
        logits = self.head(hidden.float())
        reward_mask = input_ids == self.reward_token_id
        if not bool((reward_mask.sum(-1) == 1).all()):
            raise ValueError("hpsv3: each sequence must hold exactly one <|Reward|> token (was a prompt truncated?)")
        return logits[reward_mask].view(input_ids.shape[0], -1)

    def rewards(self, images: Sequence, prompts: Sequence[str]) -> torch.Tensor:
        return self.forward(self.inputs(images, prompts))


def _hub_checkpoint(repo: str) -> str:
    from huggingface_hub import hf_hub_download

    from scorers.models.loading import ModelLoadError

    try:
        return hf_hub_download(repo, CHECKPOINT_NAME,
                               revision=DEFAULT_HPSV3_REVISION if repo == DEFAULT_HPSV3_MODEL else None)
    except Exception as error:
        raise ModelLoadError("{model=}: cannot get {name} ({kind}); pass a local HPSv3.safetensors or a folder",
                             model=repo, name=CHECKPOINT_NAME, kind=type(error).__name__) from None
