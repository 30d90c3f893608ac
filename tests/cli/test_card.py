"""`ts2 card` on a data dir built by `ts2 seg build`: --walks (TS2's level rule by default, or the built edges)."""
import json

import pytest

from tests.helpers.cli import one_line, run_cli
from tests.helpers.reference_meta import built_dir_reference
from tests.helpers.seg_files import build_walks_dir


def test_card_walks_edges_equals_the_edge_reference_and_levels_stay_the_default(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, scores = build_walks_dir(tmp_path, capsys)
    for walks in ("levels", "edges"):
        flags = ("--walks", walks) if walks == "edges" else ()
        code, stdout, err = run_cli(capsys, "card", "--scores", f"mine={scores}", "--metadata", out / "metadata.csv",
                                    "--baseline", "none", "--n-bootstrap", 0, "--offline", "--out", tmp_path / walks,
                                    "--json", *flags)
        assert code == 0, err
        card = json.loads(stdout)["mine"]
        meta = card["sets"]["ts2"]["meta"]
        expected = built_dir_reference(out, scores, "my_metric", walks=walks)
        for metric in ("rank", "sep", "delta"):
            for part, want in expected[metric]["summary"].items():
                assert meta[metric]["summary"][part] == pytest.approx(want, abs=1e-9), (walks, metric, part)
        assert meta.get("walks", "levels") == walks
        assert card["provenance"].get("walks", "levels") == walks
        markdown = (tmp_path / walks / "mine.md").read_text()
        assert ("- walks: edges" in markdown) == (walks == "edges")


def test_card_walks_edges_without_segs_json_is_refused(tmp_path, capsys):
    out, scores = build_walks_dir(tmp_path, capsys)
    (out / "segs.json").unlink()
    code, stdout, err = run_cli(capsys, "card", "--scores", f"mine={scores}", "--metadata", out / "metadata.csv",
                                "--baseline", "none", "--offline", "--out", tmp_path / "c", "--walks", "edges")
    line = one_line(err)
    assert code == 2 and "--walks edges" in line and str(out / "segs.json") in line, line
