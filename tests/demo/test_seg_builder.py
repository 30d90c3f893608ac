"""The demo's Build a SEG tab in headless Debian Chromium (Playwright), and the Real procedure end to end.

The app runs in-process on 127.0.0.1 with the shared release tables and the ANNOTATIONS file of the Real procedure:
two prompts, 14 images each (two pages of the tab), with empty errors, written by ``ts2 seg generate --real 14`` and a
tiny random diffusers pipeline. A person's ticks are made in the page; what the tests expect comes from the file on
disk, hand-written node labels, and scipy on the scores planted for the built data dir. Screenshots go to
``artifacts/demo/`` (gitignored).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.demo_browser import ARTIFACTS, CHROMIUM, REPO, TIMEOUT_MS, dataframe_rows, leaderboard_page, served_app

from scorers.demo import AppConfig
from scorers.demo.seg_builder.annotations import SegAnnotations
from scorers.demo.seg_builder.tab import SLOTS
from scorers.demo.seg_builder.side_files import read_plan_elements, read_review
from scorers.errors import ParameterError

#: the Real procedure's prompts (SEG ids 0, 1) and images per prompt: more than one page of the tab
REAL_PROMPTS = ["a red dog on a blue sofa", "a cat under a green umbrella"]
N_REAL = 14
SAVE_TIMEOUT_S = 30.0
#: `ts2 seg generate`'s image settings in the tests (a tiny pipeline, two steps)
GENERATE_CALL = ["--steps", "2", "--guidance-scale", "3", "--height", "32", "--width", "32"]


def _name(seg_id: int, k: int) -> str:
    """The k-th image of a SEG, as `ts2 seg generate --real` names it (relative to its --out folder)."""
    return f"seg{seg_id}/real/{k}.png"


def _generate_real_rows(out: Path, pipeline: Path) -> Path:
    """`ts2 seg generate PROMPTS --pipeline P --real 14 --out OUT` (the Real procedure's first step)."""
    prompts = out.parent / "prompts.txt"
    prompts.write_text("\n".join(REAL_PROMPTS) + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "scorers.cli", "seg", "generate", str(prompts), "--pipeline",
                          str(pipeline), "--real", str(N_REAL), "--out", str(out), "--no-progress", *GENERATE_CALL],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    return out / "real_annotations.csv"


@pytest.fixture(scope="module")
def real_rows(tmp_path_factory, pipeline_dir) -> tuple[Path, Path]:  # noqa: F811
    """(ANNOTATIONS, images folder) of the Real procedure before annotation."""
    out = tmp_path_factory.mktemp("real") / "generated"
    out.mkdir()
    annotations = _generate_real_rows(out, Path(pipeline_dir))
    rows = pd.read_csv(annotations, dtype=str, keep_default_na=False)
    assert rows["file_name"].tolist() == [_name(s, k) for s in range(2) for k in range(N_REAL)]
    assert set(rows["errors"]) == {""}
    return annotations, out


@pytest.fixture(scope="module")
def extras_installed():
    """gradio and playwright are test dependencies: missing is a broken install, not a skip."""
    import gradio  # noqa: F401
    from playwright import sync_api  # noqa: F401


@pytest.fixture(scope="module")
def seg_env(real_rows, shared_ts2):
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium (/usr/bin/chromium) is not installed")
    annotations, images = real_rows
    config = AppConfig.resolve(
        metadata=shared_ts2 / "metadata.csv",
        scores_csv=shared_ts2 / "released_scores.csv",
        paper_table=shared_ts2 / "paper_table2.csv",
        annotations=annotations,
        seg_images=images,
    )
    with served_app(config) as url:
        yield {"url": url, "annotations": annotations, "images": images}


@pytest.fixture(scope="module")
def page(seg_env, extras_installed):
    with leaderboard_page(seg_env["url"]) as tab:
        _open_tab(tab)
        yield tab


# ---------------------------------------------------------------------------------------------------------------------
# the tab's logic without a browser: plan, review list, error types, saves
# ---------------------------------------------------------------------------------------------------------------------

#: a Synth SEG as `ts2 seg generate` writes it: designed error sets and their types (plus columns the tab keeps)
SYNTH_ROWS = """seg_id,prompt,file_name,errors,error_types,image_source,seed
3,a red dog on a sofa,a.png,,,tiny,1
3,a red dog on a sofa,b.png,dog,missing,tiny,2
3,a red dog on a sofa,c.png,red,attribute,tiny,3
3,a red dog on a sofa,d.png,dog,missing,tiny,4
"""
#: the plan of that SEG, in `ts2 seg plan`'s layout (entity = a missing error)
PLAN = {"version": 1, "segs": [{"seg_id": 3, "prompt": "a red dog on a sofa",
                                "elements": [{"label": "dog", "name": "dog", "type": "entity", "of": []},
                                             {"label": "red", "name": "red", "type": "attribute", "of": ["dog"]},
                                             {"label": "sofa", "name": "sofa", "type": "entity", "of": []}],
                                "nodes": [{"errors": [], "prompt": "a red dog on a sofa"},
                                          {"errors": ["dog"], "prompt": "a sofa"}]}]}
#: `ts2 seg check`'s review list: d.png disagrees most, c.png less, a.png agrees (listed with --all)
REVIEW = """seg_id,file_name,errors,disagreements,confidence,details,answers
3,d.png,dog,1,0.9,"dog: designed missing, judge says yes",{}
3,c.png,red,1,0.4,"red: designed missing, judge says yes",{}
3,a.png,,0,0.0,,{}
"""


@pytest.fixture()
def synth(tmp_path):
    from PIL import Image

    for k, name in enumerate("abcd"):
        Image.new("RGB", (8, 8), (60 * k, 0, 0)).save(tmp_path / f"{name}.png")
    (tmp_path / "annotations.csv").write_text(SYNTH_ROWS)
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    (tmp_path / "review.csv").write_text(REVIEW)
    return tmp_path


def test_plan_elements_and_review_order(synth):
    book = SegAnnotations(synth / "annotations.csv", synth, plan=synth / "plan.json", review=synth / "review.csv")
    assert book.elements("3") == ["dog", "red", "sofa"]  # the plan's order; 'sofa' is used by no image yet
    assert book.types() == {"dog": "missing", "red": "attribute", "sofa": "missing"}
    rows = book.rows("3")
    assert list(rows["file_name"]) == ["d.png", "c.png", "a.png", "b.png"]  # the judge's disagreements first
    assert rows["note"].iloc[0] == "dog: designed missing, judge says yes" and rows["note"].iloc[2] == ""
    nodes = book.nodes("3")
    assert dict(zip(nodes["file_name"], nodes["node"])) == {"a.png": "0", "b.png": "1a", "c.png": "1b", "d.png": "1a"}


def test_a_tick_is_saved_with_its_type_and_other_columns_kept(synth):
    path = synth / "annotations.csv"
    book = SegAnnotations(path, synth, plan=synth / "plan.json")
    assert book.set_errors("3", "a.png", ["sofa", "dog"]) == ["dog", "sofa"]  # element order
    saved = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(saved.columns) == ["seg_id", "prompt", "file_name", "errors", "error_types", "image_source", "seed",
                                   "reviewed"]
    assert saved.loc[0, ["errors", "error_types", "seed", "reviewed"]].tolist() == ["dog;sofa", "missing;missing",
                                                                                    "1", "yes"]
    assert saved.loc[2, ["errors", "error_types", "reviewed"]].tolist() == ["red", "attribute", ""]
    assert book.confirm("3", ["c.png", "d.png"]) == 2  # designed sets confirmed as they are
    saved = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert saved["reviewed"].tolist() == ["yes", "", "yes", "yes"] and saved["errors"].tolist()[2:] == ["red", "dog"]
    assert not list(synth.glob(".annotations*"))  # no temporary file left beside it


def test_refusals_are_one_line(synth, tmp_path):
    book = SegAnnotations(synth / "annotations.csv", synth)
    with pytest.raises(ValueError, match="'cat' is not an element of SEG 3"):
        book.set_errors("3", "a.png", ["cat"])
    with pytest.raises(ValueError, match="unknown SEG id '9'"):
        book.set_errors("9", "a.png", [])
    with pytest.raises(ValueError, match="SEG 3 has no image 'z.png'"):
        book.set_errors("3", "z.png", [])
    with pytest.raises(ValueError, match="';' separates errors"):
        book.add_element("3", "dog;cat")
    with pytest.raises(ValueError, match="already has the element 'dog'"):
        book.add_element("3", "dog")
    with pytest.raises(ValueError, match="pick its error type"):  # the file's errors are typed
        book.add_element("3", "sofa")
    assert book.add_element("3", "sofa", "missing") == ["dog", "red", "sofa"]
    bad = tmp_path / "bad.csv"
    bad.write_text("seg_id,prompt,file_name\n0,a dog,x.png\n")
    with pytest.raises(ParameterError, match=r"^annotations='.*bad.csv': no errors column"):
        SegAnnotations(bad, synth)
    with pytest.raises(ParameterError, match="^seg_images='.*nowhere': the images folder does not exist"):
        SegAnnotations(synth / "annotations.csv", tmp_path / "nowhere")
    (tmp_path / "plan.json").write_text("{not json")
    with pytest.raises(ParameterError, match="^seg_plan='.*plan.json': not a plan file"):
        read_plan_elements(tmp_path / "plan.json")
    (tmp_path / "review.csv").write_text("seg_id,image\n3,a.png\n")
    with pytest.raises(ParameterError, match="^seg_review='.*review.csv': no file_name column"):
        read_review(tmp_path / "review.csv")


def test_real_rows_without_types_drop_the_empty_column(tmp_path):
    """`generate --real` writes an empty error_types column: untyped ticks leave it out (ts2 seg build would refuse
    errors without types), and the built data dir reads back."""
    from PIL import Image

    from scorers.ts2.seg.build import build_seg_dir

    for name in ("x.png", "y.png"):
        Image.new("RGB", (8, 8), (0, 0, 0) if name == "x.png" else (255, 255, 255)).save(tmp_path / name)
    path = tmp_path / "real_annotations.csv"
    path.write_text("seg_id,prompt,file_name,errors,error_types\n0,a cat,x.png,,\n0,a cat,y.png,,\n")
    book = SegAnnotations(path, tmp_path)
    book.add_element("0", "cat")
    book.set_errors("0", "y.png", ["cat"])
    saved = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(saved.columns) == ["seg_id", "prompt", "file_name", "errors", "reviewed"]
    assert saved["errors"].tolist() == ["", "cat"]
    built = build_seg_dir(path, images=tmp_path, out=tmp_path / "out")
    assert (built.n_segs, built.n_images) == (1, 2)


def test_a_file_changed_on_disk_is_read_again(synth):
    path = synth / "annotations.csv"
    book = SegAnnotations(path, synth)
    time.sleep(0.01)
    path.write_text(SYNTH_ROWS.replace("3,a red dog on a sofa,a.png,,,tiny,1", "3,a red dog on a sofa,a.png,red,"
                                                                               "attribute,tiny,1"))
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))  # a later stamp, whatever the clock
    book.refresh()  # what each view and change of the tab does first
    assert book.nodes("3")["node"].tolist()[0] == "1b"
    book.set_errors("3", "b.png", ["dog", "red"])  # a change keeps the other editor's save
    saved = pd.read_csv(path, dtype=str, keep_default_na=False)["errors"].tolist()
    assert saved == ["red", "red;dog", "red", "dog"]  # labels in their first use's order


