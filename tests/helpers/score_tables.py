"""Score tables made from the release's: many columns (the report's and the benchmark's wide-table runs), columns
copied under a header of the test's choosing, and a card run on a hand-made preference set."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers.cli import run_cli

#: scores of a hand-made preference set's six images (``card_with_pairs``' scores_text)
SCORES = "image,mine\nu1,0.9\nu2,0.1\nu3,0.4\nu4,0.6\nu5,0.5\nu6,0.5\n"


def wide_table(shared_ts2, n_columns: int, seed: int = 0) -> pd.DataFrame:
    """``n_columns`` score columns: the release's numeric columns in turn, each plus independent noise."""
    released = pd.read_csv(shared_ts2 / "released_scores.csv")
    base = [c for c in released.columns if c not in ("id", "image_id", "llmscore_over")]
    rng = np.random.default_rng(seed)
    columns = {}
    for k in range(n_columns):
        values = released[base[k % len(base)]].to_numpy(dtype=float)
        columns[f"m{k:03d}"] = values + rng.normal(0, 0.05 * np.nanstd(values), size=values.size)
    return pd.DataFrame(columns)


def release_columns(shared: Path, header: list[str], columns: list[str], target: Path) -> Path:
    """A score table of the release's rows (``id, image_id`` and ``columns`` copied verbatim) under ``header``."""
    raw = pd.read_csv(shared / "released_scores.csv", dtype=str, keep_default_na=False)
    body = raw[["id", "image_id", *columns]].to_csv(index=False, header=False)
    target.write_text(",".join(header) + "\n" + body)
    return target


def card_with_pairs(capsys, tmp_path, shared, pairs_text: str, scores_text: str, *extra):
    """``ts2 card`` on the release's CLIPScore column as ``mine`` and a preference set ``toy`` of the pairs and
    scores given (run in process: exit code, stdout, stderr)."""
    (tmp_path / "pairs.csv").write_bytes(pairs_text.encode("utf-8") if isinstance(pairs_text, str) else pairs_text)
    (tmp_path / "s.csv").write_text(scores_text)
    mine = tmp_path / "mine.csv"
    if not mine.is_file():
        release_columns(shared, ["id", "image_id", "mine"], ["clipscore"], mine)
    return run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"toy={tmp_path / 'pairs.csv'}",
                   "--preference-scores", f"toy={tmp_path / 's.csv'}", "--baseline", "none", "--data-dir", shared,
                   "--n-bootstrap", 0, "--out", tmp_path / "o", *extra)
