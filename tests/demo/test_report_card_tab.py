"""The demo's Report card tab without a browser: a published metric's card on TS2 + TIFA160, uploaded
cards (one card, ``ts2 card --json``'s object of cards) and bad uploads, each refused in one line.

Expected numbers come from outside the card code: ``scorers.stats.meta.ts2_meta`` on the release column and the release's
metadata (TS2), scipy's Spearman on the TIFA160-format file (the headline of TIFA160), and the card JSON that
``ts2 card --json`` itself prints (uploads).
"""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scorers.cli import main
from scorers.demo.config import AppConfig
from scorers.demo.report_card_tab import (
    SUMMARY_COLUMNS,
    TIFA160_NEEDS_FILE,
    PublishedCards,
    card_figure_image,
    card_summary_frame,
    card_view,
    read_card_upload,
    tifa160_note,
)
from scorers.demo.sources import load_tables
from scorers.report.card import Card
from scorers.stats.meta import ts2_meta
from scorers.tables.pandas_tables import read_metadata

from tests.helpers.pin_override import pin_tifa160
from tests.helpers.rating_files import tifa160_cache_copy, write_tifa_json

N_BOOT = 200  # enough for intervals to exist; the numbers compared below do not depend on it
MAX = 2 * 2**20


@pytest.fixture(scope="module")
def tables(config):
    loaded = load_tables(config)
    assert loaded.problems == []
    return loaded


def _ts2_reference(shared_ts2, column):
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    scores = pd.read_csv(shared_ts2 / "released_scores.csv")[column].to_numpy(dtype=float)  # no stray quotes here
    return ts2_meta(scores, metadata["seg_id"], metadata["node"], seg_subset=range(164))


@pytest.fixture(scope="module")
def cli_cards(tmp_path_factory, shared_ts2):
    """``ts2 card --json`` on two release columns: the JSON a user uploads."""
    root = tmp_path_factory.mktemp("cards")
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "mplug_tifa"]].to_csv(root / "mplug.csv", index=False)
    raw[["id", "image_id", "blip1_dsg"]].to_csv(root / "blip.csv", index=False)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["card", "--scores", f"mplug_tifa={root / 'mplug.csv'}", f"blip1_dsg={root / 'blip.csv'}",
                     "--sets", "genai_bench", "--data-dir", str(shared_ts2), "--n-bootstrap", str(N_BOOT),
                     "--out", str(root / "out"), "--json"])
    assert code == 0
    return root, json.loads(buffer.getvalue())


# ------------------------------------------------------------------------------------------------ published metrics


def test_published_card_without_the_tifa160_file_is_ts2_alone_and_says_so(tables, config, shared_ts2, fresh_cache):
    cards = PublishedCards(tables, config, n_bootstrap=N_BOOT, offline=True)
    assert "mplug_tifa" in cards.metrics and "clipscore" in cards.metrics and len(cards.metrics) == 19
    card = cards.card("mplug_tifa")
    expected = _ts2_reference(shared_ts2, "mplug_tifa")
    ts2 = card.sets["ts2"]
    for meta in ("rank", "sep", "delta"):
        assert ts2["meta"][meta]["summary"]["avg"] == pytest.approx(expected.summary()[meta]["avg"], abs=1e-12)
    base = _ts2_reference(shared_ts2, "clipscore")
    assert ts2["baseline_meta"]["summary"]["rank"]["avg"] == pytest.approx(base.summary()["rank"]["avg"], abs=1e-12)
    assert ts2["published"]["of"] == 19  # its place among the 19 published rows
    # TIFA160 is listed, not dropped, and the tab says what the missing part needs
    assert card.sets["tifa160"]["status"] == "not evaluated"
    assert "tifa160" in card.not_evaluated
    assert tifa160_note(card) == TIFA160_NEEDS_FILE

    frame = card_summary_frame(card)
    assert list(frame.columns) == SUMMARY_COLUMNS and list(frame["set"]) == ["ts2", "tifa160"]
    row = frame.iloc[0]
    assert row["value"] == f"{100 * expected.summary()['rank']['avg']:.1f} %"  # in %, as ts2 meta prints TS2
    assert row["baseline"] == f"{100 * base.summary()['rank']['avg']:.1f} %"
    assert row["verdict / reason"] in ("better", "worse") or row["verdict / reason"].startswith(
        "no significant difference (p = ")
    assert frame.iloc[1]["status"] == "not evaluated" and "not cached" in frame.iloc[1]["verdict / reason"]
    assert cards.card("mplug_tifa") is card  # built once


