"""``ts2 report clip.csv --metadata metadata.csv --out report/``: by default the user's metric among the
19 published metrics of the release, with the published FLOPs; ``--no-published`` gives the user's metrics alone; a
release that cannot be had gives the user's metrics alone and one note line saying how to get it.

Expected values come from outside the code under test: the release's own files (its ``released_scores.csv`` header,
``paper_table2.csv``'s names and FLOPs), the plain scipy reference loop (``tests/helpers/reference_meta.py``) and hand counts.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from tests.helpers.reference_meta import reference_meta, reference_summary, released_reference
from tests.helpers.report_figures import skip_report_figures


@pytest.fixture(autouse=True, scope="module")
def extra_installed():
    """The [report] extra is a test dependency, never skipped (imported when the first test runs)."""
    import matplotlib  # noqa: F401


def _published_columns(shared_ts2) -> list[str]:
    """The release's score columns, from its file's header (not from the code under test)."""
    header = pd.read_csv(shared_ts2 / "released_scores.csv", nrows=0).columns
    return [c for c in header if c not in ("id", "image_id")]


@pytest.fixture(scope="module")
def clip_csv(shared_ts2, tmp_path_factory):
    """A user's scores as `ts2 score` writes them (seg_id, file_name, node, one score column), rows shuffled: the
    release's full-precision CLIPScore (in metadata row order), under the user's own column name."""
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    full = pd.read_csv(shared_ts2 / "clipscore_fullprecision.csv")
    assert (full["id"].to_numpy() == metadata["id"].to_numpy()).all()
    mine = pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "node": metadata["rank"],
                         "my_clip": full["score"] / 100.0})
    path = tmp_path_factory.mktemp("mine") / "clip.csv"
    mine.sample(frac=1.0, random_state=3).to_csv(path, index=False)
    return path


@pytest.fixture
def only_the_cost_figure(monkeypatch):
    """The report's other figures not drawn: these tests read the tables and the cost figure only."""
    skip_report_figures(monkeypatch, keep=("rank_vs_cost",))


