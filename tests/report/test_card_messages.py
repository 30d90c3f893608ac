"""The card's messages (an offline TIFA160, a ratings column that does not exist) and its units and figure labels
(percent with a label, JSON in fractions, no label drawn over another or over the image)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from scorers.cli import main
from tests.helpers.cli import one_line, run_cli
from tests.helpers.score_tables import SCORES, card_with_pairs, release_columns


def test_tifa160_offline_names_the_file_and_how_to_get_it(capsys, tmp_path, monkeypatch, shared_ts2):
    """Before: "set TS2_DATA ... or run `ts2 release fetch --all`", neither of which provides TIFA160."""
    from scorers.sets.ratings import TIFA160
    from tests.helpers.environment import use_hf_home

    use_hf_home(monkeypatch, tmp_path / "hf")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--ratings", "tifa160=tifa160", "--offline",
                             "--baseline", "none", "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out",
                             tmp_path / "o", "--json")
    assert code == 0, err
    reason = json.loads(out)["mine"]["not_evaluated"]["tifa160"]
    assert "\n" not in reason and TIFA160.filename in reason and TIFA160.url in reason
    assert "not a TS2 release file" in reason and "--ratings tifa160=PATH" in reason
    assert "release fetch --all" not in reason


def test_a_ratings_column_that_does_not_exist_is_an_error(capsys, tmp_path, shared_ts2):
    """Before: exit 0 with the set "not evaluated"."""
    from tests.helpers.rating_files import write_tifa_json

    tifa = write_tifa_json(tmp_path / "tifa.json", n_prompts=4)
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    argv = ["card", "--scores", f"mine={mine}", "--ratings", f"tifa160={tifa}", "--baseline", "none", "--data-dir",
            shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o"]
    code, _out, err = run_cli(capsys, *argv, "--ratings-column", "mine=nope")
    line = one_line(err)
    assert code == 2 and "--ratings-column mine=nope" in line and "'nope'" in line
    code, out, err = run_cli(capsys, *argv, "--ratings-column", "mine=clipscore_vitb32", "--json")  # a real column
    assert code == 0, err
    assert json.loads(out)["mine"]["sets"]["tifa160"]["column"] == "clipscore_vitb32"


@pytest.fixture(scope="module")
def one_set_card(tmp_path_factory, shared_ts2):
    """A TS2-only card of a release column against the release's clipscore (the suptitle case of issue 34: one
    panel, "better than clipscore on 0 of 1 sets, worse on 0, 95% paired intervals")."""
    import contextlib
    import io

    root = tmp_path_factory.mktemp("one_set")
    mine = release_columns(shared_ts2, ["id", "image_id", "a_rather_long_metric_name"], ["mplug_tifa"],
                           root / "mine.csv")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([str(a) for a in ["card", "--scores", f"a_rather_long_metric_name={mine}", "--data-dir",
                                      shared_ts2, "--n-bootstrap", 50, "--out", root / "out", "--json"]]) == 0
    return root, json.loads(buffer.getvalue())["a_rather_long_metric_name"]


def test_card_markdown_shows_percent_with_a_label_and_json_keeps_fractions(one_set_card, shared_ts2):
    from scorers.stats.meta import ts2_meta
    from scorers.tables.pandas_tables import read_metadata

    root, card = one_set_card
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    scores = pd.read_csv(shared_ts2 / "released_scores.csv")["mplug_tifa"].to_numpy(dtype=float)
    rank = ts2_meta(scores, metadata["seg_id"], metadata["node"], seg_subset=range(164)).rank.statistic["avg"]
    assert card["sets"]["ts2"]["meta"]["rank"]["summary"]["avg"] == pytest.approx(rank, abs=1e-12)  # a fraction
    text = (root / "out" / "a_rather_long_metric_name.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| meta-metric"))
    assert "| a_rather_long_metric_name (%) | CI (%) | clipscore (%) | CI (%) |" in header
    row = next(line for line in text.splitlines() if line.startswith("| rank | avg |"))
    assert row.split(" | ")[2] == f"{100 * rank:.1f}"  # 67.8, as ts2 meta prints it
    assert "values in % (the JSON holds fractions)" in text
    assert " pp [" in next(line for line in text.splitlines() if line.startswith("- paired vs clipscore (rank)"))


def _figure_boxes(fig):
    """Window extents of the figure's title, each panel's title, x label and tick labels (as the renderer lays them
    out) and of each panel's axes."""
    renderer = fig.canvas.get_renderer()
    boxes = {"suptitle": fig._suptitle.get_window_extent(renderer)}
    for k, ax in enumerate(fig.axes):
        boxes[f"title {k}"] = ax.title.get_window_extent(renderer)
        boxes[f"xlabel {k}"] = ax.xaxis.label.get_window_extent(renderer)
        boxes[f"axes {k}"] = ax.get_window_extent(renderer)
        for t, label in enumerate(ax.get_yticklabels()):
            boxes[f"ytick {k}.{t}"] = label.get_window_extent(renderer)
    return boxes


