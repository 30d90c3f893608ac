"""`ts2 card`: from the release files and a TIFA160-format ratings file alone, the card's TS2 numbers equal
`ts2 meta`'s and its TIFA160 numbers equal `ts2 correlate`'s (both CLI calls run here, JSON compared exactly); paired
tests against a plain mean / scipy; missing sets listed with their reason; the HTML renders in Chromium."""
from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scorers.cli import main
from tests.helpers.rating_files import write_tifa_json
from tests.helpers.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
N_BOOT, SEED = 200, 3


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
    significant = first["pvalue"] <= 0.05  # better / worse only when the test is significant at 1 - 0.95
    expected = ("better" if significant and first["ci_low"] > 0 else "worse" if significant and first["ci_high"] < 0
                else f"no significant difference (p = {first['pvalue']:.3f} at alpha 0.05)")
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


@contextlib.contextmanager
def offline_page(html_path: Path):
    """The card's HTML file in headless Debian Chromium, with every request but the file itself refused."""
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("Debian chromium (/usr/bin/chromium) is not installed")
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            page.route("**/*", lambda route: route.abort() if not route.request.url.startswith(("file:", "data:"))
                       else route.continue_())  # offline: nothing but the file itself may load
            page.goto(html_path.as_uri())
            yield page
        finally:
            browser.close()


def test_html_renders_in_chromium(card_run, cards):
    root, _files, _argv = card_run
    shots = REPO / "artifacts" / "card"
    shots.mkdir(parents=True, exist_ok=True)
    with offline_page(root / "out" / "mplug_tifa.html") as page:
        assert page.locator("h1").inner_text() == "Report card: mplug_tifa"
        assert page.locator(".verdict").inner_text() == cards["mplug_tifa"]["verdict"]
        width = page.locator("img").evaluate("img => img.complete ? img.naturalWidth : 0")
        assert width > 0  # the inlined PNG decoded
        assert page.locator("h2", has_text="genai_bench").count() == 1
        page.screenshot(path=str(shots / "card.png"), full_page=True)
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

    from scorers.report.card import Card, write_card

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ModuleNotFoundError
    card = Card.from_dict(json.loads(json.dumps(cards["mplug_tifa"])))
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
    significant = first["pvalue"] <= 0.05
    assert section["verdict"] == ("better" if significant and first["ci_low"] > 0 else "worse"
                                  if significant and first["ci_high"] < 0
                                  else f"no significant difference (p = {first['pvalue']:.3f} at alpha 0.05)")


def test_reward_ts2_values_equal_ts2_meta_on_a_hand_made_weighted_sum(pref_run, capsys, shared_ts2):
    root, _pairs, _scores, _parts, cards = pref_run
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    meta = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    assert len(raw) == len(meta) and (raw["id"] == meta["id"]).all()  # the release is row-aligned with metadata
    to_float = lambda cells: pd.to_numeric(cells.replace("", np.nan))  # noqa: E731
    hand = pd.DataFrame({"seg_id": meta["id"], "file_name": meta["file_name"],
                         "reward": 1.0 * to_float(raw["mplug_tifa"]) + 0.5 * to_float(raw["alignscore"])})
    hand.to_csv(root / "hand.csv", index=False)
    code, out, err = run_cli(capsys, "meta", root / "hand.csv", "--data-dir", shared_ts2, "--json",
                             "--n-bootstrap", PREF_BOOT, "--seed", PREF_SEED)
    assert code == 0, err
    card = cards["reward"]
    assert card["sets"]["ts2"]["meta"] == json.loads(out)["reward"]
    assert card["reward"]["weights"] == {"mine": 1.0, "alignscore": 0.5}
    assert card["reward"]["normalize"] == "none"
    written = pd.read_csv(root / "out" / "reward_ts2_scores.csv")
    np.testing.assert_array_equal(written["reward"].to_numpy(), hand["reward"].to_numpy())


