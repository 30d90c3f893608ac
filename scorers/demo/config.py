"""Where the demo's tables, images and models come from: explicit paths, a data_dir, the shared release or the Hub.

Resolved once into an :class:`AppConfig`, so the rest of the app never guesses paths. The same app runs locally
(``ts2 demo --data-dir DIR``) and on a Hugging Face Space (settings from environment variables, tables from the Hub).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

__all__ = ["AppConfig", "HUB_DATASET_PLACEHOLDER", "TABLE_FILES", "find_shared_ts2"]

#: Hub dataset holding the release tables + images in the data_dir layout. PLACEHOLDER: set ``TS2_HUB_DATASET`` (a
#: Space variable) to the real dataset id once it is published.
HUB_DATASET_PLACEHOLDER = "ts2-evaluate/T2IScoreScore"

#: file names of the release tables inside a data_dir / the shared release / the Hub dataset
TABLE_FILES = {"metadata": "metadata.csv", "scores": "released_scores.csv", "paper": "paper_table2.csv"}

#: default CLIP checkpoint for "Score your image" (a Hub id or a local directory)
DEFAULT_CLIP = "openai/clip-vit-base-patch16"  # the official TS2 CLIPScore checkpoint


def find_shared_ts2() -> Path | None:
    """``../shared/ts2`` next to the source checkout (this file lives in ``<repo>/scorers/demo/``) or the cwd."""
    here = Path(__file__).resolve()
    candidates = [here.parents[2].parent / "shared" / "ts2", Path.cwd().parent / "shared" / "ts2"]
    for candidate in candidates:
        if (candidate / TABLE_FILES["metadata"]).is_file() and (candidate / TABLE_FILES["scores"]).is_file():
            return candidate
    return None


@dataclass(frozen=True)
class AppConfig:
    """Resolved settings of one demo instance.

    ``metadata``/``scores_csv``/``paper_table``: local table files (None: fetch from ``hub_dataset``, or unavailable).
    ``data_dir``: where images live (``data_dir / file_name``); without it images come from ``hub_dataset`` or are
    drawn as placeholders. ``clip_model``: CLIP checkpoint for CLIPScore (Hub id or local dir, loaded on first use).
    ``vlm``: VQA model for TIFA/DSG (None: those scorers are offered as unavailable). ``qg_model``: text LM that
    writes TIFA questions for prompts without a question table (None: TIFA/DSG only for TS2 prompts, from the
    data_dir's question tables). ``seg_subset``: SEG ids of the
    leaderboard (the paper averaged 0-163). ``max_upload_mb``: uploads above this are refused.
    """

    metadata: Path | None = None
    scores_csv: Path | None = None
    paper_table: Path | None = None
    data_dir: Path | None = None
    hub_dataset: str | None = None
    clip_model: str = DEFAULT_CLIP
    vlm: str | None = None
    qg_model: str | None = None
    seg_subset: tuple[int, int] = (0, 164)
    max_upload_mb: float = 10.0

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def seg_range(self) -> range:
        return range(*self.seg_subset)

    def describe(self) -> str:
        """One Markdown line per source, shown in the app so users see which data they are looking at."""
        hub = self.hub_dataset or "not configured"
        return "\n".join(
            [
                f"- metadata: `{self.metadata or f'Hub {hub}'}`",
                f"- released scores: `{self.scores_csv or f'Hub {hub}'}`",
                f"- paper table: `{self.paper_table or 'not available'}`",
                f"- images: `{self.data_dir or (f'Hub {hub}' if self.hub_dataset else 'placeholders')}`",
                f"- CLIP model: `{self.clip_model}`; VLM: `{self.vlm or 'not configured'}`; "
                f"question generator: `{self.qg_model or 'not configured'}`",
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
        hub_dataset: str | None = None,
        use_shared: bool = True,
        **settings,
    ) -> "AppConfig":
        """Fill unset table paths: explicit path > ``data_dir`` > the shared release (``../shared/ts2``) > Hub.

        The metadata and scores tables are taken as a pair from the first place that has the scores table, so a small
        data_dir (images of a few SEGs) does not get paired with the full release's 2,840 score rows by accident.
        Explicit paths that do not exist raise ``FileNotFoundError``.
        """
        data_dir = Path(data_dir) if data_dir else None
        if data_dir is not None and not data_dir.is_dir():
            raise FileNotFoundError(f"data dir {data_dir} does not exist")
        explicit = {"metadata": metadata, "scores": scores_csv, "paper": paper_table}
        for key, value in explicit.items():
            if value is not None and not Path(value).is_file():
                raise FileNotFoundError(f"{TABLE_FILES[key]} path {value} does not exist")
        places = [p for p in (data_dir, find_shared_ts2() if use_shared else None) if p is not None]
        home = next((p for p in places if (p / TABLE_FILES["scores"]).is_file()), None)
        found = {}
        for key in TABLE_FILES:
            if explicit[key] is not None:
                found[key] = Path(explicit[key])
                continue
            source = [home] if key != "paper" else [home] + places
            found[key] = next((p / TABLE_FILES[key] for p in source if p and (p / TABLE_FILES[key]).is_file()), None)
        if found["metadata"] is None and data_dir is not None and (data_dir / TABLE_FILES["metadata"]).is_file():
            found["metadata"] = data_dir / TABLE_FILES["metadata"]
        return cls(
            metadata=found["metadata"],
            scores_csv=found["scores"],
            paper_table=found["paper"],
            data_dir=data_dir,
            hub_dataset=hub_dataset,
            **settings,
        )

    @classmethod
    def from_env(cls, environ: dict | None = None) -> "AppConfig":
        """Settings of a Space (or any deployment) from ``TS2_*`` environment variables; Hub dataset by default."""
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
        return cls.resolve(
            data_dir=env.get("TS2_DATA_DIR") or None,
            scores_csv=env.get("TS2_SCORES_CSV") or None,
            metadata=env.get("TS2_METADATA") or None,
            paper_table=env.get("TS2_PAPER_TABLE") or None,
            hub_dataset=env.get("TS2_HUB_DATASET") or HUB_DATASET_PLACEHOLDER,
            **settings,
        )

    def with_(self, **changes) -> "AppConfig":
        return replace(self, **changes)
