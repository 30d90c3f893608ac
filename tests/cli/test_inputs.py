"""Bad command-line values and bad input files: one line naming the argument,
file, line or key, exit 2, no traceback; checked up front, before any scoring, download or model load."""
from __future__ import annotations

import json
import os
import re
import socket

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err


def one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture()
def files(tmp_path, shared_ts2):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    return {"tmp": tmp_path, "file": plain, "metadata": shared_ts2 / "metadata.csv",
            "scores": shared_ts2 / "released_scores.csv"}


CASES = [
    # (argv with {placeholders}, the text the one line must hold)
    ("meta {scores} --metadata {metadata} --n-bootstrap -5", "argument --n-bootstrap: must be an integer from 0 to "
                                                            "100,000, got '-5'"),
    ("meta {scores} --metadata {metadata} --n-bootstrap 100000000", "argument --n-bootstrap"),
    ("meta {scores} --metadata {metadata} --segs 0-99999999999", "argument --segs: SEG range '0-99999999999' names "
                                                                 "more than 1,000,000 SEGs"),
    ("meta {scores} --metadata {metadata} --segs ０-5", "argument --segs: SEG range '０-5': cannot parse"),
    ("meta {scores} --metadata {metadata} --segs 9-3", "ends before it starts"),
    ("meta {tmp}/none.csv --metadata {metadata}", "argument SCORES: {tmp}/none.csv: no such file"),
    ("meta {tmp} --metadata {metadata}", "argument SCORES: {tmp} is a folder, not a file"),
    ("meta {scores} --metadata {tmp}/none.csv", "argument --metadata: {tmp}/none.csv: no such file"),
    ("reproduce --n-bootstrap -5", "argument --n-bootstrap"),
    ("report {scores} --metadata {metadata} --out {file}", "argument --out: {file} is a file; give a folder"),
    ("report {scores} --metadata {metadata} --out {tmp}/r --n-bootstrap -1", "argument --n-bootstrap"),
    ("report {tmp} --metadata {metadata} --out {tmp}/r", "argument scores: {tmp} is a folder"),
    ("score clip_score --out {tmp}", "argument --out: {tmp} is a folder; give a file name"),
    ("score clip_score --out {file}/scores.csv", "argument --out: {file}/scores.csv: {file} is a file, not a folder"),
    ("score clip_score --out {tmp}/s.csv --timeout inf", "argument --timeout: must be a number of seconds > 0"),
    ("score clip_score --out {tmp}/s.csv --timeout nan", "argument --timeout"),
    ("score clip_score --out {tmp}/s.csv --timeout 0", "argument --timeout"),
    ("score clip_score --out {tmp}/s.csv --batch-size 0", "argument --batch-size: must be an integer >= 1"),
    ("score clip_score --out {tmp}/s.csv --batch-size 1_000", "argument --batch-size"),
    ("score clip_score --out {tmp}/s.csv --num-workers -1", "argument --num-workers"),
    ("correlate {file} --human h --metric m --confidence 2", "argument --confidence"),
    ("correlate {file} --human h --metric m --n-bootstrap 100000000", "argument --n-bootstrap"),
    ("tifa-bench report {tmp} --out {tmp}/r --n-bootstrap -5", "argument --n-bootstrap"),
    ("tifa-bench report {tmp} --out {file}", "argument --out: {file} is a file"),
    ("answers-to-scores {tmp}/none.csv --questions tifa --out {tmp}/o.csv", "argument answers: {tmp}/none.csv: "
                                                                           "no such file"),
    ("answers-to-scores {file} --questions tifa --out {tmp}", "argument --out: {tmp} is a folder"),
    ("demo --port 70000", "argument --port: must be a port number from 1 to 65535"),
    ("demo --max-upload-mb inf", "argument --max-upload-mb: must be a number > 0 and <= 10,000, got 'inf'"),
    ("score clip_score --data-dir {tmp}/none --out {tmp}/s.csv", "argument --data-dir: {tmp}/none: no such folder"),
    ("meta {scores} --data-dir {file}", "argument --data-dir: {file} is a file, not a folder"),
    ("answers-to-scores {file} --questions tifa --data-dir {tmp}/none --out {tmp}/o.csv", "argument --data-dir"),
]


