"""``ts2 submit --verify --rescore N``: score N images of a submission again with the registered scorer its
``metric.json`` names, and compare with the submitted scores within the scorer's tolerance
(:attr:`scorers.scoring.registry.ScorerInfo.tolerance`): a spot check that the scores come from the metric they claim.

The images are drawn with a fixed seed among the rows with a score (``numpy.random.default_rng(seed)``), so the same
call rescores the same images; they are returned (``seg_id:file_name``) so that the output lists them.
"""
from __future__ import annotations

import inspect
import math
import os
from pathlib import Path

__all__ = ["PRECISION_OF_DTYPE", "pick_rows", "rebuild_scorer", "rescore_check"]

#: the ``dtype`` a scorer's config records -> the ``precision`` its factory takes
PRECISION_OF_DTYPE = {"torch.float32": "fp32", "torch.float16": "fp16", "torch.bfloat16": "bf16"}
#: config keys that describe the scorer but are no factory parameter
_NOT_OPTIONS = ("name", "family", "dtype", "model", "revision", "jpeg_draft")


def pick_rows(n_rows: int, n: int, seed: int):
    """Row positions of ``n`` of ``n_rows`` rows drawn without replacement with ``seed``, ascending.

    Examples:
        >>> pick_rows(10, 3, 0).tolist() == sorted(pick_rows(10, 3, 0).tolist())
        True
        >>> pick_rows(2, 5, 0).tolist()
        [0, 1]
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=min(n, n_rows), replace=False))


def rebuild_scorer(scorer: dict, *, device=None):
    """The registered scorer ``metric.json``'s ``scorer`` describes (``registry``, ``model``, ``config``): built with
    the recorded model, precision (from ``dtype``) and the config's options that its factory takes."""
    from scorers.scoring.registry import build_scorer, get_factory

    name, config = scorer["registry"], dict(scorer.get("config") or {})
    parameters = inspect.signature(get_factory(name)).parameters
    options = {k: v for k, v in config.items() if k not in _NOT_OPTIONS and k in parameters and v is not None}
    if scorer.get("revision") and "revision" in parameters:
        options["revision"] = scorer["revision"]
    precision = PRECISION_OF_DTYPE.get(str(config.get("dtype")))
    return build_scorer(name, model=scorer.get("model") or config.get("model"), device=device,
                        precision=precision if "precision" in parameters else None, **options)


def _images(keys, data_dir) -> tuple[object, list]:
    """``(metadata rows of keys, one image per row)``: files of ``data_dir`` (default ``$TS2_DATA`` when it holds
    ``images/``), else the pinned Hub dataset."""
    import pandas as pd

    from scorers.tables.release import local_data_dir

    folder = Path(data_dir) if data_dir is not None else local_data_dir()
    if folder is not None and (folder / "metadata.csv").is_file() and (folder / "images").is_dir():
        from scorers.tables.pandas_tables import read_metadata

        metadata = read_metadata(folder / "metadata.csv")
        images = None
    else:
        from scorers.ts2.dataset import hub_segs

        metadata, images = hub_segs()
    index = pd.MultiIndex.from_arrays([metadata["seg_id"].astype(str), metadata["file_name"].astype(str)])
    where = index.get_indexer(pd.MultiIndex.from_tuples(keys))
    if (where < 0).any():
        seg, name = keys[int((where < 0).argmax())]
        raise ValueError(f"--rescore: image {seg}:{name} is not in the TS2 metadata of "
                         f"{folder if images is None else 'the Hub dataset'}")
    rows = metadata.iloc[where].reset_index(drop=True)
    if images is None:
        paths = [str(folder / name) for name in rows["file_name"]]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise ValueError(f"--rescore: image file {missing[0]} does not exist")
        return rows, paths
    return rows, [images[int(k)] for k in where]


def rescore_check(scores, described: dict, column: str, n: int, *, seed: int = 0, data_dir=None,
                  device=None) -> tuple[str, ...]:
    """Rescore ``n`` images of ``scores`` (a submission's ``scores.csv``) with the scorer ``described`` (its
    ``metric.json``) names; returns the images rescored (``seg_id:file_name``, in order), ``()`` when ``described``
    names no registered scorer (nothing to rescore with).

    Raises:
        ValueError: ``--rescore: seg_id:file_name: submitted X, rescored Y (tolerance T of SCORER)`` for the first
            image outside the tolerance; an image that cannot be found; the scorer cannot be built.
    """
    import pandas as pd

    from scorers.scoring.registry import SCORER_INFO
    from scorers.ts2.scoring import score_table

    scorer_info = described.get("scorer")
    if not isinstance(scorer_info, dict) or scorer_info.get("registry") not in SCORER_INFO:
        return ()
    table = pd.read_csv(scores, dtype=str, keep_default_na=False)
    values = pd.to_numeric(table[column], errors="coerce")
    scored = table.loc[values.notna()].reset_index(drop=True)
    submitted = values.dropna().to_numpy()
    picked = pick_rows(len(scored), int(n), seed)
    keys = list(zip(scored["seg_id"].iloc[picked], scored["file_name"].iloc[picked]))
    rows, images = _images(keys, data_dir)
    scorer = rebuild_scorer(scorer_info, device=device)
    frame, _ = score_table(scorer, rows, images=images)  # image paths or the Hub dataset's encoded images
    out_column = column if column in frame.columns else scorer.name
    tolerance = SCORER_INFO[scorer_info["registry"]].tolerance
    for (seg, name), mine, theirs in zip(keys, frame[out_column].to_numpy(dtype=float), submitted[picked]):
        if not (math.isfinite(mine) and abs(mine - theirs) <= tolerance * (1 + 1e-9)):
            raise ValueError(f"--rescore: {column} of {seg}:{name}: submitted {float(theirs)!r}, "
                             f"rescored {float(mine)!r} "
                             f"(tolerance {tolerance} of {scorer_info['registry']})")
    return tuple(f"{seg}:{name}" for seg, name in keys)
