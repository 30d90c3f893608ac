"""`ts2 card`: from the release files and a TIFA160-format ratings file alone, the card's TS2 numbers equal
`ts2 meta`'s and its TIFA160 numbers equal `ts2 correlate`'s (both CLI calls run here, JSON compared exactly); paired
tests against a plain mean / scipy; missing sets listed with their reason; the HTML renders in Chromium."""
from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scorers.cli import main
from tests.test_agreement_cli import write_tifa_json

REPO = Path(__file__).resolve().parents[1]
N_BOOT, SEED = 200, 3


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _column_file(shared: Path, column: str, target: Path) -> Path:
    """One release column with the release's own keys, cells copied verbatim (no float round trip)."""
    raw = pd.read_csv(shared / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", column]].to_csv(target, index=False)
    return target


@pytest.fixture(scope="module")
def card_run(tmp_path_factory, shared_ts2):
    root = tmp_path_factory.mktemp("card")
    files = {
        "clip": _column_file(shared_ts2, "clipscore", root / "clip.csv"),
        "mplug": _column_file(shared_ts2, "mplug_tifa", root / "mplug.csv"),
        "tifa": write_tifa_json(root / "human_annotations_with_scores.json", n_prompts=20),
    }
    argv = ["card", "--scores", f"clipscore={files['clip']}", f"mplug_tifa={files['mplug']}",
            "--ratings", f"tifa160={files['tifa']}", "--sets", "genai_bench", "--data-dir", shared_ts2,
            "--n-bootstrap", N_BOOT, "--seed", SEED, "--out", root / "out", "--json"]
    return root, files, argv


@pytest.fixture(scope="module")
def cards(card_run):
    _root, _files, argv = card_run
    from scorers.cli import main as cli_main
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert cli_main([str(a) for a in argv]) == 0
    return json.loads(buffer.getvalue())


def test_ts2_values_equal_ts2_meta(cards, card_run, capsys, shared_ts2):
    _root, files, _argv = card_run
    for name, key in (("clipscore", "clip"), ("mplug_tifa", "mplug")):
        code, out, err = run_cli(capsys, "meta", files[key], "--data-dir", shared_ts2, "--json",
                                 "--n-bootstrap", N_BOOT, "--seed", SEED)
        assert code == 0, err
        assert cards[name]["sets"]["ts2"]["meta"] == json.loads(out)[name]
    # the baseline is the release's clipscore column, read as `ts2 meta released_scores.csv --clean-quotes` reads it
    code, out, err = run_cli(capsys, "meta", shared_ts2 / "released_scores.csv", "--column", "clipscore",
                             "--clean-quotes", "--data-dir", shared_ts2, "--json", "--n-bootstrap", N_BOOT,
                             "--seed", SEED)
    assert code == 0, err
    base = json.loads(out)["clipscore"]
    card_base = cards["mplug_tifa"]["sets"]["ts2"]["baseline_meta"]
    assert card_base["summary"] == {m: base[m]["summary"] for m in ("rank", "sep", "delta")}
    assert card_base["ci"] == {m: base[m]["ci"] for m in ("rank", "sep", "delta")}


def test_ts2_paired_test_is_the_mean_of_per_seg_differences(cards, card_run, capsys, shared_ts2):
    ts2 = cards["mplug_tifa"]["sets"]["ts2"]
    a = ts2["meta"]
    _root, files, _argv = card_run
    code, out, _err = run_cli(capsys, "meta", files["clip"], "--data-dir", shared_ts2, "--json", "--n-bootstrap", 0)
    b = json.loads(out)["clipscore"]
    for row in ts2["comparison"]:
        m = row["meta_metric"]
        pairs = [(a[m]["per_seg"][s], b[m]["per_seg"][s]) for s in a[m]["per_seg"]]
        diffs = [x - y for x, y in pairs if x is not None and y is not None]
        assert row["n_units"] == len(diffs)
        assert row["statistic"] == pytest.approx(sum(diffs) / len(diffs), abs=1e-12)  # float summation order
        assert row["ci_low"] <= row["statistic"] <= row["ci_high"]
    first = ts2["comparison"][0]
    expected = "better" if first["ci_low"] > 0 else "worse" if first["ci_high"] < 0 else "no clear difference"
    assert ts2["verdict"] == expected


def test_published_place_counts_the_release_rows_above(cards, capsys, shared_ts2):
    code, out, err = run_cli(capsys, "reproduce", "--data-dir", shared_ts2, "--json", "--n-bootstrap", 0)
    assert code == 0, err
    rows = json.loads(out)["rows"]
    rank_avg = {r["column"]: r["ours"] for r in rows if r["meta_metric"] == "rank" and r["partition"] == "avg"}
    assert len(rank_avg) == 19
    pub = cards["mplug_tifa"]["sets"]["ts2"]["published"]
    ours = cards["mplug_tifa"]["sets"]["ts2"]["meta"]["rank"]["summary"]["avg"]
    above = [c for c, v in rank_avg.items() if c != "mplug_tifa" and v > ours]
    assert sorted(pub["above"]) == sorted(above)
    assert (pub["place"], pub["of"]) == (len(above) + 1, 19)


def test_tifa160_values_equal_ts2_correlate(cards, card_run, capsys):
    _root, files, _argv = card_run
    for name, column in (("mplug_tifa", "tifa_mplug-large"), ("clipscore", "clipscore_vitb32")):
        code, out, err = run_cli(capsys, "correlate", files["tifa"], "--human", "human_1", "--human", "human_2",
                                 "--metric", column, "--json", "--n-bootstrap", N_BOOT, "--seed", SEED)
        assert code == 0, err
        section = cards[name]["sets"]["tifa160"]
        assert section["rows"] == json.loads(out)["rows"]
        assert section["column"] == column
        assert (section["n_scored"], section["n_skipped"]) == (100, 0)  # 20 prompts x 5 models, none NaN


def test_tifa160_paired_test_against_scipy(cards, card_run):
    _root, files, _argv = card_run
    raw = json.loads(files["tifa"].read_text())
    human = [np.mean(v["human_scores"]) for v in raw.values()]
    rho_a = stats.spearmanr(human, [v["tifa_mplug-large"] for v in raw.values()]).statistic
    rho_b = stats.spearmanr(human, [v["clipscore_vitb32"] for v in raw.values()]).statistic
    section = cards["mplug_tifa"]["sets"]["tifa160"]
    (row,) = section["comparison"]
    assert row["coefficient"] == section["headline_coefficient"] == "spearman"
    assert row["value_a"] == pytest.approx(rho_a, abs=1e-12)
    assert row["value_b"] == pytest.approx(rho_b, abs=1e-12)
    assert row["statistic"] == pytest.approx(rho_a - rho_b, abs=1e-12)
    assert section["headline_value"] == pytest.approx(rho_a, abs=1e-12)


def test_verdict_line_counts_the_sets(cards):
    card = cards["mplug_tifa"]
    verdicts = [s["verdict"] for s in card["sets"].values() if "verdict" in s]
    assert len(verdicts) == 2  # ts2 and tifa160; genai_bench is not evaluated
    better, worse = verdicts.count("better"), verdicts.count("worse")
    assert card["verdict"] == f"better than clipscore on {better} of 2 sets, worse on {worse}, 95% paired intervals"
    assert cards["clipscore"]["verdict"] == "clipscore is the baseline"
    assert "comparison" not in cards["clipscore"]["sets"]["ts2"]


def test_missing_set_is_listed_with_its_reason(cards, card_run, capsys, shared_ts2):
    for card in cards.values():
        assert card["sets"]["genai_bench"]["status"] == "not evaluated"
        assert "--ratings genai_bench=FILE" in card["not_evaluated"]["genai_bench"]
        assert "not a set the card knows" not in card["not_evaluated"]["genai_bench"]
    root, files, _argv = card_run
    # tifa160 by name, offline, with an empty cache: not evaluated, the reason says why; the TS2 part still runs
    code, out, err = run_cli(capsys, "card", "--scores", f"mplug_tifa={files['mplug']}", "--ratings",
                             "tifa160=tifa160", "--offline", "--data-dir", shared_ts2, "--n-bootstrap", 0,
                             "--out", root / "offline", "--json")
    assert code == 0, err
    card = json.loads(out)["mplug_tifa"]
    assert card["sets"]["tifa160"]["status"] == "not evaluated"
    assert "offline" in card["not_evaluated"]["tifa160"].lower() or "cache" in card["not_evaluated"]["tifa160"]
    assert card["sets"]["ts2"]["status"] == "evaluated"
    text = (root / "offline" / "mplug_tifa.md").read_text()
    assert "## tifa160" in text and "not evaluated:" in text


def test_outputs_and_provenance(cards, card_run):
    root, files, argv = card_run
    out = root / "out"
    card = json.loads((out / "mplug_tifa.json").read_text())
    assert card["verdict"] == cards["mplug_tifa"]["verdict"]
    prov = card["provenance"]
    for role, key in (("scores:mplug_tifa", "mplug"), ("ratings:tifa160", "tifa")):
        assert prov["inputs"][role]["sha256"] == hashlib.sha256(files[key].read_bytes()).hexdigest()
    assert prov["segs"] == "0-163" and prov["n_bootstrap"] == N_BOOT and prov["seed"] == SEED
    assert prov["command"].startswith("ts2 card --scores")
    assert prov["inputs"]["ratings:tifa160"]["matches_pinned"] is False  # a generated stand-in, not TIFA's file
    page = (out / "mplug_tifa.html").read_text()
    png = (out / "mplug_tifa.png").read_bytes()
    assert f"data:image/png;base64,{base64.b64encode(png).decode()}" in page  # inlined: viewable offline
    assert "src='http" not in page and 'src="http' not in page
    assert "mplug_tifa.png" in (out / "mplug_tifa.md").read_text()


def test_bad_arguments_are_one_line(capsys, tmp_path, shared_ts2):
    code, _out, err = run_cli(capsys, "card", "--scores", "noequals", "--out", tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--scores" in err
    code, _out, err = run_cli(capsys, "card", "--scores", f"x={tmp_path / 'missing.csv'}", "--out", tmp_path)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "missing.csv" in err


def test_html_renders_in_chromium(card_run, cards):
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian chromium (/usr/bin/chromium) is not installed")
    from playwright import sync_api

    root, _files, _argv = card_run
    html_path = root / "out" / "mplug_tifa.html"
    shots = REPO / "artifacts" / "card"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("file:", "data:"))
                       else route.continue_())  # offline: nothing but the file itself may load
            page.goto(html_path.as_uri())
            assert page.locator("h1").inner_text() == "Report card: mplug_tifa"
            assert page.locator(".verdict").inner_text() == cards["mplug_tifa"]["verdict"]
            width = page.locator("img").evaluate("img => img.complete ? img.naturalWidth : 0")
            assert width > 0  # the inlined PNG decoded
            assert page.locator("h2", has_text="genai_bench").count() == 1
            page.screenshot(path=str(shots / "card.png"), full_page=True)
        finally:
            browser.close()
    print(f"\ncard screenshot: {shots / 'card.png'}")


