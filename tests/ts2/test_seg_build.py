"""Error sets -> node labels / edges (scorers.stats.error_sets) and ``ts2 seg build``."""
from __future__ import annotations

import doctest
import json
from pathlib import Path

import pandas as pd
import pytest

from scorers.cli import main
from scorers.stats import error_sets as es
from tests.helpers.cli import one_line
from tests.helpers.seg_files import DOCS, write_docs_example, write_images


# --- scorers.stats.error_sets: expectations written by hand from the API in the issue -----------------------------

def test_error_sets_doctests_run():
    failed, attempted = doctest.testmod(es)
    assert failed == 0 and attempted >= 8


def test_labels_counts_0_to_3_with_letters_only_where_sizes_collide():
    sets = [set(), {"dog"}, {"red"}, {"dog", "red"}, {"dog", "red", "hat"}, set(), {"red"}]
    assert es.node_labels(sets) == ["0", "1a", "1b", "2", "3", "0", "1b"]


def test_letters_follow_sorted_tuples_not_input_order():
    # sorted tuples of size 2: ('a','z') < ('b','c') < ('b','d')
    sets = [{"b", "d"}, {"c", "b"}, {"z", "a"}, set()]
    assert es.node_labels(sets) == ["2c", "2b", "2a", "0"]


def test_letters_past_z():
    sets = [{f"e{i:02d}"} for i in range(28)]
    labels = es.node_labels(sets)
    assert labels[0] == "1a" and labels[25] == "1z" and labels[26] == "1aa" and labels[27] == "1ab"
    assert len(set(labels)) == 28


def test_edges_by_hand():
    sets = [set(), {"dog"}, {"red"}, {"dog", "red"}, {"dog", "red", "hat"}, {"cat", "hat"}]
    # labels: 0; 1a=dog, 1b=red; 2a=(cat,hat), 2b=(dog,red); 3=(dog,hat,red)
    assert es.node_labels(sets) == ["0", "1a", "1b", "2b", "3", "2a"]
    assert es.error_set_edges(sets) == [
        ("0", "1a", "dog"), ("0", "1b", "red"),
        ("1a", "2b", "red"), ("1b", "2b", "dog"),
        ("2b", "3", "hat"),
    ]
    assert es.unreachable(sets) == ["2a"]  # {cat, hat}: neither {cat} nor {hat} is present


def test_unreachable_skip_level_and_empty_inputs():
    assert es.unreachable([set(), {"a", "b"}]) == ["2"]
    assert es.unreachable([]) == [] and es.error_set_edges([]) == [] and es.node_labels([]) == []
    assert es.unreachable([{"a"}]) == ["1"]  # the empty set is absent, so {a} has no set one smaller inside it


def test_bad_inputs_raise():
    with pytest.raises(TypeError, match=r"error_sets\[1\]"):
        es.node_labels([set(), "dog;red"])
    with pytest.raises(ValueError, match=r"error_sets\[0\]"):
        es.node_labels([{""}])


# --- ts2 seg build ------------------------------------------------------------------------------------------------


HEADER = "seg_id,prompt,file_name,errors,error_types,partition,image_source"
#: a SEG with error sets at counts 0-3 and two sets at count 1 (dog, red), and a second SEG in another partition
ROWS = [
    "dog,a red dog on a mat,d0.png,,,alpha,SDXL",
    "dog,a red dog on a mat,d1.png,,,alpha,SDXL",
    "dog,a red dog on a mat,d2.png,dog,missing,alpha,SDXL",
    "dog,a red dog on a mat,d3.png,red,attribute,alpha,SDXL",
    "dog,a red dog on a mat,d4.png,red;dog,attribute;missing,alpha,SDXL",
    "dog,a red dog on a mat,d5.png,dog;red;mat,missing;attribute;missing,alpha,SDXL",
    "dog,a red dog on a mat,d6.png,red,attribute,alpha,SDXL",
    "cat,a cat,c0.png,,,beta,DALL-E2",
    "cat,a cat,c1.png,cat,missing,beta,DALL-E2",
    "cat,a cat,c2.png,cat,missing,beta,DALL-E2",
]


