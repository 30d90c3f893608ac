"""``ts2 report`` on wide tables: the figures have a bounded size, so time and memory stay flat in the
number of score columns (a 200-column heatmap was 14,000 px square and the histogram grid 40 rows of panels)."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from scorers.report import write_report
from scorers.report.figures import DPI
from scorers.tables.pandas_tables import read_metadata
from scorers.ts2.options import MetaOptions
from tests.helpers.score_tables import wide_table

#: the largest side any report figure may have, in pixels: 16 inches + 2 for the colour bar at the report's DPI
MAX_SIDE = (16 + 2) * DPI


@pytest.fixture(scope="module")
def wide_report(shared_ts2, tmp_path_factory):
    out = tmp_path_factory.mktemp("wide")
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    report = write_report(wide_table(shared_ts2, 120), metadata, out,
                          options=MetaOptions(seg_subset=range(0, 30), n_bootstrap=0))
    return out, report


def test_wide_report_figures_have_a_bounded_size(wide_report):
    out, report = wide_report
    assert len(report.board) == 120
    for name in ("seg_histograms.png", "correlation_heatmap.png"):
        with Image.open(out / name) as image:
            assert max(image.size) <= MAX_SIDE, (name, image.size)


def test_many_metric_histograms_hold_one_row_per_metric(wide_report):
    """The one-image form of figure (b) is a real figure and the per-SEG values it draws exist."""
    out, report = wide_report
    with Image.open(out / "seg_histograms.png") as image:
        assert image.size[0] > 1000 and image.size[1] > 1000  # a real figure, not an empty one
    per_seg = report.reproduction.results["m000"]["rank"].per_seg
    assert np.isfinite(per_seg).sum() >= 25  # 30 SEGs evaluated: the rows have content
