"""A TIFA v1.0 scoring run killed by SIGKILL mid-run resumes without re-asking any finished image's questions.

Run as ``python -m tests.tifa_bench.test_killed_run DATA IMAGES OUT KILL_AFTER`` it is the run that gets killed: the
scripted VQA backend SIGKILLs its own process during answer call KILL_AFTER + 1 (a batch in flight), the way an OOM
killer or a pre-empted node would.
"""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

from tests.helpers.tifa_v1_files import ANSWERS_A, QUESTIONS, ScriptedVQA, matcher, write_images, write_tifa_files

ROOT = Path(__file__).resolve().parents[2]


def _score(data, images, out, backend):
    from scorers.tifa_bench.tifa_v1_files import load_tifa_v1
    from scorers.tifa_bench.image_scoring import score_images

    bench = load_tifa_v1(Path(data) / "tifa_v1.0_text_inputs.json", Path(data) / "tifa_v1.0_question_answers.json")
    return score_images(bench, images, out, backend=backend, scorer_options={"matcher": matcher()}, batch_size=1,
                        num_workers=0, progress=False)


def test_sigkill_then_resume_asks_only_unfinished(tmp_path):
    data, images, out = write_tifa_files(tmp_path / "tifa").__getitem__(0).parent, write_images(tmp_path / "imgs"), \
        tmp_path / "A"
    killed = subprocess.run([sys.executable, "-m", "tests.tifa_bench.test_killed_run", str(data), str(images),
                             str(out), "2"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (out / "questions.csv").exists()  # nothing reported as complete

    backend = ScriptedVQA(ANSWERS_A)
    run = _score(data, images, out, backend)
    # items in order: coco_1, coco_2/0, coco_2/1, drawbench_5, paintskill_7; one image per batch, so the two
    # first batches (coco_1: 3 questions, coco_2/0: 2) finished before the kill and are not asked again
    expected = [q[1] for q in QUESTIONS if q[0] == "coco_2"] + [q[1] for q in QUESTIONS
                                                                 if q[0] in ("drawbench_5", "paintskill_7")]
    assert backend.asked == expected and run.info["computed_now"] == 3
    uninterrupted = _score(data, images, tmp_path / "fresh", ScriptedVQA(ANSWERS_A))
    pd.testing.assert_frame_equal(run.questions, uninterrupted.questions)


if __name__ == "__main__":
    data_dir, image_dir, out_dir, kill_after = sys.argv[1:5]
    _score(data_dir, image_dir, out_dir, ScriptedVQA(ANSWERS_A, kill_after=int(kill_after)))
