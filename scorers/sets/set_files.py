"""Shared parts of the set loaders: the two row schemas, schema checks with one-line errors, pinned Hub downloads,
provenance."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from scorers.tables.release import sha256_file

RATING_COLUMNS = ("item", "system", "image", "prompt", "human")
PAIR_COLUMNS = ("item", "prompt", "image_a", "image_b", "preference")
PREFERENCES = ("a", "b", "tie")


class SetFormatError(ValueError):
    """A file does not have the layout of the set it was read as (one line: file, row or field, what was expected)."""


class SetImagesUnavailable(FileNotFoundError):
    """A set's images cannot be had here (not embedded, no ``images_dir``, files absent); one line: what and how."""


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub dataset at a pinned commit. ``sha256``: its digest where it could be read (then any other
    content is refused), else None: the digest of the file used is computed and reported in the provenance, not
    checked. ``revision`` is a full commit hash read from the Hub (never a branch)."""

    repo_id: str
    revision: str
    filename: str
    licence: str
    sha256: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        import re

        if not re.fullmatch(r"[0-9a-f]{40}", self.revision):
            raise ValueError(f"{self.repo_id}/{self.filename}: revision must be a full commit hash, got {self.revision!r}")
        if self.sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", self.sha256):
            raise ValueError(f"{self.repo_id}/{self.filename}: sha256 must be 64 lowercase hex digits")

    @property
    def url(self) -> str:
        return f"https://huggingface.co/datasets/{self.repo_id}/resolve/{self.revision}/{self.filename}"


def fetch_hub(file: HubFile, *, offline: bool | None = None, cache_dir: str | os.PathLike | None = None) -> Path:
    """The local path of ``file`` at its pinned revision, through :mod:`scorers.tables.release` (the project's one download
    path): with a sha256, a :class:`~scorers.tables.release.PinnedFile` for ``release_download.fetch`` (a mismatching download is
    refused and deleted); without one, ``release_download.fetch_hub_unpinned``. ``offline`` = cache only, default
    ``HF_HUB_OFFLINE``."""
    from scorers.tables.release import PinnedFile
    from scorers.tables.release_download import fetch, fetch_hub_unpinned

    if file.sha256 is None:
        return fetch_hub_unpinned(file.repo_id, file.filename, file.revision, cache_dir=cache_dir, offline=offline)
    pinned = PinnedFile(file.url, file.sha256, f"{file.repo_id}/{file.filename}", file.revision)
    return fetch(pinned, cache_dir=cache_dir, offline=offline, progress=False)


def provenance(source: str, revision: str | None, path: Path, licence: str, *, pinned_sha256: str | None,
               note: str = "", local: bool = False) -> dict:
    """``{source, revision, sha256, sha256_pinned, licence, file, note}``: ``sha256`` is the digest of the file read;
    ``sha256_pinned`` says whether a download was checked against a pinned digest. A local copy (``local=True``) is
    not refused, but where the set has a pin ``matches_pinned`` says whether the copy is the pinned file."""
    digest = sha256_file(path)
    out = {"source": source, "revision": revision, "sha256": digest,
           "sha256_pinned": pinned_sha256 is not None and not local, "licence": licence, "file": str(path),
           "note": note}
    if local and pinned_sha256 is not None:
        out["matches_pinned"] = digest == pinned_sha256
    return out


def check_columns(names, needed, where: str, what: str) -> None:
    missing = [c for c in needed if c not in names]
    if missing:
        raise SetFormatError(f"{where}: not {what}: missing field(s) {missing} (has {sorted(map(str, names))})")


#: preferences written as numbers, as :func:`scorers.stats.preference_accuracy.human_preferences` takes them
#: (1 = image A preferred, -1 = B, 0 = a tie)
NUMERIC_PREFERENCES = {1.0: "a", -1.0: "b", 0.0: "tie"}


def preference_labels(cells):
    """A pair table's ``preference`` cells as ``a`` / ``b`` / ``tie``: text lower-cased and stripped, and the numbers
    ``1`` / ``-1`` / ``0`` (also ``1.0``...) read as the library reads them (1 = A preferred). Other cells are kept
    as text, for :func:`check_pairs` to refuse."""
    import pandas as pd

    text = pd.Series(cells).astype(str).str.strip().str.lower()
    numbers = pd.to_numeric(text, errors="coerce")
    mapped = numbers.map(NUMERIC_PREFERENCES)
    return text.where(mapped.isna(), mapped).to_numpy(dtype=object)


def check_pairs(frame, where: str):
    """Refuse a pair table that breaks the schema (one line naming the row): a preference other than a/b/tie, or a
    pair of an image with itself (``image_a == image_b``)."""
    check_columns(frame.columns, PAIR_COLUMNS, where, "a pair table")
    bad = ~frame["preference"].isin(PREFERENCES)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise SetFormatError(f"{where}: row {row}: preference {frame['preference'].iloc[row]!r} is not a/b/tie "
                             "(or 1/-1/0)")
    same = (frame["image_a"].astype(str) == frame["image_b"].astype(str)).to_numpy()
    if same.any():
        rows = same.nonzero()[0]
        more = f" ({len(rows)} such rows)" if len(rows) > 1 else ""
        raise SetFormatError(f"{where}: row {int(rows[0])}: image_a and image_b are the same image "
                             f"{frame['image_a'].iloc[int(rows[0])]!r}{more}; a pair compares two images")
    return frame


def pair_repeats(frame) -> dict:
    """Pairs listed more than once (the same two images of one item, in either order): ``{"duplicated": rows that
    repeat an earlier pair with the same preference, "contradictory": pairs listed with opposite preferences (e.g.
    (A, B, a) and (B, A, a)), "first_duplicated" / "first_contradictory": (row, row) of the first such}``. Every row
    is counted by the accuracy as it is; these counts are reported, not dropped."""
    import numpy as np
    import pandas as pd

    a, b = frame["image_a"].astype(str).to_numpy(), frame["image_b"].astype(str).to_numpy()
    flip = a > b
    sign = pd.Series(frame["preference"]).map({"a": 1, "b": -1, "tie": 0}).to_numpy()
    oriented = pd.DataFrame({"item": frame["item"].astype(str).to_numpy(), "lo": np.where(flip, b, a),
                             "hi": np.where(flip, a, b), "pref": np.where(flip, -sign, sign),
                             "row": np.arange(len(frame))})
    keys = ["item", "lo", "hi"]
    repeated = oriented[oriented.duplicated(keys, keep=False)]
    out = {"duplicated": 0, "contradictory": 0, "first_duplicated": None, "first_contradictory": None}
    if repeated.empty:
        return out
    same = repeated.duplicated(keys + ["pref"])  # a row agreeing with an earlier row of its pair
    out["duplicated"] = int(same.sum())
    if out["duplicated"]:
        row = repeated[same].iloc[0]
        first = repeated[(repeated[keys] == row[keys]).all(axis=1) & (repeated["pref"] == row["pref"])]["row"]
        out["first_duplicated"] = (int(first.iloc[0]), int(row["row"]))
    kinds = repeated.groupby(keys, sort=False)["pref"].nunique()
    out["contradictory"] = int((kinds > 1).sum())
    if out["contradictory"]:
        key = kinds[kinds > 1].index[0]
        rows = repeated[(repeated["item"] == key[0]) & (repeated["lo"] == key[1]) & (repeated["hi"] == key[2])]
        prefs = rows["pref"].to_numpy()
        other = rows[rows["pref"] != prefs[0]]["row"]
        out["first_contradictory"] = (int(rows["row"].iloc[0]), int(other.iloc[0]))
    return out


def check_ratings(frame, where: str):
    import numpy as np

    check_columns(frame.columns, RATING_COLUMNS, where, "a rating table")
    human = frame["human"].to_numpy(dtype=np.float64)
    if np.isinf(human).any():
        raise SetFormatError(f"{where}: row {int(np.isinf(human).nonzero()[0][0])}: human rating is infinite")
    return frame


def read_json_entries(path: str | Path, expected: str) -> list[dict]:
    """A JSON list of objects (EvalMuse's ``train_list.json``, HPDv2's ``test.json``) through
    :func:`scorers.tables.pandas_tables.read_json_list`, a malformed file raised as :class:`SetFormatError`."""
    from scorers.tables.pandas_tables import read_json_list

    return read_json_list(path, expected, error=SetFormatError)