def test_reward_is_compared_with_each_part_and_the_baseline(pref_run, capsys, shared_ts2):
    root, pairs, scores, parts, cards = pref_run
    card = cards["reward"]
    ts2 = card["sets"]["ts2"]
    assert set(ts2["parts"]) == {"mine", "alignscore"} and len(ts2["comparison"]) == 3  # vs clipscore
    for part, key in (("mine", "mine"), ("alignscore", "alignscore")):
        code, out, _err = run_cli(capsys, "meta", root / f"{'mine' if part == 'mine' else 'align'}.csv",
                                  "--data-dir", shared_ts2, "--json", "--n-bootstrap", 0)
        other = json.loads(out)[key]
        for row in ts2["parts"][part]["comparison"]:
            m = row["meta_metric"]
            mine = ts2["meta"][m]["per_seg"]
            diffs = [mine[s] - other[m]["per_seg"][s] for s in mine
                     if mine[s] is not None and other[m]["per_seg"][s] is not None]
            assert row["n_units"] == len(diffs)
            assert row["statistic"] == pytest.approx(sum(diffs) / len(diffs), abs=1e-12)  # float summation order
    # on the preference set, the reward's per-image score is the weighted sum of the parts' columns
    value = {i: m + 0.5 * a for i, m, a in zip(parts["image"], scores.set_index("image").loc[parts["image"], "mine"],
                                                parts["alignscore"])}
    toy = card["sets"]["toy"]
    reward_scores = pd.DataFrame({"image": list(value), "r": list(value.values())})
    triples = scored_triples(pairs, reward_scores, "r")
    assert toy["n_scored"] == len(triples)
    assert toy["headline_value"] == pytest.approx(loop_accuracy([t[1:] for t in triples], "calibrated")[0],
                                                  abs=1e-12)
    align_triples = scored_triples(pairs, parts, "alignscore")
    assert set(toy["parts"]) == {"mine", "alignscore"}
    row = toy["parts"]["alignscore"]["rows"][1]  # excluded
    assert row["statistic"] == pytest.approx(loop_accuracy([t[1:] for t in align_triples], "excluded")[0],
                                             abs=1e-12)
    # the paired test against a part runs on the pairs both score: the reward's (a part's images are a superset)
    (head,) = [c for c in toy["parts"]["alignscore"]["comparison"] if c["ties"] == "calibrated"]
    reward_acc = loop_accuracy([t[1:] for t in triples], "calibrated")[0]
    align_value = dict(zip(parts["image"], parts["alignscore"]))
    same_pairs = [(align_value[a], align_value[b], h)
                  for a, b, h in zip(pairs["image_a"], pairs["image_b"], pairs["preference"])
                  if a in value and b in value and not (np.isnan(value[a]) or np.isnan(value[b]))]
    align_same = loop_accuracy(same_pairs, "calibrated")[0]
    assert head["statistic"] == pytest.approx(reward_acc - align_same, abs=1e-12)
    verdicts = {p: [s["parts"][p]["verdict"] for s in card["sets"].values() if p in (s.get("parts") or {})]
                for p in ("mine", "alignscore")}
    expected = "; ".join(f"better than {p} on {v.count('better')} of {len(v)} sets, worse on {v.count('worse')}"
                         for p, v in verdicts.items()) + ", 95% paired intervals"
    assert card["parts_verdict"] == expected and all(len(v) == 2 for v in verdicts.values())
    text = (root / "out" / "reward.md").read_text()
    assert "weighted reward: reward = 1.0000 * n(mine) + 0.5000 * n(alignscore); normalize: none" in text
    assert "paired vs alignscore (rank)" in text and "verdict vs mine:" in text


def test_verdict_line_counts_the_preference_set(pref_run):
    _root, _pairs, _scores, _parts, cards = pref_run
    card = cards["mine"]
    verdicts = [s["verdict"] for s in card["sets"].values() if "verdict" in s]
    assert len(verdicts) == 2  # ts2 and toy
    assert card["verdict"] == (f"better than clipscore on {verdicts.count('better')} of 2 sets, worse on "
                               f"{verdicts.count('worse')}, 95% paired intervals")
    # alignscore's column is in the second score file of the set, joined on the image key
    assert cards["alignscore"]["sets"]["toy"]["column"] == "alignscore"


def test_preference_section_in_markdown_html_json(pref_run):
    root, _pairs, _scores, _parts, cards = pref_run
    out = root / "out"
    text = (out / "mine.md").read_text()
    assert "## toy" in text and "| metric | ties | accuracy (%) | CI (%) | epsilon | pairs | human ties | prompts |" in text
    assert "| mine | calibrated * |" in text and "| clipscore | excluded (metric tie wrong) |" in text
    assert "paired vs clipscore (accuracy, ties calibrated)" in text
    page = (out / "mine.html").read_text()
    assert "<h2>toy</h2>" in page and "paired vs clipscore (accuracy, ties excluded)" in page
    saved = json.loads((out / "mine.json").read_text())
    assert saved["sets"]["toy"] == cards["mine"]["sets"]["toy"]
    prov = saved["provenance"]
    assert prov["inputs"]["preferences:toy"]["sha256"] == hashlib.sha256((root / "pairs.csv").read_bytes()).hexdigest()
    assert "preference_scores:toy:1" in prov["inputs"]
    assert prov["preference_sets"]["toy"]["n_pairs"] == 72


