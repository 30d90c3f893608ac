"""Synth step 2 and the Real procedure's images (``ts2 seg generate``): a plan's node prompts -> images + ANNOTATIONS.

Generation is the code of ``ts2 tifa-bench generate``: ``scorers.models.diffusion`` (seeded per image, batched,
resumable: an existing image is skipped, files are written atomically) and ``scorers.scoring.generation`` (settings
kept in ``generation.json``; under ``accelerate launch`` the main process lists the missing images and each process
makes its share of that one list, so nothing is made twice or left out). An image's seed comes from the base seed,
its SEG, its node and its index, never from the process: one process and several make the same images.

Layout under ``out``::

    generation.json                         # pipeline, seed, call arguments: a rerun with others is refused
    plan.json, tifa_questions.csv, dsg_questions.csv   # the plan used and its questions (for check and score)
    seg<ID>/<node>/<k>.png                  # Synth: node "0" (no error) or "<n>_<errors>_<hash>"
    seg<ID>/real/<k>.png                    # Real: the unmodified prompt
    annotations.csv / real_annotations.csv  # one row per image, the format `ts2 seg build` reads

A node's folder name carries a hash of its error set and prompt, so editing a node's prompt in the plan makes new
images rather than reusing the old ones. ANNOTATIONS columns: ``seg_id, prompt, file_name, errors, error_types,
image_source`` (the format of ``scorers.ts2.seg.build``), then ``node_prompt, seed, procedure``.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from scorers.atomic import write_text_atomic
from scorers.errors import ParameterError
from scorers.models.diffusion import ImageJob, image_seed
from scorers.scoring.generation import generate_shards
from scorers.scoring.runner import process_state
from scorers.stats.error_sets import ERROR_SEPARATOR, ERROR_TYPE_OF_ELEMENT
from scorers.ts2.seg.plan import read_plan, write_plan

__all__ = ["ANNOTATION_COLUMNS", "GenerateResult", "generate_seg_images", "generation_settings", "node_folder",
           "plan_or_prompts"]

ANNOTATION_COLUMNS = ("seg_id", "prompt", "file_name", "errors", "error_types", "image_source", "node_prompt", "seed",
                      "procedure")


@dataclass
class GenerateResult:
    """What one run made: the ANNOTATIONS file, images wanted / already there / generated (by all processes), the
    number of processes, nodes left out + why."""

    annotations: Path
    total: int = 0
    existing: int = 0
    generated: int = 0
    processes: int = 1
    skipped: list[str] = field(default_factory=list)


def node_folder(errors: list[str], prompt: str) -> str:
    """A node's folder: ``"0"`` for the error-free node, else ``"<n>_<errors, slugged>_<8 hex of errors + prompt>"``.

    Examples
    --------
    >>> node_folder([], "A dog.")
    '0'
    >>> node_folder(["red", "ball"], "A dog.").startswith("2_ball-red_")
    True
    """
    if not errors:
        return "0"
    key = json.dumps([sorted(errors), prompt], ensure_ascii=False)
    slug = re.sub(r"[^0-9a-z]+", "-", "-".join(sorted(errors)).lower()).strip("-")[:40] or "x"
    return f"{len(errors)}_{slug}_{hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}"


def plan_or_prompts(path: str | Path) -> dict:
    """A plan (``.json``, :func:`scorers.ts2.seg.plan.read_plan`) or a text file of prompts, one per line, read as a
    plan whose SEGs (ids 0, 1, ...) have only their error-free node (what ``--real`` needs)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return read_plan(path)
    try:
        lines = [" ".join(line.split()) for line in path.read_text(encoding="utf-8").splitlines()]
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror or error}") from None
    prompts = [line for line in lines if line]
    if not prompts:
        raise ValueError(f"{path}: no prompt in it (one prompt per line, or a plan .json)")
    return {"version": 1, "model": None, "segs": [
        {"seg_id": k, "prompt": p, "reason": None, "dropped": [], "elements": [],
         "nodes": [{"errors": [], "removed": [], "prompt": p, "reason": None}]} for k, p in enumerate(prompts)]}