def test_clean_quotes_and_lower_is_better_as_ts2_meta(capsys, tmp_path, shared_ts2):
    release = shared_ts2 / "released_scores.csv"
    # llmscore_over: stray quotes in 6 cells, lower-is-better by the release's known facts
    code, out, err = run_cli(capsys, "card", "--scores", f"llmscore_over={release}", "--clean-quotes", "--data-dir",
                             shared_ts2, "--n-bootstrap", 50, "--out", tmp_path / "a", "--json")
    assert code == 0, err
    card = json.loads(out)["llmscore_over"]
    code, out, err = run_cli(capsys, "meta", release, "--column", "llmscore_over", "--clean-quotes", "--data-dir",
                             shared_ts2, "--n-bootstrap", 50, "--json")
    assert code == 0, err
    assert card["sets"]["ts2"]["meta"] == json.loads(out)["llmscore_over"]
    assert card["sets"]["ts2"]["meta"]["higher_is_better"] is False
    # a negated clipscore named lower-is-better gives clipscore's rank/sep (delta is a gap, scaled the same)
    raw = pd.read_csv(release, dtype=str, keep_default_na=False)
    neg = pd.DataFrame({"id": raw["id"], "image_id": raw["image_id"], "neg": -raw["clipscore"].astype(float)})
    neg.to_csv(tmp_path / "neg.csv", index=False)
    code, out, err = run_cli(capsys, "card", "--scores", f"neg={tmp_path / 'neg.csv'}", "--lower-is-better", "neg",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "b", "--json")
    assert code == 0, err
    ts2 = json.loads(out)["neg"]["sets"]["ts2"]
    code, out, err = run_cli(capsys, "meta", tmp_path / "neg.csv", "--lower-is-better", "neg", "--data-dir",
                             shared_ts2, "--n-bootstrap", 0, "--json")
    assert ts2["meta"] == json.loads(out)["neg"]
    for m in ("rank", "sep"):
        assert ts2["meta"][m]["summary"]["avg"] == pytest.approx(ts2["baseline_meta"]["summary"][m]["avg"], abs=1e-12)
    code, _out, err = run_cli(capsys, "card", "--scores", f"neg={tmp_path / 'neg.csv'}", "--lower-is-better", "nope",
                              "--out", tmp_path / "c")
    assert code == 2 and "--lower-is-better nope" in err


