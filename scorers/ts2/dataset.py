"""TS2 as a Hugging Face dataset: ``load_ts2`` on any ``datasets`` version, question tables, and SEG helpers.

The rows come from the one ``datasets.GeneratorBasedBuilder`` in ``dataset_script/ts2/ts2.py``. That file must run
standalone on the Hub (``datasets`` + stdlib + ``huggingface_hub``), so it is not part of the ``scorers`` package;
this module imports it **by file path** and drives it directly (``download_and_prepare()`` + ``as_dataset()``),
which works on every ``datasets`` version, including 4.x/5.x that refuse to run loading scripts.

Where the script is found (first hit wins):

1. ``$TS2_DATASET_SCRIPT``: the path of ``ts2.py`` or of the folder holding it;
2. ``<project root>/dataset_script/ts2/ts2.py``, the project root being the folder that holds the ``scorers``
   package. That is the case in a source checkout and after ``pip install -e .`` (an editable install imports
   ``scorers`` from the checkout).

3. ``scorers/_dataset_script/ts2.py``: a regular (non-editable) ``pip install`` ships the builder there (setup.py maps
   ``dataset_script/ts2`` to that package). With no script at all, load an exported Parquet repo
   (``ts2 dataset export``) with ``datasets.load_dataset(path_or_repo, "segs")``.

SEG helpers (:func:`seg_graphs`, :func:`seg_index`, :func:`seg_walks`) are thin wrappers over
:func:`scorers.stats.graph.build_segs` and :meth:`scorers.stats.graph.SEG.walks`, the same code the meta-metrics use.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from scorers.stats.graph import SEG, build_segs

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "CONFIGS",
    "EncodedImages",
    "SCRIPT_ENV",
    "builder_module",
    "find_builder_script",
    "hub_segs",
    "load_ts2",
    "read_question_frame",
    "seg_graphs",
    "seg_index",
    "seg_walks",
    "ts2_builder",
]

#: Configs of the TS2 dataset, default first.
CONFIGS = ("segs", "tifa_questions", "dsg_questions")
#: Environment variable that points at ``ts2.py`` (or its folder) when the project checkout is not available.
SCRIPT_ENV = "TS2_DATASET_SCRIPT"
_MODULE_NAME = "ts2_dataset_script"  # sys.modules name of the loaded builder script (its builder's name)


def find_builder_script() -> Path:
    """Path of ``dataset_script/ts2/ts2.py`` (see the module docstring for the lookup order)."""
    override = os.environ.get(SCRIPT_ENV)
    if override:
        path = Path(override).expanduser()
        path = path / "ts2.py" if path.is_dir() else path
        if not path.is_file():
            raise FileNotFoundError(f"${SCRIPT_ENV}={override!r} names no ts2.py (give the file or its folder)")
        return path.resolve()
    path = Path(__file__).resolve().parents[2] / "dataset_script" / "ts2" / "ts2.py"
    if path.is_file():
        return path
    shipped = Path(__file__).resolve().parents[1] / "_dataset_script" / "ts2.py"  # a regular (wheel) install
    if shipped.is_file():
        return shipped
    raise FileNotFoundError(
        f"cannot find the TS2 builder script: {path} does not exist (a non-editable install ships only the scorers "
        f"package). Set ${SCRIPT_ENV} to a copy of dataset_script/ts2/ts2.py, install the project with "
        "`pip install -e .`, or load an exported Parquet repo with datasets.load_dataset(path, 'segs')."
    )


@functools.lru_cache(maxsize=None)
def _load_module(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module  # so the builder class pickles by reference (datasets' num_proc > 1)
    spec.loader.exec_module(module)
    return module


def builder_module() -> ModuleType:
    """The builder script as a module (loaded once; imports ``datasets``): ``.TS2``, ``.TS2Config``,
    ``.TS2DataError`` (the error :func:`load_ts2` raises), ``.read_metadata``... live there. The library never
    validates through it: metadata is :func:`scorers.tables.pandas_tables.read_metadata`'s, question tables are
    :mod:`scorers.metrics.qga.questions`' (the script keeps standalone copies of both, checked to agree in the tests)."""
    return _load_module(str(find_builder_script()))


