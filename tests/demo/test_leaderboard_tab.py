"""The demo's community table (:func:`scorers.demo.leaderboard_tab.community_view`): the verified submissions alone
(the published rows are the tab's main table, under their display names), each under its display name, following
the partition and sort controls, with a caption that counts what it shows. Expected values are typed by hand."""
from __future__ import annotations

import pytest

from scorers.demo.leaderboard_tab import community_caption, community_view
from scorers.report.community import INCOMPLETE_GROUP, VALUE_COLUMNS, build_leaderboard


def _row(name: str, source: str, values: dict, *, metric: str | None = None, complete: bool = True) -> dict:
    """A board row: ``values`` as ``{"rank_avg": 70.0, ...}`` in %; the others blank."""
    scored = 100 if complete else 90
    return {"name": name, "source": source, "verified_by": "ts2-evaluate 0.1.0" if source == "community" else "",
            "variant": "paper", "segs": "0-163", "coverage": f"{scored}/100 cells scored, 4/4 SEGs used",
            "cells_scored": scored, "cells_total": 100, "segs_used": 4, "segs_total": 4,
            **{c: None for c in VALUE_COLUMNS}, **values, "metric": metric or name}


def _board():
    published = [_row("clipscore", "published", {"rank_avg": 68.0, "sep_avg": 90.0, "rank_synth": 71.0,
                                                 "sep_synth": 80.0}),
                 _row("alignscore", "published", {"rank_avg": 70.0, "sep_avg": 92.0, "rank_synth": 60.0,
                                                  "sep_synth": 85.0})]
    community = [_row("clip-noise", "community", {"rank_avg": 69.0, "sep_avg": 95.0, "rank_synth": 75.0,
                                                  "sep_synth": 70.0}, metric="CLIP + noise (ours)"),
                 _row("clip-half", "community", {"rank_avg": 99.0, "sep_avg": 99.0, "rank_synth": 99.0},
                      metric="Half CLIP", complete=False)]
    return build_leaderboard(community, published)


def test_the_published_rows_are_not_repeated_and_each_submission_shows_its_display_name():
    view = community_view(_board())
    assert list(view["submission"]) == ["clip-noise", "clip-half"]
    assert list(view["metric"]) == ["CLIP + noise (ours)", "Half CLIP"]
    assert "clipscore" not in set(view["metric"]) | set(view["submission"])
    # avg, by rank: alignscore 70 > clip-noise 69 > clipscore 68: second in its group; the incomplete one unranked
    assert view.loc[0, ["group", "#", "rank", "sep"]].tolist() == ["default", 2, 69.0, 95.0]
    assert view.loc[1, ["group", "#"]].tolist() == [INCOMPLETE_GROUP, "-"]


@pytest.mark.parametrize("partition, sort_by, place, values", [
    ("avg", "sep", 1, [69.0, 95.0]),     # sep avg: 95 > 92 > 90
    ("synth", "rank", 1, [75.0, 70.0]),  # rank synth: 75 > 71 > 60
    ("synth", "sep", 3, [75.0, 70.0]),   # sep synth: 85 > 80 > 70
])
def test_the_table_follows_the_partition_and_sort_controls(partition, sort_by, place, values):
    view = community_view(_board(), partition=partition, sort_by=sort_by)
    assert view.loc[0, ["#", "rank", "sep"]].tolist() == [place, *values]


def test_the_caption_counts_what_the_table_shows():
    view = community_view(_board(), partition="synth", sort_by="sep")
    caption = community_caption(view, partition="synth", sort_by="sep")
    assert caption.startswith("2 verified community submission(s): 1 ranked, 1 incomplete (not ranked); synth "
                              "values in %, sorted by sep"), caption


def test_an_unknown_partition_or_sort_is_refused():
    with pytest.raises(ValueError, match="partition must be one of"):
        community_view(_board(), partition="nope")
    with pytest.raises(ValueError, match="sort_by must be one of"):
        community_view(_board(), sort_by="nope")