def annotations(tmp_path: Path, rows=ROWS, header=HEADER, images=True) -> tuple[Path, Path]:
    path = tmp_path / "annotations.csv"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    folder = tmp_path / "imgs"
    if images:
        names = pd.read_csv(path, dtype=str, keep_default_na=False)["file_name"].str.strip().unique()
        write_images(folder, [n for n in names if n])
    else:
        folder.mkdir(exist_ok=True)
    return path, folder


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_build_writes_the_release_layout(tmp_path, capsys):
    path, images = annotations(tmp_path)
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", out)
    assert code == 0, err
    assert "built 2 SEG(s), 10 image(s), 7 node(s), 6 edge(s)" in stdout and "alpha: 1, beta: 1" in stdout
    meta = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    assert list(meta.columns) == ["id", "target_prompt", "file_name", "image_source", "rank", "partition", "errors",
                                  "error_types", "source_file"]
    assert meta["source_file"].tolist() == pd.read_csv(path)["file_name"].tolist()  # each image's ANNOTATIONS name
    # non-integer seg_ids are numbered by first appearance; labels by hand: {dog} < {red} -> 1a, 1b
    assert meta["id"].tolist() == ["0"] * 7 + ["1"] * 3
    assert meta["rank"].tolist() == ["0", "0", "1a", "1b", "2", "3", "1b", "0", "1", "1"]
    assert meta["file_name"].tolist()[:3] == ["images/000-00.png", "images/000-01.png", "images/000-02.png"]
    assert meta["file_name"].iloc[7] == "images/001-00.png"
    assert meta["errors"].iloc[4] == "dog;red" and meta["error_types"].iloc[4] == "missing;attribute"
    assert meta["errors"].iloc[5] == "dog;mat;red" and meta["error_types"].iloc[5] == "missing;missing;attribute"
    assert meta["partition"].tolist() == ["alpha"] * 7 + ["beta"] * 3
    for source, name in zip(pd.read_csv(path)["file_name"], meta["file_name"]):  # byte-for-byte copies
        assert (out / name).read_bytes() == (images / source).read_bytes()
    segs = json.loads((out / "segs.json").read_text())["segs"]
    assert [s["name"] for s in segs] == ["dog", "cat"] and segs[0]["partition"] == "alpha"
    nodes = {n["label"]: n for n in segs[0]["nodes"]}
    assert nodes["1b"]["errors"] == ["red"] and nodes["1b"]["n_images"] == 2
    assert nodes["1b"]["sources"] == ["d3.png", "d6.png"]
    assert nodes["3"]["error_types"] == ["missing", "missing", "attribute"]
    assert segs[0]["edges"] == [
        {"from": "0", "to": "1a", "error": "dog", "type": "missing"},
        {"from": "0", "to": "1b", "error": "red", "type": "attribute"},
        {"from": "1a", "to": "2", "error": "red", "type": "attribute"},
        {"from": "1b", "to": "2", "error": "dog", "type": "missing"},
        {"from": "2", "to": "3", "error": "mat", "type": "missing"},
    ]
    # warnings, listed and counted: one-image nodes 1a, 2, 3 of "dog" and 0 of "cat"
    assert "4 warning(s): 4 node(s) with one image, 0 not reachable one error at a time" in err
    listed = (out / "warnings.txt").read_text().splitlines()
    assert len(listed) == 4 and "SEG dog: node 1a {dog} has one image (images/000-02.png)" in listed
    assert all(f"warning: {line}" in err for line in listed)


def test_unreachable_set_is_a_warning_not_an_error(tmp_path, capsys):
    rows = ["0,p,a.png,", "0,p,b.png,", "0,p,c.png,x;y", "0,p,d.png,x;y", "0,p,e.png,x", "0,p,f.png,x"]
    path, images = annotations(tmp_path, rows, header="seg_id,prompt,file_name,errors")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "o1")
    assert code == 0 and "0 warnings" in err
    rows = ["0,p,a.png,", "0,p,b.png,", "0,p,c.png,x;y", "0,p,d.png,x;y"]  # {x, y} with no {x} or {y}
    path, images = annotations(tmp_path, rows, header="seg_id,prompt,file_name,errors")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "o2")
    assert code == 0
    assert "SEG 0: node 2 {x, y} is not reachable one error at a time" in err
    assert "1 warning(s): 0 node(s) with one image, 1 not reachable one error at a time" in err
    meta = pd.read_csv(tmp_path / "o2" / "metadata.csv", dtype=str, keep_default_na=False)
    assert meta["rank"].tolist() == ["0", "0", "2", "2"] and meta["id"].tolist() == ["0"] * 4  # integer ids kept
    assert meta["partition"].tolist() == ["custom"] * 4


