"""Export TS2 as Parquet shards + a dataset card, loadable with ``datasets.load_dataset(OUT, "segs")`` and no script.

Layout written under ``OUT`` (also the layout of a Hub repo uploaded from it)::

    README.md                              # the dataset card, YAML `configs:` pointing at the shards
    segs/train-00000-of-00001.parquet      # images embedded as bytes (the original files, byte for byte)
    tifa_questions/train-00000-of-00001.parquet
    dsg_questions/train-00000-of-00001.parquet

The Parquet schema metadata carries the ``datasets`` features in a spelling every version reads (lists as ``[x]``
rather than the ``List`` type of ``datasets`` >= 4), so the export loads on old and new ``datasets`` alike.

A data dir built by ``ts2 seg build`` keeps its own columns in the ``segs`` rows: ``errors``, ``error_types`` and
``source_file`` (:data:`BUILD_COLUMNS`) beside ``partition``. ``ts2 seg push`` also puts :data:`SIDE_FILES`
(``segs.json``, ``warnings.txt``, the question CSVs) beside the shards, and :func:`unpack_export` (``ts2 dataset
unpack``) writes such an export back in the release's layout (``metadata.csv``, ``images/`` and those files), which
every ``ts2`` command reads.
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

__all__ = ["BUILD_COLUMNS", "SIDE_FILES", "ExportResult", "export_parquet", "parse_size", "unpack_export"]

#: the question config's CSV in a local data_dir
QUESTION_FILES = {"tifa_questions": "tifa_questions.csv", "dsg_questions": "dsg_questions.csv"}
#: ``metadata.csv`` columns of a data dir built by ``ts2 seg build`` that the ``segs`` rows keep (text, "" for none)
BUILD_COLUMNS = ("errors", "error_types", "source_file")
#: files of a built data dir that travel beside the Parquet shards (``ts2 seg push``), as they are
SIDE_FILES = ("segs.json", "warnings.txt", "tifa_questions.csv", "dsg_questions.csv")
#: the release's ``metadata.csv`` columns and the ``segs`` columns they come from, then a build's own
_METADATA_OUT = (("id", "seg_id"), ("target_prompt", "prompt"), ("file_name", "file_name"),
                 ("image_source", "image_source"), ("rank", "node"))
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
    if "segs" in built and data_dir is not None:
        built["segs"] = _with_build_columns(built["segs"], Path(data_dir) / "metadata.csv")
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


def _with_build_columns(dataset: Any, metadata: Path) -> Any:
    """``dataset`` (the ``segs`` rows of a local data dir) with the :data:`BUILD_COLUMNS` its ``metadata.csv`` has,
    matched by ``file_name`` (unique: the builder checked it); unchanged for the release, which has none."""
    import datasets

    from scorers.tables.pandas_tables import read_csv

    frame = read_csv(metadata, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    present = [c for c in BUILD_COLUMNS if c in frame.columns]
    if not present:
        return dataset
    rows = dict(zip(frame["file_name"].str.strip(), range(len(frame))))
    taken = [rows[name] for name in dataset["file_name"]]
    for column in present:
        values = frame[column].str.strip().to_numpy(dtype=object)[taken].tolist()
        dataset = dataset.add_column(column, values, feature=datasets.Value("string"))
    return dataset


def unpack_export(export: str | os.PathLike, out: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None,
                  overwrite: bool = False) -> Path:
    """An export (a folder :func:`export_parquet` or ``ts2 seg push`` wrote, or a local copy of a Hub dataset made
    from one) back in the release's layout under ``out``: ``metadata.csv``, ``images/`` (the embedded files, byte for
    byte) and the :data:`SIDE_FILES` found beside the shards.

    ``metadata.csv`` has the release's columns (``id, target_prompt, file_name, image_source, rank``), plus, for a
    built data dir (the rows carry :data:`BUILD_COLUMNS`, or partitions other than TS2's id ranges), ``partition`` and
    the build's columns, in the order ``ts2 seg build`` writes them. ``ValueError`` (one line): ``out`` not empty
    without ``overwrite``, no ``segs`` config, an image name that leaves ``out``.
    """
    import datasets
    import pandas as pd

    from scorers.checks import resolve_inside
    from scorers.stats.graph import partition_of

    export, out = Path(export), Path(out)
    if not export.is_dir():
        raise ValueError(f"{export}: no such folder (give the folder of an export: README.md and segs/*.parquet)")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise ValueError(Wording("{out} is not empty; pass {overwrite=True} to replace what is there", out=out))
    quiet = datasets.utils.are_progress_bars_disabled()
    datasets.utils.disable_progress_bars()  # a few rows: no bar on the terminal
    try:
        rows = datasets.load_dataset(str(export), "segs", split="train",
                                     cache_dir=None if cache_dir is None else str(cache_dir))
    except ValueError as error:
        raise ValueError(f"{export}: no segs config to load ({' '.join(str(error).split())[:200]})") from None
    finally:
        if not quiet:
            datasets.utils.enable_progress_bars()
    rows = rows.cast_column("image", datasets.Image(decode=False))
    names = rows.column_names
    frame = pd.DataFrame({release: list(rows[column]) for release, column in _METADATA_OUT})
    built = [c for c in BUILD_COLUMNS if c in names]
    partitions = list(rows["partition"]) if "partition" in names else None
    if partitions is not None and (built or any(p != partition_of(int(s)) for s, p in zip(frame["id"], partitions))):
        frame["partition"] = partitions
    for column in built:
        frame[column] = list(rows[column])
    out.mkdir(parents=True, exist_ok=True)
    folders: dict = {}
    targets = []
    for name in frame["file_name"]:
        try:
            targets.append(resolve_inside(out, name, what=f"the folder {out}", folders=folders))
        except ValueError as problem:
            raise ValueError(f"{export}: image file_name {problem}") from None
    for target, cell in zip(targets, rows.select_columns(["image"])["image"]):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(cell["bytes"])
    frame.to_csv(out / "metadata.csv", index=False)
    for name in SIDE_FILES:
        if (export / name).is_file():
            shutil.copyfile(export / name, out / name)
        elif (out / name).is_file():  # overwrite: what this export lacks is not left from an earlier one
            (out / name).unlink()
    return out


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