def test_figure_has_a_dot_per_metric_with_intervals(pref_run):
    from scorers.report.card import Card, figure_dots

    _root, _pairs, _scores, _parts, cards = pref_run
    label, dots = figure_dots(Card.from_dict(cards["reward"]), "toy")
    kinds = {d[0]: d[4] for d in dots}
    assert kinds == {"reward": "metric", "clipscore": "baseline", "mine": "part", "alignscore": "part",
                     "other": "other"}
    assert label == "pairwise accuracy (ties calibrated)"
    assert all(d[2] is not None and d[2] <= d[1] <= d[3] for d in dots)  # every dot has its interval
    label, dots = figure_dots(Card.from_dict(cards["reward"]), "ts2")
    published = [d for d in dots if d[4] == "other"]
    assert len(published) == 17  # the 19 release rows less clipscore (the baseline) and alignscore (a part)
    assert all(d[2] is not None and d[2] <= d[1] <= d[3] for d in dots)


def test_hpdv2_by_its_loader_hand_case(tmp_path, capsys, shared_ts2):
    """HPDv2's test.json (ranks, 1 = best) through its loader; headline: ties excluded. Hand case in the comments."""
    entries = [{"prompt": "x", "image_path": ["i0", "i1", "i2"], "rank": [1, 2, 3], "raw_annotations": []},
               {"prompt": "y", "image_path": ["j0", "j1", "j2"], "rank": [2, 1, 2], "raw_annotations": []}]
    (tmp_path / "test.json").write_text(json.dumps(entries))
    # pairs: (i0,i1) a, (i0,i2) a, (i1,i2) a, (j0,j1) b, (j0,j2) tie, (j1,j2) a
    pd.DataFrame({"image": ["i0", "i1", "i2", "j0", "j1", "j2"],
                  "mine": [0.9, 0.5, 0.7, 0.3, 0.6, 0.3],          # right, right, wrong, right, (tie), right
                  "clipscore": [0.1, 0.2, 0.3, 0.5, 0.4, 0.6]}).to_csv(tmp_path / "s.csv", index=False)
    mine = tmp_path / "mine.csv"
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "clipscore"]].rename(columns={"clipscore": "mine"}).to_csv(mine, index=False)
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences",
                             f"hpdv2={tmp_path / 'test.json'}", "--preference-scores", f"hpdv2={tmp_path / 's.csv'}",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "out", "--json")
    assert code == 0, err
    section = json.loads(out)["mine"]["sets"]["hpdv2"]
    assert section["headline_ties"] == "excluded" and "HPSv2" in section["headline"]
    rows = {r["ties"]: r for r in section["rows"]}
    assert rows["excluded"]["statistic"] == pytest.approx(4 / 5, abs=1e-12)  # 4 of the 5 human-decided pairs
    # calibrated: epsilon 0 ties (j0,j2) as the humans did: 5 of 6; any larger epsilon also ties a right pair
    assert rows["calibrated"]["statistic"] == pytest.approx(5 / 6, abs=1e-12) and rows["calibrated"]["epsilon"] == 0
    base = {r["ties"]: r for r in section["baseline_rows"]}
    assert base["excluded"]["statistic"] == 0.0  # clipscore orders every decided pair the wrong way
    first = section["comparison"][0]
    assert first["ties"] == "excluded" and first["statistic"] == pytest.approx(0.8, abs=1e-12)
    assert section["provenance"]["sha256"] == hashlib.sha256((tmp_path / "test.json").read_bytes()).hexdigest()


def test_preference_set_offline_without_cache_is_not_evaluated(tmp_path, capsys, shared_ts2):
    pd.DataFrame({"image": ["u1"], "mine": [0.5]}).to_csv(tmp_path / "s.csv", index=False)
    mine = tmp_path / "mine.csv"
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    raw[["id", "image_id", "clipscore"]].rename(columns={"clipscore": "mine"}).to_csv(mine, index=False)
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", "pickapic_v2=pickapic_v2",
                             "--preference-scores", f"pickapic_v2={tmp_path / 's.csv'}", "--sets", "hpdv2,mj_bench",
                             "--offline", "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o",
                             "--json")
    assert code == 0, err
    card = json.loads(out)["mine"]
    assert "offline" in card["not_evaluated"]["pickapic_v2"] and "not cached" in card["not_evaluated"]["pickapic_v2"]
    assert "--preferences hpdv2=FILE --preference-scores hpdv2=FILE" in card["not_evaluated"]["hpdv2"]
    assert "mjbench_alignment" in card["not_evaluated"]  # MJ-Bench by its other name
    assert card["sets"]["ts2"]["status"] == "evaluated"


