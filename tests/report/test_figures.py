"""Figures for papers: PNG/PDF/SVG files, labels that do not overlap, the user's metric marked "yours",
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
    from scorers.tables.pandas_tables import read_metadata

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


def _leader_paths(fig) -> dict:
    """``{label: leader line}`` in display pixels, as drawn (each annotation's arrow patch)."""
    out = {}
    for text in fig.axes[0].texts:
        patch = getattr(text, "arrow_patch", None)
        if patch is not None and text.get_visible():
            out[text.get_text()] = patch.get_transform().transform_path(patch.get_path())
    return out


def _pareto_path(fig):
    """The drawn Pareto step line in display pixels, its corners rebuilt by hand from the line's data ("steps-post":
    across to the next x, then up)."""
    from matplotlib.path import Path

    ax = fig.axes[0]
    line = next(l for l in ax.get_lines() if l.get_label() == "Pareto front")
    xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    corners = [(xs[0], ys[0])]
    for k in range(1, len(xs)):
        corners += [(xs[k], ys[k - 1]), (xs[k], ys[k])]
    return Path(ax.transData.transform(corners))


def _release_board(shared_ts2, values: str = "paper"):
    """The 19 published metrics at their Table 2 FLOPs; rank Avg from the paper table, or ("ours") from the
    leaderboard the README shows (docs/assets/leaderboard.csv): two layouts of the same crowded clusters."""
    paper = pd.read_csv(shared_ts2 / "paper_table2.csv")
    rank = paper[paper["meta_metric"] == "rank"].reset_index(drop=True)
    board = pd.DataFrame({"column": rank["column"], "name": rank["name"], "family": rank["family"],
                          "rank_avg": rank["avg"].astype(float)})
    if values == "ours":
        from pathlib import Path

        ours = pd.read_csv(Path(__file__).resolve().parents[2] / "docs" / "assets" / "leaderboard.csv")
        board["rank_avg"] = ours.set_index("column").loc[board["column"], "rank_avg"].to_numpy(float)
    return board, flops_from_paper(paper)


@pytest.mark.parametrize("values, mine", [
    ("paper", None), ("ours", None),
    ("paper", ("MyScore", 72.0, 2.0e14)),       # inside the TIFA/DSG clusters
    ("ours", ("clip_score", 66.4, 604e6)),      # under CLIPScore, by the Pareto line
    ("ours", ("my_metric", 75.0, 1.5e14)),      # on the DSG column, beside the Pareto step
])
def test_release_labels_leaders_and_pareto_line_stay_apart(shared_ts2, tmp_path, captured, values, mine):
    """Issue 34.5: in rank_vs_flops.png no two labels overlap or touch (a stacked pair such as "TIFA LLaVA-1.5" over
    "TIFA LLaVA-1.5 (alt)" reads as one label), no two leader lines cross, no leader runs through another label, and
    the Pareto step line runs through no label. Boxes are the renderer's (``get_window_extent``)."""
    board, flops = _release_board(shared_ts2, values)
    highlight = []
    if mine:
        board.loc[len(board)] = {"column": "mine", "name": mine[0], "family": "", "rank_avg": mine[1]}
        flops["mine"] = mine[2]
        highlight = ["mine"]
    figures.rank_vs_cost(board, flops, tmp_path / "r.png", highlight=highlight)
    fig = captured[-1]
    boxes = _text_boxes(fig)
    assert len(boxes) == len(board)
    one_point = fig.dpi / 72.0  # pixels
    padded = [(name, box.padded(one_point / 2)) for name, box in boxes]  # 1 pt of air between any two labels
    _assert_no_overlap(padded)
    leaders = _leader_paths(fig)
    names = list(leaders)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            assert not leaders[names[a]].intersects_path(leaders[names[b]], filled=False), \
                f"leader lines of {names[a]!r} and {names[b]!r} cross"
    for name, path in leaders.items():
        for other, box in boxes:
            if other != name:
                assert not path.intersects_bbox(box, filled=False), f"the leader of {name!r} runs through {other!r}"
    pareto = _pareto_path(fig)
    for name, box in boxes:
        assert not pareto.intersects_bbox(box, filled=False), f"the Pareto line runs through the label {name!r}"
    # the TIFA LLaVA pair (and every TIFA label) keep their points' top-to-bottom order
    y_of = dict(zip(board["name"], board["rank_avg"]))
    tifa = sorted((n for n, _ in boxes if n.startswith("TIFA ") and y_of[n] > 60), key=lambda n: -y_of[n])
    label_y = {n: (b.y0 + b.y1) / 2 for n, b in boxes}
    assert [label_y[n] for n in tifa] == sorted((label_y[n] for n in tifa), reverse=True)


def _font_change_shifts(pdf: bytes) -> list[float]:
    """The kerning (thousandths of an em) applied to the first glyph after each font change inside one line of text
    of a PDF: its content streams parsed by hand (``BT .. /Fn size Tf .. [ shift (glyph) ... ] TJ .. ET``)."""
    import re
    import zlib

    shifts = []
    for stream in re.finditer(rb"stream\r?\n(.*?)\r?\nendstream", pdf, re.S):
        try:
            content = zlib.decompress(stream.group(1))
        except zlib.error:
            continue
        for block in re.finditer(rb"BT\n(.*?)\nET", content, re.S):
            runs = re.split(rb"/F\d+ [\d.]+ Tf", block.group(1))
            for run in runs[2:]:  # the runs after a font change
                first = re.search(rb"\[\s*(-?[\d.]+)?", run)
                if first and first.group(1):
                    shifts.append(abs(float(first.group(1))))
    return shifts


def test_error_graph_pdf_title_quotes_do_not_overlap_the_prompt(tmp_path, captured):
    """Issue 34.5: in the PDF, a curly quote came from a second font and the kerning across the font change (128 /
    1000 em) pulled the prompt's first letter onto it. No glyph after a font change may be shifted by more than a
    rounding's worth (5 / 1000 em; the em dash's own change is 0.2)."""
    seg_ids, nodes, scores, results = _tiny()
    seg = build_segs(seg_ids, nodes)[0]
    prompt = "A Christmas tree with lights and teddy bear"
    figures.error_graph(seg, scores, tmp_path / "e.png", results=results, prompt=prompt, formats=("pdf",))
    shifts = _font_change_shifts((tmp_path / "e.pdf").read_bytes())
    assert shifts and max(shifts) < 5.0, shifts
    assert prompt in captured[-1]._suptitle.get_text()
