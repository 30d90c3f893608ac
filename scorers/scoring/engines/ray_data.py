"""The Ray Data engine: ``ts2 score SCORER --engine ray``.

rows (key, image reference, prompt) -> decode (the scorer's ``image_transform`` / ``image_loader``, the same picklable
callables the accelerate runner's DataLoader workers run, fetched from whoever described the scorer: the driver with
a local Ray on CPUs, else a worker that built it) -> ``map_batches`` on actors (one scorer per actor, built through
:func:`scorers.scoring.registry.build_scorer`) -> the driver collects the batches as they finish. CPU actors decode
their own batches before the forward; GPU actors get them decoded by CPU tasks (``map_batches`` with plain tasks),
as numpy arrays (tensors keep their dtype; PIL images go as ``H x W x 3`` uint8 and are rebuilt on the actor). Either
way the actors see exactly what the default engine's workers produce.

Resume is the accelerate engine's: the driver locks the same :class:`scorers.scoring.cache.ScoreCache`, skips the keys already
finished (same fingerprint = the scorer's ``config``, same inputs, unchanged items) and appends every batch to the
cache as it arrives, so a killed driver loses at most the batches in flight and a rerun scores only the rest. A cache
made by one engine is resumed by the other. The result is a :class:`scorers.scoring.runner.RunResult` in input order, so
:func:`scorers.ts2.scoring.score_table` / ``write_outputs`` give the same file and columns as the default engine.

``address``: ``None`` starts a local Ray that listens on 127.0.0.1 only (or uses the one already initialised in this
process; ``$RAY_ADDRESS`` when set), ``"auto"`` joins the cluster of this machine (``ray start --head``),
``"ray://HOST:10001"`` or ``"HOST:6379"`` another one. Workers must be able to import ``scorers`` and read the image
paths and model folders (a shared filesystem, or the Hub).
"""
from __future__ import annotations

import json
import logging
import os
import warnings
from typing import Any, Sequence

import numpy as np

from scorers.errors import ParameterError
from scorers.models.images import open_for, to_rgb
from scorers.scoring.engines.ray_loopback import join_ray, start_local_ray
from scorers.scoring.runner import RunResult, assemble_result, call_scorer, start_run

__all__ = ["QUIETED", "RayScorer", "ensure_ray", "quiet_ray_logging", "run_ray"]


def _import_ray():
    """``ray`` (with Ray Data); a missing one is a ``ModuleNotFoundError`` naming ``ray``, which the CLI turns into
    one line naming the ``ray`` extra (:func:`scorers.errors.missing_extra_error`)."""
    import ray
    import ray.data  # noqa: F401

    return ray


#: Ray's own console lines that say nothing to a ``ts2 score`` user (logger -> start of the message): the bars Ray
#: Data would draw are replaced by this engine's one bar; a local Ray started for one job is reached by this process
#: only (its token authentication is Ray's default, and stays on)
QUIETED = {
    "ray.data._internal.progress": "Progress bars disabled",
    "ray._private.authentication.authentication_token_setup": "Token authentication is enabled for this Ray cluster",
}


class _Drop(logging.Filter):
    def __init__(self, start: str):
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.start)


def quiet_ray_logging() -> None:
    """Ray's console output down to the warnings that matter: Ray Data's INFO lines (execution plans, "execution
    finished") go to its session log file only, and the lines of :data:`QUIETED` are dropped; warnings and errors
    about the job itself still print. Idempotent."""
    for name, start in QUIETED.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Drop) and f.start == start for f in logger.filters):
            logger.addFilter(_Drop(start))
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and handler.level < logging.WARNING:
            handler.setLevel(logging.WARNING)  # the console; the file handler keeps every line


def ensure_ray(address: str | None = None):
    """The ``ray`` module, initialised: joins ``address`` (default ``$RAY_ADDRESS``) or else starts a local Ray on
    127.0.0.1 only (:func:`scorers.scoring.engines.ray_loopback.start_local_ray`), unless this process already is
    (a cluster on 127.0.0.1 is joined on loopback: :func:`~scorers.scoring.engines.ray_loopback.join_ray`);
    its console output quieted (:func:`quiet_ray_logging`)."""
    ray = _import_ray()
    quiet_ray_logging()
    if not ray.is_initialized():
        options = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if address is None and not os.environ.get("RAY_ADDRESS"):
            start_local_ray(**options)
        else:
            join_ray(address, **options)
    return ray


def _build(spec: dict, num_gpus: float):
    from scorers.scoring.registry import build_scorer

    device = "cuda" if num_gpus else "cpu"
    return build_scorer(spec["name"], model=spec.get("model"), device=device, precision=spec.get("precision"),
                        data_dir=spec.get("data_dir"), **dict(spec.get("options") or {}))