@pytest.mark.parametrize("argv, needle", [
    (["--preference-scores", "toy=S"], "--preference-scores toy"),
    (["--preferences", "toy=S"], "--preferences toy: no --preference-scores"),
    (["--reward", "mine=1,nope=2"], "--reward: nope has no --scores file"),
    (["--reward", "mine=x"], "--reward mine=x"),
    (["--reward", "mine=1", "--reward-normalize", "mine=1:0"], "--reward-normalize mine=1:0"),
    (["--reward", "mine=1", "--reward-normalize", "other=1:2"], "other is not among the rewards"),
    (["--reward-normalize", "running"], "--reward-normalize: only with --reward"),
])
def test_bad_preference_and_reward_arguments_are_one_line(capsys, tmp_path, shared_ts2, argv, needle):
    (tmp_path / "s.csv").write_text("image,mine\nu1,0.5\n")
    mine = _column_file(shared_ts2, "clipscore", tmp_path / "mine.csv")
    argv = [str(tmp_path / "s.csv") if a == "S" else a for a in argv]
    argv = [a.replace("=S", f"={tmp_path / 's.csv'}") for a in argv]
    code, _out, err = run_cli(capsys, "card", "--scores", f"clipscore={mine}", f"mine={mine}", *argv,
                              "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize("normalize", ["none", "running", {"a": (0.5, 2.0)}])
def test_weighted_reward_normalises_as_the_reward_api(normalize):
    """The card's per-image sum equals scorers.rewards.api.Reward's on one batch holding every image (its running
    statistics then hold all of them), float64 tensors; tolerance: summation order (numpy pairwise vs Python)."""
    torch = pytest.importorskip("torch")
    from scorers.report.card import weighted_reward
    from scorers.rewards.api import Reward

    rng = np.random.default_rng(5)
    parts = {"a": rng.normal(3, 2, 50), "b": rng.normal(0, 0.1, 50)}
    weights = {"a": 1.0, "b": 0.5}
    total, stats = weighted_reward(parts, weights, normalize)
    reward = Reward({"a": object(), "b": object()}, weights, normalize=normalize)
    expected = sum(weights[n] * reward._normalise(n, torch.tensor(parts[n], dtype=torch.float64)) for n in weights)
    np.testing.assert_allclose(total, expected.numpy(), rtol=0, atol=1e-12)
    if normalize == "running":
        for n in weights:
            assert stats[n]["count"] == 50
            assert stats[n]["mean"] == pytest.approx(reward.stats[n]["mean"], abs=1e-12)
            assert stats[n]["std"] == pytest.approx(reward.stats[n]["std"], abs=1e-12)


def test_reward_with_a_fixed_affine_normalisation_equals_ts2_meta_on_the_hand_made_sum(tmp_path, capsys,
                                                                                       shared_ts2):
    a = _column_file(shared_ts2, "mplug_tifa", tmp_path / "a.csv")
    b = _column_file(shared_ts2, "alignscore", tmp_path / "b.csv")
    code, out, err = run_cli(capsys, "card", "--scores", f"mplug_tifa={a}", f"alignscore={b}", "--reward",
                             "mplug_tifa=2,alignscore=-0.25", "--reward-normalize", "mplug_tifa=0.5:4",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    card = json.loads(out)["reward"]
    raw = pd.read_csv(shared_ts2 / "released_scores.csv", dtype=str, keep_default_na=False)
    meta = pd.read_csv(shared_ts2 / "metadata.csv", dtype=str, keep_default_na=False)
    num = lambda c: pd.to_numeric(raw[c].replace("", np.nan))  # noqa: E731
    pd.DataFrame({"seg_id": meta["id"], "file_name": meta["file_name"],
                  "reward": 2 * ((num("mplug_tifa") - 0.5) / 4) + (-0.25) * num("alignscore")}).to_csv(
        tmp_path / "hand.csv", index=False)
    code, out, err = run_cli(capsys, "meta", tmp_path / "hand.csv", "--data-dir", shared_ts2, "--json",
                             "--n-bootstrap", 0)
    assert code == 0, err
    assert card["sets"]["ts2"]["meta"] == json.loads(out)["reward"]
    assert card["reward"]["normalize"] == {"mplug_tifa": [0.5, 4.0]}
    assert card["reward"]["stats"]["ts2"] == {"mplug_tifa": {"shift": 0.5, "scale": 4.0}}


def test_reward_card_with_a_preference_set_renders_in_chromium(pref_run):
    root, _pairs, _scores, _parts, cards = pref_run
    shots = REPO / "artifacts" / "card"
    shots.mkdir(parents=True, exist_ok=True)
    with offline_page(root / "out" / "reward.html") as page:
        assert page.locator(".verdict").inner_text() == cards["reward"]["verdict"]
        assert page.locator("h2", has_text="toy").count() == 1
        assert page.locator("li", has_text="against its parts:").count() == 1
        assert page.locator("img").evaluate("img => img.complete ? img.naturalWidth : 0") > 0
        page.screenshot(path=str(shots / "card_reward.png"), full_page=True)


def test_reward_on_a_rating_set_is_built_from_its_parts_columns(card_run, capsys, shared_ts2):
    root, files, _argv = card_run
    code, out, err = run_cli(capsys, "card", "--scores", f"clipscore={files['clip']}", f"mplug_tifa={files['mplug']}",
                             "--reward", "clipscore=1,mplug_tifa=0.5", "--ratings", f"tifa160={files['tifa']}",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", root / "reward_tifa", "--json")
    assert code == 0, err
    section = json.loads(out)["reward"]["sets"]["tifa160"]
    raw = json.loads(files["tifa"].read_text())
    human = [np.mean(v["human_scores"]) for v in raw.values()]
    hand = [v["clipscore_vitb32"] + 0.5 * v["tifa_mplug-large"] for v in raw.values()]
    assert section["headline_value"] == pytest.approx(stats.spearmanr(human, hand).statistic, abs=1e-12)
    rho_part = stats.spearmanr(human, [v["tifa_mplug-large"] for v in raw.values()]).statistic
    (comparison,) = section["parts"]["mplug_tifa"]["comparison"]
    assert comparison["value_b"] == pytest.approx(rho_part, abs=1e-12)
    assert section["parts"]["mplug_tifa"]["column"] == "tifa_mplug-large"
    assert section["parts"]["clipscore"]["column"] == "clipscore_vitb32"  # also the baseline


def test_pickapic_parquet_by_its_loader_hand_case(tmp_path, capsys, shared_ts2):
    """A Pick-a-Pic v2 Parquet (label_0/label_1; 0.5/0.5 = tie; the image bytes are never read) through its loader;
    headline: calibrated (the paper keeps human ties)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"caption": ["c1", "c2", "c3", "c4"], "image_0_uid": ["u1", "u3", "u5", "u7"],
                             "image_1_uid": ["u2", "u4", "u6", "u8"], "label_0": [1.0, 0.0, 0.5, 1.0],
                             "label_1": [0.0, 1.0, 0.5, 0.0], "jpg_0": [b"x"] * 4, "jpg_1": [b"y"] * 4}),
                   tmp_path / "test_unique.parquet")
    # human: a, b, tie, a. mine gaps: +0.2 (right), -0.3 (right), 0.05 (tie only if eps >= 0.05), -0.1 (wrong)
    pd.DataFrame({"image": [f"u{k}" for k in range(1, 9)], "mine": [0.5, 0.3, 0.1, 0.4, 0.6, 0.55, 0.2, 0.3],
                  "clipscore": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]}).to_csv(tmp_path / "s.csv", index=False)
    mine = _column_file(shared_ts2, "clipscore", tmp_path / "mine.csv")
    mine.write_text(mine.read_text().replace("clipscore", "mine", 1))
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences",
                             f"pickapic_v2={tmp_path / 'test_unique.parquet'}", "--preference-scores",
                             f"pickapic_v2={tmp_path / 's.csv'}", "--data-dir", shared_ts2, "--n-bootstrap", 0,
                             "--out", tmp_path / "o", "--json")
    assert code == 0, err
    section = json.loads(out)["mine"]["sets"]["pickapic_v2"]
    assert section["headline_ties"] == "calibrated" and "Pick-a-Pic" in section["headline"]
    rows = {r["ties"]: r for r in section["rows"]}
    # eps = 0: 2 of 4 (the tie is missed); eps = 0.05: 3 of 4; eps = 0.1 ties the wrong pair too but not a right
    # one: 3 of 4 again, so the smallest, 0.05, is reported (|0.6 - 0.55| in float64)
    assert rows["calibrated"]["statistic"] == 0.75
    assert rows["calibrated"]["epsilon"] == pytest.approx(0.05, abs=1e-12)
    assert rows["excluded"]["statistic"] == pytest.approx(2 / 3, abs=1e-12) and rows["excluded"]["n_human_ties"] == 1
