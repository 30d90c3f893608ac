"""Duplicate (text, image, question) rows in `ts2 tifa-bench report` input are an error naming them
(three extra copies of one correct row moved Overall from 37.5 to 45.0 in the issue's sample)."""
import pytest

from scorers.cli import main
from tests.helpers.environment import skip_module_without

skip_module_without("matplotlib")

HEADER = "text_id,image,source,question_id,category,correct\n"
ROWS = [
    "coco_1,coco_1.png,coco,0,object,true",
    "coco_1,coco_1.png,coco,1,color,false",
    "coco_2,coco_2.png,coco,0,object,false",
    "coco_2,coco_2.png,coco,1,counting,false",
    "coco_2,coco_2.png,coco,2,object,true",
    "coco_2,coco_2.png,coco,3,shape,false",
]


def write(folder, rows):
    folder.mkdir()
    (folder / "questions.csv").write_text(HEADER + "\n".join(rows) + "\n")
    return folder


def test_clean_table_gives_the_hand_computed_overall(tmp_path, capsys):
    # by hand: coco_1 answers 1 of 2 questions (0.5), coco_2 1 of 4 (0.25); Overall = mean over texts = 37.5 %
    run = write(tmp_path / "m1", ROWS)
    assert main(["tifa-bench", "report", str(run), "--out", str(tmp_path / "r"), "--n-bootstrap", "0"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| m1 |"))
    assert row.rstrip(" |").endswith("37.5")


def test_duplicate_question_rows_are_refused_naming_them(tmp_path, capsys):
    run = write(tmp_path / "m1", ROWS + [ROWS[4]] * 3)  # three extra copies of one correct row
    assert main(["tifa-bench", "report", str(run), "--out", str(tmp_path / "r"), "--n-bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert ("1 duplicate (text_id, image, question_id) key(s): (text_id='coco_2', image='coco_2.png', "
            "question_id='2') on lines 6, 8, 9, 10") in err
    assert not (tmp_path / "r").exists()