def _describe(spec: dict, num_gpus: float) -> dict:
    """What the driver needs of a scorer (its column name, cache fingerprint, orientation), built on a worker."""
    scorer = _build(spec, num_gpus)
    return {"name": scorer.name, "config": dict(getattr(scorer, "config", {"name": scorer.name})),
            "higher_is_better": dict(getattr(scorer, "higher_is_better", {})),
            "has_loader": getattr(scorer, "image_loader", None) is not None,
            "decoder": _Decoder(getattr(scorer, "image_transform", None), getattr(scorer, "image_loader", None))}


class _Decoder:
    """The CPU decode stage: rows ``{key, image, prompt}`` -> the same rows with ``item`` (a numpy array: the
    transformed tensor, or the RGB pixels of a PIL image when the scorer has no transform), ``kind`` (``tensor`` /
    ``pil``) and ``error`` (why the image could not be read; the driver decides raise vs skip) instead of ``image``."""

    def __init__(self, transform=None, loader=None, jpeg_draft: int | None = None):
        self.transform, self.loader, self.jpeg_draft = transform, loader, jpeg_draft

    def with_draft(self, jpeg_draft: int | None) -> "_Decoder":
        return _Decoder(self.transform, self.loader, jpeg_draft)

    def _decode(self, ref):
        if self.loader is not None:
            return self.loader(ref)
        image = open_for(self.transform, ref, self.jpeg_draft)
        return self.transform(image) if self.transform is not None else image

    def __call__(self, batch: dict) -> dict:
        import torch

        keys = [str(k) for k in batch["key"]]
        items, kinds, errors = [], [], []
        for key, ref in zip(keys, batch["image"]):
            ref = bytes(ref) if isinstance(ref, (bytes, bytearray, np.ndarray)) else str(ref)
            try:
                item = self._decode(ref)
                if isinstance(item, torch.Tensor):
                    items.append(item.numpy())
                    kinds.append("tensor")
                else:  # a PIL image (scorers without a transform, e.g. VLM judges)
                    items.append(np.asarray(to_rgb(item), dtype=np.uint8))
                    kinds.append("pil")
                errors.append("")
            except Exception as error:  # reported per item; the driver decides raise vs skip
                name = ref if isinstance(ref, str) else f"image of item {key!r}"
                items.append(np.zeros(0, dtype=np.uint8))
                kinds.append("")
                errors.append(f"cannot read {name}: {type(error).__name__}: {error}")
        column = np.empty(len(items), dtype=object)  # one array per row (shapes may differ)
        for i, item in enumerate(items):
            column[i] = item
        prompts = np.array([str(p) for p in batch["prompt"]], dtype=object)
        return {"key": np.array(keys, dtype=object), "prompt": prompts, "item": column,
                "kind": np.array(kinds, dtype=object), "error": np.array(errors, dtype=object)}


class _ScoreActor:
    """One per Ray actor: builds the scorer once, then scores batches the decode stage made (``item``, ``kind``,
    ``error``): the model's forward only. With ``decoder`` (CPU actors) it decodes its own batches of raw rows first."""

    def __init__(self, spec: dict, num_gpus: float = 0, decoder: "_Decoder | None" = None):
        import torch

        torch.set_num_threads(1)  # one CPU per actor (num_cpus=1): no oversubscription
        self.scorer = _build(spec, num_gpus)
        self.decoder = decoder

    def __call__(self, batch: dict) -> dict:
        import torch
        from PIL import Image

        if self.decoder is not None:
            batch = self.decoder(batch)
        keys = [str(k) for k in batch["key"]]
        prompts, errors = [str(p) for p in batch["prompt"]], [str(e) for e in batch["error"]]
        ok = [i for i, e in enumerate(errors) if not e]
        items = [torch.from_numpy(np.array(batch["item"][i])) if batch["kind"][i] == "tensor"
                 else Image.fromarray(np.asarray(batch["item"][i], dtype=np.uint8), "RGB") for i in ok]
        scores = np.full(len(keys), np.nan, dtype=np.float64)
        records = [""] * len(keys)
        if ok:
            if all(isinstance(x, torch.Tensor) for x in items) and len({tuple(x.shape) for x in items}) == 1:
                items = torch.stack(items)
            got, recs = call_scorer(self.scorer, items, [prompts[i] for i in ok])
            for i, s, r in zip(ok, got.tolist(), recs):
                scores[i] = s
                records[i] = "" if r is None else json.dumps(r, ensure_ascii=False)
        return {"key": np.array(keys, dtype=object), "score": scores,
                "record": np.array(records, dtype=object), "error": np.array(errors, dtype=object)}