def test_rating_set_without_the_metric_column_is_not_evaluated(card_run, capsys, shared_ts2):
    root, files, _argv = card_run
    code, out, err = run_cli(capsys, "card", "--scores", f"other={files['clip']}", "--ratings",
                             f"tifa160={files['tifa']}", "--data-dir", shared_ts2, "--n-bootstrap", 0,
                             "--out", root / "other", "--json")
    assert code == 0, err
    card = json.loads(out)["other"]
    assert card["sets"]["tifa160"]["status"] == "not evaluated"
    assert "no column 'other'" in card["not_evaluated"]["tifa160"]
    assert "--ratings-column other=COL" in card["not_evaluated"]["tifa160"]
    # named with --ratings-column, the same file is evaluated, with the numbers of that column
    code, out, err = run_cli(capsys, "card", "--scores", f"other={files['clip']}", "--ratings",
                             f"tifa160={files['tifa']}", "--ratings-column", "other=tifa_vilt", "--data-dir",
                             shared_ts2, "--n-bootstrap", 0, "--out", root / "other", "--json")
    assert code == 0, err
    section = json.loads(out)["other"]["sets"]["tifa160"]
    raw = json.loads(files["tifa"].read_text())
    human = [np.mean(v["human_scores"]) for v in raw.values()]
    rho = stats.spearmanr(human, [v["tifa_vilt"] for v in raw.values()]).statistic
    assert section["column"] == "tifa_vilt"
    assert section["headline_value"] == pytest.approx(rho, abs=1e-12)