def generation_settings(model: str, seed: int, call_kwargs: dict | None) -> dict:
    """What ``generation.json`` records (and a rerun must repeat): the pipeline, the base seed, the call arguments.
    The number of images is not part of it: a rerun with more images per node adds images."""
    return {"model": str(model), "seed": int(seed), "call_kwargs": dict(call_kwargs or {})}


def generate_seg_images(pipeline, plan: dict, out: str | Path, *, images_per_node: int = 4, seed: int = 0,
                        real: int = 0, batch_size: int = 4, model_name: str | None = None,
                        call_kwargs: dict | None = None, progress: bool = True) -> GenerateResult:
    """Generate the images of every node of ``plan`` (or, with ``real`` > 0, ``real`` images of each unmodified
    prompt) into ``out`` and write the ANNOTATIONS rows.

    Synth rows carry each node's designed error set (``errors``, ``;``-joined) and its types; Real rows have empty
    ``errors`` for a person to fill in (the demo's "Build a SEG" tab). Nodes without a prompt are skipped and listed
    in the result. Image ``k`` of a node gets seed ``image_seed(seed, "<seg_id>/<node folder>", k)``, recorded in
    the ``seed`` column.

    Raises
    ------
    ParameterError
        ``images_per_node`` / ``batch_size`` < 1, ``real`` < 0, or ``out`` holds images made with other settings.
    """
    import pandas as pd

    if int(images_per_node) < 1:
        raise ParameterError("{images_per_node} must be >= 1, got {n}", n=images_per_node)
    if int(real) < 0:
        raise ParameterError("{real} must be >= 0, got {n}", n=real)
    out = Path(out)
    source = model_name or getattr(getattr(pipeline, "config", None), "_name_or_path", None) or "unknown"
    result = GenerateResult(out / ("real_annotations.csv" if real else "annotations.csv"))
    jobs, rows = [], []
    for seg in plan["segs"]:
        labels = {e["label"]: e for e in seg.get("elements") or []}
        nodes = [{"errors": [], "prompt": seg["prompt"]}] if real else seg["nodes"]
        for node in nodes:
            prompt = str(node.get("prompt") or "").strip()
            if not prompt:
                result.skipped.append(f"SEG {seg['seg_id']} node {sorted(node['errors'])}: no prompt"
                                      + (f" ({node['reason']})" if node.get("reason") else ""))
                continue
            folder = "real" if real else node_folder(node["errors"], prompt)
            errors = list(node["errors"])
            types = [ERROR_TYPE_OF_ELEMENT[labels[e]["type"]] for e in errors]
            for k in range(int(real) if real else int(images_per_node)):
                name = f"seg{seg['seg_id']}/{folder}/{k}.png"
                noise = image_seed(seed, f"{seg['seg_id']}/{folder}", k)
                jobs.append(ImageJob(out / name, prompt, noise))
                rows.append({"seg_id": seg["seg_id"], "prompt": seg["prompt"], "file_name": name,
                             "errors": ERROR_SEPARATOR.join(errors), "error_types": ERROR_SEPARATOR.join(types), "image_source": source,
                             "node_prompt": prompt, "seed": str(noise), "procedure": "real" if real else "synth"})
    plan_copy = bool(plan.get("segs")) and any(seg.get("elements") for seg in plan["segs"])
    counts = generate_shards(  # the plan used + its question tables, beside the images (main process, before)
        pipeline, jobs, out, generation_settings(source, seed, call_kwargs), parameter="out",
        before=(lambda: write_plan(plan, out / "plan.json")) if plan_copy else None, batch_size=batch_size,
        call_kwargs=call_kwargs, progress=progress)
    result.total, result.existing, result.generated = counts["total"], counts["existing"], counts["generated"]
    result.processes = counts["processes"]
    if process_state().is_main_process:
        frame = pd.DataFrame(rows, columns=list(ANNOTATION_COLUMNS))
        write_text_atomic(result.annotations, frame.to_csv(index=False))
    return result