class RayScorer:
    """A scorer that lives on Ray actors: ``spec`` is :func:`~scorers.scoring.registry.build_scorer`'s arguments
    (``name``, ``model``, ``precision``, ``data_dir``, ``options``). On the driver it holds only what the output and
    the cache need (``name``, ``config``, ``higher_is_better``), asked of one worker; :meth:`run` is the engine."""

    def __init__(self, spec: dict, *, address: str | None = None, num_gpus_per_worker: float = 0,
                 workers: int | None = None):
        if num_gpus_per_worker < 0:
            raise ParameterError("{num_gpus_per_worker} must be >= 0, got {value}", value=num_gpus_per_worker)
        if workers is not None and workers < 1:
            raise ParameterError("{workers} must be >= 1, got {value}", value=workers)
        self.spec, self.num_gpus = dict(spec), float(num_gpus_per_worker)
        if address is None and not os.environ.get("RAY_ADDRESS") and not self.num_gpus:
            # a local Ray on CPUs: the driver is on the one machine, so it describes the scorer itself while Ray
            # starts, rather than after it in a Ray worker (a worker's start and its imports of torch and the model's
            # library come on top of the build: measured 11 s against 5.6 s in process, benchmarks/bench_engines.py)
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1, thread_name_prefix="ts2-describe") as pool:
                described = pool.submit(_describe, self.spec, 0.0)
                ray = ensure_ray(address)
                facts = described.result()
        else:  # a cluster (or GPUs): a worker where the scorer will run describes it
            ray = ensure_ray(address)
            describe = ray.remote(num_cpus=1, num_gpus=self.num_gpus)(_describe)
            facts = ray.get(describe.remote(self.spec, self.num_gpus))
        self.workers = workers or self._default_workers(ray)
        self.name, self.config = facts["name"], facts["config"]
        self.higher_is_better, self.has_loader = facts["higher_is_better"], facts["has_loader"]
        self.decoder = facts["decoder"]

    def _default_workers(self, ray) -> int:
        resources = ray.cluster_resources()
        if self.num_gpus:
            return max(1, int(resources.get("GPU", 0) // self.num_gpus))
        return max(1, int(resources.get("CPU", 1)))

    def run(self, images, prompts, keys=None, **run_kwargs) -> RunResult:
        return run_ray(self, images, prompts, keys, **run_kwargs)


def run_ray(
    scorer: RayScorer,
    images: Sequence[Any],
    prompts: Sequence[str],
    keys: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    num_workers: int = 2,  # the accelerate engine's DataLoader workers; actors decode here (scorer.workers)
    cache_dir=None,
    on_error: str = "raise",
    progress: bool = True,
    jpeg_draft: int | None = None,
    inputs: dict | None = None,
    fast_stamp: bool = False,
) -> RunResult:
    """:func:`scorers.scoring.runner.run`'s contract on Ray Data actors (see the module docstring)."""
    start = start_run(scorer, images, prompts, keys, has_loader=scorer.has_loader, cache_dir=cache_dir,
                      jpeg_draft=jpeg_draft, inputs=inputs, fast_stamp=fast_stamp, batch_size=batch_size,
                      num_workers=num_workers, on_error=on_error)
    keys = start.keys
    writer = None
    try:
        finished = start.finished()
        writer = start.cache.writer(0) if start.cache is not None else None
        pending = [i for i, k in enumerate(keys) if k not in finished]
        new = _score_pending(scorer, images, prompts, keys, pending, start.stamps, writer, batch_size=batch_size,
                             on_error=on_error, progress=progress, jpeg_draft=jpeg_draft)
    finally:
        if writer is not None:
            writer.close()
        start.close()
    return assemble_result(keys, finished, new, batches=0, extra={"engine": "ray"})


#: seconds the scorer actors have to start (each builds its scorer: a large model loads) before the run stops
ACTORS_START_S = 1800


class _DropLost(logging.Filter):
    """Ray Data's console error, with its traceback, for a worker or node lost mid-run: the engine says it in one line
    (:func:`_batches_or_lost`); the session's log file keeps it."""

    def __init__(self, kinds: tuple):
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], self.kinds))


def _lost_worker_errors(ray) -> tuple:
    """Ray's errors for a worker, an actor or a node that went away (a killed raylet, a lost machine)."""
    errors = ray.exceptions
    return (errors.RayActorError, errors.WorkerCrashedError, errors.NodeDiedError, errors.ObjectLostError,
            errors.LocalRayletDiedError)


