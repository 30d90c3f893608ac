"""`ts2 meta --n-bootstrap N` prints the bootstrap intervals it computes in its table."""
import json

from scorers.cli import main


def test_meta_table_shows_bootstrap_intervals(shared_ts2, capsys):
    args = ["meta", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
            "--column", "clipscore", "--wide", "--n-bootstrap", "200", "--seed", "3"]
    assert main(args + ["--json"]) == 0
    payload = json.loads(capsys.readouterr().out)["clipscore"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("SEGs: 0-163")  # the first line states the evaluated SEGs
    header = lines[1].split()
    row = lines[3]
    assert header[0] == "metric" and row.startswith("clipscore")
    # --wide: every summary cell carries the interval the JSON output reports for it, in % with one decimal
    for metric in ("rank", "sep", "delta"):
        for part in ("avg", "synth", "nat", "real"):
            value = payload[metric]["summary"][part]
            lo, hi = payload[metric]["ci"][part]
            assert lo <= value <= hi
            cell = f"{100 * value:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
            assert cell in row, (metric, part, cell, row)
    assert main(args[:-4] + ["--n-bootstrap", "0"]) == 0  # --n-bootstrap 0 (the default is 1000): no brackets
    assert "[" not in capsys.readouterr().out

