"""Where the demo's tables, images and models come from: explicit paths, a data_dir, or the TS2 release.

Resolved once into an :class:`AppConfig`, so the rest of the app never guesses paths. The same app runs locally
(``ts2 demo``) and on a Hugging Face Space (settings from environment variables). A release table with no local path
here is left ``None`` and read from :mod:`scorers.tables.release` by :func:`scorers.demo.sources.load_tables`: ``$TS2_DATA``
(a local copy of the release), else the Hugging Face cache, else one pinned, sha256-verified download. Images then
come from the release's Hub dataset at its pinned revision (:attr:`AppConfig.hub_images`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from scorers.errors import ParameterError, mention
from scorers.tables import release, release_download

__all__ = ["AppConfig", "TABLE_FILES", "check_tables", "hub_probe", "work_offline"]

#: file names of the release tables, the same inside a data_dir and in the release (``scorers.tables.release.RELEASE_FILES``)
TABLE_FILES = {"metadata": "metadata.csv", "scores": "released_scores.csv", "paper": "paper_table2.csv"}
#: the parameter of :meth:`AppConfig.resolve` that passes each table (``ts2 demo``: ``--metadata``, ``--scores-csv``,
#: ``--paper``)
TABLE_PARAMETERS = {"metadata": "metadata", "scores": "scores_csv", "paper": "paper_table"}

#: the Build a SEG tab's settings and the environment variables that set them on a Space (``ts2 demo``: the flags
#: ``--annotations``, ``--images``, ``--seg-plan``, ``--seg-review``)
SEG_BUILDER_ENV = {"annotations": "TS2_ANNOTATIONS", "seg_images": "TS2_SEG_IMAGES", "seg_plan": "TS2_SEG_PLAN",
                   "seg_review": "TS2_SEG_REVIEW"}

#: default CLIP checkpoint for "Score your image" (a Hub id or a local directory)
DEFAULT_CLIP = "openai/clip-vit-base-patch16"  # the official TS2 CLIPScore checkpoint


@dataclass(frozen=True)
class AppConfig:
    """Resolved settings of one demo instance.

    ``metadata``/``scores_csv``/``paper_table``: local table files; ``None`` means "from the TS2 release"
    (``scorers.tables.release``; the paper table through ``scorers.ts2.reproduce.find_release_table2``).
    ``data_dir``: where images live (``data_dir / file_name``); without it images come from the release's Hub
    dataset when the metadata is the release's too (:attr:`hub_images`), else they are drawn as placeholders.
    ``clip_model``: CLIP checkpoint for CLIPScore (Hub id or local dir, loaded on first use).
    ``vlm``: VQA model for TIFA/DSG (None: those scorers are offered as unavailable). ``qg_model``: text LM that
    writes TIFA questions for prompts without a question table (None: TIFA/DSG only for TS2 prompts, from the
    data_dir's question tables). ``seg_subset``: SEG ids of the
    leaderboard (the paper averaged 0-163). ``max_upload_mb``: uploads above this are refused. ``submissions``:
    where the community leaderboard's submissions are (a folder, or a Hub dataset ``OWNER/NAME@REVISION``;
    :mod:`scorers.report.community`), None: no community rows.
    ``annotations``: the ANNOTATIONS CSV the Build a SEG tab edits (``ts2 seg build``'s input; None: the tab says
    how to open one), its images under ``seg_images`` (default: the file's folder), with an optional ``seg_plan``
    (``ts2 seg plan``'s elements) and ``seg_review`` (``ts2 seg check``'s review list, shown first).
    """

    metadata: Path | None = None
    scores_csv: Path | None = None
    paper_table: Path | None = None
    data_dir: Path | None = None
    clip_model: str = DEFAULT_CLIP
    vlm: str | None = None
    qg_model: str | None = None
    seg_subset: tuple[int, int] = (0, 164)
    max_upload_mb: float = 10.0
    annotations: Path | None = None
    seg_images: Path | None = None
    seg_plan: Path | None = None
    seg_review: Path | None = None
    submissions: str | None = None

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def seg_range(self) -> range:
        return range(*self.seg_subset)

    @property
    def hub_images(self) -> bool:
        """Images from the release's Hub dataset (``release.HUB_REPO`` at ``release.HUB_REVISION``): only with no
        data_dir and the release's own metadata, whose ``file_name`` s are that dataset's paths."""
        return self.data_dir is None and self.metadata is None

    def describe(self, loaded: Mapping[str, Path] | None = None, images: str | None = None) -> str:
        """One Markdown line per source, shown in the app so users see which data they are looking at.

        ``loaded``: the table files actually read (``Tables.paths``), shown instead of where they were looked for;
        ``images``: where images actually come from (``ImageSource.describe()``: says so when the Hub failed).
        """
        loaded = loaded or {}
        from_release = f"TS2 release (${release.DATA_ENV}, the Hugging Face cache or a pinned download)"
        metadata = loaded.get("metadata") or self.metadata or f"{from_release}: not available"
        scores = loaded.get("scores") or self.scores_csv or f"{from_release}: not available"
        paper = loaded.get("paper") or self.paper_table or "not available"
        hub = f"Hub dataset {release.HUB_REPO} at {release.HUB_REVISION[:12]}"
        images = images or self.data_dir or (hub if self.hub_images else "placeholders")
        return "\n".join(
            [
                f"- metadata: `{metadata}`",
                f"- released scores: `{scores}`",
                f"- paper table: `{paper}`",
                f"- images: `{images}`",
                f"- CLIP model: `{self.clip_model}`; VLM: `{self.vlm or 'not configured'}`; "
                f"question generator: `{self.qg_model or 'not configured'}`",
                f"- community submissions: `{self.submissions or 'not configured (TS2_SUBMISSIONS)'}`",
            ]
        )

    @classmethod
    def resolve(
        cls,
        *,
        data_dir: str | Path | None = None,
        scores_csv: str | Path | None = None,
        metadata: str | Path | None = None,
        paper_table: str | Path | None = None,
        **settings,
    ) -> "AppConfig":
        """Fill unset table paths: explicit path > ``data_dir`` > ``None`` (the TS2 release, read by ``load_tables``).

        The metadata and scores tables are taken from the data_dir as a pair, only when it has the scores table, so a
        small data_dir (images of a few SEGs) does not get paired with the release's 2,840 score rows by accident
        (its own metadata is then used only if the release's cannot be had). Explicit paths that do not exist raise
        ``FileNotFoundError``.
        """
        data_dir = Path(data_dir) if data_dir else None
        if data_dir is not None and not data_dir.is_dir():
            what = "is a file, not a folder" if data_dir.exists() else "does not exist"
            raise _NotFound("{given}: data dir {what} (a folder holding metadata.csv and images/)",
                            given=mention("data_dir", str(data_dir)), what=what)
        explicit = {"metadata": metadata, "scores": scores_csv, "paper": paper_table}
        for key, value in explicit.items():
            if value is not None and not Path(value).is_file():
                what = "is a folder, not a file" if Path(value).is_dir() else "does not exist"
                raise _NotFound("{given}: {name} path {what}", given=mention(TABLE_PARAMETERS[key], str(value)),
                                name=TABLE_FILES[key], what=what)
        pair = data_dir is not None and (data_dir / TABLE_FILES["scores"]).is_file()
        found = {}
        for key, name in TABLE_FILES.items():
            in_data_dir = data_dir / name if data_dir is not None and (data_dir / name).is_file() else None
            if explicit[key] is not None:
                found[key] = Path(explicit[key])
            elif pair or key == "paper":
                found[key] = in_data_dir
            else:
                found[key] = None
        return cls(metadata=found["metadata"], scores_csv=found["scores"], paper_table=found["paper"],
                   data_dir=data_dir, **settings)

    @classmethod
    def from_env(cls, environ: dict | None = None) -> "AppConfig":
        """Settings of a Space (or any deployment) from ``TS2_*`` environment variables; the TS2 release by default."""
        env = os.environ if environ is None else environ
        settings = {}
        if env.get("TS2_CLIP_MODEL"):
            settings["clip_model"] = env["TS2_CLIP_MODEL"]
        if env.get("TS2_VLM"):
            settings["vlm"] = env["TS2_VLM"]
        if env.get("TS2_QG_MODEL"):
            settings["qg_model"] = env["TS2_QG_MODEL"]
        if env.get("TS2_MAX_UPLOAD_MB"):
            settings["max_upload_mb"] = float(env["TS2_MAX_UPLOAD_MB"])
        for name, variable in SEG_BUILDER_ENV.items():  # the Build a SEG tab's files
            if env.get(variable):
                settings[name] = Path(env[variable])
        if env.get("TS2_SUBMISSIONS"):
            settings["submissions"] = env["TS2_SUBMISSIONS"].strip()
        return cls.resolve(
            data_dir=env.get("TS2_DATA_DIR") or None,
            scores_csv=env.get("TS2_SCORES_CSV") or None,
            metadata=env.get("TS2_METADATA") or None,
            paper_table=env.get("TS2_PAPER_TABLE") or None,
            **settings,
        )

    def with_(self, **changes) -> "AppConfig":
        return replace(self, **changes)


class _NotFound(ParameterError, FileNotFoundError):
    """A table or folder the settings name is not there: a :class:`ParameterError` naming the setting (``ts2 demo``
    says its flag) that is also a ``FileNotFoundError``."""


def _local_release_metadata(config: AppConfig) -> Path | None:
    """The metadata the leaderboard will pair the scores with, when it is on this machine already (the config's,
    ``$TS2_DATA``'s or the release cache's); None where it would be downloaded (nothing is fetched here)."""
    if config.metadata is not None:
        return config.metadata
    try:
        folder = release.local_data_dir()
    except OSError:
        return None
    if folder is not None:
        found = folder / TABLE_FILES["metadata"]
        return found if found.is_file() else None
    return release.cached_path(release.RELEASE_FILES[TABLE_FILES["metadata"]])


def check_tables(config: AppConfig) -> None:
    """Read the local tables ``config`` names with the library's readers and refuse one the app could not use, in one
    line naming its setting (a :class:`ParameterError`: ``ts2 demo`` says ``--scores-csv garbage.csv: ...``), before
    the app starts: a table that is not a CSV, lacks its columns or has a non-numeric score; a scores table that does
    not pair with the metadata (row count, keys). Tables left to the release (``None``) are checked when loaded."""
    from scorers.tables.join import join_scores
    from scorers.tables.pandas_tables import column_scores, read_metadata, read_paper_table, read_score_table, score_columns

    def setting(key: str, path: Path):
        explicit = config.data_dir is None or path.parent != config.data_dir
        return mention(TABLE_PARAMETERS[key], str(path)) if explicit else mention("data_dir", str(config.data_dir))

    def refuse(key: str, path: Path, error: Exception):
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        for prefix in (f"{path}: ", f"{path.name}: "):  # the readers start with the file, which the setting names
            first = first[len(prefix):] if first.startswith(prefix) else first
        return ParameterError("{given}: {problem}", given=setting(key, path), problem=first)

    metadata = None
    if config.metadata is not None:
        try:
            metadata = read_metadata(config.metadata)
        except (OSError, ValueError) as error:
            raise refuse("metadata", config.metadata, error) from None
    if config.scores_csv is not None:
        path = config.scores_csv
        try:
            frame = read_score_table(path)
            columns = score_columns(frame)
            if frame.empty:
                raise ValueError(f"{path}: a header but no rows")
            if not columns:
                raise ValueError(f"{path}: no score column (columns: {', '.join(map(str, frame.columns))}); expected "
                                 "the release's released_scores.csv layout: id,image_id,<metric>,...")
            for column in columns:
                column_scores(frame, column, clean_quotes=True)  # as the leaderboard reads them
            if metadata is None:
                local = _local_release_metadata(config)
                metadata = read_metadata(local) if local is not None else None
            if metadata is not None:
                join_scores(frame, metadata, source=path.name)  # the leaderboard's pairing: rows, keys
        except (OSError, ValueError) as error:
            raise refuse("scores", path, error) from None
    if config.paper_table is not None:
        try:
            read_paper_table(config.paper_table)
        except (OSError, ValueError) as error:
            raise refuse("paper", config.paper_table, error) from None


def hub_probe(timeout: float = release_download.PROBE_TIMEOUT_S) -> str | None:
    """Whether the Hugging Face Hub answers: None, else why not, in a few words; one probe of the endpoint
    (``$HF_ENDPOINT``, else huggingface.co) by :func:`scorers.tables.release_download.probe`, given ``timeout`` seconds in all
    (name resolution included: the probe runs in a thread that is not waited for longer)."""
    import threading

    endpoint = (os.environ.get("HF_ENDPOINT") or release.HUB_URL).rstrip("/")
    answer: list = []
    thread = threading.Thread(target=lambda: answer.append(release_download.probe(endpoint, answer=True)), daemon=True,
                              name="ts2-hub-probe")
    thread.start()
    thread.join(timeout)
    if not answer:
        return f"{endpoint} did not answer within {timeout:g} s"
    return answer[0]


def work_offline() -> None:
    """From now on, this process reads the Hub's files from the local cache only (``HF_HUB_OFFLINE=1``): release
    tables, images and models are never asked for again, so an unreachable Hub costs no retries."""
    import sys

    os.environ["HF_HUB_OFFLINE"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:  # already imported: it read the variable then
        constants.HF_HUB_OFFLINE = True


def check_upload_size(path: str | Path, max_bytes: int) -> None:
    """Refuse an uploaded file that is empty or larger than ``max_bytes``, in one line (ValueError)."""
    size = os.path.getsize(path)
    if size > max_bytes:
        raise ValueError(f"the file is {_human_size(size)}; the limit is {_human_size(max_bytes)}")
    if size == 0:
        raise ValueError("the file is empty")


def _human_size(size: int) -> str:
    return f"{size / 2**20:.1f} MB" if size >= 2**20 else f"{size / 2**10:.1f} KB"
