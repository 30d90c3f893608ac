"""The small interface every VQA backend implements, and the helpers they share (batching, devices, answer probability).

A backend is ``answer(images, questions) -> list[str]`` (``images[i]`` is asked ``questions[i]``; greedy decoding) and,
where it can, ``yes_probability(images, questions) -> np.ndarray`` (the probability of the answer "Yes", used by
VQAScore). Backends batch many questions per forward with the padding side their model needs, so a batched answer
equals the one-question-per-forward answer (tested per family).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from scorers.checks import check_pairs
from scorers.errors import ParameterError
from scorers.models.precision import dtype_of

__all__ = ["BACKENDS", "PromptedVQA", "SharedPrefix", "answer_log_probability", "chunks", "image_windows",
           "load_vqa_backend", "move_inputs", "pick_device", "pick_dtype", "unique_images"]


def pick_device(device: str | None) -> torch.device:
    """The requested device, else CUDA when available, else CPU."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def pick_dtype(precision: str | None, device: torch.device) -> torch.dtype:
    """``precision`` (fp32/bf16/fp16) or the default: bf16 on GPU, fp32 on CPU."""
    if precision is None:
        precision = "bf16" if device.type == "cuda" else "fp32"
    return dtype_of(precision)


def move_inputs(inputs, device: torch.device, dtype: torch.dtype) -> dict:
    """Processor outputs on ``device``: floating tensors (pixels) in the model's ``dtype``, ids/masks as they are."""
    return {k: (v.to(device, dtype) if v.is_floating_point() else v.to(device)) for k, v in inputs.items()}


def chunks(n: int, size: int) -> list[range]:
    """``range``s of at most ``size`` covering ``0..n-1`` in order."""
    if size < 1:
        raise ParameterError("{batch_size} must be >= 1, got {size}", size=size)
    return [range(start, min(start + size, n)) for start in range(0, n, size)]


def unique_images(images: Sequence) -> tuple[list, list[int]]:
    """Distinct image objects (by identity) and, per item, the index of its image among them."""
    seen: dict[int, int] = {}
    uniques, index = [], []
    for image in images:
        key = id(image)
        if key not in seen:
            seen[key] = len(uniques)
            uniques.append(image)
        index.append(seen[key])
    return uniques, index


def answer_log_probability(logits: torch.Tensor, answer_ids: torch.Tensor) -> torch.Tensor:
    """Log-probability of ``answer_ids`` (k tokens, appended at the end of every row) from next-token ``logits``.

    ``logits``: ``(batch, seq, vocab)`` of sequences ending with the answer tokens; positions ``-k-1 .. -2`` predict
    them.
    """
    k = answer_ids.numel()
    steps = logits[:, -k - 1:-1, :].float().log_softmax(-1)
    target = answer_ids.to(logits.device).view(1, k, 1).expand(logits.shape[0], k, 1)
    return steps.gather(-1, target).squeeze(-1).sum(-1)


def image_windows(images: Sequence, size: int) -> list[tuple[list, list[int], list[int]]]:
    """Items grouped by image (identity) into windows of at most ``size`` distinct images, in order of appearance.

    Per window: its images, the positions of their items (input order) and, per position, the index of its image in
    the window. Every item of an image falls in that image's window, so an image is encoded once per call.
    """
    uniques, index = unique_images(images)
    windows = []
    for part in chunks(len(uniques), size):
        positions = [p for p, u in enumerate(index) if u in part]
        windows.append(([uniques[u] for u in part], positions, [index[p] - part.start for p in positions]))
    return windows