def test_without_matplotlib_the_card_is_written_without_a_figure(cards, tmp_path, monkeypatch):
    import sys

    from scorers.report.card import write_card

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ModuleNotFoundError
    card = json.loads(json.dumps(cards["mplug_tifa"]))
    paths = write_card(card, tmp_path)
    assert sorted(paths) == ["html", "json", "md"]
    assert "no figure: matplotlib is not installed" in (tmp_path / "mplug_tifa.md").read_text()
    assert "data:image/png" not in (tmp_path / "mplug_tifa.html").read_text()


# ----------------------------------------------------------------------------------------------------------------------
# Preference sets and a weighted reward in the card. Expected values: plain loops over the pairs (and over the
# documented bootstrap draw, default_rng(seed).integers(0, n_prompts, (B, n_prompts))), hand cases, and `ts2 meta` on
# a hand-made weighted-sum CSV.
# ----------------------------------------------------------------------------------------------------------------------

PREF_BOOT, PREF_SEED = 100, 3
SIGN = {"a": 1, "b": -1, "tie": 0}


def loop_accuracy(triples, ties):
    """Pairwise accuracy by a plain loop over (score_a, score_b, human) triples: ``(accuracy, epsilon)``.
    excluded: human ties dropped, right when the scores differ strictly in the human's direction (a metric tie is
    wrong). calibrated: every epsilon in {0} + the observed |a - b|, a metric tie when |a - b| <= epsilon, right when
    the two signs agree; the best accuracy and the smallest epsilon reaching it."""
    if ties == "excluded":
        kept = [(a, b, h) for a, b, h in triples if h != "tie"]
        right = sum((a > b and h == "a") or (a < b and h == "b") for a, b, h in kept)
        return right / len(kept), None
    best = None
    for eps in sorted({0.0} | {abs(a - b) for a, b, _h in triples}):
        right = 0
        for a, b, h in triples:
            metric = 0 if abs(a - b) <= eps else (1 if a > b else -1)
            right += metric == SIGN[h]
        if best is None or right > best[0]:
            best = (right, eps)
    return best[0] / len(triples), best[1]


