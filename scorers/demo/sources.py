"""Reading the demo's inputs: release tables (local files or ``scorers.tables.release``) and images (data_dir, the release's
Hub dataset, or a placeholder).

Table parsing and validation are the library's (``scorers.tables.pandas_tables``), and so is finding the release
(``scorers.tables.release``: ``$TS2_DATA``, the Hugging Face cache, one pinned and verified download); this module only
decides which file each table comes from and turns failures into messages the UI can show.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath

import pandas as pd
from PIL import Image, ImageDraw

from scorers.checks import resolve_inside
from scorers.models.images import open_rgb
from scorers.tables import release, release_download
from scorers.ts2.reproduce import find_release_table2
from scorers.tables.pandas_tables import read_metadata, read_paper_table, read_score_table

from scorers.demo.config import TABLE_FILES, AppConfig

__all__ = ["Tables", "ImageSource", "load_tables", "placeholder_image"]

log = logging.getLogger(__name__)

_READERS = {"metadata": read_metadata, "scores": read_score_table, "paper": read_paper_table}


@dataclass
class Tables:
    """The release tables the app shows; ``problems`` lists what could not be loaded (shown in the UI, not raised).

    ``paths``: the file each loaded table was read from (shown under "Data sources").
    """

    metadata: pd.DataFrame | None = None
    scores: pd.DataFrame | None = None
    paper: pd.DataFrame | None = None
    problems: list[str] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)


def _table_paths(config: AppConfig, problems: list[str]) -> dict[str, Path | None]:
    """Which file each table is read from: the config's local paths, else the release (metadata and scores in one
    ``release_download.paths`` call, so one problem line says everything that is missing); ``None`` for a paper table not
    given locally (:func:`load_tables` then asks ``reproduce.find_release_table2``)."""
    where = {"metadata": config.metadata, "scores": config.scores_csv, "paper": config.paper_table}
    wanted = [key for key in ("metadata", "scores") if where[key] is None]
    if wanted:
        try:
            found = release_download.paths([TABLE_FILES[key] for key in wanted])
            where.update({key: found[TABLE_FILES[key]] for key in wanted})
        except (OSError, ValueError) as error:  # ReleaseFileUnavailable (offline, HTTP), ChecksumMismatch
            problems.append(str(error))
            log.warning("release tables unavailable: %s", error)
            own = config.data_dir / TABLE_FILES["metadata"] if config.data_dir is not None else None
            if where["metadata"] is None and own is not None and own.is_file():
                where["metadata"] = own  # a data_dir's own metadata still drives the SEG explorer
    return where


def _release_paper(tables: Tables) -> None:
    """The paper's Table 2 where the library finds it (``reproduce.find_release_table2``: a local release copy, else
    the cache or one download); its absence is no problem (it only adds names, families and published values)."""
    try:
        tables.paths["paper"], tables.paper = find_release_table2(progress=False)
    except (OSError, ValueError) as error:
        log.info("no paper table (names and families come from the released scores): %s", error)


def load_tables(config: AppConfig) -> Tables:
    """Read metadata, released scores and (when available) the paper table; never raises."""
    tables = Tables()
    for key, path in _table_paths(config, tables.problems).items():
        if path is None:
            if key == "paper":
                _release_paper(tables)
            continue
        try:
            setattr(tables, key, _READERS[key](path))
            tables.paths[key] = path
        except (OSError, ValueError, pd.errors.ParserError) as error:
            if key != "paper":  # the paper table only adds names/families; its absence is not a problem
                tables.problems.append(f"{TABLE_FILES[key]}: {error}")
            log.warning("could not load %s: %s", key, error)
    return tables


def _hub_image(file_name: str) -> Path:
    """One image of the release's Hub dataset at its pinned revision (cached by huggingface_hub)."""
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(
            release.HUB_REPO, file_name, repo_type="dataset", revision=release.HUB_REVISION,
            endpoint=os.environ.get("HF_ENDPOINT") or None,  # read per call: set after import (mirror, test server)
        ))
    except Exception as error:  # network, offline, missing file: all mean "not available here"
        raise FileNotFoundError(f"could not fetch {file_name} from Hub dataset {release.HUB_REPO} at "
                                f"{release.HUB_REVISION[:12]} ({type(error).__name__})") from None


