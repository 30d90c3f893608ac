"""The runner every scorer goes through: shard over processes (accelerate), decode in DataLoader workers, batch, cache.

The scorer contract (all the runner knows)
------------------------------------------
A scorer is any object with

* ``name: str`` -- the score column of the output CSV (``clip_score``, ``tifa``...).
* ``score(images, prompts) -> np.ndarray`` -- one float per item (NaN allowed). ``images`` is a sequence of RGB PIL
  images, or of whatever ``image_transform`` returned; when those are tensors of one shape the runner passes them
  stacked as one ``(n, ...)`` tensor. ``prompts`` is a list of non-empty strings.

and optionally

* ``image_transform`` -- a *picklable* callable ``PIL.Image -> item`` run in the DataLoader worker processes
  (decode + resize + normalise off the main thread). Without it, the scorer receives PIL images.
* ``image_loader`` -- a *picklable* callable ``reference -> item`` (``reference`` is the path or PIL image given to
  the runner) run in the workers *instead of* opening the image with PIL and applying ``image_transform``: for
  scorers that decode elsewhere (open_clip ``decode="device"`` returns JPEG bytes, decoded in batches on the GPU).
  What it raises is reported like an unreadable image; ``jpeg_draft`` does not apply to it.
* ``score_with_records(images, prompts) -> (np.ndarray, list[dict])`` -- called instead of ``score`` when present:
  one JSON-serialisable dict per item (e.g. TIFA's per-question answers; NumPy values are converted, and fresh
  records are normalised exactly as cached ones read back). Records are cached with the score; top-level entries
  that are numbers/strings/bools become extra CSV columns (``siglip_probability``, ``n_correct``), and a table run
  writes every record to ``<out stem>.records.jsonl`` when any of them holds lists or dicts.
* ``config: dict`` -- JSON-able description of the scorer (model, form, dtype...). The cache refuses to resume a run
  whose fingerprint (``config``) differs, so numbers from two configurations never mix.
* ``use_request_cache(cache)`` -- with a cache folder the runner hands the scorer a ``scorers.scoring.cache.RequestCache``
  (``<cache>/requests/``) before scoring and ``None`` after: served backends store each answered request there, so a
  killed run resumes without sending a finished request again (judge scorers also keep their stages there).
* ``higher_is_better: dict`` -- orientation of score columns that are lower-is-better (``{"llmscore_ec": False}``);
  the runner passes it on in ``RunResult.extra`` for ``ts2 score --meta``.

The model forward happens on the main thread of each process; put the model on ``process_state().device``
(``scorers.scoring.registry.build_scorer`` passes it as ``device=``). Unreadable images never reach the scorer: the runner
raises naming the file, or (``on_error="skip"``) records the message and a NaN score, and retries it next run.

Guarantees: the output has one entry per input item, in input order, no duplicates, whatever the number of
processes; with a cache folder each finished batch is appended durably (``scorers.scoring.cache``), a rerun computes only
missing items, and a SIGKILL loses at most the batch in flight. Cached entries are served only for the same scorer
config, the same inputs (``inputs``, e.g. the data dir) and unchanged items (a hash of the image bytes, prompt);
a changed image is scored again. One run at a time per cache folder (an advisory lock; a second run stops with a
message). Processes started by ``accelerate launch``/``torchrun`` stop when their launcher dies (even by SIGKILL).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scorers.json_safe import jsonable
from scorers.models.images import open_for
from scorers.scoring.cache import ScoreCache, item_stamp, release_locks
from scorers.checks import check_pairs
from scorers.errors import ParameterError, value_error, wording_of

__all__ = ["RunResult", "RunStart", "assemble_result", "broadcast", "check_run_inputs", "check_run_options", "finish",
           "gather", "pairs_output", "process_state", "record_columns", "run", "run_fingerprint", "score_pairs", "share",
           "start_run"]

ON_ERROR = ("raise", "skip")


@dataclass
class RunResult:
    """Per-item outcome in input order; ``scores`` is NaN where an item was skipped (``errors`` says why)."""

    keys: list[str]
    scores: np.ndarray
    records: list[dict | None]
    errors: list[str | None]
    computed: int = 0  #: items scored in this run, all processes (skipped ones not counted)
    batches: int = 0  #: scorer calls made by this process
    extra: dict = field(default_factory=dict)
    #: per item: its entry came from the cache folder (scored by an earlier run), not from a scorer call now
    from_cache: list[bool] = field(default_factory=list)


# --------------------------------------------------------------------------- worker side (must stay picklable)

class _Images:
    """Dataset of (position, image reference); workers open, convert to RGB and apply the scorer's transform."""

    def __init__(self, positions: Sequence[int], images: Sequence[Any], transform=None, jpeg_draft: int | None = None,
                 loader=None):
        self.positions, self.images, self.transform, self.jpeg_draft = list(positions), images, transform, jpeg_draft
        self.loader = loader

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, i: int):
        position = self.positions[i]
        ref = self.images[position]
        try:
            if self.loader is not None:
                return position, self.loader(ref), None
            image = open_for(self.transform, ref, self.jpeg_draft)  # RGB, or its own mode if the transform asks
            return position, (self.transform(image) if self.transform is not None else image), None
        except Exception as error:  # reported per item; the main thread decides raise vs skip
            name = str(ref) if isinstance(ref, (str, Path)) else f"image #{position}"
            return position, None, f"cannot read {name}: {type(error).__name__}: {error}"