def scored_triples(pairs, scores, column):
    """(item, score_a, score_b, human) of the pairs whose two images have a score in ``column``."""
    value = dict(zip(scores["image"], scores[column]))
    out = []
    for item, a, b, h in zip(pairs["item"], pairs["image_a"], pairs["image_b"], pairs["preference"]):
        sa, sb = value.get(a, np.nan), value.get(b, np.nan)
        if not (np.isnan(sa) or np.isnan(sb)):
            out.append((item, sa, sb, h))
    return out


def loop_bootstrap(rows_by_prompt, statistic, n_boot, seed):
    """The statistic on each resample of prompts (the documented draw), pairs of a drawn prompt all coming along."""
    prompts = list(rows_by_prompt)
    draw = np.random.default_rng(seed).integers(0, len(prompts), size=(n_boot, len(prompts)))
    return np.array([statistic([row for k in idx for row in rows_by_prompt[prompts[k]]]) for idx in draw])


def by_prompt(rows, keep=lambda row: True):
    groups = {}
    for row in rows:
        if keep(row):
            groups.setdefault(row[0], []).append(row)
    return groups


@pytest.fixture(scope="module")
def pref_run(tmp_path_factory, shared_ts2):
    root = tmp_path_factory.mktemp("card_pref")
    rng = np.random.default_rng(11)
    rows = []
    for p in range(12):
        names = [f"p{p}_i{j}.png" for j in range(4)]
        for i in range(4):
            for j in range(i + 1, 4):
                rows.append({"item": f"prompt {p}", "prompt": f"a prompt {p}", "image_a": names[i],
                             "image_b": names[j], "preference": rng.choice(["a", "b", "tie"], p=[0.45, 0.35, 0.2])})
    pairs = pd.DataFrame(rows)
    pairs.to_csv(root / "pairs.csv", index=False)
    images = sorted({*pairs["image_a"], *pairs["image_b"]})
    # one decimal: many exact metric ties, so both conventions and epsilon are exercised
    scores = pd.DataFrame({"image": images, "mine": np.round(rng.normal(size=len(images)), 1),
                           "clipscore": np.round(rng.normal(size=len(images)), 1),
                           "other": rng.normal(size=len(images))})
    scores.loc[[3, 17], "mine"] = np.nan  # two images without a score: their pairs are skipped
    scores.to_csv(root / "scores.csv", index=False)
    parts = pd.DataFrame({"image": images[:-1], "alignscore": np.round(rng.normal(size=len(images) - 1), 2)})
    parts.to_csv(root / "scores_align.csv", index=False)  # a second file, joined on the image key
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "mplug_tifa"]].rename(columns={"mplug_tifa": "mine"}).to_csv(root / "mine.csv",
                                                                                        index=False)
    raw[["id", "image_id", "alignscore"]].to_csv(root / "align.csv", index=False)
    argv = ["card", "--scores", f"mine={root / 'mine.csv'}", "--scores", f"alignscore={root / 'align.csv'}",
            "--reward", "mine=1,alignscore=0.5", "--preferences", f"toy={root / 'pairs.csv'}",
            "--preference-scores", f"toy={root / 'scores.csv'}", "--preference-scores",
            f"toy={root / 'scores_align.csv'}", "--data-dir", shared_ts2, "--n-bootstrap", PREF_BOOT,
            "--seed", PREF_SEED, "--out", root / "out", "--json"]
    import contextlib
    import io

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main([str(a) for a in argv]) == 0
    return root, pairs, scores, parts, json.loads(buffer.getvalue())


