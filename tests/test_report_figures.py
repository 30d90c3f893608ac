"""Figures for papers (issue 23.13): PNG/PDF/SVG files, labels that do not overlap, the user's metric marked "yours",
ranks in %, the histogram legend off the title. Figures are drawn from small hand-made inputs (fast); the label test
also uses the published Table 2 (its rank Avg and FLOPs), the figure the README shows."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from scorers.stats.graph import build_segs
from scorers.stats.meta import ts2_meta
from scorers.report import _contrast_columns
from scorers.report import figures
from scorers.report.costs import flops_from_paper


@pytest.fixture
def captured(monkeypatch):
    """Every figure handed to ``figures._save``, kept open for inspection (the renderer's boxes)."""
    kept = []
    original = figures._save

    def keep(fig, path, formats=("png",)):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        saved = original(fig, path, formats)
        FigureCanvasAgg(fig).draw()  # closing detached its canvas; a fresh Agg canvas at the same dpi measures it
        kept.append(fig)
        return saved

    monkeypatch.setattr(figures, "_save", keep)
    return kept


def _tiny():
    """Six SEGs of nodes 0 / 1a / 1b / 2 with two images each; three metrics, the last one 'mine'."""
    labels = ["0", "0", "1a", "1a", "1b", "1b", "2", "2"]
    seg_ids = np.repeat(np.arange(6), len(labels))
    nodes = np.tile(labels, 6)
    errors = np.array([0 if n == "0" else 2 if n == "2" else 1 for n in nodes], float)
    rng = np.random.default_rng(0)
    scores = {"a": -errors + rng.normal(0, 0.5, errors.size), "b": rng.normal(0, 1, errors.size),
              "mine": -errors + rng.normal(0, 0.2, errors.size)}
    results = {c: ts2_meta(v, seg_ids, nodes) for c, v in scores.items()}
    return seg_ids, nodes, scores, results


def _text_boxes(fig):
    """Window extents (pixels) of every visible, non-empty text label in the figure's first axes: the text itself, as
    the renderer lays it out (``Text.get_window_extent``; an Annotation's own extent would add its leader line)."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_visible() and t.get_text()]
    return [(t.get_text(), Text.get_window_extent(t, renderer)) for t in texts]


def _assert_no_overlap(boxes):
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            (a, box_a), (b, box_b) = boxes[i], boxes[j]
            # strict interior overlap (touching edges allowed): Bbox.overlaps is exactly that test
            assert not box_a.overlaps(box_b), f"labels {a!r} and {b!r} overlap: {box_a} / {box_b}"


def test_formats_written_and_valid(tmp_path):
    board = pd.DataFrame({"column": ["a", "b"], "name": ["A", "B"], "family": ["x", "y"], "rank_avg": [60.0, 70.0]})
    path, skipped = figures.rank_vs_cost(board, {"a": 1e9, "b": 1e12}, tmp_path / "fig.png",
                                         formats=("png", "pdf", "svg"))
    assert path == tmp_path / "fig.png" and skipped == []
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # PNG signature (RFC 2083)
    pdf = (tmp_path / "fig.pdf").read_bytes()
    assert pdf.startswith(b"%PDF-1.") and pdf.rstrip().endswith(b"%%EOF")
    assert b"/Type3" not in pdf and b"/CIDFontType2" in pdf  # TrueType (Type 42) fonts: publishers reject Type 3
    root = ET.parse(tmp_path / "fig.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 20  # vector paths, not an embedded raster
    assert root.find(".//{http://www.w3.org/2000/svg}image") is None
    # same input, same bytes (no creation date, fixed SVG ids): a figure in a paper's repository does not churn
    first = {fmt: (tmp_path / f"fig.{fmt}").read_bytes() for fmt in ("pdf", "svg")}
    figures.rank_vs_cost(board, {"a": 1e9, "b": 1e12}, tmp_path / "fig.png", formats=("pdf", "svg"))
    assert {fmt: (tmp_path / f"fig.{fmt}").read_bytes() for fmt in ("pdf", "svg")} == first
    with pytest.raises(ValueError, match="--format 'gif'"):
        figures.rank_vs_cost(board, {"a": 1e9}, tmp_path / "x.png", formats=("gif",))


def test_release_labels_do_not_overlap_and_yours_is_marked(shared_ts2, tmp_path, captured):
    """The published Table 2 (rank Avg, FLOPs) plus one user metric placed inside the crowded 1e14 cluster."""
    paper = pd.read_csv(shared_ts2 / "paper_table2.csv")
    rank = paper[paper["meta_metric"] == "rank"]
    board = pd.DataFrame({"column": rank["column"], "name": rank["name"], "family": rank["family"],
                          "rank_avg": rank["avg"].astype(float)})
    board.loc[len(board)] = {"column": "mine", "name": "MyScore", "family": "", "rank_avg": 72.0}
    flops = {**flops_from_paper(paper), "mine": 2.0e14}
    figures.rank_vs_cost(board, flops, tmp_path / "r.png", highlight=["mine"])
    fig = captured[-1]
    boxes = _text_boxes(fig)
    assert len(boxes) == len(board)  # every point named
    _assert_no_overlap(boxes)
    frame = fig.axes[0].get_window_extent(fig.canvas.get_renderer())
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for _, b in boxes)
    assert "MyScore (yours)" in [t for t, _ in boxes]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "yours" in legend and "(no family)" not in legend
    assert fig.axes[0].get_ylabel() == "rank (avg) (%)"


def test_crowded_labels_do_not_overlap(tmp_path, captured):
    """Twelve metrics at one cost within 3 points of rank: the worst case for labels."""
    n = 12
    board = pd.DataFrame({"column": [f"m{k}" for k in range(n)], "name": [f"Metric number {k}" for k in range(n)],
                          "family": ["f"] * n, "rank_avg": 70 + 3 * np.arange(n) / n})
    figures.rank_vs_cost(board, {f"m{k}": 1e12 for k in range(n)}, tmp_path / "c.png", highlight=["m3"])
    boxes = _text_boxes(captured[-1])
    assert len(boxes) == n
    _assert_no_overlap(boxes)


def test_yours_with_family_names_it(tmp_path, captured):
    board = pd.DataFrame({"column": ["a", "mine"], "name": ["A", "Mine"], "family": ["embedding", "embedding"],
                          "rank_avg": [60.0, 70.0]})
    figures.rank_vs_cost(board, {"a": 1e9, "mine": 1e10}, tmp_path / "f.png", highlight=["mine"])
    legend = [t.get_text() for t in captured[-1].axes[0].get_legend().get_texts()]
    assert legend[:2] == ["embedding", "yours (embedding)"]


def test_histograms_percent_highlight_and_legend_off_title(tmp_path, captured):
    _, _, _, results = _tiny()
    figures.seg_histograms(results, tmp_path / "h.png", names={"mine": "Mine"}, highlight=["mine"])
    fig = captured[-1]
    renderer = fig.canvas.get_renderer()
    assert fig.axes[0].get_xlim()[0] < -90 and fig.axes[0].get_xlim()[1] > 90  # per-SEG values in %, [-100, 100]
    assert fig.axes[0].get_xlabel() == "per-SEG value (%)"
    assert [ax.get_title() for ax in fig.axes[:3]] == ["a", "b", "Mine (yours)"]
    legend, title = fig.legends[0].get_window_extent(renderer), fig._suptitle.get_window_extent(renderer)
    assert not legend.overlaps(title)
    assert all(not legend.overlaps(ax.get_tightbbox(renderer)) for ax in fig.axes[:3])
    # with a handful of metrics the values a hand count gives: rank per SEG in % is what the panel bins
    values = 100 * results["mine"]["rank"].per_seg
    rank_bars = fig.axes[2].patches[:40]  # rank is drawn first, 40 bins of 5 points over [-100, 100]
    assert sum(p.get_height() for p in rank_bars) == np.isfinite(values).sum()
    assert rank_bars[0].get_x() == pytest.approx(-100) and rank_bars[0].get_width() == pytest.approx(5)


def test_heatmap_and_error_graph_mark_yours_and_show_percent(tmp_path, captured):
    seg_ids, nodes, scores, results = _tiny()
    figures.correlation_heatmap(results, tmp_path / "c.png", highlight=["mine"])
    ticks = [t.get_text() for t in captured[-1].axes[0].get_yticklabels()]
    assert ticks == ["a", "b", "mine (yours)"]
    seg = build_segs(seg_ids, nodes)[0]
    figures.error_graph(seg, scores, tmp_path / "e.png", results=results, highlight=["mine"])
    titles = [ax.get_title() for ax in captured[-1].axes if ax.get_title()]
    rank_mine = 100 * results["mine"]["rank"].per_seg[0]
    assert f"mine — rank on this SEG: {rank_mine:.1f}% (yours)" in titles
    assert all("%" in t for t in titles)


def test_graph_columns_include_yours():
    board = pd.DataFrame({"column": list("abcdefg"), "rank_avg": [90, 80, 70, 60, 50, 40, 30]})
    assert _contrast_columns(board) == ["a", "b", "f", "g"]
    assert _contrast_columns(board, ["d"]) == ["a", "b", "d", "g"]
    assert _contrast_columns(board, ["d", "e"]) == ["a", "d", "e", "g"]
    assert _contrast_columns(board, ["a"]) == ["a", "b", "f", "g"]


def test_cli_formats_highlight_family(shared_ts2, tmp_path, capsys):
    from scorers.tables.readers import read_metadata

    metadata = read_metadata(shared_ts2 / "metadata.csv")
    keys = metadata[["seg_id", "file_name"]].assign(my_metric=-metadata["error_count"])
    keys.to_csv(tmp_path / "mine.csv", index=False)
    out = tmp_path / "out"
    base = ["report", str(tmp_path / "mine.csv"), str(shared_ts2 / "released_scores.csv"), "--metadata",
            str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"), "--clean-quotes",
            "--on", "seg_id", "file_name", "--segs", "0-30", "--n-bootstrap", "0", "--out", str(out)]
    assert main(base + ["--format", "svg,pdf", "--family", "my_metric=oracle", "--flops", "my_metric=1G"]) == 0
    printed = capsys.readouterr().out
    for stem in ("rank_vs_flops", "seg_histograms", "correlation_heatmap"):
        assert (out / f"{stem}.pdf").read_bytes().startswith(b"%PDF-")
        ET.parse(out / f"{stem}.svg")
        assert not (out / f"{stem}.png").exists()
    graphs = sorted(p.name for p in out.glob("error_graph_seg*"))
    assert graphs == ["error_graph_seg0.pdf", "error_graph_seg0.svg"]
    assert "rank_vs_flops (pdf)" in printed
    board = pd.read_csv(out / "leaderboard.csv").set_index("column")
    assert board.loc["my_metric", "family"] == "oracle"
    assert main(base + ["--format", "png,gif"]) == 2
    assert "--format 'png,gif'" in capsys.readouterr().err
    assert main(base + ["--family", "nosuch=x"]) == 2
    assert "--family 'nosuch'" in capsys.readouterr().err