def _collate(batch):
    """Keep items as a list; stack them in the worker when they are equal-shape tensors."""
    import torch

    positions = [b[0] for b in batch]
    errors = [b[2] for b in batch]
    items = [b[1] for b in batch if b[2] is None]
    ok = [p for p, e in zip(positions, errors) if e is None]
    if items and all(isinstance(x, torch.Tensor) for x in items) and len({tuple(x.shape) for x in items}) == 1:
        items = torch.stack(items)
    bad = [(p, e) for p, e in zip(positions, errors) if e is not None]
    return ok, items, bad


def _worker_init(_: int) -> None:
    import torch

    torch.set_num_threads(1)


# --------------------------------------------------------------------------- main side

def call_scorer(scorer, images, prompts) -> tuple[np.ndarray, list[dict | None]]:
    if hasattr(scorer, "score_with_records"):
        scores, records = scorer.score_with_records(images, prompts)
        records = jsonable(list(records))
    else:
        scores, records = scorer.score(images, prompts), [None] * len(prompts)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if scores.shape[0] != len(prompts) or len(records) != len(prompts):
        raise ValueError(f"scorer {getattr(scorer, 'name', scorer)!r} returned {scores.shape[0]} scores / "
                         f"{len(records)} records for a batch of {len(prompts)} items")
    return scores, records


def process_state():
    """accelerate's ``PartialState``, honouring ``ACCELERATE_USE_CPU`` (which only ``AcceleratorState`` reads:
    without this, CPU processes started by ``accelerate launch`` would each think they are alone). Without accelerate
    installed (e.g. scoring against a served model only), a single-process CPU state."""
    try:
        from accelerate import PartialState
    except ImportError:
        return _SingleProcess()
    from accelerate.utils import parse_flag_from_env

    return PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU"))


class _SingleProcess:
    """What the runner reads of accelerate's ``PartialState`` when accelerate is not installed: one CPU process."""

    num_processes, process_index, is_main_process = 1, 0, True

    def __init__(self):
        import torch

        self.device = torch.device("cpu")

    def wait_for_everyone(self) -> None:
        pass


def share(items: Sequence, state) -> list:
    """This process's contiguous share of ``items``: ``np.array_split`` in ``state.num_processes`` parts, part
    ``state.process_index`` (every process computes the same split of the same list, so each item has one owner)."""
    return [items[i] for i in np.array_split(np.arange(len(items)), state.num_processes)[state.process_index]]


def gather(state, items: list) -> list:
    """Every process's ``items``, concatenated in process order, on every process (identity when single-process)."""
    if state.num_processes == 1:
        return list(items)
    from accelerate.utils import gather_object

    return gather_object(list(items))


def broadcast(state, payload):
    """Main process's ``payload`` on every process (identity when single-process)."""
    if state.num_processes == 1:
        return payload
    from accelerate.utils import broadcast_object_list

    box = [payload if state.is_main_process else None]
    broadcast_object_list(box, from_process=0)
    return box[0]


#: environment variables set by ``accelerate launch`` / ``torchrun`` in the processes they start
_LAUNCHER_ENV = ("TORCHELASTIC_RUN_ID", "ACCELERATE_DYNAMO_BACKEND")
_watcher: threading.Thread | None = None