def test_published_card_with_the_tifa160_file_has_its_spearman(tables, config, tmp_path, monkeypatch, fresh_cache):
    stand_in = write_tifa_json(tmp_path / "human_annotations_with_scores.json", n_prompts=20)
    _copy, digest = tifa160_cache_copy(stand_in)  # as a first download leaves it in this test's HF_HOME
    pin_tifa160(monkeypatch, digest)
    card = PublishedCards(tables, config, n_bootstrap=N_BOOT, offline=True).card("mplug_tifa")
    section = card.sets["tifa160"]
    assert section["status"] == "evaluated" and tifa160_note(card) == ""
    raw = json.loads(stand_in.read_text())
    human = [np.mean(v["human_scores"]) for v in raw.values()]
    metric = [v["tifa_mplug-large"] for v in raw.values()]
    assert section["headline_coefficient"] == "spearman"
    assert section["headline_value"] == pytest.approx(stats.spearmanr(metric, human).statistic, abs=1e-12)
    assert section["n_scored"] == 100 and section["n_skipped"] == 0
    baseline = [v["clipscore_vitb32"] for v in raw.values()]
    assert section["baseline_row"]["value"] == pytest.approx(stats.spearmanr(baseline, human).statistic, abs=1e-12)
    row = card_summary_frame(card).set_index("set").loc["tifa160"]
    assert row["value"] == f"{stats.spearmanr(metric, human).statistic:.3f}"
    head, _frame, body = card_view(card)
    assert head.startswith("### mplug_tifa: better than clipscore on ") and "## tifa160" in body


def test_unknown_metric_and_missing_tables_are_one_line(tables, config):
    with pytest.raises(ValueError, match=r"^'nope' is not a published metric \(one of blip1_dsg, "):
        PublishedCards(tables, config).card("nope")
    empty = load_tables(AppConfig.resolve(metadata=config.metadata))  # no scores table
    cards = PublishedCards(empty, config)
    assert cards.metrics == [] and not cards.available
    with pytest.raises(ValueError, match="^published cards need the release tables"):
        cards.card("clipscore")


# ------------------------------------------------------------------------------------------------ uploaded cards


def test_uploaded_cards_show_what_ts2_card_wrote(cli_cards):
    root, printed = cli_cards
    # the whole --json object: two cards
    whole = root / "all.json"
    whole.write_text(json.dumps(printed))
    cards = read_card_upload(whole, MAX)
    assert list(cards) == ["mplug_tifa", "blip1_dsg"]
    # one card as write_card leaves it (NAME.json)
    single = read_card_upload(root / "out" / "mplug_tifa.json", MAX)
    assert list(single) == ["mplug_tifa"]
    card = single["mplug_tifa"]
    assert card.to_dict() == printed["mplug_tifa"]
    frame = card_summary_frame(card).set_index("set")
    assert list(frame.index) == ["ts2", "genai_bench"]
    ts2 = printed["mplug_tifa"]["sets"]["ts2"]
    assert frame.loc["ts2", "value"] == f"{100 * ts2['meta']['rank']['summary']['avg']:.1f} %"
    comparison = ts2["comparison"][0]
    assert frame.loc["ts2", "paired difference"] == f"{100 * comparison['statistic']:.1f} pp"
    assert frame.loc["ts2", "95% interval"] == (f"[{100 * comparison['ci_low']:.1f}, {100 * comparison['ci_high']:.1f}]"
                                                " pp")
    assert frame.loc["genai_bench", "status"] == "not evaluated"
    assert frame.loc["genai_bench", "verdict / reason"].startswith("no ratings file with mplug_tifa's scores")
    head, _frame, body = card_view(card)
    assert head == f"### mplug_tifa: {printed['mplug_tifa']['verdict']}"
    assert "## ts2" in body and "## Provenance" in body
    image = card_figure_image(card)
    assert image is not None and image.size[0] > 100


def _bad(tmp_path, content, name="card.json"):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize("content, message", [
    ("", "the file is empty"),
    ("{not json", "not a JSON file: Expecting property name enclosed in double quotes at line 1, column 2"),
    (b"\xff\xfe\x00{", "not a JSON file: it is not UTF-8 text"),
    ([1, 2], "not a report card as `ts2 card --json` writes it: expected a JSON object, got a JSON list"),
    ({}, "not a report card as `ts2 card --json` writes it: the JSON object is empty"),
    ({"metric": "m", "verdict": "v", "sets": {}},
     "not a report card as `ts2 card --json` writes it: 'm' has no field 'baseline' (a card has metric, baseline, "
     "verdict, sets, provenance)"),
    ({"m": 3}, "not a report card as `ts2 card --json` writes it: 'm' is a JSON int, not an object"),
])
def test_bad_uploads_are_one_line(tmp_path, content, message):
    with pytest.raises(ValueError) as error:
        read_card_upload(_bad(tmp_path, content), MAX)
    assert str(error.value) == message