def _refusal(tmp_path, capsys, rows, *, header=HEADER, drop=(), corrupt=(), out=None):
    path, images = annotations(tmp_path, rows, header=header)
    for name in drop:
        (images / name).unlink()
    for name in corrupt:
        (images / name).write_bytes(b"not an image")
    code, stdout, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", out or tmp_path / "out")
    assert code == 2 and stdout == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# each refusal of the issue: one line naming the ANNOTATIONS line, its SEG and its image
REFUSALS = {
    "no error-free image": (
        ["s,p,a.png,x", "s,p,b.png,x;y"], {},
        r"annotations\.csv line 2 \(SEG s, a\.png\): the SEG has no error-free image"),
    "missing image": (
        ["s,p,a.png,", "s,p,b.png,x"], {"drop": ["b.png"]},
        r"annotations\.csv line 3 \(SEG s, b\.png\): missing image: no file .*b\.png"),
    "unreadable image": (
        ["s,p,a.png,", "s,p,b.png,x"], {"corrupt": ["a.png"]},
        r"annotations\.csv line 2 \(SEG s, a\.png\): unreadable image .*a\.png"),
    "image listed twice": (
        ["s,p,a.png,", "s,p,b.png,x", "s,p,./a.png,y"], {},
        r"annotations\.csv line 4 \(SEG s, \./a\.png\): image listed twice \(first on line 2\)"),
    "same file under two SEGs": (
        ["s,p,a.png,", "s,p,b.png,x", "t,q,c.png,", "t,q,b.png,y"], {},
        r"annotations\.csv line 5 \(SEG t, b\.png\): the same file is under SEG s too \(line 3\)"),
    "fewer than two error levels": (
        ["s,p,a.png,", "s,p,b.png,x", "t,q,c.png,", "t,q,d.png,"], {},
        r"annotations\.csv line 4 \(SEG t, c\.png\): the SEG has one error level only"),
    "empty prompt": (
        ["s,p,a.png,", "s, ,b.png,x"], {},
        r"annotations\.csv line 3 \(SEG s, b\.png\): empty prompt"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_refusal_names_the_row(tmp_path, capsys, case):
    import re

    rows, kwargs, pattern = REFUSALS[case]
    line = _refusal(tmp_path, capsys, rows, header="seg_id,prompt,file_name,errors", **kwargs)
    assert line.startswith("ts2 seg: error: ") or line.startswith("ts2 build: error: ") or "error:" in line
    assert re.search(pattern, line), line
    assert not (tmp_path / "out").exists()  # nothing written


def test_error_label_with_two_types_is_refused(tmp_path, capsys):
    rows = ["s,p,a.png,,", "s,p,b.png,red,attribute", "s,p,c.png,red;dog,relation;missing"]
    line = _refusal(tmp_path, capsys, rows, header="seg_id,prompt,file_name,errors,error_types")
    assert ("annotations.csv line 4 (SEG s, c.png): error 'red' has type 'relation' here but 'attribute' on line 3"
            in line), line


@pytest.mark.parametrize("rows, header, expected", [
    (["s,p,a.png,", "s,p,b.png,x;y"], "seg_id,prompt,file_name,errors,error_types",
     "line 3 (SEG s, b.png): errors has 2 label(s) but error_types has 0"),
    (["s,p,a.png,,", "s,p,b.png,x,colour"], "seg_id,prompt,file_name,errors,error_types",
     "line 3 (SEG s, b.png): unknown error type 'colour'; use one of missing, attribute, relation, action"),
    (["s,p,a.png,", "s,q,b.png,x"], "seg_id,prompt,file_name,errors",
     "line 3 (SEG s, b.png): the SEG has two prompts: 'q' here and 'p' on line 2"),
    (["s,p,a.png,,dev", "s,p,b.png,x,test"], "seg_id,prompt,file_name,errors,partition",
     "line 3 (SEG s, b.png): the SEG has two partitions: 'test' here and 'dev' on line 2"),
    (["s,p,a.png"], "seg_id,prompt,file_name", "missing column(s) errors"),
])
def test_other_table_refusals(tmp_path, capsys, rows, header, expected):
    line = _refusal(tmp_path, capsys, [r if r.count(",") == header.count(",") else r + "," for r in rows],
                    header=header)
    assert expected in line, line


def test_out_not_empty_needs_overwrite(tmp_path, capsys):
    path, images = annotations(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", out)
    assert code == 2 and "--out" in err and "is not empty; pass --overwrite" in err
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", out, "--overwrite")
    assert code == 0 and (out / "keep.txt").read_text() == "mine" and (out / "segs.json").is_file()


def test_metadata_only_build(tmp_path, capsys):
    path, _ = annotations(tmp_path, images=False)
    code, stdout, err = run_cli(capsys, "seg", "build", path, "--out", tmp_path / "out")
    assert code == 0 and "metadata only" in err
    assert len(pd.read_csv(tmp_path / "out" / "metadata.csv")) == 10


# --- partitions from the file ----------------------------------------------------------------------------------------

def test_read_metadata_takes_partitions_from_the_file(tmp_path, shared_ts2):
    from scorers.tables.pandas_tables import read_metadata

    path = tmp_path / "metadata.csv"
    path.write_text("id,target_prompt,file_name,image_source,rank,partition\n"
                    "200,p,a.png,,0,dev\n200,p,b.png,,1,dev\n3,q,c.png,,0,test\n3,q,d.png,,1,test\n")
    frame = read_metadata(path)
    assert frame["partition"].tolist() == ["dev", "dev", "test", "test"] and frame.attrs["partitions_from_file"]
    release = read_metadata(shared_ts2 / "metadata.csv")  # no column: the release keeps its id ranges
    assert not release.attrs["partitions_from_file"]
    assert release.drop_duplicates("seg_id")["partition"].value_counts().to_dict() == {"synth": 111, "nat": 25,
                                                                                       "real": 29}
    path.write_text("id,target_prompt,file_name,image_source,rank,partition\n"
                    "200,p,a.png,,0,dev\n200,p,b.png,,1,test\n")
    with pytest.raises(ValueError, match=r"line 3 \(SEG 200, b\.png\): partition 'test' but 'dev' on line 2"):
        read_metadata(path)
    path.write_text("id,target_prompt,file_name,image_source,rank,partition\n200,p,a.png,,0, \n200,p,b.png,,1,x\n")
    with pytest.raises(ValueError, match=r"line 2 \(SEG 200, a\.png\): empty partition"):
        read_metadata(path)


# --- OUT is read by every reader of a data dir ---------------------------------------------------------------------

def test_out_is_read_by_load_ts2_export_score_meta_report_card_and_explorer(tmp_path, capsys, monkeypatch):
    """load_ts2(data_dir=OUT), ts2 dataset export --data-dir OUT (datasets.load_dataset), ts2 score (tiny CLIP)
    --data-dir OUT --meta, ts2 meta / report / card --metadata OUT/metadata.csv and the demo's SEG explorer."""
    import datasets

    from scorers.ts2.dataset import load_ts2
    from tests.helpers.tiny_embed_models import build_hf_clip

    monkeypatch.setenv("MPLBACKEND", "Agg")
    path, images = annotations(tmp_path)
    out = tmp_path / "out"
    assert run_cli(capsys, "seg", "build", path, "--images", images, "--out", out)[0] == 0
    segs = load_ts2("segs", out, cache_dir=tmp_path / "hf")
    assert len(segs) == 10 and segs["partition"] == ["alpha"] * 7 + ["beta"] * 3
    assert segs["node"][:3] == ["0", "0", "1a"]

    code, stdout, err = run_cli(capsys, "dataset", "export", "--data-dir", out, "--out", tmp_path / "export",
                                "--cache-dir", tmp_path / "hf2")
    assert code == 0, err
    loaded = datasets.load_dataset(str(tmp_path / "export"), "segs", split="train")
    assert len(loaded) == 10 and loaded["partition"][0] == "alpha" and loaded[2]["image"].size == (8, 8)

    model = build_hf_clip(tmp_path / "tiny")
    scores = tmp_path / "clip.csv"
    code, stdout, err = run_cli(capsys, "score", "clip_score", "--data-dir", out, "--model", model, "--out", scores,
                                "--form", "cosine", "--num-workers", 0, "--no-progress", "--meta")
    assert code == 0, err
    header = stdout.splitlines()[1].split()
    assert "alpha" in header and "beta" in header and "synth" not in header
    code, stdout, err = run_cli(capsys, "meta", scores, "--metadata", out / "metadata.csv")
    assert code == 0 and "SEGs: 0-1 (2 SEGs)" in stdout and "alpha" in stdout.splitlines()[1].split(), err

    code, stdout, err = run_cli(capsys, "report", scores, "--metadata", out / "metadata.csv", "--out",
                                tmp_path / "report", "--no-published", "--n-bootstrap", 20, "--offline")
    assert code == 0, err
    board = (tmp_path / "report" / "leaderboard.md").read_text()
    assert "Rank alpha" in board and "Rank beta" in board and "Synth" not in board
    code, stdout, err = run_cli(capsys, "card", "--scores", f"clip={scores}", "--metadata", out / "metadata.csv",
                                "--out", tmp_path / "card", "--offline", "--n-bootstrap", 20)
    assert code == 0, err
    card = (tmp_path / "card" / "clip.md").read_text()
    assert "| rank | alpha |" in card and "| rank | beta |" in card

    from scorers.demo.config import AppConfig
    from scorers.demo.explorer import SegExplorer
    from scorers.demo.sources import ImageSource, Tables
    from scorers.tables.pandas_tables import read_metadata

    config = AppConfig(metadata=out / "metadata.csv", data_dir=out)
    explorer = SegExplorer(Tables(metadata=read_metadata(out / "metadata.csv")), None, ImageSource(config))
    assert explorer.choices() == [("SEG 0 (alpha): a red dog on a mat", 0), ("SEG 1 (beta): a cat", 1)]
    gallery = explorer.gallery(0, None)
    assert len(gallery) == 7 and gallery[0][0].size == (8, 8) and gallery[2][1] == "1a · SDXL"
    assert len(explorer.figure(0).axes[0].collections) == 5  # nodes 0, 1a, 1b, 2, 3


# --- docs/build-your-own-segs.md -----------------------------------------------------------------------------------


def test_docs_example_builds_as_the_page_says(tmp_path, capsys):
    write_docs_example(tmp_path)
    code, stdout, err = run_cli(capsys, "seg", "build", tmp_path / "annotations.csv", "--images",
                                tmp_path / "my_images", "--out", tmp_path / "my_segs")
    assert code == 0, err
    lines = (tmp_path / "my_segs" / "segs.json").read_text().splitlines()[1:-1]  # one SEG per line
    segs = [json.loads(line.rstrip(",")) for line in lines]
    first = segs[0]
    assert {n["label"]: n["errors"] for n in first["nodes"]} == {"0": [], "1a": ["dog"], "1b": ["red"],
                                                                  "2a": ["dog", "mat"], "2b": ["mat", "red"]}
    assert [(e["from"], e["to"], e["error"]) for e in first["edges"]] == [
        ("0", "1a", "dog"), ("0", "1b", "red"), ("1a", "2a", "mat"), ("1b", "2b", "mat")]
    assert "2 warning(s)" in err
    built = pd.read_csv(tmp_path / "my_segs" / "metadata.csv", dtype=str)
    scores = pd.read_csv(tmp_path / "my_segs_scores.csv", dtype=str)
    assert built["file_name"].tolist() == scores["file_name"].tolist()  # the page's scores are keyed right
    text = DOCS.read_text(encoding="utf-8")
    assert "The tool that is coming" not in text and "`1a` = {dog}, `1b` = {red}, `2a` = {dog, mat}" in text


def test_truncated_image_is_unreadable(tmp_path, capsys):
    path, images = annotations(tmp_path, ["s,p,a.png,", "s,p,b.png,x"], header="seg_id,prompt,file_name,errors")
    data = (images / "b.png").read_bytes()
    (images / "b.png").write_bytes(data[: len(data) // 2])  # a valid header, half the data
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "annotations.csv line 3 (SEG s, b.png): unreadable image" in err


def test_question_tables_beside_annotations_are_copied_when_the_seg_ids_are_kept(tmp_path):
    """``ts2 seg plan`` writes tifa/dsg question tables beside the plan and ``ts2 seg generate`` copies them beside its
    ANNOTATIONS: build carries them into OUT (byte for byte) when the SEG ids are kept, and says why when not."""
    from scorers.ts2.seg.build import build_seg_dir

    rows = "seg_id,prompt,file_name,errors\n{s},a red dog,x.png,\n{s},a red dog,y.png,dog\n{s},a red dog,z.png,red\n"
    tifa = "id,question\n7,is there a dog?\n"
    for seg_id, kept in (("7", True), ("dogs", False)):
        folder = tmp_path / seg_id
        folder.mkdir()
        (folder / "a.csv").write_text(rows.format(s=seg_id))
        (folder / "tifa_questions.csv").write_text(tifa)
        built = build_seg_dir(folder / "a.csv", images=None, out=folder / "out")
        assert (folder / "out" / "tifa_questions.csv").exists() is kept
        assert not (folder / "out" / "dsg_questions.csv").exists()
        if kept:
            assert (folder / "out" / "tifa_questions.csv").read_text() == tifa
        else:
            assert any("tifa_questions.csv beside a.csv not copied: the SEG ids were renumbered" in w
                       for w in built.warnings), built.warnings


# --- paths a user gives stay inside --images; ids and labels the build can hold ----------------------------------


def _outside_setup(tmp_path: Path) -> tuple[Path, Path]:
    """``imgs/`` (a.png, b.png, sub/c.png and ``out.png``, a symlink to a file beside it) and ``secret.png`` outside."""
    images = write_images(tmp_path / "imgs", ["a.png", "b.png", "sub/c.png"])
    write_images(tmp_path, ["secret.png"])
    (images / "out.png").symlink_to(tmp_path / "secret.png")
    return images, tmp_path / "secret.png"


@pytest.mark.parametrize("spelling", ["absolute", "../secret.png", "sub/../../secret.png", "out.png"])
def test_a_file_name_outside_images_is_refused_in_one_line(tmp_path, capsys, spelling):
    """Before: the server file was copied into OUT/images/ (an absolute path, ``..``, a symlink leading out)."""
    images, secret = _outside_setup(tmp_path)
    name = str(secret) if spelling == "absolute" else spelling
    path = tmp_path / "annotations.csv"
    path.write_text(f"seg_id,prompt,file_name,errors\n0,p,a.png,\n0,p,{name},x\n")
    code, stdout, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    line = one_line(err)
    assert code == 2 and stdout == ""
    assert f"annotations.csv line 3 (SEG 0, {name}): file_name {name!r} lies outside the images folder {images}" \
        in line, line
    assert not (tmp_path / "out").exists()  # nothing written, nothing copied


def test_an_absolute_file_name_inside_images_is_taken(tmp_path, capsys):
    images, _ = _outside_setup(tmp_path)
    path = tmp_path / "annotations.csv"
    path.write_text(f"seg_id,prompt,file_name,errors\n0,p,{images / 'a.png'},\n0,p,sub/c.png,x\n")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    assert code == 0, err
    assert (tmp_path / "out" / "images" / "000-00.png").read_bytes() == (images / "a.png").read_bytes()


def test_source_file_is_the_annotations_name_normalised_and_relative(tmp_path, capsys):
    """``source_file``: the name ANNOTATIONS gives, ``.``/``..`` and ``//`` folded, an absolute name inside --images
    made relative to it (the names a user keys their own scores by)."""
    images, _ = _outside_setup(tmp_path)
    path = tmp_path / "annotations.csv"
    path.write_text(f"seg_id,prompt,file_name,errors\n0,p,{images / 'a.png'},\n0,p,sub/./c.png,x\n"
                    "1,q,./sub/../b.png,\n1,q,sub//c2.png,y\n")
    (images / "sub" / "c2.png").write_bytes((images / "sub" / "c.png").read_bytes())
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    assert code == 0, err
    meta = pd.read_csv(tmp_path / "out" / "metadata.csv", dtype=str, keep_default_na=False)
    assert meta["source_file"].tolist() == ["a.png", "sub/c.png", "b.png", "sub/c2.png"]
    segs = json.loads((tmp_path / "out" / "segs.json").read_text())["segs"]  # the same names in segs.json
    assert [src for seg in segs for node in seg["nodes"] for src in node["sources"]] == meta["source_file"].tolist()


@pytest.mark.parametrize("spelling", ["sub/../a.png", ".//a.png", "absolute", "link"])
def test_the_same_file_under_two_segs_is_found_after_resolving(tmp_path, capsys, spelling):
    """Before: ``sub/../a.png``, ``.//a.png``, the absolute path and a symlink to a.png were four other files."""
    images, _ = _outside_setup(tmp_path)
    (images / "link.png").symlink_to(images / "a.png")
    name = {"absolute": str(images / "a.png"), "link": "link.png"}.get(spelling, spelling)
    path = tmp_path / "annotations.csv"
    path.write_text(f"seg_id,prompt,file_name,errors\n0,p,a.png,\n0,p,b.png,x\n1,q,{name},\n1,q,sub/c.png,y\n")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    line = one_line(err)
    assert code == 2
    assert f"annotations.csv line 4 (SEG 1, {name}): the same file is under SEG 0 too (line 2)" in line, line


def test_the_same_file_twice_is_found_without_images_as_text(tmp_path, capsys):
    """A metadata-only build (no --images) compares the names as normalised text."""
    path = tmp_path / "annotations.csv"
    path.write_text("seg_id,prompt,file_name,errors\n0,p,a.png,\n0,p,b.png,x\n1,q,sub/../a.png,\n1,q,c.png,y\n")
    code, _, err = run_cli(capsys, "seg", "build", path, "--out", tmp_path / "out")
    assert code == 2 and "line 4 (SEG 1, sub/../a.png): the same file is under SEG 0 too (line 2)" in one_line(err)


@pytest.mark.parametrize("seg_id", ["99999999999999999999", "9223372036854775808"])
def test_a_seg_id_too_large_for_int64_is_one_line(tmp_path, capsys, seg_id):
    """Before: an OverflowError traceback. 2**63 - 1 is the largest id kept (the int64 every table reads)."""
    path, images = annotations(tmp_path, [f"{seg_id},p,a.png,", f"{seg_id},p,b.png,x"],
                               header="seg_id,prompt,file_name,errors")
    code, stdout, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    line = one_line(err)
    assert code == 2 and stdout == ""
    assert f"annotations.csv line 2 (SEG {seg_id}, a.png): seg_id {seg_id} is too large: an integer SEG id is at " \
           "most 9223372036854775807" in line, line
    largest = str(2**63 - 1)
    path, images = annotations(tmp_path, [f"{largest},p,a.png,", f"{largest},p,b.png,x"],
                               header="seg_id,prompt,file_name,errors")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "ok")
    assert code == 0, err
    assert pd.read_csv(tmp_path / "ok" / "metadata.csv", dtype=str)["id"].tolist() == [largest] * 2


@pytest.mark.parametrize("label", ["x\x1fy", "x\ty", "x\x00", "x\x85y"])
def test_a_control_character_in_an_error_label_is_refused(tmp_path, capsys, label):
    """Before: ``x\\x1fy`` (the key separator inside a label) was read as two errors {x, y}: node 2 instead of 1."""
    path, images = annotations(tmp_path, ["s,p,a.png,", f"s,p,b.png,{label}", "s,p,c.png,x"],
                               header="seg_id,prompt,file_name,errors")
    code, _, err = run_cli(capsys, "seg", "build", path, "--images", images, "--out", tmp_path / "out")
    line = one_line(err)
    assert code == 2
    assert f"annotations.csv line 3 (SEG s, b.png): error label {label!r} holds a control character" in line, line