def ts2_builder(
    config: str = "segs",
    data_dir: str | os.PathLike | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    **config_kwargs: Any,
):
    """A TS2 builder for ``config`` (not yet prepared).

    ``data_dir`` holds ``metadata.csv``, ``images/`` and the question CSVs; without it the builder downloads the Hub
    dataset (``repo_id``/``revision`` options). ``config_kwargs``: ``skip_missing_images``, ``check_images``,
    ``repo_id``, ``revision`` (see ``TS2Config``). The cache key covers the script's source and, for a
    ``data_dir``, the size and modification time of its files, so an edited data_dir is rebuilt.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown TS2 config {config!r}; choose one of {list(CONFIGS)}")
    script = find_builder_script()
    module = _load_module(str(script))
    if data_dir is not None:
        data_dir = os.path.abspath(os.path.expanduser(os.fspath(data_dir)))
    return module.TS2(
        config_name=config,
        data_dir=data_dir,
        cache_dir=None if cache_dir is None else os.fspath(cache_dir),
        hash=_fingerprint(script, data_dir, config),
        dataset_name="ts2",
        **config_kwargs,
    )


def load_ts2(
    config: str = "segs",
    data_dir: str | os.PathLike | None = None,
    *,
    split: str | None = "train",
    cache_dir: str | os.PathLike | None = None,
    download_mode: str | None = None,
    num_proc: int | None = None,
    **config_kwargs: Any,
):
    """Build (or reuse from the cache) and return one TS2 config as a ``datasets.Dataset``.

    Works on every ``datasets`` version (no loading script involved)::

        segs = load_ts2("segs", data_dir="path/to/T2IScoreScore")   # metadata.csv + images/ (+ question CSVs)
        dsg = load_ts2("dsg_questions", data_dir="path/to/T2IScoreScore")
        segs = load_ts2()                                            # downloads saxon/T2IScoreScore from the Hub

    Args:
        config: ``"segs"`` (one row per image), ``"tifa_questions"`` or ``"dsg_questions"``.
        data_dir: local folder in the Hub dataset's layout; nothing touches the network when it is given.
        split: TS2 has one split, ``"train"`` (the whole benchmark, as on the Hub); ``None`` returns a DatasetDict.
        cache_dir: where the prepared Arrow files go (default: the ``datasets`` cache).
        download_mode: e.g. ``"force_redownload"`` to rebuild.
        num_proc: processes for generation (rarely worth it: ``segs`` builds in seconds).
        **config_kwargs: ``skip_missing_images=True`` drops (and logs) rows whose image file is absent;
            ``check_images=False`` skips the full decode of each image; ``repo_id``/``revision`` pick the Hub source.

    Raises:
        ValueError: the builder's ``TS2DataError`` (``builder_module().TS2DataError``): a source file breaks the
            layout; the message names file, line, SEG, image.
        FileNotFoundError: ``data_dir`` or a CSV in it is missing, or the Hub cannot be reached without ``data_dir``.
    """
    builder = ts2_builder(config, data_dir, cache_dir=cache_dir, **config_kwargs)
    builder.download_and_prepare(download_mode=download_mode, num_proc=num_proc)
    return builder.as_dataset(split=split)


class EncodedImages:
    """The encoded image files (JPEG/PNG bytes) of a ``segs`` dataset, read from its Arrow table one row at a time.

    A sequence for :func:`scorers.scoring.runner.run`: picklable (the memory-mapped table travels by file reference), so the
    DataLoader workers read and decode the images; the release's ~300 MB of images are never held in memory at once.
    """

    def __init__(self, dataset: Any):
        import datasets

        self.dataset = dataset.select_columns(["image"]).cast_column("image", datasets.Image(decode=False))

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> bytes:
        cell = self.dataset[int(index)]["image"]
        if cell.get("bytes") is None:  # a table that stores paths only (not the TS2 builder's)
            with open(cell["path"], "rb") as handle:
                return handle.read()
        return cell["bytes"]


def hub_segs(
    revision: str | None = None,
    *,
    repo_id: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    **config_kwargs: Any,
) -> tuple[pd.DataFrame, EncodedImages]:
    """TS2 from the Hugging Face Hub, ready to score: ``(metadata, images)``, one image per metadata row.

    The ``segs`` config of :func:`load_ts2` built from the Hub dataset (default: the official
    ``saxon/T2IScoreScore`` at the commit pinned in :mod:`scorers.tables.release`): downloaded once into the Hugging Face
    cache (with progress bars), validated, and reused by later calls with no download. ``metadata`` has the canonical
    columns ``seg_id, prompt, file_name, node`` (as :func:`scorers.tables.pandas_tables.read_metadata` gives them);
    ``images`` is an :class:`EncodedImages` in the same row order.
    """
    import numpy as np
    from huggingface_hub import constants

    from scorers.errors import Wording
    from scorers.models.loading import hub_reachable
    from scorers.tables.release import HUB_REPO, HUB_REVISION

    repo_id, revision = repo_id or HUB_REPO, revision or HUB_REVISION
    builder = ts2_builder("segs", None, cache_dir=cache_dir, repo_id=repo_id, revision=revision, **config_kwargs)
    prepared = os.path.isfile(os.path.join(builder.cache_dir, "dataset_info.json"))
    if not prepared and not constants.HF_HUB_OFFLINE and not hub_reachable():  # fail in seconds, not after retries
        raise FileNotFoundError(Wording(
            "could not fetch the TS2 dataset {repo_id!r}: the Hugging Face Hub ({endpoint}) does not answer and the "
            "dataset is not in the cache; connect once (it is then reused offline), or pass {data_dir=DIR} holding "
            "metadata.csv and images/", repo_id=repo_id, endpoint=constants.ENDPOINT,
        ))
    try:
        builder.download_and_prepare()
    except FileNotFoundError as error:  # one line naming the fix: a local data_dir (and what $TS2_DATA holds)
        if not constants.HF_HUB_OFFLINE or prepared:
            raise FileNotFoundError(" ".join(str(error).split())) from None
        raise FileNotFoundError(Wording(
            "could not fetch the TS2 dataset {repo_id!r}: offline (HF_HUB_OFFLINE=1) and not in the Hugging Face cache; "
            "pass {data_dir=DIR} holding metadata.csv and images/{checked}", repo_id=repo_id,
            checked=_release_folder_note())) from None
    dataset = builder.as_dataset(split="train")
    metadata = dataset.select_columns(["seg_id", "prompt", "file_name", "node"]).to_pandas()
    metadata["seg_id"] = metadata["seg_id"].astype(np.int64)
    return metadata, EncodedImages(dataset)


def _release_folder_note() -> str:
    """What ``$TS2_DATA`` holds, said after a failed Hub read of the images: a folder to pass, or one without images."""
    from scorers.tables.release import DATA_ENV

    folder = os.environ.get(DATA_ENV, "").strip()
    if not folder:
        return ""
    has = [name for name in ("metadata.csv", "images") if os.path.exists(os.path.join(folder, name))]
    if len(has) == 2:
        return f" (${DATA_ENV}={folder} holds both: pass it)"
    return f" (${DATA_ENV}={folder}, checked, holds {'no images/' if 'images' not in has else 'no metadata.csv'})"


def read_question_frame(
    path: str | os.PathLike,
    kind: str,
    *,
    seg_ids: Iterable[int] | None = None,
) -> pd.DataFrame:
    """A TIFA (``kind="tifa"``) or DSG (``kind="dsg"``) question CSV, validated, as a frame with the dataset's
    columns (``seg_id, prompt, question_id, question, choices, answer, is_yes_no`` [+ ``parents``]) and ``line``.

    Same checks as :func:`scorers.metrics.qga.questions.read_question_set` (one implementation,
    :func:`scorers.metrics.qga.questions.validate_question_rows`; the dataset build applies the builder's copy of the same
    rules); ``seg_ids`` restricts the SEG ids a question may reference. For scoring, read a
    :class:`~scorers.metrics.qga.questions.QuestionSet` with ``read_question_set`` instead. Errors are
    :class:`~scorers.metrics.qga.questions.QuestionTableError` (a ``ValueError``).
    """
    import pandas as pd

    from scorers.metrics.qga.questions import read_question_csv, validate_question_rows

    if kind not in ("tifa", "dsg"):
        raise ValueError(f"kind must be 'tifa' or 'dsg', got {kind!r}")
    known = None if seg_ids is None else {int(s) for s in seg_ids}
    path = os.fspath(path)
    kind, lines, records = read_question_csv(path, kind)
    return pd.DataFrame(validate_question_rows(records, kind, source=path, line_of=lines, seg_ids=known))


# --- SEG helpers: SEG -> nodes -> image indices, and walks ---------------------------------------------------------
def _columns(rows: Any, names: Iterable[str]) -> dict[str, list]:
    """Plain lists of ``names`` from a datasets.Dataset (images never decoded), a DataFrame or a column mapping."""
    import pandas as pd

    names = list(names)
    if hasattr(rows, "select_columns") and hasattr(rows, "column_names"):  # datasets.Dataset
        present = [n for n in names if n in rows.column_names]
        return {k: list(v) for k, v in rows.select_columns(present)[:].items()} if present else {}
    if isinstance(rows, pd.DataFrame):
        return {n: rows[n].tolist() for n in names if n in rows.columns}
    if isinstance(rows, Mapping):
        return {n: list(rows[n]) for n in names if n in rows}
    raise TypeError(f"expected a datasets.Dataset, a pandas DataFrame or a mapping of columns, "
                    f"got {type(rows).__name__}")


def seg_graphs(rows: Any) -> list[SEG]:
    """The SEGs of ``segs`` rows as :class:`scorers.stats.graph.SEG` objects, sorted by SEG id.

    ``rows``: the ``segs`` dataset (or a filtered/selected view of it), a DataFrame or a mapping with ``seg_id`` and
    ``node`` columns (``partition`` is used when present). ``SEG.members[k]`` holds the row positions, in ``rows``,
    of the images on node ``SEG.nodes[k]``; ``SEG.walks()`` gives the walks.
    """
    cols = _columns(rows, ("seg_id", "node", "partition"))
    missing = [c for c in ("seg_id", "node") if c not in cols]
    if missing:
        raise ValueError(f"rows lack column(s) {missing}; pass the 'segs' config (seg_id, node, ...)")
    partitions = dict(zip((int(s) for s in cols["seg_id"]), cols["partition"])) if "partition" in cols else None
    return build_segs(cols["seg_id"], cols["node"], partitions=partitions)


def seg_index(rows: Any) -> dict[int, dict[str, list[int]]]:
    """SEG id -> node label -> row positions of its images, nodes ordered by error count then label::

        index = seg_index(segs)
        segs[index[0]["1a"]]["image"]     # the images of SEG 0, node 1a
    """
    return {
        seg.seg_id: {node: members.tolist() for node, members in zip(seg.nodes, seg.members)}
        for seg in seg_graphs(rows)
    }


def seg_walks(rows: Any) -> dict[int, list[tuple[str, ...]]]:
    """SEG id -> its walks, each a tuple of node labels with one node per error level, in increasing error
    (:meth:`scorers.stats.graph.SEG.walks`, the definition the rank meta-metric uses)."""
    return {seg.seg_id: seg.walks() for seg in seg_graphs(rows)}


def _fingerprint(script: Path, data_dir: str | None, config: str) -> str:
    """Cache key: the script's bytes plus, for a data_dir, name/size/mtime of the files the config reads."""
    digest = hashlib.sha256(script.read_bytes())
    if data_dir is not None and os.path.isdir(data_dir):
        names = ["metadata.csv", "tifa_questions.csv", "dsg_questions.csv"]
        entries = []
        for name in names:
            path = os.path.join(data_dir, name)
            if os.path.isfile(path):
                st = os.stat(path)
                entries.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        images = os.path.join(data_dir, "images")
        if config == "segs" and os.path.isdir(images):
            with os.scandir(images) as it:
                for entry in sorted(it, key=lambda e: e.name):
                    if entry.is_file():
                        st = entry.stat()
                        entries.append(f"images/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
        digest.update("\n".join(entries).encode())
    return digest.hexdigest()[:16]
