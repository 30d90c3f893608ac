"""``ts2 elements`` (scorers.ts2.elements): the release against a plain loop over its per-question files, a hand-made
built SEG set with planted answers against hand-computed figures, and the clear errors."""
from __future__ import annotations

import csv
import json
import re
import shutil

import numpy as np
import pytest
from scipy import stats

from scorers.ts2.elements import RELEASED_VARIANTS, built_elements, element_rows, load_element_summary
from tests.helpers.cli import one_line, run_cli
from tests.helpers.element_files import write_built_set

#: the release files the release tests read (their names are computed, so the tests carry the marker by hand)
PER_QUESTION = tuple(f"per_question/{v}.csv" for v in RELEASED_VARIANTS)


def _loop_rates(folder, variant: str) -> dict[str, tuple[int, int]]:
    """(wrong answers, answers) per node error count: walk the rows, a new image where question_id == 0, images in
    metadata.csv order (the release's layout)."""
    with open(folder / "metadata.csv", encoding="utf-8") as handle:
        counts = [int(re.match(r"\d+", row["rank"]).group()) for row in csv.DictReader(handle)]
    tally: dict[str, list[int]] = {}
    image = -1
    with open(folder / "per_question" / f"{variant}.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if int(row["question_id"]) == 0:
                image += 1
            entry = tally.setdefault(str(counts[image]), [0, 0])
            entry[0] += int(row["correct"]) == 0
            entry[1] += 1
    assert image + 1 == len(counts)
    return {k: (w, n) for k, (w, n) in tally.items()}


@pytest.mark.release_files(*PER_QUESTION)
def test_released_json_equals_a_plain_loop_over_the_six_files(shared_ts2, capsys):
    code, out, err = run_cli(capsys, "elements", "--released", "--json", "--data-dir", shared_ts2)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["unit"] == "fraction" and summary["truth"] == "released"
    assert summary["interval"] == {"confidence": 0.95, "n_bootstrap": 1000, "over": "SEGs"}
    assert [k for k in summary if k not in ("unit", "truth", "interval")] == list(RELEASED_VARIANTS)
    for variant in RELEASED_VARIANTS:
        loop = _loop_rates(shared_ts2, variant)
        got = summary[variant]["by_error_count"]
        assert sorted(got, key=int) == sorted(loop, key=int)
        for count, (wrong, n) in loop.items():
            assert got[count]["n"] == n
            assert abs(got[count]["wrong_rate"] - wrong / n) <= 1e-12
            if got[count]["low"] is not None:
                assert got[count]["low"] <= got[count]["wrong_rate"] <= got[count]["high"]
    # sanity (not the expected values): false alarms on heads, rising with the error count
    assert summary["mplug_tifa"]["by_error_count"]["0"]["wrong_rate"] == pytest.approx(0.105, abs=0.005)
    assert summary["llava_dsg"]["by_error_count"]["0"]["wrong_rate"] == pytest.approx(0.120, abs=0.005)
    for variant in RELEASED_VARIANTS:
        rates = [summary[variant]["by_error_count"][c]["wrong_rate"] for c in ("0", "1", "2", "3")]
        assert rates == sorted(rates)


@pytest.mark.release_files("per_question/mplug_tifa.csv")
def test_released_table_text_names_its_intervals(shared_ts2, capsys):
    code, out, err = run_cli(capsys, "elements", "--released", "mplug_tifa", "--n-bootstrap", "50", "--data-dir",
                             shared_ts2)
    assert code == 0, err
    assert "95% bootstrap over SEGs (50 resamples)" in out and "mplug_tifa" in out and "llava_dsg" not in out


@pytest.mark.release_files("per_question/mplug_dsg.csv", "per_question/llava_dsg.csv")
def test_released_compare_states_mcnemar_on_heads(shared_ts2, capsys):
    code, out, err = run_cli(capsys, "elements", "--released", "mplug_dsg", "llava_dsg", "--compare", "mplug_dsg",
                             "llava_dsg", "--json", "--n-bootstrap", "20", "--data-dir", shared_ts2)
    assert code == 0, err
    paired = json.loads(out)["paired"]
    import pandas as pd

    a = pd.read_csv(shared_ts2 / "per_question" / "mplug_dsg.csv")
    b = pd.read_csv(shared_ts2 / "per_question" / "llava_dsg.csv")
    meta = pd.read_csv(shared_ts2 / "metadata.csv")
    image = np.cumsum(a["question_id"].to_numpy() == 0) - 1
    head = (meta["rank"].astype(str).str.extract(r"(\d+)")[0].astype(int).to_numpy() == 0)[image]
    only_a = int(((a["correct"] == 1) & (b["correct"] == 0) & head).sum())
    only_b = int(((a["correct"] == 0) & (b["correct"] == 1) & head).sum())
    assert (paired["n_a_only"], paired["n_b_only"]) == (only_a, only_b)
    assert paired["statistic"] == pytest.approx((abs(only_a - only_b) - 1) ** 2 / (only_a + only_b))
    assert "McNemar" in paired["test"] and paired["n"] == int(head.sum())


@pytest.mark.release_files("per_question/mplug_tifa.csv")
def test_a_per_question_file_that_does_not_line_up_with_metadata_is_one_line(shared_ts2, tmp_path, capsys):
    (tmp_path / "per_question").mkdir()
    shutil.copy(shared_ts2 / "per_question" / "mplug_tifa.csv", tmp_path / "per_question" / "mplug_tifa.csv")
    lines = (shared_ts2 / "metadata.csv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "metadata.csv").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # one image fewer
    code, _, err = run_cli(capsys, "elements", "--released", "mplug_tifa", "--data-dir", tmp_path)
    assert code == 2
    line = one_line(err)
    assert "per_question/mplug_tifa.csv" in line and "2840 images" in line and "2839 rows" in line


# --- built SEGs with planted answers -----------------------------------------------------------------------------

#: hand counts of the planted answers (tests/helpers/element_files.py): (TP, FP, FN, TN)
HAND = {"overall": (4, 2, 2, 10), "missing": (3, 1, 0, 7), "attribute": (1, 1, 2, 3)}
#: hand AUROC of P(wrong) = 1 - P(yes): attribute 10 of 12 pairs; missing 23.5 of 24 (one tie at 0.7)
HAND_AUROC = {"attribute": 10 / 12, "missing": 23.5 / 24}


def test_built_segs_give_the_hand_computed_figures(tmp_path):
    files = write_built_set(tmp_path)
    summary = built_elements(files["records"], metadata=files["metadata"], questions=files["questions"],
                             n_bootstrap=100)
    assert summary["truth"] == "built" and list(summary)[3:] == ["m"]
    block = summary["m"]
    figures = {"overall": block["detection"]["overall"], **block["detection"]["by_type"]}
    assert sorted(figures) == ["attribute", "missing", "overall"]
    for name, (tp, fp, fn, tn) in HAND.items():
        fig = figures[name]
        assert (fig["tp"], fig["fp"], fig["fn"], fig["tn"]) == (tp, fp, fn, tn)
        assert fig["precision"] == pytest.approx(tp / (tp + fp))
        assert fig["recall"] == pytest.approx(tp / (tp + fn))
        assert fig["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn))
        assert fig["balanced_accuracy"] == pytest.approx((tp / (tp + fn) + tn / (tn + fp)) / 2)
        assert fig["accuracy"] == pytest.approx((tp + tn) / (tp + fp + fn + tn))
        assert fig["n"] == tp + fp + fn + tn and fig["n_wrong"] == tp + fn
    assert figures["attribute"]["f1"] == pytest.approx(0.4) and figures["missing"]["balanced_accuracy"] == 0.9375
    for name, auroc in HAND_AUROC.items():
        assert figures[name]["auroc"] == pytest.approx(auroc, abs=1e-12)
    # AUROC through its Mann-Whitney U identity, from the records themselves
    rows = element_rows(files["records"], metadata=files["metadata"], questions=files["questions"])
    records = [json.loads(line) for line in files["records"].read_text().splitlines()]
    p_yes = {(r["key"].split(":")[1], q["question_id"]): q["p_expected"] for r in records
             for q in r["record"]["questions"]}
    for kind, elements in (("missing", {"cat", "table", "dog"}), ("attribute", {"red", "blue"})):
        part = rows[rows["element"].isin(elements)]
        prob = np.array([1 - p_yes[(f, q)] for f, q in zip(part["image"], part["question_id"])])
        truth = part["truly_wrong"].to_numpy(dtype=bool)
        u = stats.mannwhitneyu(prob[truth], prob[~truth]).statistic
        assert figures[kind]["auroc"] == pytest.approx(u / (truth.sum() * (~truth).sum()), abs=1e-12)
    # node 0: 2 of 5 answers say a present element is wrong; detection: 2 of 4 at one error, 2 of 2 at two
    assert block["false_alarm_rate_node0"]["wrong_rate"] == pytest.approx(2 / 5)
    assert block["false_alarm_rate_node0"]["n"] == 5
    assert {c: (e["detection_rate"], e["n"]) for c, e in block["detection_by_error_count"].items()} == {
        "1": (0.5, 4), "2": (1.0, 2)}
    assert block["by_error_count"]["0"]["wrong_rate"] == pytest.approx(2 / 5)
    assert block["by_type"]["attribute"]["wrong_rate"] == pytest.approx(2 / 7)  # said wrong: TP + FP of 7


def test_built_cli_compare_gives_the_hand_mcnemar(tmp_path, capsys):
    files = write_built_set(tmp_path)
    from tests.helpers.element_files import ANSWERS

    # metric b gets every verdict right: a is wrong on FP a0/q2, FN a2/q1, FP b0/q1, FN b2/q1 -> 0 vs 4 discordant
    truth = {"a0.png": [0, 0, 0], "a1.png": [1, 0, 0], "a2.png": [0, 1, 0], "a3.png": [1, 1, 0], "b0.png": [0, 0],
             "b1.png": [1, 0], "b2.png": [0, 1]}
    perfect = {f: [(not t, 0.5) for t in ts] for f, ts in truth.items()}
    assert set(perfect) == set(ANSWERS)
    b = write_built_set(tmp_path / "b", perfect, name="b")["records"]
    code, out, err = run_cli(capsys, "elements", files["records"], b, "--metadata", files["metadata"], "--questions",
                             files["questions"], "--compare", files["records"], b, "--json", "--n-bootstrap", "50")
    assert code == 0, err
    paired = json.loads(out)["paired"]
    assert (paired["a"], paired["b"], paired["n_a_only"], paired["n_b_only"]) == ("m", "b", 0, 4)
    assert paired["statistic"] == 0 and paired["p_value"] == pytest.approx(2 * 0.5 ** 4)
    assert "exact binomial" in paired["test"]


def test_summary_round_trips_through_json(tmp_path, capsys):
    files = write_built_set(tmp_path)
    out = tmp_path / "elements.json"
    code, _, err = run_cli(capsys, "elements", files["records"], "--metadata", files["metadata"], "--questions",
                           files["questions"], "--out", out, "--n-bootstrap", "20")
    assert code == 0, err
    assert load_element_summary(out) == json.loads(out.read_text())
    assert "NaN" not in out.read_text()  # undefined figures are null
    direct = load_element_summary(files["records"], metadata=files["metadata"], questions=files["questions"])
    assert direct["m"]["detection"]["overall"]["tp"] == 4


def test_a_record_naming_an_unknown_image_is_one_line(tmp_path, capsys):
    files = write_built_set(tmp_path)
    text = files["records"].read_text().replace('"1:b2.png"', '"1:nope.png"')
    files["records"].write_text(text)
    code, _, err = run_cli(capsys, "elements", files["records"], "--metadata", files["metadata"], "--questions",
                           files["questions"])
    assert code == 2
    line = one_line(err)
    assert "m.records.jsonl line 7" in line and "'nope.png'" in line and "metadata.csv" in line


def test_answers_to_scores_records_csv_reads_like_the_jsonl(tmp_path):
    files = write_built_set(tmp_path)
    rows = ["item,seg_id,question_id,question,expected,answer,chosen,correct,blank,line,image,file_name,node"]
    for k, line in enumerate(files["records"].read_text().splitlines()):
        entry = json.loads(line)
        seg, name = entry["key"].split(":")
        rows += [f"{k},{seg},{q['question_id']},{q['question']},yes,{q['answer']},{q['chosen']},{q['correct']},False,"
                 f"0,{name},{name},x" for q in entry["record"]["questions"]]
    csv_path = tmp_path / "m.records.csv"
    csv_path.write_text("\n".join(rows) + "\n")
    from_csv = built_elements(csv_path, metadata=files["metadata"], questions=files["questions"], n_bootstrap=10)
    from_jsonl = built_elements(files["records"], metadata=files["metadata"], questions=files["questions"],
                                n_bootstrap=10)
    overall = from_csv["m"]["detection"]["overall"]
    assert overall["auroc"] is None  # no probability in these records
    for key in ("precision", "recall", "f1", "balanced_accuracy", "accuracy", "tp", "fp", "fn", "tn"):
        assert overall[key] == from_jsonl["m"]["detection"]["overall"][key]


def test_element_rows_mark_each_answer(tmp_path):
    files = write_built_set(tmp_path)
    rows = element_rows(files["records"], metadata=files["metadata"], questions=files["questions"], image="a3.png")
    assert rows["question"].tolist() == ["is there a cat?", "is the cat red?", "is there a table?"]
    assert rows["said_wrong"].tolist() == [True, True, False]
    assert rows["truly_wrong"].tolist() == [True, True, False]
    assert rows["element"].tolist() == ["cat", "red", "table"]


@pytest.mark.release_files("per_question/mplug_tifa.csv", "tifa_questions.csv")
def test_released_element_rows_know_the_truth_only_on_heads(shared_ts2):
    rows = element_rows("mplug_tifa", data_dir=shared_ts2, image="images/000-00.jpg")
    assert rows["question_id"].tolist() == list(range(len(rows))) and len(rows) > 0
    assert rows["truly_wrong"].tolist() == [False] * len(rows)
    assert rows["said_wrong"].tolist()[:4] == [False, False, False, True]  # the release's first rows
    assert rows["question"].iloc[0] != "" and rows["expected"].iloc[0] == "yes"
    other = element_rows("mplug_tifa", data_dir=shared_ts2, image="images/000-01.jpg")
    assert other["truly_wrong"].isna().all()


def test_seg_check_review_reads_its_judge_probabilities(tmp_path):
    files = write_built_set(tmp_path)
    from tests.helpers.element_files import ANSWERS, IMAGES, QUESTIONS

    text = {(s, q): t for s, q, t, _, _ in QUESTIONS}
    rows = ["seg_id,file_name,errors,disagreements,confidence,details,answers"]
    for seg, name, _, errors, _ in IMAGES:
        answers = {text[(seg, q)]: p for q, (_, p) in enumerate(ANSWERS[name])}
        rows.append(f"{seg},{name},{errors},0,0,,\"{json.dumps(answers).replace(chr(34), chr(34) * 2)}\"")
    review = tmp_path / "review.csv"
    review.write_text("\n".join(rows) + "\n")
    summary = built_elements(review, metadata=files["metadata"], questions=files["questions"], n_bootstrap=10)
    overall = summary["review"]["detection"]["overall"]
    # the judge says wrong where P(yes) < 0.5, as the planted verdicts do: the same confusion counts
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (4, 2, 2, 10)
    assert overall["auroc"] == pytest.approx(
        built_elements(files["records"], metadata=files["metadata"], questions=files["questions"],
                       n_bootstrap=10)["m"]["detection"]["overall"]["auroc"], abs=1e-12)
    with pytest.raises(ValueError, match="pass the question table"):
        built_elements(review, metadata=files["metadata"])


def test_an_attribute_of_a_missing_entity_is_truly_wrong(tmp_path):
    # SEG 0's node 1 removes the dog: "is the dog brown?" is then not shown either (ts2 seg plan's `removed`), so the
    # metric's "no" there is a detection, not a false alarm; the ball stays, so its "no" is a false alarm
    (tmp_path / "metadata.csv").write_text(
        "seg_id,prompt,file_name,node,errors,error_types,partition\n"
        "0,a brown dog and a ball,d0.png,0,,,synth\n0,a brown dog and a ball,d1.png,1,dog,missing,synth\n")
    (tmp_path / "dsg_questions.csv").write_text(
        "id,prompt,question_id,parent_question_id,question,choices,answer,element,element_type,element_of\n"
        "0,a brown dog and a ball,0,-1,is there a dog?,yes|no,yes,dog,missing,\n"
        "0,a brown dog and a ball,1,0,is the dog brown?,yes|no,yes,brown (dog),attribute,dog\n"
        "0,a brown dog and a ball,2,-1,is there a ball?,yes|no,yes,ball,missing,\n")
    said = {"d0.png": [True, True, True], "d1.png": [False, False, False]}  # True: the expected "yes"
    lines = [json.dumps({"key": f"0:{f}", "record": {"questions": [
        {"question_id": q, "expected": "yes", "answer": "yes" if ok else "no", "correct": ok} for q, ok in
        enumerate(oks)]}}) for f, oks in said.items()]
    (tmp_path / "m.records.jsonl").write_text("\n".join(lines) + "\n")
    summary = built_elements(tmp_path / "m.records.jsonl", metadata=tmp_path / "metadata.csv",
                             questions=tmp_path / "dsg_questions.csv", n_bootstrap=10)
    detection = summary["m"]["detection"]
    # by hand, d1: dog (wrong, said wrong) TP; brown (dog) (wrong through the dog, said wrong) TP; ball (shown, said
    # wrong) FP; d0: three TN
    overall = detection["overall"]
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (2, 1, 0, 3)
    attribute = detection["by_type"]["attribute"]
    assert (attribute["tp"], attribute["fp"], attribute["fn"], attribute["tn"]) == (1, 0, 0, 1)


@pytest.mark.parametrize("types_column", ["none", "empty"])
def test_a_dir_built_without_error_types_is_read(tmp_path, types_column):
    # ANNOTATIONS need only seg_id, prompt, file_name, errors: its built metadata.csv has no types (or an empty column)
    types_header, types_cell = {"none": ("", ""), "empty": (",error_types", ",")}[types_column]
    (tmp_path / "metadata.csv").write_text(
        f"seg_id,prompt,file_name,node,errors{types_header}\n0,a dog,d0.png,0,{types_cell}\n"
        f"0,a dog,d1.png,1,dog{types_cell}\n")
    (tmp_path / "q.csv").write_text("id,prompt,question_id,question,choices,answer,element\n"
                                    "0,a dog,0,is there a dog?,yes|no,yes,dog\n0,a dog,1,is it sunny?,yes|no,yes,\n")
    lines = [json.dumps({"key": f"0:{f}", "record": {"questions": [
        {"question_id": q, "expected": "yes", "answer": "no", "correct": False} for q in (0, 1)]}})
        for f in ("d0.png", "d1.png")]
    (tmp_path / "m.records.jsonl").write_text("\n".join(lines) + "\n")
    summary = built_elements(tmp_path / "m.records.jsonl", metadata=tmp_path / "metadata.csv",
                             questions=tmp_path / "q.csv", n_bootstrap=10)
    overall = summary["m"]["detection"]["overall"]
    # by hand: the dog question says wrong on both images; the dog is missing in d1 only (TP) and shown in d0 (FP)
    assert (overall["tp"], overall["fp"], overall["fn"], overall["tn"]) == (1, 1, 0, 0)
    rows = element_rows(tmp_path / "m.records.jsonl", metadata=tmp_path / "metadata.csv", questions=tmp_path / "q.csv")
    assert rows["element"].tolist() == ["dog", None, "dog", None]  # a question naming no element: None, not NaN


@pytest.mark.release_files("per_question/mplug_tifa.csv", "per_question/blip1_dsg.csv", "tifa_questions.csv",
                           "dsg_questions.csv")
def test_released_with_typed_question_tables_gives_rates_per_type(shared_ts2, tmp_path, capsys):
    # the release's question tables carry no type: the test gives each question one (yes/no or multiple choice, and
    # for DSG whether it has a parent), the way TIFA v1.0's element_type or ts2 seg plan's tables would
    def typed(name: str, kind) -> tuple:
        with open(shared_ts2 / name, encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        path = tmp_path / name
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[*rows[0], "element_type"])
            writer.writeheader()
            writer.writerows({**row, "element_type": kind(row)} for row in rows)
        return path, {(int(r["id"]), int(r["question_id"])): kind(r) for r in rows}

    tifa, tifa_types = typed("tifa_questions.csv", lambda r: "yes/no" if r["choices"] == "yes|no" else "choice")
    dsg, dsg_types = typed("dsg_questions.csv", lambda r: "root" if r["parent_question_id"] == "-1" else "child")
    code, out, err = run_cli(capsys, "elements", "--released", "mplug_tifa", "blip1_dsg", "--questions", tifa,
                             "--questions", dsg, "--json", "--n-bootstrap", "20", "--data-dir", shared_ts2)
    assert code == 0, err
    summary = json.loads(out)
    with open(shared_ts2 / "metadata.csv", encoding="utf-8") as handle:
        segs = [int(row["id"]) for row in csv.DictReader(handle)]
    for variant, types in (("mplug_tifa", tifa_types), ("blip1_dsg", dsg_types)):
        tally: dict[str, list[int]] = {}
        image = -1
        with open(shared_ts2 / "per_question" / f"{variant}.csv", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):  # a new image where question_id == 0, in metadata order
                image += int(row["question_id"]) == 0
                entry = tally.setdefault(types[(segs[image], int(row["question_id"]))], [0, 0])
                entry[0] += int(row["correct"]) == 0
                entry[1] += 1
        got = summary[variant]["by_type"]
        assert sorted(got) == sorted(tally)
        for kind, (wrong, n) in tally.items():
            assert got[kind]["n"] == n and abs(got[kind]["wrong_rate"] - wrong / n) <= 1e-12
    code, out, err = run_cli(capsys, "elements", "--released", "mplug_tifa", "--questions", tifa, "--n-bootstrap",
                             "20", "--data-dir", shared_ts2)
    assert code == 0 and "wrong-answer rate (%) by question type" in out and "yes/no" in out, err


@pytest.mark.release_files("per_question/mplug_tifa.csv")
def test_a_question_table_without_types_is_one_line_with_released(shared_ts2, tmp_path, capsys):
    table = tmp_path / "q.csv"
    table.write_text("id,prompt,question_id,question,choices,answer\n0,p,0,is it?,yes|no,yes\n")
    code, _, err = run_cli(capsys, "elements", "--released", "mplug_tifa", "--questions", table, "--data-dir",
                           shared_ts2)
    assert code == 2 and one_line(err) and "no element_type column" in err, err
