"""``ts2 report``: leaderboard numbers equal ``ts2 reproduce``'s, the four PNGs are real figures, user tables work."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scorers.cli import main
from scorers.stats.meta import ts2_meta
from scorers.stats.graph import parse_seg_range
from scorers.tables.pandas_tables import column_scores, read_metadata, read_score_table
from tests.helpers.reference_meta import released_reference

FIGURES = ("rank_vs_flops.png", "seg_histograms.png", "correlation_heatmap.png")
ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets"


@pytest.fixture(scope="module")
def released_report(shared_ts2, tmp_path_factory):
    """``ts2 report`` on the release, exactly as the README (Reports) documents it for docs/assets/."""
    out = tmp_path_factory.mktemp("report")
    code = main(["report", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
                 "--paper", str(shared_ts2 / "paper_table2.csv"), "--segs", "0-163", "--clean-quotes",
                 "--out", str(out)])
    assert code == 0
    return out


def test_report_writes_tables_and_four_figures(released_report):
    for name in ("leaderboard.md", "leaderboard.tex", "leaderboard.csv") + FIGURES:
        assert (released_report / name).is_file(), name
    graphs = list(released_report.glob("error_graph_seg*.png"))
    assert [g.name for g in graphs] == ["error_graph_seg0.png"]
    board = pd.read_csv(released_report / "leaderboard.csv")
    assert len(board) == 19
    assert board["column"].iloc[0] == "clipscore"  # the paper's order
    assert dict(zip(board["column"], board["higher_is_better"]))["llmscore_ec"] == False  # noqa: E712


@pytest.mark.parametrize("column, higher_is_better", [("clipscore", True), ("llmscore_over", False)])
def test_leaderboard_numbers_equal_the_reference_loop(released_report, shared_ts2, column, higher_is_better):
    """Independent expectation: the plain scipy loop (tests/helpers/reference_meta.py) over SEGs 0-163, partition means taken
    by hand; llmscore_over is lower-is-better (from the paper table) and has stray quotes."""
    ref = released_reference(str(shared_ts2), column, higher_is_better=higher_is_better)
    board = pd.read_csv(released_report / "leaderboard.csv").set_index("column")
    assert board.loc[column, "segs"] == "0-163"
    for meta_metric in ("rank", "sep", "delta"):
        for part, want in ref[meta_metric]["summary"].items():
            # the CSV keeps the values rounded to 4 decimals of a percent
            assert board.loc[column, f"{meta_metric}_{part}"] == pytest.approx(100 * want, abs=1e-4), (meta_metric, part)
    text = (released_report / "leaderboard.md").read_text()
    assert "over SEGs 0-163." in text and "over SEGs 0-163" in (released_report / "leaderboard.tex").read_text()


def test_leaderboard_values_match_meta_directly(released_report, shared_ts2):
    """Independent path: ts2_meta on one lower-is-better column with stray quotes."""
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    scores = read_score_table(shared_ts2 / "released_scores.csv")
    values = column_scores(scores, "llmscore_over", clean_quotes=True)
    result = ts2_meta(values, metadata["seg_id"], metadata["node"], higher_is_better=False,
                      seg_subset=parse_seg_range("0-163"))
    board = pd.read_csv(released_report / "leaderboard.csv").set_index("column")
    for meta_metric in ("rank", "sep", "delta"):
        for part, value in result[meta_metric].statistic.items():
            assert board.loc["llmscore_over", f"{meta_metric}_{part}"] == pytest.approx(100 * value, abs=1e-4)
    low, high = board.loc["clipscore", "rank_avg_ci_low"], board.loc["clipscore", "rank_avg_ci_high"]
    assert low < board.loc["clipscore", "rank_avg"] < high and high - low < 15


def test_markdown_bolds_the_best_and_shows_intervals(released_report):
    board = pd.read_csv(released_report / "leaderboard.csv").set_index("column")
    text = (released_report / "leaderboard.md").read_text()
    lines = [l for l in text.splitlines() if l.startswith("| ")]
    header, body = lines[0], lines[1:]
    assert header.split("|")[3].strip() == "Rank Avg" and len(body) == 19
    best_column = board["rank_avg"].idxmax()
    best_name = board.loc[best_column, "name"]
    best_row = next(l for l in body if l.startswith(f"| {best_name} |"))
    assert f"**{board.loc[best_column, 'rank_avg']:.1f}**" in best_row.split("|")[3]
    assert text.count("**") // 2 >= 12  # at least one bold cell per value column
    clip = next(l for l in body if l.startswith("| CLIPScore |")).split("|")
    expected = board.loc["clipscore"]
    assert clip[3].strip().startswith(f"{expected['rank_avg']:.1f} <sub>[{expected['rank_avg_ci_low']:.1f}, ")
    assert clip[6].strip() == f"{expected['rank_real']:.1f}"
    assert "LLMScore EC†" in text


def test_latex_is_a_booktabs_table(released_report):
    text = (released_report / "leaderboard.tex").read_text()
    assert text.startswith(r"\begin{table}") and text.rstrip().endswith(r"\end{table}")
    assert r"\toprule" in text and r"\bottomrule" in text and r"\multicolumn{4}{c}{Rank}" in text
    body = [l for l in text.splitlines() if l.endswith(r"\\") and not l.startswith((" &", "Metric"))]
    assert len(body) == 19 and all(l.count("&") == 13 for l in body)
    assert text.count(r"\textbf{") >= 12


def _assert_real_figure(path):
    """A drawn figure, judged by its pixels rather than its file size: plausible size, not blank, has ink, and more
    than a handful of colours (axes + data, not one flat fill)."""
    with Image.open(path) as image:
        width, height = image.size
        pixels = np.asarray(image.convert("L"), dtype=float)
        colours = len(set(image.convert("RGB").getdata()))
    assert 600 <= width <= 4000 and 400 <= height <= 3000
    assert pixels.std() > 10  # not a blank canvas
    assert (pixels < 128).mean() > 0.01  # has ink
    assert colours > 50


@pytest.mark.parametrize("name", FIGURES + ("error_graph_seg0.png",))
def test_figures_are_non_trivial(released_report, name):
    _assert_real_figure(released_report / name)


def _user_tables(shared_ts2, tmp_path):
    """A user's scores, joined on keys: one perfect error-count metric and one noisy score, no paper entry."""
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    keys = metadata[["seg_id", "file_name"]].copy()
    errors = keys.assign(my_errors=metadata["error_count"]).sample(frac=1.0, random_state=1)
    noisy = keys.assign(noisy=-metadata["error_count"] + rng.normal(0, 2, len(keys)))
    errors.to_csv(tmp_path / "errors.csv", index=False)
    noisy.to_csv(tmp_path / "noisy.csv", index=False)
    return tmp_path / "errors.csv", tmp_path / "noisy.csv"