def _stop_if_orphaned(launcher_pid: int, interval: float) -> None:
    """Poll the parent pid; once the launcher is gone (we were re-parented), terminate this process."""
    while os.getppid() == launcher_pid:
        time.sleep(interval)
    print(f"ts2: the launcher (pid {launcher_pid}) is gone; stopping this process (pid {os.getpid()}). "
          "Finished batches are in the cache: rerun the same command to resume.", file=sys.stderr, flush=True)
    release_locks()  # a rerun may start at once, even while this process winds down
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)  # SIGTERM handled by someone and we are still here: leave without cleanup
    os._exit(1)


def watch_launcher(interval: float = 1.0) -> bool:
    """In a process started by ``accelerate launch`` or ``torchrun``, start (once) a daemon thread that stops the
    process when its launcher dies: a ``kill -9`` of the launcher would otherwise leave the ranks running and writing.
    Returns whether it watches. A process not started by a launcher is never stopped (a ``nohup ts2 score`` outlives
    its shell on purpose)."""
    global _watcher
    if _watcher is not None:
        return True
    if not any(name in os.environ for name in _LAUNCHER_ENV) or os.getppid() <= 1:
        return False
    _watcher = threading.Thread(target=_stop_if_orphaned, args=(os.getppid(), interval), daemon=True,
                                name="ts2-launcher-watch")
    _watcher.start()
    return True


def check_run_options(*, batch_size: int = 32, num_workers: int = 2, on_error: str = "raise", **_) -> None:
    """The run options' checks, callable before a model is loaded (``score_data_dir`` does)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error {on_error!r} is not one of {ON_ERROR}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ParameterError("{batch_size} must be an integer >= 1, got {value!r}", value=batch_size)
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ParameterError("{num_workers} must be an integer >= 0, got {value!r}", value=num_workers)


def check_run_inputs(images: Sequence[Any], prompts: Sequence[str], keys: Sequence | None, **options) -> list[str]:
    """What every engine checks before scoring: the run ``options`` (:func:`check_run_options`), one non-blank prompt
    per image, and unique item ``keys`` (default: the positions); returns the keys as strings."""
    check_run_options(**options)
    check_pairs(images, prompts, keys=keys if keys is not None else range(len(images)), nonempty=True)
    keys = [str(k) for k in (keys if keys is not None else range(len(images)))]
    if len(set(keys)) != len(keys):
        seen: set[str] = set()
        duplicate = next(k for k in keys if k in seen or seen.add(k))
        raise ValueError(f"item key {duplicate!r} appears more than once; keys must identify items uniquely")
    return keys


@dataclass
class RunStart:
    """What every engine knows before it scores (:func:`start_run`): the item ``keys`` (strings), the ``cache`` (None
    without a cache folder) and each item's ``stamps`` (key -> :func:`scorers.scoring.cache.item_stamp`; none without
    a cache)."""

    keys: list[str]
    cache: ScoreCache | None
    stamps: dict[str, str]

    def finished(self) -> dict[str, dict]:
        """Lock and prepare the cache, then its entries still valid for these items (key -> entry; none without a
        cache). The lock is held until :meth:`close`."""
        if self.cache is None:
            return {}
        self.cache.lock()
        self.cache.prepare()
        return self.cache.finished(self.stamps)

    def close(self) -> None:
        """Release the cache's lock (if any)."""
        if self.cache is not None:
            self.cache.unlock()


def run_fingerprint(scorer, jpeg_draft: int | None = None) -> dict:
    """What a cache records of a run's settings (its fingerprint): the scorer's ``config``, plus ``jpeg_draft`` when
    set (it changes the scores)."""
    fingerprint = dict(getattr(scorer, "config", {"name": getattr(scorer, "name", "score")}))
    if jpeg_draft:
        fingerprint["jpeg_draft"] = int(jpeg_draft)
    return fingerprint


