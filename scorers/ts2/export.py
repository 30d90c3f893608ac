"""Export TS2 as Parquet shards + a dataset card, loadable with ``datasets.load_dataset(OUT, "segs")`` and no script.

Layout written under ``OUT`` (also the layout of a Hub repo uploaded from it)::

    README.md                              # the dataset card, YAML `configs:` pointing at the shards
    segs/train-00000-of-00001.parquet      # images embedded as bytes (the original files, byte for byte)
    tifa_questions/train-00000-of-00001.parquet
    dsg_questions/train-00000-of-00001.parquet

The Parquet schema metadata carries the ``datasets`` features in a spelling every version reads (lists as ``[x]``
rather than the ``List`` type of ``datasets`` >= 4), so the export loads on old and new ``datasets`` alike.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from scorers.errors import Wording
from scorers.ts2.dataset import CONFIGS, find_builder_script, load_ts2
from scorers.units import parse_quantity

__all__ = ["ExportResult", "export_parquet", "parse_size"]

#: the question config's CSV in a local data_dir
QUESTION_FILES = {"tifa_questions": "tifa_questions.csv", "dsg_questions": "dsg_questions.csv"}
_ROW_GROUP = {"segs": 100}  # rows per Parquet row group (images ~0.1 MB each); questions use one group per shard


@dataclass
class ExportResult:
    """What :func:`export_parquet` wrote: rows and shard files per config, and the card."""

    out: Path
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, list[Path]] = field(default_factory=dict)
    readme: Path | None = None


def parse_size(size: int | str) -> int:
    """``"500MB"``/``"1GB"``/``"64KiB"``/``1000`` -> bytes."""
    if isinstance(size, int):
        return size
    return int(parse_quantity(size, units=("B",), binary=True, what="size", example="500MB, 1GB, 64KiB"))


def export_parquet(
    out: str | os.PathLike,
    *,
    data_dir: str | os.PathLike | None = None,
    configs: Iterable[str] | None = None,
    max_shard_size: int | str = "500MB",
    cache_dir: str | os.PathLike | None = None,
    overwrite: bool = False,
    **config_kwargs: Any,
) -> ExportResult:
    """Build each config with :func:`scorers.ts2.dataset.load_ts2` (validated) and write Parquet shards + ``README.md``.

    Args:
        out: output folder; must be empty or absent unless ``overwrite`` (which replaces only the config folders
            and README.md written here).
        data_dir: local source (``metadata.csv``, ``images/``, question CSVs); ``None`` downloads the Hub dataset.
        configs: subset of ``("segs", "tifa_questions", "dsg_questions")``; None: all three, less the question
            configs whose CSV a local ``data_dir`` lacks (a data dir built by ``ts2 seg build`` has none).
        max_shard_size: upper bound per Parquet file (in-memory Arrow size), e.g. ``"500MB"``.
        cache_dir: ``datasets`` cache for the intermediate build.
        **config_kwargs: passed to the builder (``skip_missing_images``, ``check_images``, ``repo_id``...).
    """
    import pyarrow.parquet as pq

    if configs is None:
        configs = [c for c in CONFIGS if data_dir is None or c not in QUESTION_FILES
                   or os.path.isfile(os.path.join(data_dir, QUESTION_FILES[c]))]
    configs = list(dict.fromkeys(configs))
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown or not configs:
        raise ValueError(f"unknown config(s) {unknown}; choose from {list(CONFIGS)}")
    limit = parse_size(max_shard_size)
    if limit <= 0:
        raise ValueError(f"max_shard_size must be positive, got {max_shard_size!r}")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(Wording("{out} is not empty; pass {overwrite=True} to replace the export there", out=out))
    # build (and so validate) every config before writing anything, so a bad source leaves OUT untouched
    built = {config: load_ts2(config, data_dir, cache_dir=cache_dir, **config_kwargs) for config in configs}
    card = export_card(configs)
    for name in CONFIGS:  # overwrite: replace only what an export writes
        if (out / name).is_dir():
            shutil.rmtree(out / name)
    if (out / "README.md").is_file():
        (out / "README.md").unlink()
    result = ExportResult(out=out)
    for config, dataset in built.items():
        table = dataset.data.table if dataset._indices is None else dataset.flatten_indices().data.table
        metadata = {b"huggingface": json.dumps({"info": {"features": portable_features(dataset.features.to_dict())}})}
        n_shards = max(1, math.ceil(table.nbytes / limit))
        per_shard = math.ceil(len(table) / n_shards) if len(table) else 0
        n_shards = max(1, math.ceil(len(table) / per_shard)) if per_shard else 1
        folder = out / config
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for shard in range(n_shards):
            piece = table.slice(shard * per_shard, per_shard).replace_schema_metadata(metadata)
            path = folder / f"train-{shard:05d}-of-{n_shards:05d}.parquet"
            pq.write_table(piece, path, row_group_size=_ROW_GROUP.get(config, max(1, len(piece))))
            files.append(path)
        result.rows[config] = len(table)
        result.files[config] = files
    result.readme = out / "README.md"
    result.readme.write_text(card, encoding="utf-8")
    return result


def portable_features(features: Any) -> Any:
    """Features dict with variable-length lists (``{"_type": "List", "feature": x}`` of datasets >= 4, or an old
    ``Sequence`` of a single feature) rewritten as ``[x]``, which every ``datasets`` version parses (older ones do
    not know ``List``)."""
    if isinstance(features, list):
        return [portable_features(v) for v in features]
    if isinstance(features, dict):
        inner = features.get("feature")
        is_list = features.get("_type") == "List" or (  # an old Sequence of a dict means a dict of lists: kept
            features.get("_type") == "Sequence" and (isinstance(inner, list) or "_type" in (inner or {})))
        if is_list and features.get("length", -1) == -1:
            return [portable_features(inner)]
        return {k: portable_features(v) for k, v in features.items()}
    return features


def export_card(configs: Iterable[str]) -> str:
    """The dataset card of ``dataset_script/ts2/README.md`` with YAML ``configs:`` for the Parquet layout."""
    import yaml

    card = (find_builder_script().parent / "README.md").read_text(encoding="utf-8")
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n", card, flags=re.DOTALL)
    header = yaml.safe_load(match.group(1)) if match else {}
    body = card[match.end():] if match else card
    configs = list(configs)
    header["configs"] = [
        {
            "config_name": name,
            **({"default": True} if name == "segs" else {}),
            "data_files": [{"split": "train", "path": f"{name}/train-*.parquet"}],
        }
        for name in configs
    ]
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n{body.lstrip()}"