def _position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions counted over the unmasked tokens only (``generate``'s rule: cumsum of the mask, pads at 0)."""
    return (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)


def _left_pad(rows: Sequence[torch.Tensor], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """1-D id tensors stacked left-padded to one length, with their attention mask."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=rows[0].dtype, device=rows[0].device)
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=rows[0].device)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = r
        mask[i, width - len(r):] = 1
    return ids, mask


class _NoSharedPrefix(Exception):
    """These prompts do not split into an image prefix shared by all questions of an image + a question suffix."""


class SharedPrefix:
    """The KV cache of the prompt prefix up to each image's last image token, for a window of images.

    ``ids``/``mask``: the prefixes left-padded to one length (one row per image); ``cache``: the LLM's KV cache after
    them (vision tower + projector + prefill run once per image). :meth:`batch` stacks it behind question suffixes.
    """

    def __init__(self, backend: "PromptedVQA", images: Sequence, first_questions: Sequence[str]):
        self.backend = backend
        model = backend.model
        inputs = backend._inputs(images, first_questions)
        extra = {k: v for k, v in inputs.items() if k not in ("input_ids", "attention_mask")}
        #: Qwen2-VL family: 3-D multimodal rotary positions (``get_rope_index``) and per-row ``rope_deltas``
        self.mrope = "image_grid_thw" in extra and hasattr(getattr(model, "model", None), "get_rope_index")
        allowed = {"pixel_values", "image_sizes"} | ({"image_grid_thw", "mm_token_type_ids"} if self.mrope else set())
        if not set(extra) <= allowed:
            raise _NoSharedPrefix(f"processor inputs {sorted(extra)}")
        self.prefixes = [backend._split_prompt(ids[m.bool()])[0]
                         for ids, m in zip(inputs["input_ids"], inputs["attention_mask"])]
        self.ids, self.mask = _left_pad(self.prefixes, backend.processor.tokenizer.pad_token_id)
        self.deltas = None
        if self.mrope:
            # the prefix's own token types (image tokens 1, text 0): the processor's are for the whole prompts
            types = (self.ids == model.config.image_token_id).to(extra["mm_token_type_ids"].dtype)
            positions, self.deltas = model.model.get_rope_index(self.ids, types, image_grid_thw=extra["image_grid_thw"],
                                                                attention_mask=self.mask)
            extra["mm_token_type_ids"] = types
        else:
            positions = _position_ids(self.mask)
        out = model(input_ids=self.ids, attention_mask=self.mask, position_ids=positions, use_cache=True,
                    logits_to_keep=1, **extra)
        self.cache = out.past_key_values

    def positions(self, rows: Sequence[int], mask: torch.Tensor) -> torch.Tensor:
        """Position ids of ``[prefix][pads][suffix...]`` rows with attention ``mask``: unmasked tokens counted, and for
        the Qwen2-VL family shifted by each row's ``rope_delta`` (the prefix's largest 3-D position + 1 - its length),
        so a question continues exactly where its whole unpadded prompt would (same in the 3 rotary sections)."""
        positions = _position_ids(mask)
        if self.deltas is None:
            return positions
        delta = self.deltas[torch.as_tensor(rows, device=self.deltas.device)].to(positions.device)
        return (positions + delta).unsqueeze(0).expand(3, -1, -1)

    def before_generate(self, rows: Sequence[int]) -> None:
        """Qwen2-VL family: ``generate`` continues a cache with ``rope_deltas`` stored on the model; set this batch's."""
        if self.deltas is not None:
            self.backend.model.model.rope_deltas = self.deltas[torch.as_tensor(rows, device=self.deltas.device)]

    def batch(self, rows: Sequence[int], inputs: dict):
        """Full ids, mask and a KV cache for questions whose image is ``rows[i]``: ``[prefix][pads][suffix]``.

        Pads sit between prefix and suffix, masked, and positions count unmasked tokens only, so each row sees
        exactly its own unpadded prompt."""
        from transformers import DynamicCache

        suffixes = []
        for row, ids, m in zip(rows, inputs["input_ids"], inputs["attention_mask"]):
            prefix, suffix = self.backend._split_prompt(ids[m.bool()])
            if not torch.equal(prefix, self.prefixes[row]):
                raise _NoSharedPrefix("questions of one image have different prompt prefixes")
            suffixes.append(suffix)
        suffix_ids, suffix_mask = _left_pad(suffixes, self.backend.processor.tokenizer.pad_token_id)
        index = torch.as_tensor(rows, device=self.ids.device)
        ids = torch.cat([self.ids[index], suffix_ids], dim=1)
        mask = torch.cat([self.mask[index], suffix_mask], dim=1)
        cache = DynamicCache(ddp_cache_data=[(k[index], v[index]) for k, v, *_ in self.cache],
                             config=self.backend.model.config)
        return ids, mask, cache


class PromptedVQA:
    """Shared body of the backends that render each question into a text prompt for a processor + ``generate``
    model (InstructBLIP, chat VLMs, LLaVA): batched greedy answering and teacher-forced answer probabilities.

    Subclasses set ``model``, ``processor`` (its tokenizer left-padded), ``device``, ``dtype``, ``batch_size``,
    ``max_new_tokens``, ``name`` and :attr:`yes_word`, call :meth:`_set_prefix_cache`, and implement :meth:`_inputs`
    (processor inputs of one batch).

    **Prefix cache** (default on): items are grouped by image (identity) into windows of at most ``batch_size``
    images. Families whose prompt is ``[text + image tokens][question text]`` (LLaVA, LLaVA-architecture chat VLMs,
    Qwen2-VL / Qwen2.5-VL with their 3-D rotary positions) run the vision tower, projector and LLM prefill of that
    prefix once per image and continue every question from a copy of its KV cache (:class:`SharedPrefix`); others may override :meth:`_answer_window` /
    :meth:`_probability_window` (InstructBLIP: vision tower once per image). ``prefix_cache=False`` is the plain
    path: every question runs its whole prompt. Both give the same greedy answers (tests/models/test_prefix_cache.py).
    """

    #: the answer whose probability ``yes_probability`` reads (the spelling the model's answers start with)
    yes_word = "yes"
    #: True when answers reuse each image's prefix; :attr:`prefix_cache_note` says why not when it is False
    prefix_cache = False
    prefix_cache_note = "prefix cache not set up"

    def _inputs(self, images: Sequence, questions: Sequence[str]) -> dict:
        raise NotImplementedError

    def _check_answer_probability(self) -> None:
        """Raise when this model cannot give teacher-forced answer probabilities (default: it can)."""

    def _prefix_cache_unsupported(self) -> str | None:
        """Why this model cannot reuse an image's prefix across its questions (None: it can)."""
        return None

    def _set_prefix_cache(self, enabled: bool) -> None:
        reason = "prefix_cache=False" if not enabled else self._prefix_cache_unsupported()
        self.prefix_cache, self.prefix_cache_note = reason is None, reason or "on"

    def _split_prompt(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One unpadded prompt split after its last image token: (image prefix, question suffix)."""
        image_token = getattr(self.model.config, "image_token_id", None)
        where = (ids == image_token).nonzero() if image_token is not None else ids[:0]
        if len(where) == 0 or int(where[-1]) + 1 >= len(ids):
            raise _NoSharedPrefix("the prompt has no text after its last image token")
        cut = int(where[-1]) + 1
        return ids[:cut], ids[cut:]

    def _generate(self, inputs: dict) -> list[str]:
        tokenizer = self.processor.tokenizer
        ids = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, num_beams=1,
                                  pad_token_id=tokenizer.pad_token_id)
        prompt = inputs["input_ids"]
        # decoder-only LMs return prompt + answer; encoder-decoder LMs the answer alone
        if ids.shape[1] >= prompt.shape[1] and torch.equal(ids[:, :prompt.shape[1]], prompt):
            ids = ids[:, prompt.shape[1]:]
        return [t.strip() for t in tokenizer.batch_decode(ids, skip_special_tokens=True)]

    @staticmethod
    def _with_answer(inputs: dict, answer_ids: torch.Tensor) -> dict:
        """``inputs`` with the answer's tokens appended to every row (teacher forcing)."""
        inputs = dict(inputs)
        tail = answer_ids.to(inputs["input_ids"].device).expand(inputs["input_ids"].shape[0], -1)
        inputs["input_ids"] = torch.cat([inputs["input_ids"], tail], dim=1)
        inputs["attention_mask"] = torch.cat([inputs["attention_mask"], torch.ones_like(tail)], dim=1)
        if "mm_token_type_ids" in inputs:  # multimodal token types (some chat VLMs): answer tokens are text
            inputs["mm_token_type_ids"] = torch.cat([inputs["mm_token_type_ids"], torch.zeros_like(tail)], dim=1)
        return inputs

    def _windows(self, images: Sequence, questions: Sequence[str], run_window, run_plain) -> list:
        """``run_window(window images, window questions, rows)`` per window of images; ``run_plain(images,
        questions)`` per ``batch_size`` chunk when the prefix cache is off or a window's prompts do not share a
        prefix. Results in input order."""
        out: list = [None] * len(questions)
        if not self.prefix_cache:
            windows = [(None, list(range(len(questions))), None)]
        else:
            windows = image_windows(images, self.batch_size)
        for window_images, positions, rows in windows:
            window_questions = [questions[p] for p in positions]
            results = None
            if window_images is not None:
                try:
                    results = run_window(window_images, window_questions, rows)
                except _NoSharedPrefix as error:  # correct but slower: say so on the backend
                    self.prefix_cache_note = f"plain path for some questions: {error}"
            if results is None:
                window_all = [images[p] for p in positions]
                results = [r for part in chunks(len(positions), self.batch_size)
                           for r in run_plain([window_all[i] for i in part], [window_questions[i] for i in part])]
            for p, r in zip(positions, results):
                out[p] = r
        return out

    def _prefix_batches(self, images: Sequence, questions: Sequence[str], rows: Sequence[int]):
        """Per ``batch_size`` questions of one window: (prefix length, ids, mask, KV cache, the window's
        :class:`SharedPrefix`, the batch's rows in it); each image's prefix is prefilled once."""
        first = {row: i for i, row in reversed(list(enumerate(rows)))}
        prefix = SharedPrefix(self, images, [questions[first[r]] for r in range(len(images))])
        for part in chunks(len(questions), self.batch_size):
            part_rows = [rows[i] for i in part]
            inputs = self._inputs([images[r] for r in part_rows], [questions[i] for i in part])
            yield (prefix.ids.shape[1], *prefix.batch(part_rows, inputs), prefix, part_rows)

    def _answer_window(self, images: Sequence, questions: Sequence[str], rows: Sequence[int]) -> list[str]:
        """Answers for one window: ``batch_size`` questions per ``generate`` continuing from their images' prefixes."""
        out = []
        for _, ids, mask, cache, prefix, part_rows in self._prefix_batches(images, questions, rows):
            prefix.before_generate(part_rows)
            out.extend(self._generate({"input_ids": ids, "attention_mask": mask, "past_key_values": cache}))
        return out

    def _probability_window(self, images: Sequence, questions: Sequence[str], rows: Sequence[int],
                            answer_ids: torch.Tensor) -> list[float]:
        """P(answer) for one window, continuing each question from its image's prefix cache."""
        out = []
        for start, ids, mask, cache, prefix, part_rows in self._prefix_batches(images, questions, rows):
            full = self._with_answer({"input_ids": ids, "attention_mask": mask}, answer_ids)
            logits = self.model(input_ids=full["input_ids"][:, start:], attention_mask=full["attention_mask"],
                                position_ids=prefix.positions(part_rows, full["attention_mask"])[..., start:],
                                past_key_values=cache).logits
            out.extend(answer_log_probability(logits, answer_ids).exp().cpu().tolist())
        return out

    def _probability_plain(self, images: Sequence, questions: Sequence[str], answer_ids: torch.Tensor) -> list[float]:
        inputs = self._with_answer(self._inputs(images, questions), answer_ids)
        logits = self.model(**inputs).logits
        return answer_log_probability(logits, answer_ids).exp().cpu().tolist()

    @torch.inference_mode()
    def answer(self, images: Sequence, questions: Sequence[str]) -> list[str]:
        check_pairs(images, questions, what="questions")
        return self._windows(images, questions, self._answer_window,
                             lambda ims, qs: self._generate(self._inputs(ims, qs)))

    @torch.inference_mode()
    def answer_probability(self, images: Sequence, questions: Sequence[str], answer: str | None = None) -> np.ndarray:
        """P(``answer``'s tokens follow the prompt | image, question), teacher-forced (default :attr:`yes_word`)."""
        self._check_answer_probability()
        check_pairs(images, questions, what="questions")
        answer = self.yes_word if answer is None else answer
        answer_ids = torch.as_tensor(self.processor.tokenizer(answer, add_special_tokens=False)["input_ids"])
        out = self._windows(images, questions,
                            lambda ims, qs, rows: self._probability_window(ims, qs, rows, answer_ids),
                            lambda ims, qs: self._probability_plain(ims, qs, answer_ids))
        return np.asarray(out, dtype=np.float64) if out else np.zeros(0)

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> np.ndarray:
        return self.answer_probability(images, questions, self.yes_word)


#: backend name -> (module, class) under scorers.models
BACKENDS = {
    "blip_vqa": ("scorers.models.blip_vqa", "BlipVQA"),
    "instructblip": ("scorers.models.instructblip", "InstructBlipVQA"),
    "llava": ("scorers.models.llava", "LlavaVQA"),
    "chat_vlm": ("scorers.models.chat_vlm", "ChatVLM"),
}
#: config.model_type -> backend name for ``backend="auto"`` (anything else: chat_vlm)
_AUTO = {"blip": "blip_vqa", "instructblip": "instructblip", "llava": "llava"}


def load_vqa_backend(model: str, backend: str = "auto", **kwargs):
    """Build the backend for ``model``: ``backend`` names one of :data:`BACKENDS`, or ``"auto"`` picks it from the
    checkpoint's ``model_type`` (``blip`` -> BLIP VQA, ``instructblip``, ``llava``, else any chat VLM)."""
    import importlib

    if backend == "auto":
        from transformers import AutoConfig

        from scorers.models.loading import model_source

        with model_source(model) as source:
            backend = _AUTO.get(AutoConfig.from_pretrained(source).model_type, "chat_vlm")
    if backend not in BACKENDS:
        raise ValueError(f"unknown VQA backend {backend!r}; choose one of {['auto', *BACKENDS]}")
    module, name = BACKENDS[backend]
    return getattr(importlib.import_module(module), name)(model, **kwargs)