def test_preference_accuracy_equals_a_plain_loop(pref_run):
    _root, pairs, scores, _parts, cards = pref_run
    section = cards["mine"]["sets"]["toy"]
    assert section["status"] == "evaluated" and section["headline_ties"] == "calibrated"  # no set-specific convention
    triples = scored_triples(pairs, scores, "mine")
    assert (section["n_pairs"], section["n_scored"], section["n_skipped"]) == (72, len(triples), 72 - len(triples))
    assert 0 < section["n_skipped"] < 72
    rows = {r["ties"]: r for r in section["rows"]}
    for ties in ("calibrated", "excluded"):
        value, eps = loop_accuracy([t[1:] for t in triples], ties)
        row = rows[ties]
        assert row["statistic"] == pytest.approx(value, abs=1e-12)
        assert row["epsilon"] == (None if eps is None else pytest.approx(eps, abs=1e-12))
        kept = [t for t in triples if ties == "calibrated" or t[3] != "tie"]
        assert row["n_pairs"] == len(kept)
        assert row["n_human_ties"] == sum(t[3] == "tie" for t in triples)
        groups = by_prompt(kept)
        assert row["n_items"] == len(groups)
        boot = loop_bootstrap(groups, lambda rs: loop_accuracy([r[1:] for r in rs], ties)[0], PREF_BOOT, PREF_SEED)
        low, high = np.quantile(boot, [0.025, 0.975])
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert section["headline_value"] == rows["calibrated"]["statistic"]


def test_preference_paired_test_on_the_same_pairs(pref_run):
    _root, pairs, scores, _parts, cards = pref_run
    section = cards["mine"]["sets"]["toy"]
    # the same pairs: those where both metrics score both images (clipscore scores every image here)
    value_m = dict(zip(scores["image"], scores["mine"]))
    value_c = dict(zip(scores["image"], scores["clipscore"]))
    both = [(item, value_m[a], value_m[b], value_c[a], value_c[b], h)
            for item, a, b, h in zip(pairs["item"], pairs["image_a"], pairs["image_b"], pairs["preference"])
            if not (np.isnan(value_m[a]) or np.isnan(value_m[b]))]
    assert section["baseline_column"] == "clipscore"
    for comparison in section["comparison"]:
        ties = comparison["ties"]
        keep = (lambda r: True) if ties == "calibrated" else (lambda r: r[5] != "tie")
        kept = [r for r in both if keep(r)]
        acc_m = loop_accuracy([(r[1], r[2], r[5]) for r in kept], ties)[0]
        acc_c = loop_accuracy([(r[3], r[4], r[5]) for r in kept], ties)[0]
        assert comparison["value_a"] == pytest.approx(acc_m, abs=1e-12)
        assert comparison["value_b"] == pytest.approx(acc_c, abs=1e-12)
        assert comparison["statistic"] == pytest.approx(acc_m - acc_c, abs=1e-12)
        groups = by_prompt(kept)
        assert (comparison["n_units"], comparison["unit"]) == (len(groups), "prompt")

        def diff(rs):
            return (loop_accuracy([(r[1], r[2], r[5]) for r in rs], ties)[0]
                    - loop_accuracy([(r[3], r[4], r[5]) for r in rs], ties)[0])

        boot = loop_bootstrap(groups, diff, PREF_BOOT, PREF_SEED)
        low, high = np.quantile(boot, [0.025, 0.975])
        assert comparison["ci_low"] == pytest.approx(low, abs=1e-12)
        assert comparison["ci_high"] == pytest.approx(high, abs=1e-12)
        far = min((boot <= 0).sum(), (boot >= 0).sum())
        assert comparison["pvalue"] == pytest.approx(min(1.0, 2 * (1 + far) / (1 + PREF_BOOT)), abs=1e-12)
    assert [c["ties"] for c in section["comparison"]] == ["calibrated", "excluded"]  # the headline first
    first = section["comparison"][0]
    assert section["verdict"] == ("better" if first["ci_low"] > 0 else "worse" if first["ci_high"] < 0
                                  else "no clear difference")