def placeholder_image(text: str, size: int = 160) -> Image.Image:
    """A grey tile with a short label, shown where an image file is not available."""
    image = Image.new("RGB", (size, size), (226, 228, 233))
    draw = ImageDraw.Draw(image)
    draw.rectangle([4, 4, size - 5, size - 5], outline=(160, 164, 172), width=2)
    lines = ["no image", *text.split("\n")]
    for k, line in enumerate(lines):
        draw.text((12, 12 + 16 * k), line[:22], fill=(70, 74, 82))
    return image


class ImageSource:
    """Images by release ``file_name`` (``images/000-00.jpg``): from ``data_dir``, else the release's Hub dataset
    (``release.HUB_REPO`` at ``release.HUB_REVISION``), else None.

    The Hub is used only when the metadata is the release's too (:attr:`AppConfig.hub_images`), and is given up after
    the first failed download, so an unreachable Hub costs one timeout, not one per image.
    """

    def __init__(self, config: AppConfig):
        self.data_dir = config.data_dir
        self.use_hub = config.hub_images
        self.hub_error: str | None = None  # why the Hub was given up (offline, unreachable...)
        self.missing: set[str] = set()  # file names asked for and not found in data_dir
        self._get = lru_cache(maxsize=512)(self._load)

    @property
    def available(self) -> bool:
        return self.data_dir is not None or self.use_hub

    def get(self, file_name: str) -> Image.Image | None:
        return self._get(str(file_name))

    def describe(self) -> str:
        """Where images come from now, for the "Data sources" panel (the Hub only while it has not failed)."""
        if self.data_dir is not None:
            return str(self.data_dir)
        hub = f"Hub dataset {release.HUB_REPO} at {release.HUB_REVISION[:12]}"
        if self.use_hub:
            return hub
        if self.hub_error:
            return f"placeholders: the {hub} could not be reached ({self.hub_error})"
        return "placeholders (no --data-dir; the metadata is not the release's, so the Hub dataset does not apply)"

    def note(self) -> str | None:
        """Why grey placeholders are shown and what to do, or None when every image asked for so far was found."""
        fix = ("start the demo with `ts2 demo --data-dir DIR`, where DIR holds the release's `images/` folder "
               "(`DIR/images/000-00.jpg`...)")
        if self.data_dir is not None:
            if not self.missing:
                return None
            return (f"*{len(self.missing)} image file(s) are not in `{self.data_dir}` (e.g. `{min(self.missing)}`): "
                    "grey placeholders are shown for them. Put the release's `images/` folder in that directory.*")
        if self.use_hub:
            return None
        if self.hub_error:
            return (f"*Images are not shown (grey placeholders): they come from the Hub dataset {release.HUB_REPO}, "
                    f"which could not be reached ({self.hub_error}). Connect to the network and reload, or {fix}.*")
        return f"*Images are not configured (grey placeholders are shown): {fix}.*"

    def _load(self, file_name: str) -> Image.Image | None:
        path = None
        if self.data_dir is not None:
            try:  # a name outside the data dir (absolute, ../, a symlink out) is never opened
                candidate = Path(resolve_inside(self.data_dir, file_name))
            except ValueError:
                candidate = None
            if candidate is not None and candidate.is_file():
                path = candidate
            else:
                self.missing.add(file_name)
        elif self.use_hub and ".." not in PurePosixPath(file_name).parts:
            try:
                path = _hub_image(file_name)
            except FileNotFoundError as error:
                offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
                # offline, the start-up line said so already; the page says it too (note())
                log.log(logging.INFO if offline else logging.WARNING, "images from the Hub disabled: %s", error)
                self.use_hub = False
                self.hub_error = str(error).rpartition("(")[2].rstrip(")") or "download failed"
                path = None
        if path is None:
            return None
        try:
            return open_rgb(path)
        except (OSError, ValueError):  # unreadable, or a high-bit image of unknown range
            return None