def _report(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def published_report(clip_csv, shared_ts2, tmp_path_factory):
    """The README's step 3 as printed (one score file, --metadata, --out), the release from --data-dir; SEGs 0-40
    and no bootstrap to keep it quick."""
    out = tmp_path_factory.mktemp("report")
    code, printed, err = _report([str(clip_csv), "--metadata", str(shared_ts2 / "metadata.csv"), "--data-dir",
                                  str(shared_ts2), "--n-bootstrap", "0", "--segs", "0-40", "--out", str(out)])
    assert code == 0, err
    return out, printed


def test_default_report_has_yours_among_the_19_published(published_report, shared_ts2):
    out, printed = published_report
    published = _published_columns(shared_ts2)
    assert len(published) == 19
    board = pd.read_csv(out / "leaderboard.csv")
    assert len(board) == 20  # 19 published + 1 of yours, counted by hand
    assert sorted(board["column"]) == sorted(published + ["my_clip"])
    assert board["column"].iloc[-1] == "my_clip"  # Table 2's rows in its order, yours after them
    paper = pd.read_csv(shared_ts2 / "paper_table2.csv")
    names = dict(zip(paper["column"], paper["name"]))
    assert dict(zip(board["column"], board["name"])) == {**names, "my_clip": "my_clip"}
    body = [line for line in (out / "leaderboard.md").read_text().splitlines() if line.startswith("| ")][1:]
    assert len(body) == 20
    assert printed.startswith("20 metric(s) (19 published + yours), SEGs 0-40 -> ")
    assert (out / "correlation_heatmap.png").is_file()
    assert "correlation_heatmap.png needs at least two" not in printed


@pytest.mark.parametrize("column, higher_is_better", [("clipscore", True), ("llmscore_over", False)])
def test_published_rows_equal_the_reference_loop(published_report, shared_ts2, column, higher_is_better):
    """The published rows are the release's numbers: the plain scipy loop on released_scores.csv (stray quotes of
    llmscore_over stripped, lower is better) over SEGs 0-40. abs 1e-4: the CSV keeps 4 decimals of a percent."""
    out, _ = published_report
    board = pd.read_csv(out / "leaderboard.csv").set_index("column")
    ref = released_reference(str(shared_ts2), column, higher_is_better=higher_is_better, max_seg=40)
    for meta_metric in ("rank", "sep", "delta"):
        for part, want in ref[meta_metric]["summary"].items():
            assert board.loc[column, f"{meta_metric}_{part}"] == pytest.approx(100 * want, abs=1e-4, nan_ok=True)  # SEGs 0-40: synth only
    assert bool(board.loc[column, "higher_is_better"]) is higher_is_better
    assert np.isfinite(board.loc[column, ["rank_avg", "sep_avg", "delta_avg"]].to_numpy(float)).all()


def test_your_row_equals_the_reference_loop(published_report, shared_ts2):
    """Your shuffled keyed rows land on their images: the reference loop on the full-precision CLIPScore file in
    metadata order, SEGs 0-40."""
    out, _ = published_report
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    values = pd.read_csv(shared_ts2 / "clipscore_fullprecision.csv")["score"].to_numpy(float) / 100.0
    keep = metadata["id"].to_numpy() <= 40
    ref = reference_meta(values[keep], metadata["id"].to_numpy()[keep], metadata["rank"].astype(str).to_numpy()[keep])
    board = pd.read_csv(out / "leaderboard.csv").set_index("column")
    for meta_metric in ("rank", "sep", "delta"):
        for part, want in reference_summary(ref[meta_metric]).items():
            assert board.loc["my_clip", f"{meta_metric}_{part}"] == pytest.approx(100 * want, abs=1e-4, nan_ok=True)  # SEGs 0-40: synth only


def test_rank_vs_flops_has_the_published_costs(clip_csv, shared_ts2, tmp_path, monkeypatch, only_the_cost_figure):
    """The cost figure names the 19 published metrics (FLOPs from paper_table2.csv); yours without a cost is listed
    under the plot, and with --flops it is drawn and marked "yours"."""
    from scorers.report import figures

    drawn = []
    original = figures.rank_vs_cost  # noqa: the figure itself is drawn as usual

    def keep(board, flops, path, **kw):
        drawn.append((board.copy(), dict(flops)))
        return original(board, flops, path, **kw)

    monkeypatch.setattr("scorers.report.rank_vs_cost", keep)  # what write_report calls
    drawn_figures = []
    save = figures._save

    def keep_figure(fig, path, formats=("png",)):
        drawn_figures.append((Path(path).stem, fig))
        return save(fig, path, formats)

    monkeypatch.setattr(figures, "_save", keep_figure)
    paper = pd.read_csv(shared_ts2 / "paper_table2.csv").drop_duplicates("column")
    units = {"M": 1e6, "T": 1e12, "P": 1e15}
    expected = {c: float(v[:-1]) * units[v[-1]] for c, v in zip(paper["column"], paper["flop_per_image"])}
    base = [str(clip_csv), "--metadata", str(shared_ts2 / "metadata.csv"), "--data-dir", str(shared_ts2),
            "--n-bootstrap", "0", "--segs", "0-10"]
    code, printed, err = _report(base + ["--out", str(tmp_path / "a")])
    assert code == 0, err
    board, flops = drawn[-1]
    assert {c: flops[c] for c in expected} == pytest.approx(expected, rel=1e-9)
    assert "my_clip" not in flops
    cost_figure = [fig for stem, fig in drawn_figures if stem == "rank_vs_flops"][-1]
    footer = [t.get_text() for t in cost_figure.texts]  # figure-level texts: the line under the plot
    assert footer == ["not shown (no FLOPs cost): my_clip (yours)"]
    assert "rank_vs_flops.png leaves out 1 metric(s) without a FLOPs cost: my_clip" in printed
    code, printed, err = _report(base + ["--flops", "my_clip=604M", "--out", str(tmp_path / "b")])
    assert code == 0, err
    assert drawn[-1][1]["my_clip"] == 604e6 and "leaves out" not in printed


def test_no_published_is_yours_alone(clip_csv, shared_ts2, tmp_path):
    out = tmp_path / "r"
    code, printed, err = _report([str(clip_csv), "--metadata", str(shared_ts2 / "metadata.csv"), "--data-dir",
                                  str(shared_ts2), "--n-bootstrap", "0", "--segs", "0-20", "--no-published", "--out",
                                  str(out)])
    assert code == 0, err
    assert pd.read_csv(out / "leaderboard.csv")["column"].tolist() == ["my_clip"]
    assert printed.startswith("1 metric(s), SEGs 0-20 -> ")
    assert "published" not in printed.replace(str(out), "")
    assert not (out / "correlation_heatmap.png").exists()


def test_release_unavailable_falls_back_with_one_note(clip_csv, shared_ts2, tmp_path, monkeypatch):
    """Offline, nothing cached, no TS2_DATA: the report is yours alone, exit 0, and one note line says how to get
    the release (not an error, no traceback)."""
    from huggingface_hub import constants

    from tests.helpers.environment import use_hf_home

    monkeypatch.delenv("TS2_DATA", raising=False)
    use_hf_home(monkeypatch, tmp_path / "empty-hf-home")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    out = tmp_path / "r"
    code, printed, err = _report([str(clip_csv), "--metadata", str(shared_ts2 / "metadata.csv"),
                                  "--n-bootstrap", "0", "--segs", "0-20", "--out", str(out)])
    assert code == 0, err
    assert pd.read_csv(out / "leaderboard.csv")["column"].tolist() == ["my_clip"]
    notes = [line for line in printed.splitlines() if "published metrics are not added" in line]
    assert len(notes) == 1
    assert notes[0].startswith("note: ") and "TS2_DATA" in notes[0] and "ts2 release fetch" in notes[0]
    assert "--no-published" in notes[0]
    assert "Traceback" not in err and "error" not in err.lower()


def test_other_metadata_is_not_compared_with_the_release(clip_csv, shared_ts2, tmp_path):
    """A metadata file of other images (here: the release's first 40 SEGs only) cannot hold the published scores:
    yours alone, with one note naming both metadata files by their sha256 (hashlib's)."""
    import hashlib

    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    subset = metadata[metadata["id"] <= 40]
    subset.to_csv(tmp_path / "metadata.csv", index=False)
    mine = pd.read_csv(clip_csv)
    mine[mine["seg_id"] <= 40].to_csv(tmp_path / "clip.csv", index=False)
    code, printed, err = _report([str(tmp_path / "clip.csv"), "--metadata", str(tmp_path / "metadata.csv"),
                                  "--data-dir", str(shared_ts2), "--n-bootstrap", "0", "--segs", "0-20", "--out",
                                  str(tmp_path / "r")])
    assert code == 0, err
    assert pd.read_csv(tmp_path / "r" / "leaderboard.csv")["column"].tolist() == ["my_clip"]
    notes = [line for line in printed.splitlines() if "published rows left out" in line]
    release, yours = (hashlib.sha256(p.read_bytes()).hexdigest()[:12] for p in (shared_ts2 / "metadata.csv",
                                                                                tmp_path / "metadata.csv"))
    assert notes == [f"note: published rows left out: they were computed on the TS2 release metadata (sha256 "
                     f"{release}…), your scores on {tmp_path / 'metadata.csv'} (sha256 {yours}…); pass the release's "
                     "metadata.csv to compare (--no-published: without this note)"]


def test_the_release_passed_by_hand_is_not_added_twice(shared_ts2, tmp_path, only_the_cost_figure):
    code, printed, err = _report([str(shared_ts2 / "released_scores.csv"), "--metadata",
                                  str(shared_ts2 / "metadata.csv"), "--data-dir", str(shared_ts2), "--clean-quotes",
                                  "--segs", "0-20", "--n-bootstrap", "0", "--out", str(tmp_path / "r")])
    assert code == 0, err
    assert len(pd.read_csv(tmp_path / "r" / "leaderboard.csv")) == 19
    assert "published" not in printed.replace(str(tmp_path), "")


def test_file_list_is_one_aligned_column(shared_ts2, tmp_path):
    """Every printed file row (the PDF/SVG rows included: "correlation_heatmap (svg)" is 25 characters) starts its
    path in the same column, two spaces after the longest name."""
    out = tmp_path / "r"
    code, printed, err = _report([str(shared_ts2 / "released_scores.csv"), "--metadata",
                                  str(shared_ts2 / "metadata.csv"), "--column", "clipscore", "--column", "alignscore",
                                  "--no-published", "--n-bootstrap", "0", "--segs", "0-10", "--format", "png,pdf,svg",
                                  "--out", str(out)])
    assert code == 0, err
    rows = [line for line in printed.splitlines() if line.startswith("  ") and str(out) in line]
    assert len(rows) == 3 + 4 * 3 + 1  # 3 tables, 4 figures x 3 formats, result.json
    assert any(row.startswith("  correlation_heatmap (svg)  ") for row in rows)
    starts = {row.index(str(out)) for row in rows}
    assert starts == {2 + len("correlation_heatmap (svg)") + 2}, "\n".join(rows)