def start_run(scorer, images: Sequence[Any], prompts: Sequence[str], keys: Sequence | None, *, has_loader: bool,
              cache_dir: str | Path | None = None, jpeg_draft: int | None = None, inputs: dict | None = None,
              fast_stamp: bool = False, **options) -> RunStart:
    """The start of a run, the same for every engine (:func:`run`, :func:`scorers.scoring.engines.ray_data.run_ray`):
    the inputs' and ``options``' checks (:func:`check_run_inputs`); no ``jpeg_draft`` for a scorer that reads images
    with its own loader (``has_loader``); the cache's fingerprint (the scorer's ``config``, plus ``jpeg_draft`` when
    set: it changes the scores) and the items' stamps (:func:`scorers.scoring.cache.item_stamp`)."""
    keys = check_run_inputs(images, prompts, keys, **options)
    if jpeg_draft and has_loader:
        raise ValueError(f"jpeg_draft applies to PIL decoding; scorer {getattr(scorer, 'name', scorer)!r} reads "
                         "images with its own image_loader (e.g. decode='device')")
    cache = ScoreCache(cache_dir, run_fingerprint(scorer, jpeg_draft), inputs) if cache_dir is not None else None
    stamps = ({k: item_stamp(im, p, fast=fast_stamp) for k, im, p in zip(keys, images, prompts)}
              if cache is not None else {})
    return RunStart(keys=keys, cache=cache, stamps=stamps)


def run(
    scorer,
    images: Sequence[Any],
    prompts: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    num_workers: int = 2,
    cache_dir: str | Path | None = None,
    on_error: str = "raise",
    progress: bool = True,
    jpeg_draft: int | None = None,
    inputs: dict | None = None,
    fast_stamp: bool = False,
) -> RunResult:
    """Score ``images`` against ``prompts`` with ``scorer`` over every process of the current accelerate launch.

    ``keys`` identify items in the cache (default: the positions); they must be unique. ``on_error="raise"`` stops at
    the first unreadable image with a ``ValueError`` naming it; ``"skip"`` records the message and a NaN score.
    ``jpeg_draft=224`` decodes JPEGs at a reduced scale that stays >= 224 px per side (much less decoding and
    resizing work; scores change slightly, so it is off by default and part of the cache fingerprint).
    ``inputs`` (e.g. ``{"data_dir": ...}``) identifies what is scored: a cache made for other inputs is refused.
    A cached score is served only for an unchanged item: same prompt and same image bytes (hashed), or with
    ``fast_stamp=True`` (``--fast-stamp``) same image file size and mtime (no content read).
    Every process returns the full result.
    """
    loader = getattr(scorer, "image_loader", None)
    start = start_run(scorer, images, prompts, keys, has_loader=loader is not None, cache_dir=cache_dir,
                      jpeg_draft=jpeg_draft, inputs=inputs, fast_stamp=fast_stamp, batch_size=batch_size,
                      num_workers=num_workers, on_error=on_error)
    state = process_state()
    watch_launcher()
    try:
        return _run_pending(scorer, images, prompts, start, state, batch_size=batch_size, num_workers=num_workers,
                            on_error=on_error, progress=progress, jpeg_draft=jpeg_draft, loader=loader)
    finally:
        start.close()


