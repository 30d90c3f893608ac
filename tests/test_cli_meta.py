"""`ts2 meta` and `ts2 reproduce` on the shared release tables (acceptance 2 of the foundation issue)."""
import json

import pandas as pd
import pytest

from scorers.cli import main
from scorers.meta import ts2_meta

TOLERANCE = {"rank": 4.0, "sep": 3.0, "delta": 3.5}


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def reproduction(shared_ts2):
    from scorers.reproduce import reproduce_table
    from scorers.tables import read_metadata, read_paper_table, read_score_table

    return reproduce_table(
        read_score_table(shared_ts2 / "released_scores.csv"),
        read_metadata(shared_ts2 / "metadata.csv"),
        read_paper_table(shared_ts2 / "paper_table2.csv"),
        seg_subset=range(0, 164),
        clean_quotes=True,
    )


def test_reproduce_json_is_one_object_within_tolerance(shared_ts2, capsys):
    code, out, _ = run_cli(
        capsys, "reproduce", "--scores", str(shared_ts2 / "released_scores.csv"),
        "--metadata", str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"),
        "--segs", "0-163", "--clean-quotes", "--json",
    )
    assert code == 0
    payload = json.loads(out)
    rows = payload["rows"]
    assert len(rows) == 19 * 3 * 4
    assert {r["partition"] for r in rows} == {"avg", "synth", "nat", "real"}
    avg = [r for r in rows if r["partition"] == "avg"]
    for row in avg:
        if row["meta_metric"] == "delta" and row["column"].startswith("llmscore"):
            continue  # the paper's LLMScore deltas look swapped (EC <-> Over)
        assert abs(row["ours"] - row["paper"]) <= TOLERANCE[row["meta_metric"]], row
    clip = next(r for r in avg if r["column"] == "clipscore" and r["meta_metric"] == "rank")
    assert clip["ours"] == pytest.approx(68.2, abs=0.05) and clip["paper"] == 71.4


def test_llmscore_delta_swap(reproduction):
    avg = {(r["column"], r["meta_metric"]): r for r in reproduction.rows if r["partition"] == "avg"}
    ec, over = avg[("llmscore_ec", "delta")], avg[("llmscore_over", "delta")]
    assert abs(ec["ours"] - over["paper"]) < 1.0 and abs(over["ours"] - ec["paper"]) < 1.0
    assert any("swapped" in note for note in reproduction.notes)


def test_reproduce_table_mentions_the_swap(shared_ts2, capsys):
    code, out, _ = run_cli(
        capsys, "reproduce", "--scores", str(shared_ts2 / "released_scores.csv"),
        "--metadata", str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"),
        "--segs", "0-163", "--clean-quotes",
    )
    assert code == 0 and "swapped" in out and "clipscore" in out


def test_stray_quotes_are_reported_not_coerced(shared_ts2, capsys):
    code, _, err = run_cli(
        capsys, "reproduce", "--scores", str(shared_ts2 / "released_scores.csv"),
        "--metadata", str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"),
    )
    assert code == 2
    assert "llmscore_over" in err and "'\"3'" in err and "--clean-quotes" in err


def test_meta_command_matches_library(shared_ts2, capsys):
    code, out, _ = run_cli(
        capsys, "meta", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
        "--column", "clipscore", "--json",
    )
    assert code == 0
    payload = json.loads(out)["clipscore"]
    md = pd.read_csv(shared_ts2 / "metadata.csv")
    direct = ts2_meta(pd.read_csv(shared_ts2 / "released_scores.csv")["clipscore"], md["id"], md["rank"])
    assert payload["rank"]["summary"]["avg"] == pytest.approx(direct.rank.summary["avg"], abs=1e-12)
    code, out, _ = run_cli(
        capsys, "meta", str(shared_ts2 / "released_scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
        "--column", "llmscore_ec", "--lower-is-better", "--variant", "official",
    )
    assert code == 0 and "llmscore_ec" in out and "rank:avg" in out


def test_meta_joins_on_key_columns(tmp_path, shared_ts2, capsys):
    md = pd.read_csv(shared_ts2 / "metadata.csv")
    scores = pd.DataFrame({"seg_id": md["id"], "file_name": md["file_name"], "mine": -md["rank"].str[0].astype(float)})
    shuffled = scores.sample(frac=1.0, random_state=0)
    shuffled.to_csv(tmp_path / "s.csv", index=False)
    code, out, _ = run_cli(capsys, "meta", str(tmp_path / "s.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
                           "--on", "seg_id", "file_name", "--json")
    assert code == 0
    per_seg = json.loads(out)["mine"]["rank"]["per_seg"]
    # a perfect metric: rank 1 on every SEG except SEG 103, whose images all sit on error-0 nodes (r := 0)
    assert {k: v for k, v in per_seg.items() if v != pytest.approx(1.0)} == {"103": 0.0}
    shuffled.iloc[:-1].to_csv(tmp_path / "short.csv", index=False)
    code, _, err = run_cli(capsys, "meta", str(tmp_path / "short.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
                           "--on", "seg_id", "file_name")
    assert code == 2 and "no score row" in err
    code, _, err = run_cli(capsys, "meta", str(tmp_path / "short.csv"), "--metadata", str(shared_ts2 / "metadata.csv"))
    assert code == 2 and "2839 rows but metadata has 2840" in err


def test_meta_errors_name_row_and_column(tmp_path, capsys):
    (tmp_path / "md.csv").write_text("id,target_prompt,file_name,image_source,rank\n0,a cat,a.jpg,x,0\n0,a cat,b.jpg,x,1\n")
    (tmp_path / "s.csv").write_text("score\n0.5\nabc\n")
    code, _, err = run_cli(capsys, "meta", str(tmp_path / "s.csv"), "--metadata", str(tmp_path / "md.csv"))
    assert code == 2 and "'abc'" in err and "position 1" in err
    (tmp_path / "md2.csv").write_text("id,target_prompt,file_name,image_source,rank\n0,a cat,a.jpg,x,0\n0,,b.jpg,x,1\n")
    code, _, err = run_cli(capsys, "meta", str(tmp_path / "s.csv"), "--metadata", str(tmp_path / "md2.csv"))
    assert code == 2 and "row 3: empty prompt" in err
    code, _, err = run_cli(capsys, "meta", str(tmp_path / "s.csv"), "--metadata", str(tmp_path / "md.csv"),
                           "--column", "nope")
    assert code == 2 and "['nope'] not found" in err


def test_console_script_is_installed():
    import shutil
    import subprocess

    exe = shutil.which("ts2")
    assert exe, "the ts2 console script is not on PATH (pip install -e .)"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
    assert "reproduce" in out and "meta" in out


def test_readme_reproduction_table_is_generated(shared_ts2, capsys):
    from pathlib import Path

    code, out, _ = run_cli(
        capsys, "reproduce", "--scores", str(shared_ts2 / "released_scores.csv"),
        "--metadata", str(shared_ts2 / "metadata.csv"), "--paper", str(shared_ts2 / "paper_table2.csv"),
        "--segs", "0-163", "--clean-quotes", "--markdown",
    )
    assert code == 0
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("<!-- reproduction:start -->\n", 1)[1].split("<!-- reproduction:end -->", 1)[0]
    assert block == out
