"""Text-to-image generation with ``diffusers``: load a pipeline, and generate seeded images into files, resumably.

The one generation code of the package: ``ts2 tifa-bench generate`` (``scorers.tifa_bench.generate``) and
``ts2 seg generate`` (``scorers.ts2.seg.generate``) both call it.

* **Seeded per image.** Every image has its own seed (:func:`image_seed` of a base seed, a text key and an index) and
  its noise is drawn by its own CPU ``torch.Generator``: the pipeline gets one generator per prompt in the batch, so
  the batch size, the order and the number of processes never change an image (CPU generators also make the noise the
  same on every GPU type).
* **Resumable.** The files are the progress: an existing image is skipped, and each image is written to a temporary
  name and renamed, so a killed run never leaves a truncated PNG that a rerun would take as done.
* **Settings recorded.** :func:`check_settings` keeps a run's settings in ``generation.json``; a rerun with other
  settings is refused rather than mixing images of two configurations in one folder.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from scorers.atomic import atomic_path, write_text_atomic
from scorers.errors import ParameterError

__all__ = ["ImageJob", "check_settings", "generate_to_files", "image_seed", "load_pipeline"]


def image_seed(seed: int, text_id: str, k: int) -> int:
    """The noise seed of image ``k`` of ``text_id`` (a 63-bit hash of the three).

    Examples
    --------
    >>> image_seed(0, "a", 0) == image_seed(0, "a", 0) != image_seed(0, "a", 1)
    True
    """
    digest = hashlib.sha256(f"{int(seed)}/{text_id}/{int(k)}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


@dataclass(frozen=True)
class ImageJob:
    """One image to make: where it goes, its prompt and its noise seed."""

    path: Path
    prompt: str
    seed: int


def load_pipeline(model: str, *, device: Any = None, precision: str | None = None):
    """``diffusers.DiffusionPipeline.from_pretrained(model)`` on ``device`` in ``precision``, progress bar off."""
    try:
        from diffusers import DiffusionPipeline
    except ImportError:
        raise ValueError("generation needs diffusers: pip install 'ts2-evaluate[generate]'") from None
    from scorers.models.precision import dtype_of

    kwargs = {"torch_dtype": dtype_of(precision)} if precision else {}
    pipeline = DiffusionPipeline.from_pretrained(model, **kwargs)
    pipeline.set_progress_bar_config(disable=True)
    return pipeline.to(device) if device is not None else pipeline


def check_settings(out_dir: str | Path, settings: dict, *, parameter: str = "out_dir") -> None:
    """Record ``settings`` in ``out_dir/generation.json``, or refuse when the folder was made with other ones.

    Raises
    ------
    ParameterError
        ``generation.json`` exists with different settings (the message lists the changed keys, both values, and
        names ``parameter``: the option choosing the folder).
    """
    out_dir = Path(out_dir)
    path = out_dir / "generation.json"
    settings = json.loads(json.dumps(settings, default=str))
    if path.is_file():
        found = json.loads(path.read_text(encoding="utf-8"))
        if found != settings:
            changed = sorted(k for k in set(found) | set(settings) if found.get(k) != settings.get(k))
            raise ParameterError("{folder} holds images generated with other settings ({changed}: {found} vs "
                                 "{wanted}); use another {%s} or delete the folder" % parameter, folder=out_dir,
                                 changed=", ".join(changed), found={k: found.get(k) for k in changed},
                                 wanted={k: settings.get(k) for k in changed})
    else:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(settings, indent=2, sort_keys=True))


def generate_to_files(pipeline, jobs: Sequence[ImageJob], *, batch_size: int = 4, call_kwargs: dict | None = None,
                      progress: bool = True, desc: str = "generate") -> int:
    """Generate every job whose file does not exist yet; returns how many images were written.

    ``pipeline`` is a loaded diffusers pipeline (:func:`load_pipeline`) or anything called as
    ``pipeline(prompt=[...], generator=[...], output_type="pil", **call_kwargs).images``; ``call_kwargs`` holds
    ``num_inference_steps``, ``guidance_scale``, ``height``, ``width``...

    Raises
    ------
    ParameterError
        ``batch_size`` < 1, or the pipeline returns another number of images than prompts (``num_images_per_prompt``
        passed in ``call_kwargs``).
    """
    import torch
    from tqdm.auto import tqdm

    if batch_size < 1:
        raise ParameterError("{batch_size} must be >= 1, got {size}", size=batch_size)
    call_kwargs = dict(call_kwargs or {})
    pending = [job for job in jobs if not Path(job.path).is_file()]
    bar = tqdm(total=len(pending), unit="img", desc=desc, disable=not progress)
    generated = 0
    try:
        for start in range(0, len(pending), batch_size):
            batch = pending[start:start + batch_size]
            generators = [torch.Generator("cpu").manual_seed(int(job.seed)) for job in batch]
            images = pipeline(prompt=[job.prompt for job in batch], generator=generators, output_type="pil",
                              **call_kwargs).images
            if len(images) != len(batch):
                raise ParameterError("the pipeline returned {n} images for {prompts} prompts; do not pass "
                                     "num_images_per_prompt (use {images_per_prompt})", n=len(images),
                                     prompts=len(batch))
            for job, image in zip(batch, images):
                path = Path(job.path)
                path.parent.mkdir(parents=True, exist_ok=True)
                with atomic_path(path) as tmp:
                    image.save(tmp)
                generated += 1
            bar.update(len(batch))
    finally:
        bar.close()
    return generated
