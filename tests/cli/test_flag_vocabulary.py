"""One meaning per flag across commands (--lower-is-better COLUMN, --n-bootstrap's default,
report --data-dir), and --segs lets a keyed file covering only some SEGs through."""
import json

import pandas as pd
import pytest

from scorers.cli import build_parser, main
from scorers.tables.pandas_tables import read_metadata
from tests.helpers.reference_meta import reference_meta, reference_summary


def _subparsers(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def _option(parser, flag):
    return next(a for a in parser._actions if flag in a.option_strings)


def test_one_vocabulary_across_commands():
    commands = _subparsers(build_parser())
    tifa = _subparsers(commands["tifa-bench"])["report"]
    defaults = {name: _option(p, "--n-bootstrap").default
                for name, p in [(n, commands[n]) for n in ("meta", "reproduce", "report", "correlate")]
                + [("tifa-bench report", tifa)]}
    assert set(defaults.values()) == {1000}, defaults
    for name in ("meta", "report", "correlate"):
        lower = _option(commands[name], "--lower-is-better")
        assert lower.metavar == "COLUMN" and lower.default == [], name  # repeatable, takes a column
        assert _option(commands[name], "--higher-is-better").metavar == "COLUMN"
    assert _option(commands["meta"], "--lower-is-better").nargs == "?"  # the bare form, for a single column
    assert _option(commands["report"], "--data-dir") is not None


def test_report_reads_metadata_from_data_dir(tmp_path, shared_ts2, capsys):
    pytest.importorskip("matplotlib")
    code = main(["report", str(shared_ts2 / "released_scores.csv"), "--data-dir", str(shared_ts2), "--column",
                 "clipscore", "--clean-quotes", "--n-bootstrap", "0", "--out", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "r" / "leaderboard.csv").is_file()


def test_segs_lets_a_partial_keyed_file_through(tmp_path, shared_ts2, capsys):
    metadata = read_metadata(shared_ts2 / "metadata.csv")
    released = pd.read_csv(shared_ts2 / "released_scores.csv")
    keep = metadata["seg_id"].to_numpy() <= 10
    part = pd.DataFrame({"seg_id": metadata["seg_id"], "file_name": metadata["file_name"],
                         "clipscore": released["clipscore"]})[keep].sample(frac=1.0, random_state=1)
    part.to_csv(tmp_path / "part.csv", index=False)
    base = ["meta", str(tmp_path / "part.csv"), "--metadata", str(shared_ts2 / "metadata.csv"), "--n-bootstrap", "0"]
    assert main(base) == 2  # the default SEGs 0-163 are not all covered: refused, pointing at --segs
    err = capsys.readouterr().err
    assert "metadata row(s) have no score row" in err and "(--segs)" in err and "seg_subset" not in err
    assert main(base + ["--segs", "0-10", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)["clipscore"]
    ref = reference_meta(released["clipscore"].to_numpy()[keep], metadata["seg_id"].to_numpy()[keep],
                         metadata["node"].to_numpy()[keep])
    assert payload["segs"] == "0-10"
    for metric in ("rank", "sep", "delta"):
        assert payload[metric]["summary"]["avg"] == pytest.approx(reference_summary(ref[metric])["avg"], abs=1e-12)
    assert main(base + ["--segs", "0-11"]) == 2  # SEG 11 is selected but not covered
    assert "no score row" in capsys.readouterr().err
