"""Publishing built SEGs (``ts2 seg push``): the Parquet export, a generated dataset card, ``push_to_hub``.

:func:`prepare_push` does everything but the upload: it exports the built data dir (``ts2 seg build``'s OUT) with
``scorers.ts2.export.export_parquet`` (config ``segs``, plus ``tifa_questions`` / ``dsg_questions`` when their CSVs are
in OUT), loads each config back with ``datasets.load_dataset`` from that local export (what ``push_to_hub`` will
send) and writes the card (:func:`seg_card`): the procedures used, the generators, the counts per node and per error
type, and the licence. The ``segs`` rows keep the build's ``partition``, ``errors``, ``error_types`` and
``source_file``; ``segs.json``, ``warnings.txt`` and the question CSVs are copied beside the shards
(``scorers.ts2.export.SIDE_FILES``). :func:`push_segs` then calls ``DatasetDict.push_to_hub(repo, config_name=...)``
per config, uploads those files in one commit, and the card last (``push_to_hub`` writes its own README, which the
card replaces; both name the same ``configs``). ``ts2 dataset unpack`` turns a download of the repo back into a data
dir (:func:`scorers.ts2.export.unpack_export`).
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from scorers.atomic import write_text_atomic
from scorers.errors import ParameterError
from scorers.stats.error_sets import ERROR_SEPARATOR

__all__ = ["PROCEDURES", "PushPlan", "prepare_push", "push_segs", "seg_card"]

#: the TS2 paper's three procedures (section 3.1)
PROCEDURES = {"synth": "Synth (graph first: ablated prompts, generated images, checked)",
              "nat": "Nat (photos of arranged scenes, graph, then the prompt)",
              "real": "Real (many images of one prompt, each image's errors counted by a person)"}
_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass
class PushPlan:
    """What a push sends: the export folder, the ``datasets`` object per config, the card text and its file, and the
    files beside the shards (``side_files``: names inside ``export``)."""

    export: Path
    datasets: dict[str, Any] = field(default_factory=dict)
    card: str = ""
    readme: Path | None = None
    side_files: list[str] = field(default_factory=list)


def _counts_table(counts, header: tuple[str, str]) -> str:
    lines = [f"| {header[0]} | {header[1]} |", "|---|---:|"]
    lines += [f"| {key} | {int(n):,} |" for key, n in counts.items()]
    return "\n".join(lines)


def seg_card(metadata, *, repo: str, configs: Sequence[str], license: str = "unknown",
             procedures: Sequence[str] | None = None, title: str | None = None) -> str:
    """The dataset card (YAML header + Markdown) of a built SEG set, from its ``metadata.csv`` frame.

    Counts: SEGs, images, images per node (the ``rank`` column: the node label), per generator (``image_source``),
    per partition, and per error type (the ``error_types`` column, when the build had one: each image counts once
    per error). ``procedures`` default to the partitions that name one (``synth``, ``nat``, ``real``), else
    ``synth``.
    """
    import yaml

    partitions = sorted(metadata["partition"].astype(str).unique()) if "partition" in metadata.columns else []
    if not procedures:
        procedures = [p.lower() for p in partitions if p.lower() in PROCEDURES] or ["synth"]
    unknown = [p for p in procedures if p not in PROCEDURES]
    if unknown:
        raise ParameterError("{procedures} item {p!r} is not one of {known}", p=unknown[0], known=list(PROCEDURES))
    header = {"license": license, "pretty_name": title or repo.split("/")[-1],
              "task_categories": ["text-to-image"], "tags": ["t2iscorescore", "ts2", "semantic-error-graphs"],
              "configs": [{"config_name": name, **({"default": True} if name == "segs" else {}),
                           "data_files": [{"split": "train", "path": f"{name}/train-*"}]} for name in configs]}
    nodes = metadata["rank"].astype(str).value_counts().sort_index()
    sources = metadata["image_source"].astype(str).value_counts() if "image_source" in metadata.columns else None
    sections = [f"# {title or repo.split('/')[-1]}",
                "Semantic error graphs (SEGs) in the layout of the T2IScoreScore (TS2) release, built with "
                "`ts2 seg` of ts2-evaluate. Each SEG is one prompt with images grouped in nodes by the set of the "
                "prompt's elements they get wrong; node `0` holds the error-free images, and a node's label counts "
                "its errors. Judge a metric on it with `ts2 score ... --data-dir` and `ts2 meta`.",
                "## Procedures\n\n" + "\n".join(f"- {PROCEDURES[p]}" for p in procedures),
                f"## Counts\n\n- SEGs: {metadata['id'].nunique():,}\n- images: {len(metadata):,}\n- configs: "
                + ", ".join(f"`{c}`" for c in configs),
                "### Images per node\n\n" + _counts_table(nodes, ("node", "images"))]
    if sources is not None:
        sections.append("## Generators\n\n" + _counts_table(sources, ("image source", "images")))
    if partitions:
        sections.append("### Images per partition\n\n" + _counts_table(
            metadata["partition"].astype(str).value_counts().sort_index(), ("partition", "images")))
    if "error_types" in metadata.columns:
        types = metadata["error_types"].fillna("").astype(str).str.split(ERROR_SEPARATOR).explode().str.strip()
        types = types[types != ""].value_counts().sort_index()
        sections.append("### Errors per type\n\n" + (_counts_table(types, ("error type", "image errors"))
                                                    if len(types) else "No image has a typed error."))
    sections.append(f"## Licence\n\n`{license}`" + (
        " (not stated: set it with `ts2 seg push --license`, and check the generators' terms for their images)"
        if license == "unknown" else ". Check the generators' terms for their images too."))
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n" + "\n\n".join(sections) + "\n"


def prepare_push(data_dir: str | os.PathLike, export: str | os.PathLike, *, repo: str, license: str = "unknown",
                 procedures: Sequence[str] | None = None, cache_dir: str | os.PathLike | None = None,
                 overwrite: bool = False) -> PushPlan:
    """Export ``data_dir`` to ``export``, load it back per config and write the card there (all but the upload).

    Raises
    ------
    ParameterError
        ``repo`` is not ``owner/name``; ``data_dir`` has no ``metadata.csv``.
    """
    import datasets
    import pandas as pd

    from scorers.ts2.export import SIDE_FILES, export_parquet

    if not _REPO.match(str(repo)):
        raise ParameterError("{repo} must be a Hub dataset id OWNER/NAME, got {value!r}", value=repo)
    data_dir = Path(data_dir)
    if not (data_dir / "metadata.csv").is_file():
        raise ParameterError("{data_dir} {path} has no metadata.csv: give the OUT of `ts2 seg build`", path=data_dir)
    configs = ["segs"] + [name for name in ("tifa_questions", "dsg_questions") if (data_dir / f"{name}.csv").is_file()]
    result = export_parquet(export, data_dir=data_dir, configs=configs, cache_dir=cache_dir, overwrite=overwrite)
    metadata = pd.read_csv(data_dir / "metadata.csv", dtype=str, keep_default_na=False)
    plan = PushPlan(Path(result.out))
    for name in SIDE_FILES:  # beside the shards, as they are; one left by an earlier export is removed
        if (plan.export / name).is_file():
            (plan.export / name).unlink()
        if (data_dir / name).is_file():
            shutil.copyfile(data_dir / name, plan.export / name)
            plan.side_files.append(name)
    plan.card = seg_card(metadata, repo=repo, configs=configs, license=license, procedures=procedures)
    plan.readme = write_text_atomic(plan.export / "README.md", plan.card)
    load_cache = Path(cache_dir) if cache_dir else plan.export.parent / f".{plan.export.name}-load-cache"
    for name in configs:
        plan.datasets[name] = datasets.load_dataset(str(plan.export), name, cache_dir=str(load_cache))
    return plan


def push_segs(plan: PushPlan, repo: str, *, token: str | None = None, private: bool = False) -> list[str]:
    """Upload: ``push_to_hub`` per config, the side files (``segs.json``...) in one commit, then the card. Returns
    what was sent, one line per call."""
    from huggingface_hub import CommitOperationAdd, DatasetCard, HfApi

    sent = []
    for name, dataset in plan.datasets.items():
        dataset.push_to_hub(repo, config_name=name, token=token, private=private)
        sent.append(f"{name}: {sum(d.num_rows for d in dataset.values())} rows")
    if plan.side_files:
        operations = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=str(plan.export / name))
                      for name in plan.side_files]
        HfApi(token=token).create_commit(repo, operations, commit_message=f"Add {', '.join(plan.side_files)}",
                                         repo_type="dataset")
        sent.append(f"{', '.join(plan.side_files)}: beside the Parquet")
    DatasetCard(plan.card).push_to_hub(repo, repo_type="dataset", token=token)
    sent.append("README.md: the card")
    return sent
