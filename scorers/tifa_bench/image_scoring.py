"""Score a folder of generated images on TIFA v1.0 through the runner, with the TIFA scorer of ``scorers.metrics.qga``.

Images: ``DIR/<text_id>.png`` (one per text) or ``DIR/<text_id>/<k>.png`` (several; ``.jpg``/``.jpeg``/``.webp``
too). Each image is one runner item: all its text's questions go to the VQA backend in batched calls, answers are
matched to choices and scored by ``scorers.metrics.qga`` (the one implementation of TIFA's rules), and the runner caches
each finished batch durably (``<out>/cache/``), so a killed run resumes without re-asking finished images'
questions, under ``accelerate launch`` too.

The runner's "prompt" of an item is its **text id** (captions repeat across sources); :class:`ByTextId` hands the
scorer the text's questions by position. Cache keys carry a digest of the image file and of the text's questions,
so a regenerated image or an edited question is scored again, never served from cache, while a subset run (``--limit``)
and a later full run share the cache.

Outputs in ``OUT`` (written by the main process):

* ``questions.csv``: one row per (image, question): ``text_id, image, source, question_id, category, element,
  question, expected, answer, chosen, correct``;
* ``images.csv``: one row per image: ``text_id, image, source, tifa`` (+ ``error`` when one was skipped);
* ``missing.csv``: texts with no image (listed, never silently dropped) and texts without questions;
* ``run.json``: model, counts, and ``complete`` (false when any text was missing or skipped).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from scorers.atomic import atomic_path, write_text_atomic
from scorers.tifa_bench.tifa_v1_files import TIFABench

__all__ = ["IMAGE_SUFFIXES", "BenchRun", "ByTextId", "ImageIndex", "find_images", "score_images"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


@dataclass
class ImageIndex:
    """Images found for a bench: ``items`` (``text_id, image, path`` in bench order), texts with none, and files
    that name no text id (typos, other benchmarks)."""

    items: pd.DataFrame
    missing: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def find_images(images_dir: str | Path, text_ids: list[str]) -> ImageIndex:
    """``<text_id>.<ext>`` (image ``"0"``) and ``<text_id>/<k>.<ext>`` (image ``k``) under ``images_dir``.

    A text with both forms is an error naming it (which one is meant?). Images of one text are ordered by ``k``
    (numerically when the names are numbers).
    """
    root = Path(images_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"image folder {root} does not exist")
    known = set(text_ids)
    found: dict[str, list[tuple[str, str]]] = {}
    unknown = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir():
            if entry.name not in known:
                unknown.append(entry.name + "/")
                continue
            for image in sorted(entry.iterdir()):
                if image.is_file() and image.suffix.lower() in IMAGE_SUFFIXES:
                    found.setdefault(entry.name, []).append((image.stem, str(image)))
        elif entry.suffix.lower() in IMAGE_SUFFIXES:
            if entry.stem not in known:
                unknown.append(entry.name)
            elif entry.stem in found:
                raise ValueError(f"{root}: text {entry.stem!r} has both {entry.name} and a folder {entry.stem}/; "
                                 "keep one layout per text")
            else:
                found[entry.stem] = [("0", str(entry))]
    for text_id, images in found.items():
        stems = [s for s, _ in images]
        if len(set(stems)) != len(stems):
            raise ValueError(f"{root / text_id}: two images share a name ({stems}); use distinct names 0.png, 1.png...")
    rows = []
    for text_id in text_ids:
        images = sorted(found.get(text_id, []), key=lambda item: _natural(item[0]))
        rows += [{"text_id": text_id, "image": stem, "path": path} for stem, path in images]
    items = pd.DataFrame(rows, columns=["text_id", "image", "path"])
    return ImageIndex(items, [t for t in text_ids if t not in found], unknown)


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


class ByTextId:
    """Runner adapter around a :class:`scorers.metrics.qga.question_scorers.TIFAScorer` built on ``bench.question_set()``: the runner's
    prompt of an item is its text id, turned here into the text's position (the question set's "SEG id").

    Its ``config`` (the cache fingerprint) is the scorer's without the question file's name and size: the questions
    are fingerprinted per text in the item keys instead, so a subset run and a full run share one cache."""

    def __init__(self, scorer, text_ids: list[str]):
        self.scorer = scorer
        self.name = scorer.name
        self.config = {k: v for k, v in scorer.config.items() if k not in ("questions", "n_questions")}
        self.config["benchmark"] = "tifa_v1.0"
        self.positions = {t: i for i, t in enumerate(text_ids)}

    def score_with_records(self, images, prompts):
        return self.scorer.score_with_records(images, prompts, seg_ids=[self.positions[p] for p in prompts])

    def __getattr__(self, name):
        if name == "use_request_cache" and "scorer" in self.__dict__:  # a served scorer keeps its requests in the
            return getattr(self.scorer, name)  # runner's request cache (scorers.scoring.usage.MeteredScorer)
        raise AttributeError(name)


@dataclass
class BenchRun:
    """What :func:`score_images` produced (see the module docstring for the files)."""

    questions: pd.DataFrame
    images: pd.DataFrame
    missing: pd.DataFrame
    info: dict
    paths: dict[str, Path] = field(default_factory=dict)
    #: the runner's per-image records and whether each came from the cache (served usage: ``scorers.scoring.usage``)
    records: list = field(default_factory=list)
    from_cache: list = field(default_factory=list)


def _file_digest(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()[:16]


def score_images(
    bench: TIFABench,
    images_dir: str | Path,
    out_dir: str | Path | None,
    *,
    name: str | None = None,
    model: str | None = None,
    backend: Any = None,
    precision: str | None = None,
    scorer_options: dict | None = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 8,
    num_workers: int = 2,
    on_error: str = "raise",
    progress: bool = True,
) -> BenchRun:
    """TIFA v1.0 scores of the images in ``images_dir`` (one runner item per image), written to ``out_dir``.

    ``model``/``backend``/``precision``/``scorer_options`` (``vqa_backend=...``, ``sbert=...``, ``matcher=...``)
    build the registered ``tifa`` scorer as ``ts2 score tifa`` does. ``cache_dir`` defaults to ``<out_dir>/cache``.
    Returns the run on every process; the main process writes the files.
    """
    from scorers.scoring.registry import build_scorer
    from scorers.scoring.runner import process_state
    from scorers.scoring.rows import score_rows

    with_questions = set(bench.questions["text_id"])
    no_questions = [t for t in bench.text_ids if t not in with_questions]
    scored_ids = [t for t in bench.text_ids if t in with_questions]
    index = find_images(images_dir, bench.text_ids)
    items = index.items[index.items["text_id"].isin(with_questions)].reset_index(drop=True)
    if items.empty:
        raise ValueError(f"{images_dir}: no image named after a text id with questions (expected <text_id>.png or "
                         f"<text_id>/<k>.png, e.g. {scored_ids[0] if scored_ids else '?'}.png)"
                         + (f"; found other files such as {index.unknown[:3]}" if index.unknown else ""))
    state = process_state()
    options = dict(scorer_options or {})
    if backend is not None:
        options["backend"] = backend
    scorer = ByTextId(build_scorer("tifa", model=model, device=state.device, precision=precision,
                                   questions=bench.question_set(), **options), bench.text_ids)
    if cache_dir is None and out_dir is not None:
        cache_dir = Path(out_dir) / "cache"
    questions_digest = bench.text_digests()
    keys = [f"{t}/{i}@{_file_digest(p)}:{questions_digest[t]}"
            for t, i, p in zip(items["text_id"], items["image"], items["path"])]
    source = dict(zip(bench.texts["text_id"], bench.texts["source"]))
    rows = items[["text_id", "image"]].assign(source=[source[t] for t in items["text_id"]])
    images, result = score_rows(scorer, rows, list(items["path"]), list(items["text_id"]), keys, column="tifa",
                                records_as_columns=False, batch_size=batch_size, num_workers=num_workers,
                                cache_dir=cache_dir, on_error=on_error, progress=progress)

    meta = bench.questions.set_index(["text_id", "question_id"])[["category", "element"]]
    rows = []
    for text_id, image, record in zip(items["text_id"], items["image"], result.records):
        for q in (record or {}).get("questions", []):
            category, element = meta.loc[(text_id, int(q["question_id"]))]
            rows.append({"text_id": text_id, "image": image, "source": source[text_id],
                         "question_id": int(q["question_id"]), "category": category, "element": element,
                         "question": q["question"], "expected": q["expected"], "answer": q["answer"],
                         "chosen": q["chosen"], "correct": bool(q["correct"])})
    questions = pd.DataFrame(rows, columns=["text_id", "image", "source", "question_id", "category", "element",
                                            "question", "expected", "answer", "chosen", "correct"])
    errors = [e or "" for e in result.errors]
    captions = dict(zip(bench.texts["text_id"], bench.texts["caption"]))
    missing = pd.DataFrame(
        [{"text_id": t, "source": source[t], "reason": "no image", "caption": captions[t]}
         for t in index.missing if t in with_questions]
        + [{"text_id": t, "source": source[t], "reason": "no questions", "caption": captions[t]} for t in no_questions],
        columns=["text_id", "source", "reason", "caption"])
    scored_texts = images.loc[images["tifa"].notna(), "text_id"].nunique()
    info = {
        "name": name or (Path(out_dir).name if out_dir is not None else "model"),
        "vqa_model": scorer.config.get("model"), "scorer": scorer.config,
        "images_dir": str(images_dir), "texts": len(bench.texts), "texts_scored": int(scored_texts),
        "images": int(len(images)), "images_skipped": sum(1 for e in errors if e),
        "texts_missing_image": int((missing["reason"] == "no image").sum()),
        "texts_without_questions": len(no_questions), "unknown_files": index.unknown,
        "computed_now": result.computed,
    }
    info["complete"] = scored_texts == len(bench.texts) and not info["images_skipped"]
    out = BenchRun(questions, images, missing, info, records=result.records, from_cache=result.from_cache)
    if out_dir is not None and state.is_main_process:
        out.paths = write_run(out, out_dir)
    return out


def write_run(run: BenchRun, out_dir: str | Path) -> dict[str, Path]:
    """Write a run's four files atomically (each via a temporary file + rename)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"questions": out_dir / "questions.csv", "images": out_dir / "images.csv",
             "missing": out_dir / "missing.csv", "run": out_dir / "run.json"}
    for key in ("questions", "images", "missing"):
        with atomic_path(paths[key]) as tmp:
            getattr(run, key).to_csv(tmp, index=False)
    write_text_atomic(paths["run"], json.dumps(run.info, indent=2, default=str))
    return paths