def test_open_upload_places_images_by_path_and_refuses_a_zip_that_escapes(tmp_path):
    from PIL import Image

    from scorers.demo.seg_builder.upload import missing_images, open_upload

    for name in ("a.png", "b.png"):
        Image.new("RGB", (8, 8), (0, 0, 0) if name == "a.png" else (255, 0, 0)).save(tmp_path / name)
    csv = tmp_path / "mine.csv"
    csv.write_text("seg_id,prompt,file_name,errors\n0,a dog,seg0/real/a.png,\n0,a dog,seg0/real/b.png,dog\n"
                   "0,a dog,seg0/real/c.png,\n")
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.write(tmp_path / "a.png", "export/seg0/real/a.png")  # one folder more than file_name: found by suffix
    # b.png: a single uploaded file, found by its name
    book = open_upload(csv, [archive, tmp_path / "b.png"], work=tmp_path / "work")
    assert book.uploaded and book.path.name == "mine.csv" and book.path.parent == book.images
    assert (book.images / "seg0/real/a.png").read_bytes() == (tmp_path / "a.png").read_bytes()
    assert (book.images / "seg0/real/b.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert missing_images(book) == ["seg0/real/c.png"]
    uploaded = csv.read_text()
    book.set_errors("0", "seg0/real/a.png", ["dog"])  # saved in the working copy, not in the upload
    assert "seg0/real/a.png,dog,yes" in book.path.read_text() and csv.read_text() == uploaded

    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zipped:
        zipped.writestr("../../outside.png", b"x")
    with pytest.raises(ValueError, match="evil.zip: member '../../outside.png' would land outside the folder"):
        open_upload(csv, [evil], work=tmp_path / "w2")
    (tmp_path / "fake.zip").write_text("not a zip")
    with pytest.raises(ValueError, match="fake.zip: not a zip file"):
        open_upload(csv, [tmp_path / "fake.zip"], work=tmp_path / "w3")
    with pytest.raises(ValueError, match="mine.csv: the file is .* the limit is"):
        open_upload(csv, [], max_bytes=10)


def test_a_file_name_outside_the_images_folder_is_refused_by_the_tab_the_upload_and_the_build(synth,
                                                                                              tmp_path_factory):
    """Before: an uploaded row naming a server file (absolute, ``../``) opened, and **Build data dir** copied that
    file into ``seg_data.zip``. Each path is resolved inside the images folder; a row outside it is one line."""
    from scorers.demo.seg_builder.upload import open_upload

    tmp_path = tmp_path_factory.mktemp("server")  # outside synth, the images folder
    secret = tmp_path / "server_secret.png"
    secret.write_bytes((synth / "a.png").read_bytes() + b"server-secret")
    (synth / "out.png").symlink_to(secret)
    head = "seg_id,prompt,file_name,errors\n3,a dog,a.png,\n"
    for name in (str(secret), f"../{tmp_path.name}/server_secret.png", "out.png"):
        (synth / "escape.csv").write_text(f"{head}3,a dog,{name},dog\n")
        with pytest.raises(ParameterError, match=rf"^annotations='.*escape.csv': row 3: file_name "
                                                 rf"{re.escape(repr(name))} lies outside the images folder$"):
            SegAnnotations(synth / "escape.csv", synth)  # the demo's own file (--annotations, --images)
    upload = tmp_path / "upload.csv"
    for name in (str(secret), "../server_secret.png"):  # the working folder is tmp_path / "work"
        upload.write_text(f"{head}3,a dog,{name},dog\n")
        with pytest.raises(ValueError, match=rf"upload.csv': row 3: file_name {re.escape(repr(name))} lies outside "
                                             "the images folder$"):
            open_upload(upload, [synth / "a.png"], work=tmp_path / "work")
    # a file changed on disk after it was opened: the build reads it again and refuses, and no zip is made
    path = synth / "annotations.csv"
    book = SegAnnotations(path, synth)
    path.write_text(SYNTH_ROWS + f"3,a red dog on a sofa,{secret},red,attribute,tiny,5\n")
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    with pytest.raises(ValueError, match="row 6: file_name .* lies outside the images folder"):
        book.build(tmp_path / "built")
    assert not (tmp_path / "built" / "seg_data.zip").exists()


def test_an_element_with_a_control_character_is_refused(synth):
    """Before: ``dog\x1fred`` was added, saved, and read by ``ts2 seg build`` as the two errors {dog, red}."""
    book = SegAnnotations(synth / "annotations.csv", synth)
    with pytest.raises(ValueError, match=r"element 'dog\\x1fred' holds a control character"):
        book.add_element("3", "dog\x1fred", "missing")


def test_one_file_under_two_spellings_is_listed_twice(synth):
    """Before: ``a.png`` and ``.//a.png`` (or ``x/../a.png``) in one SEG were two images."""
    for spelling in (".//a.png", "x/../a.png", "absolute"):
        name = str(synth / "a.png") if spelling == "absolute" else spelling
        (synth / "twice.csv").write_text(f"seg_id,prompt,file_name,errors\n3,a dog,a.png,\n3,a dog,{name},dog\n")
        with pytest.raises(ParameterError, match=rf"row 3: file_name {re.escape(repr(name))} is listed twice in SEG 3"):
            SegAnnotations(synth / "twice.csv", synth)


def _tab_texts(config: AppConfig) -> list[str]:
    """The Markdown texts of the app built for ``config`` (no browser)."""
    from scorers.demo import build_app

    demo = build_app(config)
    values = [c.get("props", {}).get("value") for c in demo.get_config_file()["components"]]
    return [v for v in values if isinstance(v, str)]


def test_tab_without_a_file_says_how_to_open_one_and_a_bad_file_is_one_line(shared_ts2, tmp_path):
    tables = {"metadata": shared_ts2 / "metadata.csv", "scores_csv": shared_ts2 / "released_scores.csv"}
    texts = _tab_texts(AppConfig.resolve(**tables))
    assert any(t.startswith("*No ANNOTATIONS file is open.*") and "ts2 demo --annotations" in t for t in texts)
    bad = tmp_path / "bad.csv"
    bad.write_text("seg_id,prompt\n0,a dog\n")
    texts = _tab_texts(AppConfig.resolve(**tables, annotations=bad, seg_images=tmp_path))
    assert f"**Error:** annotations='{bad}': no file_name column (an ANNOTATIONS file has seg_id, prompt, file_name, " \
           "errors)" in texts


def test_demo_flags_and_space_variables_name_the_files(synth, capsys):
    from scorers.cli import main
    from tests.helpers.environment import free_port

    port = str(free_port())
    assert main(["demo", "--port", port, "--annotations", str(synth / "missing.csv")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--annotations {synth / 'missing.csv'}: no such file")
    assert main(["demo", "--port", port, "--images", str(synth)]) == 2
    assert "--images: give --annotations too" in capsys.readouterr().err
    (synth / "bad.csv").write_text("seg_id,prompt\n0,a dog\n")  # read before the app starts, worded as its flag
    assert main(["demo", "--port", port, "--annotations", str(synth / "bad.csv")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--annotations {synth / 'bad.csv'}: no file_name column (an "
                                                    "ANNOTATIONS file has seg_id, prompt, file_name, errors)")
    config = AppConfig.from_env({"TS2_ANNOTATIONS": str(synth / "annotations.csv"), "TS2_SEG_IMAGES": str(synth),
                                 "TS2_SEG_PLAN": str(synth / "plan.json")})
    assert (config.annotations, config.seg_images, config.seg_plan, config.seg_review) == (
        synth / "annotations.csv", synth, synth / "plan.json", None)


# ---------------------------------------------------------------------------------------------------------------------
# page helpers
# ---------------------------------------------------------------------------------------------------------------------


def _open_tab(page) -> None:
    """The Build a SEG tab, once its page load has filled the first image slot."""
    page.get_by_role("tab", name="Build a SEG").click()
    page.wait_for_function("() => document.querySelectorAll('#segb-nodes [role=gridcell]').length > 0")
    page.wait_for_selector("#segb-errors-0", state="visible")


def _status(page) -> str:
    return page.locator("#segb-status").inner_text()


def _wait_status(page, *needles: str) -> str:
    page.wait_for_function(
        "(needles) => { const t = document.querySelector('#segb-status')?.innerText ?? '';"
        " return needles.some(n => t.includes(n)); }", arg=list(needles))
    return _status(page)


def _slot_shows(page, slot: int, file_name: str) -> bool:
    return f"{file_name} · node" in page.locator(f"#segb-errors-{slot}").inner_text()


def _pick_seg(page, seg_id: int) -> None:
    """Show SEG ``seg_id``, first page (its first image's name in the node table and slot 0 say the view is there)."""
    first = _name(seg_id, 0)
    rows = dataframe_rows(page, "segb-nodes")
    if rows and rows[0][0] == first and _slot_shows(page, 0, first):
        return
    page.locator("#segb-pick input[role=combobox]").click()
    page.get_by_role("option", name=f"SEG {seg_id}:").click()
    page.wait_for_function(
        "(f) => document.querySelector('#segb-nodes [role=gridcell]')?.innerText.trim() === f"
        " && (document.querySelector('#segb-errors-0')?.innerText ?? '').includes(f + ' · node')", arg=first)


def _show_page(page, shown: list[str], index: int) -> None:
    """The tab's page holding the ``index``-th image of the SEG shown (``shown``: the SEG's images in order)."""
    start = index // SLOTS * SLOTS
    if _slot_shows(page, 0, shown[start]):
        return
    page.locator("#segb-page input[role=combobox]").click()
    page.get_by_role("option", name=f"images {start + 1}-").click()
    page.wait_for_function(
        "(f) => (document.querySelector('#segb-errors-0')?.innerText ?? '').includes(f + ' · node')", arg=shown[start])


def _saved_errors(annotations: Path, file_name: str) -> set[str]:
    frame = pd.read_csv(annotations, dtype=str, keep_default_na=False)
    return {e for e in frame.loc[frame["file_name"] == file_name, "errors"].iloc[0].split(";") if e}


def _wait_saved(annotations: Path, file_name: str, wanted: set[str]) -> None:
    """Wait until the file on disk holds ``wanted`` for the image (the tab saves each tick)."""
    deadline = time.monotonic() + SAVE_TIMEOUT_S
    while _saved_errors(annotations, file_name) != wanted:
        if time.monotonic() > deadline:
            raise AssertionError(f"{file_name}: saved {_saved_errors(annotations, file_name)}, expected {wanted}")
        time.sleep(0.1)


def _add_element(page, name: str) -> None:
    page.locator("#segb-new-element textarea, #segb-new-element input").first.fill(name)
    page.locator("#segb-add").click()
    _wait_status(page, f"Added the element {name} ", f"already has the element '{name}'")


def _annotate(page, annotations: Path, seg_id: int, wanted: dict[int, set[str]]) -> None:
    """Tick (and untick) in the page until image k of the SEG has the error set ``wanted[k]``, checking each save on
    disk."""
    _pick_seg(page, seg_id)
    for element in sorted(set().union(*wanted.values())):
        _add_element(page, element)
    shown = [row[0] for row in dataframe_rows(page, "segb-nodes")]
    for k, errors in sorted(wanted.items()):
        file_name = _name(seg_id, k)
        index = shown.index(file_name)
        current = _saved_errors(annotations, file_name)
        if current == errors:
            continue
        _show_page(page, shown, index)
        box = page.locator(f"#segb-errors-{index % SLOTS}")
        for element in sorted(current ^ errors):
            current = current ^ {element}
            tick = box.get_by_label(element, exact=True)
            tick.check() if element in current else tick.uncheck()
            _wait_saved(annotations, file_name, current)


def _wait_nodes(page, expected: dict[str, str]) -> None:
    page.wait_for_function(
        "(want) => { const cells = [...document.querySelectorAll('#segb-nodes [role=gridcell]')];"
        " const rows = {}; for (const c of cells) { (rows[c.dataset.row] ??= {})[c.dataset.col] = c.innerText.trim(); }"
        " return Object.entries(want).every(([f, n]) => Object.values(rows).some(r => r[0] === f && r[2] === n)); }",
        arg=expected)


# ---------------------------------------------------------------------------------------------------------------------
# tests (in file order: the module shares one page and one ANNOTATIONS file)
# ---------------------------------------------------------------------------------------------------------------------


def test_unannotated_build_is_refused_in_one_line(page):
    """Rows straight from `generate --real` (no errors yet): the builder refuses them, said in one status line."""
    page.locator("#segb-build").click()
    status = _wait_status(page, "Error")
    assert "\n" not in status.strip() and "Traceback" not in page.content(), status
    assert "Built" not in status


def test_tick_reload_and_the_ticks_are_still_there(page, seg_env):
    annotations = seg_env["annotations"]
    _annotate(page, annotations, 0, {1: {"dog"}, 13: {"dog"}})  # image 13 is on the second page
    assert _saved_errors(annotations, _name(0, 1)) == {"dog"} == _saved_errors(annotations, _name(0, 13))
    _wait_status(page, f"Saved {_name(0, 13)}: dog")

    page.reload()
    page.wait_for_selector("#leaderboard [data-testid='cell-0-1']")
    _open_tab(page)
    _pick_seg(page, 0)
    page.wait_for_function("() => [...document.querySelectorAll('#segb-errors-1 input[type=checkbox]')]"
                           ".some(i => i.checked)")
    assert page.locator("#segb-errors-1").get_by_label("dog", exact=True).is_checked()
    assert not page.locator("#segb-errors-0").get_by_label("dog", exact=True).is_checked()  # image 0: no tick
    page.screenshot(path=str(ARTIFACTS / "seg_builder_reloaded.png"), full_page=True)
    shown = [row[0] for row in dataframe_rows(page, "segb-nodes")]
    _show_page(page, shown, 13)
    assert page.locator(f"#segb-errors-{13 % SLOTS}").get_by_label("dog", exact=True).is_checked()


def test_node_labels_update_as_one_ticks(page, seg_env):
    annotations = seg_env["annotations"]
    wanted = {k: set() for k in range(N_REAL)} | {1: {"dog"}, 2: {"red"}}
    _annotate(page, annotations, 0, wanted)
    # {} -> 0; {dog} and {red}: two sets of one error, lettered by their sorted tuples ('dog' < 'red')
    _wait_nodes(page, {_name(0, 0): "0", _name(0, 1): "1a", _name(0, 2): "1b", _name(0, 13): "0"})
    _show_page(page, [_name(0, k) for k in range(N_REAL)], 0)
    assert "node 1b" in page.locator("#segb-errors-2").inner_text()

    _annotate(page, annotations, 0, {2: {"dog", "red"}})
    # now {dog} is the only one-error set (no letter) and {dog, red} is node 2
    _wait_nodes(page, {_name(0, 1): "1", _name(0, 2): "2", _name(0, 3): "0"})
    _show_page(page, [_name(0, k) for k in range(N_REAL)], 0)
    assert "node 1 " in page.locator("#segb-errors-1").inner_text()
    assert "node 2" in page.locator("#segb-errors-2").inner_text()
    summary = page.locator("#segb-summary").inner_text()
    assert f"{N_REAL} images in 3 node(s)" in summary and "2 edge(s)" in summary, summary


def test_confirm_marks_the_shown_images_reviewed(page, seg_env):
    """Reviewing designed sets: Confirm keeps each image's set and marks those on the page reviewed."""
    _pick_seg(page, 1)
    before = pd.read_csv(seg_env["annotations"], dtype=str, keep_default_na=False)
    page.locator("#segb-confirm").click()
    _wait_status(page, f"Confirmed {SLOTS} image(s) of SEG 1")
    after = pd.read_csv(seg_env["annotations"], dtype=str, keep_default_na=False)
    assert after["errors"].tolist() == before["errors"].tolist()
    assert after.loc[after["seg_id"] == "1", "reviewed"].tolist() == ["yes"] * SLOTS + [""] * (N_REAL - SLOTS)
    page.wait_for_function("() => (document.querySelector('#segb-errors-0')?.innerText ?? '').includes('reviewed')")
    assert f"{SLOTS} of {N_REAL} reviewed" in page.locator("#segb-summary").inner_text()


def _expected_meta(metadata: pd.DataFrame, scores: np.ndarray) -> dict[str, float]:
    """rank / sep / delta (avg over SEGs, paper definitions of docs/judge-a-metric.md) with scipy, by hand: one walk
    per SEG here (one node per error level), so rank is -Spearman over the SEG's images; sep the mean KS statistic over
    node pairs of different error counts; delta the mean difference of node means one error apart over the population
    std of every evaluated score."""
    from scipy import stats

    frame = metadata.assign(score=scores, errors=metadata["rank"].str.extract(r"^(\d+)")[0].astype(int))
    std = float(np.std(frame["score"]))
    rank, sep, delta = [], [], []
    for _, seg in frame.groupby("id"):
        rank.append(-stats.spearmanr(seg["errors"], seg["score"]).statistic)
        nodes = {node: group for node, group in seg.groupby("rank")}
        pairs = [(a, b) for a in nodes for b in nodes if nodes[a]["errors"].iloc[0] < nodes[b]["errors"].iloc[0]]
        sep.append(np.mean([stats.ks_2samp(nodes[a]["score"], nodes[b]["score"]).statistic for a, b in pairs]))
        delta.append(np.mean([(nodes[a]["score"].mean() - nodes[b]["score"].mean()) / std for a, b in pairs
                              if nodes[b]["errors"].iloc[0] - nodes[a]["errors"].iloc[0] == 1]))
    return {"rank": float(np.mean(rank)), "sep": float(np.mean(sep)), "delta": float(np.mean(delta))}


#: the Real path's annotation, image k of each SEG -> its error set: SEG 0 a chain 0 -> {dog} -> {dog, red}; SEG 1 a
#: chain 0 -> {cat} -> {cat, green} -> {cat, green, umbrella}
REAL_ANNOTATION = {
    0: {k: set() if k < 6 else {"dog"} if k < 10 else {"dog", "red"} for k in range(N_REAL)},
    1: {k: set() if k < 5 else {"cat"} if k < 8 else {"cat", "green"} if k < 11 else {"cat", "green", "umbrella"}
        for k in range(N_REAL)},
}
#: node label of each image, by hand (one set per error count: no letters)
REAL_NODES = {0: ["0"] * 6 + ["1"] * 4 + ["2"] * 4, 1: ["0"] * 5 + ["1"] * 3 + ["2"] * 3 + ["3"] * 3}


def _planted(seg_id: int, k: int) -> float:
    """The planted metric: falls with the error count, with a seeded jitter that swaps some images across levels."""
    errors = len(REAL_ANNOTATION[seg_id][k])
    return round(1.0 - 0.25 * errors + float(np.random.default_rng(100 * seg_id + k).normal(0, 0.12)), 4)


def test_real_path_generate_annotate_build_meta(page, seg_env, tmp_path):
    """Issue 35, the Real path: `generate --real` rows -> annotate in the tab -> Build (download the zip; `ts2 seg
    build` on the saved file gives the same metadata) -> ts2 meta on planted scores gives the rank / sep / delta scipy
    computes on the same nodes, to 1e-9."""
    annotations = seg_env["annotations"]
    for seg_id, wanted in REAL_ANNOTATION.items():
        _annotate(page, annotations, seg_id, wanted)
    _wait_nodes(page, {_name(1, 0): "0", _name(1, 5): "1", _name(1, 8): "2", _name(1, 13): "3"})
    page.screenshot(path=str(ARTIFACTS / "seg_builder_annotated.png"), full_page=True)

    page.locator("#segb-build").click()
    status = _wait_status(page, "Built", "Error")
    assert status.startswith(f"Built 2 SEG(s), {2 * N_REAL} images"), status
    with page.expect_download() as download:
        page.locator("#segb-download a").first.click()
    archive = tmp_path / "seg_data.zip"
    download.value.save_as(archive)
    with zipfile.ZipFile(archive) as opened:
        opened.extractall(tmp_path)
    data_dir = tmp_path / "seg_data"
    metadata = pd.read_csv(data_dir / "metadata.csv", dtype=str, keep_default_na=False)
    assert len(metadata) == 2 * N_REAL and sorted(set(metadata["id"])) == ["0", "1"]
    # the builder renames the images: tell which is which by their bytes (each generated image is distinct)
    source_of = {(seg_env["images"] / _name(s, k)).read_bytes(): (s, k) for s in range(2) for k in range(N_REAL)}
    assert len(source_of) == 2 * N_REAL
    sources = [source_of[(data_dir / f).read_bytes()] for f in metadata["file_name"]]
    # the nodes the builder wrote are those ticked
    assert {source: node for source, node in zip(sources, metadata["rank"])} == {
        (s, k): REAL_NODES[s][k] for s in range(2) for k in range(N_REAL)}

    # the ANNOTATIONS file the tab saved builds the same data dir with `ts2 seg build` itself
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "scorers.cli", "seg", "build", str(annotations), "--images",
                          str(seg_env["images"]), "--out", str(tmp_path / "cli_build")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "cli_build" / "metadata.csv").read_text() == (data_dir / "metadata.csv").read_text()

    scores = np.array([_planted(s, k) for s, k in sources])
    table = tmp_path / "planted.csv"
    pd.DataFrame({"seg_id": metadata["id"], "file_name": metadata["file_name"], "planted": scores}).to_csv(
        table, index=False)
    run = subprocess.run([sys.executable, "-m", "scorers.cli", "meta", str(table), "--metadata",
                          str(data_dir / "metadata.csv"), "--segs", "all", "--n-bootstrap", "0", "--json"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)["planted"]
    got = {meta: result[meta]["summary"]["avg"] for meta in ("rank", "sep", "delta")}
    expected = _expected_meta(metadata, scores)
    assert got == pytest.approx(expected, abs=1e-9), (got, expected)
    assert 0.5 < expected["rank"] < 1.0  # the jitter swaps some images: neither perfect nor random


def test_an_uploaded_file_is_annotated_in_a_working_copy_kept_across_reloads(page, seg_env, tmp_path):
    """Upload: the CSV and a zip of its images (under one more folder than file_name says) -> the tab opens a working
    copy; a tick is saved there (downloaded to check), and a reloaded page of that browser finds the upload again."""
    from PIL import Image

    folder = tmp_path / "upload" / "cups"
    folder.mkdir(parents=True)
    for k, name in enumerate(["x.png", "y.png", "z.png"]):
        Image.new("RGB", (16, 16), (80 * k, 200, 40)).save(folder / name)
    csv = tmp_path / "cups.csv"
    csv.write_text("seg_id,prompt,file_name,errors\n5,a blue cup,cups/x.png,\n5,a blue cup,cups/y.png,\n"
                   "5,a blue cup,cups/z.png,\n")
    archive = tmp_path / "cups.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name in ("x.png", "y.png", "z.png"):
            zipped.write(folder / name, f"upload/cups/{name}")
    module_page = page
    context = module_page.context.browser.new_context(viewport={"width": 1280, "height": 1000})
    try:  # a browser context of its own (its own storage): the module's page keeps the configured file
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(seg_env["url"])
        page.wait_for_selector("#leaderboard [data-testid='cell-0-1']")
        _open_tab(page)
        page.locator("#segb-upload").get_by_text("Open an uploaded ANNOTATIONS file").click()
        page.locator("#segb-upload-csv input[type=file]").set_input_files(str(csv))
        page.locator("#segb-upload-images input[type=file]").set_input_files([str(archive)])
        page.wait_for_function("() => (document.querySelector('#segb-upload-images')?.innerText ?? '')"
                               ".includes('cups.zip')")
        page.locator("#segb-open").click()
        assert "Opened cups.csv: 1 SEG(s), 3 images" in _wait_status(page, "Opened", "Error")
        page.wait_for_function(
            "() => document.querySelector('#segb-nodes [role=gridcell]')?.innerText.trim() === 'cups/x.png'")
        assert "not found" not in page.locator("#segb-file").inner_text()  # every image was in the zip
        _add_element(page, "blue")
        page.locator("#segb-errors-1").get_by_label("blue", exact=True).check()
        _wait_status(page, "Saved cups/y.png: blue")
        with page.expect_download() as download:
            page.locator("#segb-annotations-file a").first.click()
        download.value.save_as(tmp_path / "copy.csv")
        saved = pd.read_csv(tmp_path / "copy.csv", dtype=str, keep_default_na=False)
        assert saved["errors"].tolist() == ["", "blue", ""]

        page.reload()
        page.wait_for_selector("#leaderboard [data-testid='cell-0-1']")
        page.get_by_role("tab", name="Build a SEG").click()
        page.wait_for_function(
            "() => document.querySelector('#segb-nodes [role=gridcell]')?.innerText.trim() === 'cups/x.png'")
        assert page.locator("#segb-errors-1").get_by_label("blue", exact=True).is_checked()
    finally:
        context.close()
    # the configured file is untouched by the upload
    assert set(pd.read_csv(seg_env["annotations"], dtype=str)["seg_id"]) == {"0", "1"}


def test_review_list_shows_the_judges_disagreements_first(page, shared_ts2, tmp_path):
    """A Synth SEG with its plan and `ts2 seg check`'s review list: the images the judge disagrees on come first, most
    confident first, with what the judge saw; the plan's elements are the checkboxes, the designed sets ticked."""
    from PIL import Image

    for k, name in enumerate("abcd"):
        Image.new("RGB", (16, 16), (60 * k, 90, 0)).save(tmp_path / f"{name}.png")
    (tmp_path / "annotations.csv").write_text(SYNTH_ROWS)
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    (tmp_path / "review.csv").write_text(REVIEW)
    config = AppConfig.resolve(metadata=shared_ts2 / "metadata.csv", scores_csv=shared_ts2 / "released_scores.csv",
                               paper_table=shared_ts2 / "paper_table2.csv", annotations=tmp_path / "annotations.csv",
                               seg_images=tmp_path, seg_plan=tmp_path / "plan.json",
                               seg_review=tmp_path / "review.csv")
    context = page.context.browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        with served_app(config) as url:
            other = context.new_page()
            other.set_default_timeout(TIMEOUT_MS)
            other.goto(url)
            other.wait_for_selector("#leaderboard [data-testid='cell-0-1']")
            _open_tab(other)
            other.wait_for_function("() => (document.querySelector('#segb-errors-0')?.innerText ?? '')"
                                    ".startsWith('d.png')")
            assert [row[0] for row in dataframe_rows(other, "segb-nodes")] == ["d.png", "c.png", "a.png", "b.png"]
            assert other.locator("#segb-note-0").inner_text() == "Judge: dog: designed missing, judge says yes"
            assert other.locator("#segb-note-2").inner_text() == ""
            box = other.locator("#segb-errors-0")
            assert [box.get_by_label(e, exact=True).is_checked() for e in ("dog", "red", "sofa")] == [True, False,
                                                                                                       False]
            other.screenshot(path=str(ARTIFACTS / "seg_builder_review.png"), full_page=True)
    finally:
        context.close()