def test_user_scores_without_paper(shared_ts2, tmp_path, capsys):
    errors, noisy = _user_tables(shared_ts2, tmp_path)
    out = tmp_path / "out"
    code = main(["report", str(errors), str(noisy), "--metadata", str(shared_ts2 / "metadata.csv"),
                 "--on", "seg_id", "file_name", "--lower-is-better", "my_errors", "--n-bootstrap", "50",
                 "--flops", "noisy=1.2T", "--seg", "9", "--no-published", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "leaves out 1 metric(s) without a FLOPs cost: my_errors" in printed
    board = pd.read_csv(out / "leaderboard.csv").set_index("column")
    # error counts ordered by lower-is-better rank every walk perfectly and separate every node pair; SEG 103 has only
    # error-0 images (a constant walk scores 0, no node pair gives sep 0); the default SEGs are 0-163, hence 163/164
    assert (board["segs"] == "0-163").all()
    assert board.loc["my_errors", "rank_avg"] == pytest.approx(100.0 * 163 / 164, abs=1e-4)
    assert board.loc["my_errors", "rank_nat"] == board.loc["my_errors", "rank_real"] == 100.0
    assert board.loc["my_errors", "sep_avg"] == pytest.approx(100.0 * 163 / 164, abs=1e-4)
    assert 0 < board.loc["noisy", "rank_avg"] < 100
    assert not board.loc["my_errors", "higher_is_better"]
    assert "my\\_errors" in (out / "leaderboard.tex").read_text()
    _assert_real_figure(out / "error_graph_seg9.png")
    for name in FIGURES:
        _assert_real_figure(out / name)


def test_errors_name_the_problem(shared_ts2, tmp_path, capsys):
    errors, _ = _user_tables(shared_ts2, tmp_path)
    meta = str(shared_ts2 / "metadata.csv")
    base = ["report", "--metadata", meta, "--on", "seg_id", "file_name", "--out", str(tmp_path / "o"),
            "--n-bootstrap", "0", "--no-published"]
    assert main(base[:1] + [str(errors), str(errors)] + base[1:]) == 2
    assert re.search(r"'my_errors' appears in both .*errors\.csv and .*errors\.csv", capsys.readouterr().err)
    assert main(base[:1] + [str(errors)] + base[1:] + ["--flops", "my_errors=lots"]) == 2
    assert "--flops 'my_errors=lots': cannot parse FLOPs value 'lots'" in capsys.readouterr().err
    assert main(base[:1] + [str(errors)] + base[1:] + ["--seg", "999"]) == 2
    assert "--seg 999: no such SEG" in capsys.readouterr().err
    assert main(base[:1] + [str(shared_ts2 / "released_scores.csv")] + ["--metadata", meta, "--out",
                str(tmp_path / "o"), "--n-bootstrap", "0"]) == 2
    assert "llmscore_over" in capsys.readouterr().err


@pytest.mark.parametrize("flags, said", [(["--seg", "999"], "--seg 999: no such SEG"),
                                         (["--graph-column", "nope"], "graph column(s) ['nope'] not found")])
def test_cheap_checks_fail_before_the_meta_metrics_are_computed(shared_ts2, tmp_path, capsys, monkeypatch, flags,
                                                                said):
    """A bad ``--seg`` or ``--graph-column`` is refused before the expensive step (the meta-metrics and intervals)."""
    def never(*args, **kwargs):
        raise AssertionError("the meta-metrics were computed before the cheap checks")

    monkeypatch.setattr("scorers.report.reproduce_table", never)
    errors, _ = _user_tables(shared_ts2, tmp_path)
    code = main(["report", str(errors), "--metadata", str(shared_ts2 / "metadata.csv"), "--on", "seg_id", "file_name",
                 "--out", str(tmp_path / "o"), "--no-published", *flags])
    assert code == 2
    assert said in capsys.readouterr().err


def test_docs_assets_are_generated_not_typed(released_report):
    """docs/assets/ is the output of the documented command: regenerate (README, Reports) when this fails."""
    for name in ("leaderboard.md", "leaderboard.tex", "leaderboard.csv"):
        assert (ASSETS / name).read_text() == (released_report / name).read_text(), f"docs/assets/{name} is stale"
    for name in FIGURES:
        assert (ASSETS / name).is_file()


def test_readme_leaderboard_is_the_generated_one():
    """The README's table sits between leaderboard markers and equals docs/assets/leaderboard.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- leaderboard:start -->\n(.*?)<!-- leaderboard:end -->", readme, flags=re.S)
    assert match is not None, "README.md has no <!-- leaderboard:start --> ... <!-- leaderboard:end --> block"
    assert match.group(1).strip() == (ASSETS / "leaderboard.md").read_text(encoding="utf-8").strip()


def test_report_walks_edges_numbers_and_the_built_graph(tmp_path, capsys, monkeypatch):
    """``ts2 report --walks edges`` on a built dir: the leaderboard equals the edge-walk reference loop, levels stay
    the default, and figure (d) draws the built edges (4 for SEG 0: 0-1a, 0-1b, 1a-2a, 1b-2b, not the 6 pairs of
    adjacent levels) whatever the rule."""
    import scorers.report as report_module
    from scorers.report.figures import graph_edges
    from tests.helpers.cli import run_cli
    from tests.helpers.reference_meta import built_dir_reference
    from tests.helpers.seg_files import build_walks_dir

    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, scores = build_walks_dir(tmp_path, capsys)
    drawn = []
    original = report_module.error_graph

    def spy(seg, *args, **kwargs):
        drawn.append([(seg.nodes[a], seg.nodes[b]) for a, b in graph_edges(seg)])
        return original(seg, *args, **kwargs)

    monkeypatch.setattr(report_module, "error_graph", spy)
    for walks in ("levels", "edges"):
        flags = ("--walks", walks) if walks == "edges" else ()
        code, stdout, err = run_cli(capsys, "report", scores, "--metadata", out / "metadata.csv", "--out",
                                    tmp_path / walks, "--no-published", "--n-bootstrap", 0, "--seg", 0, *flags)
        assert code == 0, err
        assert ("walks: along each SEG's own edges" in stdout) == (walks == "edges")
        saved = json.loads((tmp_path / walks / "result.json").read_text())  # the board keeps 4 decimals (in %)
        row = next(r for r in saved["results"]["leaderboard"] if r["column"] == "my_metric")
        expected = built_dir_reference(out, scores, "my_metric", walks=walks)
        for metric in ("rank", "sep", "delta"):
            for part in ("avg", "alpha", "beta"):
                want = 100 * expected[metric]["summary"][part]
                assert row[f"{metric}_{part}"] == pytest.approx(want, abs=5.1e-5), (walks, metric, part)
    assert drawn == [[("0", "1a"), ("0", "1b"), ("1a", "2a"), ("1b", "2b")]] * 2


def test_report_walks_edges_without_segs_json_is_refused(tmp_path, capsys):
    from tests.helpers.cli import one_line, run_cli
    from tests.helpers.seg_files import build_walks_dir

    out, scores = build_walks_dir(tmp_path, capsys)
    (out / "segs.json").unlink()
    code, stdout, err = run_cli(capsys, "report", scores, "--metadata", out / "metadata.csv", "--out",
                                tmp_path / "r", "--no-published", "--walks", "edges")
    line = one_line(err)
    assert code == 2 and "--walks edges" in line and str(out / "segs.json") in line, line
    assert not (tmp_path / "r").exists()