def _batches_or_lost(scored, lost: tuple, new: list, total: int, cached: bool):
    """The scored batches as they arrive; a worker or node lost mid-run is one line (a ``ValueError``) that says how
    many items are kept and that a rerun scores the rest (resume from the cache)."""
    import ray

    try:
        yield from scored.iter_batches(batch_size=None, batch_format="numpy")
    except ray.exceptions.GetTimeoutError:
        raise ParameterError("the Ray cluster did not start the scorer actors within {seconds} s: too few free "
                             "CPUs/GPUs for them? (ask for fewer: {workers})", seconds=ACTORS_START_S) from None
    except lost as error:
        kept = (f"{len(new)} of the {total} items to score are in the cache: run the same command again to score "
                f"the rest" if cached else "no cache: a rerun scores every item")
        raise ValueError(f"the Ray cluster lost a worker or a node mid-run ({type(error).__name__}); {kept}") \
            from error


def _score_pending(scorer, images, prompts, keys, pending, stamps, writer, *, batch_size, on_error, progress,
                   jpeg_draft) -> list[dict]:
    if not pending:
        return []
    ray = ensure_ray()
    from tqdm.auto import tqdm

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    # the pool's actors all start (their scorers built) before the first batch goes out, so every actor gets work:
    # on a cluster the batches spread over the nodes instead of going to whichever actor came up first
    context.wait_for_min_actors_s = ACTORS_START_S
    rows = [{"key": keys[i], "image": images[i] if isinstance(images[i], (bytes, str)) else str(images[i]),
             "prompt": prompts[i]} for i in pending]
    dataset = ray.data.from_items(rows, override_num_blocks=max(1, -(-len(rows) // batch_size)))
    actors = min(scorer.workers, -(-len(rows) // batch_size))
    # Where images are decoded. GPU actors: in CPU tasks of their own (a CPU each: a GPU node has CPUs to spare), so
    # the GPU never waits for a decode. CPU actors: each actor decodes its own batch before its forward (a CPU is
    # busy either way): no second stage, and no decoded pixels through the object store. Measured with
    # benchmarks/bench_engines.py (ViT-B-32, 496 images of 512 px, 2 CPUs): scoring 48.3 s with decode tasks
    # sharing the actors' CPUs, 32.4 s decoding in the actors.
    decoder = scorer.decoder.with_draft(jpeg_draft)
    decoded = (dataset.map_batches(decoder, batch_size=batch_size, batch_format="numpy", num_cpus=1)
               if scorer.num_gpus else dataset)
    # max_restarts=0: an actor that dies fails the run (as a crashed process does with the default engine; a rerun
    # resumes from the cache) instead of being rebuilt from constructor arguments Ray keeps in its object store,
    # which Ray warns about at error level on every run. The pool starts with all its actors and may shrink to 1: Ray
    # warns (a UserWarning) when a fixed pool gets fewer input blocks than actors, as a small job does.
    with warnings.catch_warnings():  # Ray 2.60 deprecates passing max_restarts, and offers no other way yet
        warnings.filterwarnings("ignore", message=".*ray_remote_args.* is deprecated")
        scored = decoded.map_batches(
            _ScoreActor, batch_size=batch_size, batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(min_size=1, max_size=actors, initial_size=actors),
            num_cpus=1, num_gpus=scorer.num_gpus or None, max_restarts=0,
            fn_constructor_kwargs={"spec": scorer.spec, "num_gpus": scorer.num_gpus,
                                   "decoder": None if scorer.num_gpus else decoder},
        )
    new: list[dict] = []
    bar = tqdm(total=len(rows), unit="img", desc=f"{scorer.name} (ray)", disable=not progress)
    lost = _lost_worker_errors(ray)
    for handler in logging.getLogger("ray.data").handlers:
        if not isinstance(handler, logging.FileHandler) and not any(isinstance(f, _DropLost) for f in handler.filters):
            handler.addFilter(_DropLost(lost))
    try:
        for batch in _batches_or_lost(scored, lost, new, len(rows), writer is not None):
            entries = []
            for key, score, record, error in zip(batch["key"], batch["score"], batch["record"], batch["error"]):
                key = str(key)
                if error and on_error == "raise":
                    raise ParameterError("item {key!r}: {error} (use {on_error='skip'} to record it and go on)",
                                         key=key, error=error)
                entries.append({"key": key, "score": None if error or np.isnan(score) else float(score),
                                "record": json.loads(record) if record else None, "error": str(error) or None,
                                "stamp": stamps.get(key)})
            if writer is not None:
                writer.append(entries)
            new += entries
            bar.update(len(entries))
    finally:
        bar.close()
    return new
