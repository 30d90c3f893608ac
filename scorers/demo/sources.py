"""Reading the demo's inputs: release tables (local file or Hub dataset) and images (data_dir, Hub, or a placeholder).

Table parsing and validation are the library's (``scorers.tables``); this module only decides where a file comes from
and turns failures into messages the UI can show.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pandas as pd
from PIL import Image, ImageDraw

from scorers.tables import read_metadata, read_paper_table, read_score_table

from .config import TABLE_FILES, AppConfig

__all__ = ["Tables", "ImageSource", "load_tables", "placeholder_image"]

log = logging.getLogger(__name__)


@dataclass
class Tables:
    """The release tables the app shows; ``problems`` lists what could not be loaded (shown in the UI, not raised)."""

    metadata: pd.DataFrame | None = None
    scores: pd.DataFrame | None = None
    paper: pd.DataFrame | None = None
    problems: list[str] = field(default_factory=list)


def _hub_file(config: AppConfig, filename: str) -> Path:
    """Download one file of the Hub dataset (cached by huggingface_hub); raises with a readable message."""
    if not config.hub_dataset:
        raise FileNotFoundError("no local file and no Hub dataset configured (use --data-dir, --metadata, "
                                "--scores-csv or --hub-dataset)")
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(config.hub_dataset, filename, repo_type="dataset"))
    except Exception as error:  # network, auth, missing file: all mean "not available here"
        raise FileNotFoundError(f"could not fetch {filename} from Hub dataset {config.hub_dataset!r} "
                                f"({type(error).__name__})") from None


def _table_path(config: AppConfig, key: str, local: Path | None) -> Path:
    return local if local is not None else _hub_file(config, TABLE_FILES[key])


def load_tables(config: AppConfig) -> Tables:
    """Read metadata, released scores and (optionally) the paper table; never raises."""
    tables = Tables()
    readers = {
        "metadata": (config.metadata, read_metadata),
        "scores": (config.scores_csv, read_score_table),
        "paper": (config.paper_table, read_paper_table),
    }
    for key, (local, reader) in readers.items():
        if key == "paper" and local is None and not config.hub_dataset:
            continue  # the paper table only adds names/families; its absence is not a problem
        try:
            setattr(tables, key, reader(_table_path(config, key, local)))
        except (OSError, ValueError, pd.errors.ParserError) as error:
            if key != "paper":
                tables.problems.append(f"{TABLE_FILES[key]}: {error}")
            log.warning("could not load %s: %s", key, error)
    return tables


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
    """Images by release ``file_name`` (``images/000-00.jpg``): from ``data_dir``, else the Hub dataset, else None.

    The Hub is used only when the metadata came from it too (a Space), and is given up after the first failed
    download, so an unreachable Hub costs one timeout, not one per image.
    """

    def __init__(self, config: AppConfig):
        self.data_dir = config.data_dir
        self.config = config
        self.use_hub = config.data_dir is None and bool(config.hub_dataset) and config.metadata is None
        self._get = lru_cache(maxsize=512)(self._load)

    @property
    def available(self) -> bool:
        return self.data_dir is not None or self.use_hub

    def get(self, file_name: str) -> Image.Image | None:
        return self._get(str(file_name))

    def _load(self, file_name: str) -> Image.Image | None:
        path = None
        if self.data_dir is not None:
            candidate = (self.data_dir / file_name).resolve()
            if self.data_dir.resolve() in candidate.parents and candidate.is_file():
                path = candidate
        elif self.use_hub:
            try:
                path = _hub_file(self.config, file_name)
            except FileNotFoundError as error:
                log.warning("images from the Hub disabled: %s", error)
                self.use_hub = False
                path = None
        if path is None:
            return None
        try:
            with Image.open(path) as image:
                return image.convert("RGB")
        except OSError:
            return None