def test_damaged_cards_name_the_set_and_field(tmp_path, cli_cards):
    _root, printed = cli_cards
    card = json.loads(json.dumps(printed["mplug_tifa"]))
    card["sets"]["ts2"]["status"] = "done"
    with pytest.raises(ValueError) as error:
        read_card_upload(_bad(tmp_path, card), MAX)
    assert str(error.value) == ("not a report card as `ts2 card --json` writes it: 'mplug_tifa', set 'ts2': status "
                                "'done' (expected 'evaluated' or 'not evaluated')")
    card = json.loads(json.dumps(printed["mplug_tifa"]))
    del card["sets"]["ts2"]["meta"]
    with pytest.raises(ValueError) as error:
        read_card_upload(_bad(tmp_path, card), MAX)
    assert str(error.value) == ("not a report card as `ts2 card --json` writes it: 'mplug_tifa', set 'ts2': field "
                                "'meta' is missing")
    card = json.loads(json.dumps(printed["mplug_tifa"]))
    del card["provenance"]["inputs"]
    with pytest.raises(ValueError) as error:
        read_card_upload(_bad(tmp_path, card), MAX)
    assert str(error.value) == ("not a report card as `ts2 card --json` writes it: 'mplug_tifa', provenance: field "
                                "'inputs' is missing")


def test_oversized_upload_is_refused(tmp_path):
    path = _bad(tmp_path, " " * (MAX + 200 * 2**10))
    with pytest.raises(ValueError) as error:
        read_card_upload(path, MAX)
    assert str(error.value) == "the file is 2.2 MB; the limit is 2.0 MB"


def test_app_has_the_report_card_tab(config):
    from scorers.demo import build_app

    demo = build_app(config)
    components = demo.get_config_file()["components"]
    labels = [c.get("props", {}).get("label") for c in components]
    assert "Report card" in labels
    ids = {c.get("props", {}).get("elem_id") for c in components}
    assert {"card-metric-pick", "card-upload", "card-status", "card-sets", "card-body"} <= ids


def test_every_published_card_has_the_leaderboards_ts2_values(tables, config, fresh_cache):
    """The 19 published metrics' cards (llmscore_over with its stray quotes, the lower-is-better LLMScore columns
    included) carry the rank/sep/delta the Leaderboard tab shows (``reproduce_table``, a separate code path), in %."""
    from scorers.demo.leaderboard_tab import published_reproduction

    board = published_reproduction(tables, config)
    cards = PublishedCards(tables, config, n_bootstrap=0, offline=True)
    assert sorted(cards.metrics) == sorted(board.columns)
    for metric in cards.metrics:
        meta = cards.card(metric).sets["ts2"]["meta"]
        for row in board.rows:
            if row["column"] == metric:
                got = 100 * meta[row["meta_metric"]]["summary"][row["partition"]]
                # reproduce_table rounds "ours" to 4 decimals (of %): half a unit of the 4th decimal
                assert got == pytest.approx(row["ours"], abs=5e-5), (metric, row["meta_metric"], row["partition"])


def test_a_preference_set_section_is_summarised_by_its_headline_tie_convention():
    """A preference set's section (issue 27.1: ``headline_ties``, ``baseline_rows`` of pairwise accuracy) gets its own
    summary row; the values are the section's own, in % (differences in percentage points)."""
    section = {"status": "evaluated", "headline_ties": "calibrated", "headline_value": 0.61234,
               "baseline_rows": [{"statistic": 0.55555}], "verdict": "better",
               "comparison": [{"statistic": 0.05679, "ci_low": 0.01, "ci_high": 0.1}]}
    card = Card(metric="m", baseline="clipscore", verdict="v", sets={"hpdv2": section}, provenance={})
    row = card_summary_frame(card).iloc[0]
    assert list(row) == ["hpdv2", "evaluated", "pairwise accuracy (ties calibrated) (%)", "61.2 %", "55.6 %",
                         "5.7 pp", "[1.0, 10.0] pp", "better"]