def _run_pending(scorer, images, prompts, start: RunStart, state, *, batch_size, num_workers, on_error, progress,
                 jpeg_draft, loader) -> RunResult:
    """:func:`run` after :func:`start_run`: lock + read the cache (main process), score what is missing, gather."""
    from torch.utils.data import DataLoader
    from tqdm.auto import tqdm

    keys, cache, stamps = start.keys, start.cache, start.stamps
    finished: dict[str, dict] | str = {}
    if state.is_main_process:
        try:
            finished = start.finished()
        except ValueError as error:
            finished = wording_of(error) or str(error)  # a Wording keeps the parameters it names (out, cache_dir)
    finished = broadcast(state, finished)
    if isinstance(finished, str):
        raise value_error("{finished}", finished=finished)

    pending = [i for i, k in enumerate(keys) if k not in finished]
    mine = share(pending, state)
    dataset = _Images(mine, images, getattr(scorer, "image_transform", None), jpeg_draft, loader)
    loader = DataLoader(
        dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers, collate_fn=_collate,
        worker_init_fn=_worker_init if num_workers else None, pin_memory=state.device.type == "cuda",
        prefetch_factor=4 if num_workers else None,
    )
    writer = cache.writer(state.process_index) if cache is not None else None
    request_cache = None
    if cache is not None and hasattr(scorer, "use_request_cache"):
        from scorers.scoring.cache import RequestCache

        request_cache = RequestCache(cache.directory / "requests", state.process_index)
        scorer.use_request_cache(request_cache)
    new: list[dict] = []
    batches = 0
    desc = getattr(scorer, "name", "score")
    if state.num_processes > 1:
        desc += f" (rank 0's share of {len(pending)})"
    bar = tqdm(total=len(mine), unit="img", desc=desc,
               disable=not (progress and state.is_main_process))
    try:
        for positions, items, bad in loader:
            entries = []
            if bad and on_error == "raise":
                position, message = bad[0]
                raise ParameterError("item {key!r}: {message} (use {on_error='skip'} to record it and go on)",
                                     key=keys[position], message=message)
            entries += [{"key": keys[p], "score": None, "record": None, "error": m, "stamp": stamps.get(keys[p])}
                        for p, m in bad]
            if positions:
                scores, records = call_scorer(scorer, items, [prompts[p] for p in positions])
                batches += 1
                entries += [{"key": keys[p], "score": s, "record": r, "error": None, "stamp": stamps.get(keys[p])}
                            for p, s, r in zip(positions, scores.tolist(), records)]
            if writer is not None:
                writer.append(entries)
            new += entries
            bar.update(len(positions) + len(bad))
    finally:
        bar.close()
        if writer is not None:
            writer.close()
        if request_cache is not None:
            scorer.use_request_cache(None)
            request_cache.close()

    new = gather(state, new)
    return assemble_result(keys, finished, new, batches=batches)


def assemble_result(keys: Sequence[str], finished: dict, new: Sequence[dict], *, batches: int,
                    extra: dict | None = None) -> RunResult:
    """The :class:`RunResult` of every engine: cached entries (``finished``, key -> entry) and this run's ``new``
    entries, in input order; an item in neither is an engine bug."""
    by_key = dict(finished)
    by_key.update({e["key"]: e for e in new})
    missing = [k for k in keys if k not in by_key]
    if missing:
        raise RuntimeError(f"{len(missing)} item(s) were not scored (first: {missing[0]!r}); this is an engine bug")
    ordered = [by_key[k] for k in keys]
    scores = np.array([np.nan if e.get("score") is None else float(e["score"]) for e in ordered], dtype=np.float64)
    return RunResult(keys=list(keys), scores=scores, records=[e.get("record") for e in ordered],
                     errors=[e.get("error") for e in ordered], computed=sum(1 for e in new if not e.get("error")),
                     batches=batches, from_cache=[k in finished for k in keys], extra=dict(extra or {}))


def finish() -> None:
    """Synchronise and tear down the process group at the end of a launched run (avoids rare aborts at exit)."""
    state = process_state()
    state.wait_for_everyone()
    if state.num_processes > 1:
        state.destroy_process_group()


def record_columns(records: Sequence[dict | None]) -> dict[str, list]:
    """The one rule that turns per-item records into columns (``score_table``'s CSV columns and the ``evaluate``
    modules' lists): every top-level field whose value is a scalar (number, string, bool or None) becomes a column with
    one entry per item (None where an item lacks it); lists and dicts stay in the records."""
    columns: dict[str, list] = {}
    for i, record in enumerate(records):
        for name, value in (record or {}).items():
            if isinstance(value, (int, float, str, bool)) or value is None:
                columns.setdefault(name, [None] * len(records))[i] = value
    return columns


def pairs_output(result: RunResult) -> dict:
    """``{"scores": [...], "mean": float, <record column>: [...]}`` of a run: ``mean`` ignores NaN (skipped items);
    the record columns are :func:`record_columns` (e.g. ``siglip_probability``, ``failed_questions``)."""
    finite = result.scores[~np.isnan(result.scores)]
    out = {"scores": result.scores.tolist(), "mean": float(finite.mean()) if finite.size else float("nan")}
    for name, values in record_columns(result.records).items():
        out.setdefault(name, values)
    return out


def score_pairs(scorer, images: Sequence[Any], prompts: Sequence[str], **run_kwargs) -> dict:
    """In-memory scoring for the ``evaluate`` modules: :func:`pairs_output` of :func:`run` (no workers, no bar)."""
    run_kwargs.setdefault("num_workers", 0)
    run_kwargs.setdefault("progress", False)
    return pairs_output(run(scorer, images, prompts, **run_kwargs))
