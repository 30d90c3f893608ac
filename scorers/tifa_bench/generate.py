"""Generate TIFA v1.0 images with a ``diffusers`` text-to-image pipeline: batched, seeded, resumable, multi-GPU.

The pipeline loading and the seeded, resumable generation are ``scorers.models.diffusion``, the settings check and
the sharding over processes ``scorers.scoring.generation`` (both shared with ``ts2 seg generate``); this module adds
the TIFA layout.

* **Seeded per image.** Image ``k`` of text ``t`` starts from noise drawn by its own CPU ``torch.Generator`` seeded
  with :func:`image_seed` ``(seed, t, k)``; the pipeline gets one generator per prompt in the batch, so the batch
  size, the order and the number of processes do not change any image (CPU generators also make the noise the same
  on every GPU type).
* **Resumable.** The output files are the progress: an existing image is skipped, and each image is written to a
  temporary name and renamed, so a killed run never leaves a truncated PNG that a rerun would take as done. The
  settings are kept in ``generation.json``; a rerun with other settings (model, seed, steps...) is refused rather
  than mixing images of two configurations in one folder.
* **Multi-GPU.** Under ``accelerate launch`` the main process lists the missing images and every process takes a
  contiguous share of that one list (the runner's sharding) on its own device: no image is made twice.

Layout (what ``ts2 tifa-bench score --images`` reads): ``OUT/<text_id>.png`` with one image per prompt,
``OUT/<text_id>/<k>.png`` with several.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from scorers.errors import ParameterError
from scorers.models.diffusion import ImageJob, image_seed

__all__ = ["generate_images", "image_path"]


def image_path(out_dir: str | Path, text_id: str, k: int, images_per_prompt: int) -> Path:
    out_dir = Path(out_dir)
    return out_dir / f"{text_id}.png" if images_per_prompt == 1 else out_dir / text_id / f"{k}.png"


def generate_images(
    pipeline,
    text_ids: Sequence[str],
    captions: Sequence[str],
    out_dir: str | Path,
    *,
    seed: int = 0,
    images_per_prompt: int = 1,
    batch_size: int = 4,
    model_name: str | None = None,
    call_kwargs: dict | None = None,
    progress: bool = True,
) -> dict:
    """Generate the missing images of ``text_ids`` (prompts ``captions``) into ``out_dir``.

    ``pipeline`` is a loaded diffusers pipeline (:func:`load_pipeline`) or anything called as
    ``pipeline(prompt=[...], generator=[...], output_type="pil", **call_kwargs).images``. ``call_kwargs`` holds
    ``num_inference_steps``, ``guidance_scale``, ``height``, ``width``... and is part of the recorded settings.
    Returns the run's counts over all processes: ``{"total", "existing", "generated", "processes"}``.
    """
    from scorers.scoring.generation import generate_shards

    if images_per_prompt < 1 or batch_size < 1:
        raise ParameterError("images_per_prompt and {batch_size} must be >= 1 (got {n}, {size})", n=images_per_prompt,
                             size=batch_size)
    if len(text_ids) != len(captions):
        raise ValueError(f"got {len(text_ids)} text ids but {len(captions)} captions")
    out_dir = Path(out_dir)
    call_kwargs = dict(call_kwargs or {})
    settings = {"model": model_name or getattr(getattr(pipeline, "config", None), "_name_or_path", None),
                "seed": int(seed), "images_per_prompt": int(images_per_prompt),
                "call_kwargs": json.loads(json.dumps(call_kwargs, default=str))}

    def one_layout() -> None:  # one layout per folder: never leave both <id>.png and <id>/ for a text
        for text_id in text_ids:
            other = out_dir / text_id if images_per_prompt == 1 else out_dir / f"{text_id}.png"
            if other.exists():
                raise ParameterError("{other} exists but {images_per_prompt=} writes {path}", other=other,
                                     images_per_prompt=int(images_per_prompt),
                                     path=image_path(out_dir, text_id, 0, images_per_prompt).relative_to(out_dir))

    jobs = [ImageJob(image_path(out_dir, t, k, images_per_prompt), c, image_seed(seed, t, k))
            for t, c in zip(text_ids, captions) for k in range(images_per_prompt)]
    return generate_shards(pipeline, jobs, out_dir, settings, before=one_layout, batch_size=batch_size,
                           call_kwargs=call_kwargs, progress=progress)