def drawn_figure(card, tmp_path, monkeypatch):
    """The figure ``card_figure`` saves (its ``savefig`` call captured), as the PNG shows it."""
    from matplotlib.figure import Figure

    from scorers.report.card import card_figure

    kept = []
    original = Figure.savefig

    def keep(fig, *args, **kwargs):
        kept.append(fig)
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    assert card_figure(card, tmp_path / "card.png") == tmp_path / "card.png"
    (fig,) = kept
    return fig


def _assert_laid_out(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    boxes = _figure_boxes(fig)
    frame = fig.bbox
    for name, box in boxes.items():  # every label inside the picture (1 px of anti-aliasing)
        assert box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1 \
            and box.y1 <= frame.y1 + 1, f"{name} leaves the figure: {box} / {frame}"
    texts = [n for n in boxes if not n.startswith("axes")]
    for i, a in enumerate(texts):
        for b in texts[i + 1:]:
            assert not boxes[a].overlaps(boxes[b]), f"{a} and {b} overlap: {boxes[a]} / {boxes[b]}"
        for axes in (n for n in boxes if n.startswith("axes")):
            if a.startswith(("suptitle", "title")):
                assert not boxes[a].overlaps(boxes[axes]), f"{a} overlaps {axes}"


def test_card_title_breaks_between_phrases_and_labels_do_not_overlap(one_set_card, tmp_path, monkeypatch):
    from scorers.report.card import Card

    _root, data = one_set_card
    card = Card.from_dict(data)
    assert card.verdict.startswith("better than clipscore on ") and " of 1 sets" in card.verdict
    fig = drawn_figure(card, tmp_path, monkeypatch)
    title = fig._suptitle.get_text()
    lines = title.split("\n")
    # broken only after "metric vs baseline:" or after a comma, never inside "on 0 of 1 sets"
    assert all(line.endswith((":", ",")) for line in lines[:-1]), title
    assert " ".join(lines).replace(": ", ":\n", 1).split("\n")[1] == card.verdict
    assert any(f"on {n} of 1 sets" in line for line in lines for n in range(2))
    _assert_laid_out(fig)


def test_two_panel_figure_labels_do_not_overlap_and_read_in_percent(capsys, tmp_path, shared_ts2, monkeypatch):
    """TS2 and a preference set side by side: no label overlaps another, axes in %."""
    from scorers.report.card import Card

    pairs = "item,prompt,image_a,image_b,preference\n1,p,u1,u2,a\n2,q,u3,u4,b\n3,r,u5,u6,tie\n4,s,u2,u3,b\n"
    code, out, err = card_with_pairs(capsys, tmp_path, shared_ts2, pairs, SCORES, "--json")
    assert code == 0, err
    card = Card.from_dict(json.loads(out)["mine"])
    fig = drawn_figure(card, tmp_path, monkeypatch)
    assert [ax.get_xlabel() for ax in fig.axes] == ["rank (avg over SEGs) (%)",
                                                   "pairwise accuracy (ties calibrated) (%)"]
    mine = card.sets["toy"]["rows"][0]["statistic"]
    xs = [line.get_xdata()[0] for line in fig.axes[1].lines if len(line.get_xdata())]
    assert any(x == pytest.approx(100 * mine) for x in xs)
    _assert_laid_out(fig)


def test_demo_summary_shows_percent_and_the_figure_has_no_label_over_it(one_set_card):
    from scorers.demo.report_card_tab import card_summary_frame
    from scorers.report.card import Card

    _root, data = one_set_card
    row = card_summary_frame(Card.from_dict(data)).set_index("set").loc["ts2"]
    rank = data["sets"]["ts2"]["meta"]["rank"]["summary"]["avg"]
    assert row["value"] == f"{100 * rank:.1f} %" and row["headline"] == "rank (avg) (%)"
    assert row["paired difference"].endswith(" pp") and row["95% interval"].endswith(" pp")


def test_demo_card_figure_label_is_not_drawn_over_the_image(config):
    """gradio draws an Image's label on its top-left corner, over the start of the figure's title: the tab shows a
    caption above the image instead."""
    pytest.importorskip("gradio")
    from scorers.demo import build_app

    components = build_app(config).get_config_file()["components"]
    figure = next(c for c in components if c.get("props", {}).get("elem_id") == "card-figure")
    assert figure["props"]["show_label"] is False
    assert any(c.get("props", {}).get("elem_id") == "card-figure-label" for c in components)