@pytest.mark.parametrize("argv, expected", CASES, ids=[c[0].split(" --")[-1][:40] for c in CASES])
def test_bad_arguments_are_one_line_naming_the_argument(capsys, files, argv, expected):
    code, err = run_cli(capsys, *[part.format(**files) for part in argv.split()])
    assert code == 2
    line = one_line(err)
    assert line.startswith("ts2 ") and ": error: " in line
    assert expected.format(**files) in line
    assert sorted(p.name for p in files["tmp"].iterdir()) == ["plain.txt"]  # refused up front: nothing written


def test_unwritable_out_is_refused_before_scoring(capsys, tmp_path):
    target = "/sys/ts2-test-scores.csv"  # sysfs refuses new files, even to root
    try:
        open(target, "w").close()
        os.remove(target)
        pytest.skip("/sys is writable here")
    except OSError:
        pass
    code, err = run_cli(capsys, "score", "clip_score", "--out", target)
    assert code == 2 and f"argument --out: {target}: cannot write in /sys" in one_line(err)
    code, err = run_cli(capsys, "report", tmp_path / "x.csv", "--metadata", tmp_path / "m.csv", "--out",
                        "/sys/ts2-report")
    assert code == 2 and "argument scores" in one_line(err)  # the first bad argument is named


def test_demo_port_in_use_names_port_not_an_environment_variable(capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        code, err = run_cli(capsys, "demo", "--port", port)
    line = one_line(err)
    assert code == 2 and f"--port {port}: cannot listen on 127.0.0.1:{port}" in line
    assert "pass another port, e.g. --port" in line and "GRADIO_SERVER_PORT" not in line


# ------------------------------------------------------------------------------------------------ input files


def test_a_csv_that_is_not_utf8_is_named(capsys, tmp_path, shared_ts2):
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("seg_id,file_name,clip\n0,caf\xe9.jpg,1\n".encode("latin-1"))
    code, err = run_cli(capsys, "meta", bad, "--metadata", shared_ts2 / "metadata.csv")
    assert code == 2 and f"{bad}: not UTF-8 text (byte b'\\xe9' at offset" in one_line(err)
    code, err = run_cli(capsys, "meta", shared_ts2 / "released_scores.csv", "--metadata", bad)
    assert code == 2 and f"{bad}: not UTF-8 text" in one_line(err)


@pytest.mark.parametrize("cell", ["１２", "1_000", "٣"])
def test_non_ascii_digits_and_underscores_are_not_numbers(cell):
    from scorers.checks import as_scores, integer_column

    with pytest.raises(ValueError, match="is not an integer"):
        integer_column(pd.Series(["1", cell]), "SEG id", lambda row: f"line {row + 2}")
    with pytest.raises(ValueError, match=f"non-numeric value\\(s\\): position 1: '{cell}'"):
        as_scores(["0.5", cell, "0.25"], name="clip")
    assert as_scores([" 12 ", "1e-3", "-0.5"]).tolist() == [12.0, 0.001, -0.5]  # plain ASCII numbers still pass


def _tifa_run(folder, info) -> None:
    folder.mkdir()
    pd.DataFrame({"text_id": ["t1", "t1"], "image": ["t1.png", "t1.png"], "source": ["coco", "coco"],
                  "question_id": [0, 1], "category": ["object", "color"], "correct": [True, False]}
                 ).to_csv(folder / "questions.csv", index=False)
    (folder / "run.json").write_text(info, encoding="utf-8")


@pytest.mark.parametrize("info, message", [
    ("[1, 2]", "expected a JSON object {...}, got list"),
    ("null", "expected a JSON object {...}, got null"),
    ('{"complete": "false"}', '"complete" must be true or false, got "false"'),
    ('{"complete": 0}', '"complete" must be true or false, got 0'),
    ("{oops", "not valid JSON"),
])
def test_run_json_must_be_an_object_with_a_boolean_complete(capsys, tmp_path, info, message):
    from scorers.tifa_bench.results import read_results

    _tifa_run(tmp_path / "model", info)
    with pytest.raises(ValueError) as caught:
        read_results(tmp_path / "model")
    assert str(caught.value).startswith(f"{tmp_path / 'model' / 'run.json'}: {message}")
    code, err = run_cli(capsys, "tifa-bench", "report", tmp_path / "model", "--out", tmp_path / "report")
    assert code == 2 and message in one_line(err)


def test_run_json_complete_false_is_incomplete(tmp_path):
    from scorers.tifa_bench.results import read_results

    _tifa_run(tmp_path / "a", '{"complete": false}')
    _tifa_run(tmp_path / "b", '{"complete": true}')
    _tifa_run(tmp_path / "c", '{"name": "c"}')
    assert [read_results(tmp_path / n).complete for n in "abc"] == [False, True, True]


def test_answers_rows_after_an_images_first_row_name_the_same_image(capsys, tmp_path):
    (tmp_path / "tifa_questions.csv").write_text(
        "id,prompt,question_id,question,choices,answer\n0,a cat,0,is there a cat?,no|yes,yes\n"
        "0,a cat,1,is the cat red?,no|yes,yes\n", encoding="utf-8")
    (tmp_path / "metadata.csv").write_text("id,target_prompt,file_name,image_source,rank\n"
                                           "0,a cat,images/000-00.jpg,SD,0\n", encoding="utf-8")
    raw = tmp_path / "raw.csv"
    raw.write_text("0,images/000-00.jpg,0,yes\n0,images/../../../etc/passwd,1,yes\n", encoding="utf-8")
    out = tmp_path / "out.csv"
    code, err = run_cli(capsys, "answers-to-scores", raw, "--questions", "tifa", "--data-dir", tmp_path,
                        "--out", out)
    assert code == 2 and not out.exists()
    assert (f"{raw}: line 2: image 'images/../../../etc/passwd' inside the answers of image 'images/000-00.jpg' "
            "(line 1;") in one_line(err)
    raw.write_text("0,images/000-00.jpg,0,yes\n0,images/000-00.jpg,1,no\n", encoding="utf-8")
    code, _ = run_cli(capsys, "answers-to-scores", raw, "--questions", "tifa", "--data-dir", tmp_path, "--out", out)
    assert code == 0 and pd.read_csv(out)["tifa"].tolist() == [0.5]  # 1 of 2 answers correct, by hand


def test_reward_weights_one_parser_for_serve_and_card():
    """``ts2 serve pickscore=1 hpsv2=0.5`` and ``ts2 card --reward pickscore=1,hpsv2=0.5`` read weights one way."""
    from scorers.cli._validate import reward_weights

    assert reward_weights(["pickscore=1", "hpsv2=0.5"], "reward") == {"pickscore": 1.0, "hpsv2": 0.5}
    assert reward_weights("pickscore, hpsv2=-0.25", "--reward") == {"pickscore": 1.0, "hpsv2": -0.25}
    for items, needle in ((["a=1", "a=2"], "reward: a given twice"), (["a=x"], "reward a=x: the weight 'x'"),
                          (["a=nan"], "reward a=nan: expected NAME=WEIGHT with a finite weight"),
                          (["=1"], "reward =1: expected NAME=WEIGHT"), ([""], "reward: expected NAME=WEIGHT")):
        with pytest.raises(ValueError, match=re.escape(needle)):
            reward_weights(items, "reward")


def test_models_by_name_one_parser_for_serve_and_card():
    """``--model`` for one or several scorers: ``ts2 serve`` and ``ts2 card --scorer`` read it one way."""
    from scorers.cli._validate import models_by_name

    assert models_by_name([], ["pickscore"], "rewards") == {}
    assert models_by_name(["/m/ps"], ["pickscore"], "rewards") == {"pickscore": "/m/ps"}
    assert models_by_name(["pickscore=/m/ps", "hpsv2=/m/h"], ["pickscore", "hpsv2"], "rewards") == {
        "pickscore": "/m/ps", "hpsv2": "/m/h"}
    with pytest.raises(ValueError, match=re.escape("--model /m/ps: with several rewards, give NAME=MODEL with NAME "
                                                   "one of pickscore, hpsv2")):
        models_by_name(["/m/ps"], ["pickscore", "hpsv2"], "rewards")
