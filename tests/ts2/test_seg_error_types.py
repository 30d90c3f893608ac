"""A built data dir through ``ts2 meta`` (the same numbers as a hand-made metadata.csv, partitions from the
file) and ``ts2 meta --by-error-type`` (rank / sep / delta over walks along edges of one error type)."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import run_cli


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# SEG ids 5, 120, 150, 200: by id range they would be synth / nat / real / outside the default 0-163; the file's
# partition column puts them in p1 / p1 / p2 / p2, and a built dir's default SEG set is every SEG.
# (seg_id, file, errors, partition, hand-written node label)
IMAGES = [
    (5, "a0.png", "", "p1", "0"), (5, "a1.png", "", "p1", "0"),
    (5, "a2.png", "x", "p1", "1a"), (5, "a3.png", "y", "p1", "1b"), (5, "a4.png", "y", "p1", "1b"),
    (5, "a5.png", "x;y", "p1", "2"), (5, "a6.png", "z;y;x", "p1", "3"),
    (120, "b0.png", "", "p1", "0"), (120, "b1.png", "p", "p1", "1a"), (120, "b2.png", "q", "p1", "1b"),
    (120, "b3.png", "q;p", "p1", "2"), (120, "b4.png", "p;q;r", "p1", "3"), (120, "b5.png", "p;q;r", "p1", "3"),
    (150, "c0.png", "", "p2", "0"), (150, "c1.png", "", "p2", "0"), (150, "c2.png", "m", "p2", "1"),
    (150, "c3.png", "m", "p2", "1"), (150, "c4.png", "m;n", "p2", "2"),
    (200, "d0.png", "", "p2", "0"), (200, "d1.png", "u;v", "p2", "2a"), (200, "d2.png", "v;w", "p2", "2b"),
    (200, "d3.png", "u;v;w", "p2", "3"),
]


def _built_and_hand(tmp_path: Path):
    from tests.helpers.seg_files import write_images

    rows = ["seg_id,prompt,file_name,errors,partition"]
    rows += [f"{s},prompt {s},{f},{e},{p}" for s, f, e, p, _ in IMAGES]
    ann = _write(tmp_path / "ann.csv", "\n".join(rows) + "\n")
    write_images(tmp_path / "imgs", [f for _, f, *_ in IMAGES])
    hand = ["id,target_prompt,file_name,image_source,rank,partition"]
    hand += [f"{s},prompt {s},{f},,{label},{p}" for s, f, _, p, label in IMAGES]
    hand_meta = _write(tmp_path / "hand_metadata.csv", "\n".join(hand) + "\n")
    rng = np.random.default_rng(7)
    scores = {f: float(v) for (_, f, *_), v in zip(IMAGES, rng.normal(size=len(IMAGES)))}
    scores_b = {f: float(v) for (_, f, *_), v in zip(IMAGES, rng.normal(size=len(IMAGES)))}
    pd.DataFrame({"seg_id": [s for s, *_ in IMAGES], "file_name": [f for _, f, *_ in IMAGES],
                  "m": [scores[f] for _, f, *_ in IMAGES], "k": [scores_b[f] for _, f, *_ in IMAGES]}
                 ).to_csv(tmp_path / "hand_scores.csv", index=False)
    return ann, hand_meta, scores, scores_b


def test_built_dir_meta_equals_hand_made_metadata(tmp_path, capsys):
    ann, hand_meta, scores, scores_b = _built_and_hand(tmp_path)
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "seg", "build", ann, "--images", tmp_path / "imgs", "--out", out)
    assert code == 0, err
    built = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    assert built["rank"].tolist() == [label for *_, label in IMAGES]  # the hand-written labels
    sources = {img: src for seg in json.loads((out / "segs.json").read_text())["segs"]
               for node in seg["nodes"] for img, src in zip(node["images"], node["sources"])}
    pd.DataFrame({"seg_id": built["id"], "file_name": built["file_name"],
                  "m": [scores[sources[f]] for f in built["file_name"]],
                  "k": [scores_b[sources[f]] for f in built["file_name"]]}).to_csv(tmp_path / "built_scores.csv",
                                                                                  index=False)
    results = {}
    for name, scores_csv, metadata in (("hand", tmp_path / "hand_scores.csv", hand_meta),
                                       ("built", tmp_path / "built_scores.csv", out / "metadata.csv")):
        code, stdout, err = run_cli(capsys, "meta", scores_csv, "--metadata", metadata, "--json", "--n-bootstrap", 0)
        assert code == 0, err
        results[name] = json.loads(stdout)
    for column in ("m", "k"):
        hand, built_result = results["hand"][column], results["built"][column]
        assert hand["segs"] == built_result["segs"] == "5,120,150,200"  # every SEG: 200 is outside 0-163
        for meta_metric in ("rank", "sep", "delta"):
            a, b = hand[meta_metric], built_result[meta_metric]
            assert set(a["summary"]) == {"avg", "p1", "p2"}  # partitions from the file, not synth / nat / real
            for key in a["summary"]:
                assert math.isclose(a["summary"][key], b["summary"][key], rel_tol=0, abs_tol=1e-9)
            for seg in a["per_seg"]:
                assert math.isclose(a["per_seg"][seg], b["per_seg"][seg], rel_tol=0, abs_tol=1e-9)
    # the text table has one column block per file partition
    code, stdout, _ = run_cli(capsys, "meta", tmp_path / "built_scores.csv", "--metadata", out / "metadata.csv")
    header = stdout.splitlines()[1].split()
    assert "p1" in header and "p2" in header and "synth" not in header


def test_release_metadata_keeps_its_id_ranges(tmp_path, capsys):
    # the same SEGs written without a partition column: TS2's id ranges and default SEG set (0-163) apply
    hand = ["id,target_prompt,file_name,image_source,rank"] + [f"{s},prompt {s},{f},,{label}"
                                                                for s, f, _, _, label in IMAGES]
    meta = _write(tmp_path / "metadata.csv", "\n".join(hand) + "\n")
    pd.DataFrame({"seg_id": [s for s, *_ in IMAGES], "file_name": [f for _, f, *_ in IMAGES],
                  "m": np.arange(len(IMAGES), dtype=float)}).to_csv(tmp_path / "s.csv", index=False)
    code, stdout, err = run_cli(capsys, "meta", tmp_path / "s.csv", "--metadata", meta, "--json")
    assert code == 0, err
    result = json.loads(stdout)["m"]
    assert result["segs"] == "5,120,150" and set(result["rank"]["summary"]) == {"avg", "synth", "nat", "real"}


# --- --by-error-type -------------------------------------------------------------------------------------------------

# One SEG. The metric sees missing objects (cat, dog: scores fall) but not attributes (red, blue: scores stay near the
# error-free images'). Error sets: {} x2, {cat}, {dog}, {cat, dog} (missing); {red}, {blue}, {blue, red} (attribute).
BY_TYPE = [
    ("h1.png", "", "", 0.9), ("h2.png", "", "", 0.9),
    ("c.png", "cat", "missing", 0.4), ("d.png", "dog", "missing", 0.5),
    ("cd.png", "cat;dog", "missing;missing", 0.1),
    ("r.png", "red", "attribute", 0.92), ("b.png", "blue", "attribute", 0.88),
    ("br.png", "blue;red", "attribute;attribute", 0.9),
]


def _by_type_dir(tmp_path: Path, capsys) -> Path:
    from tests.helpers.seg_files import write_images

    rows = ["seg_id,prompt,file_name,errors,error_types"]
    rows += [f"0,a cat and a dog and a red and blue thing,{f},{e},{t}" for f, e, t, _ in BY_TYPE]
    ann = _write(tmp_path / "ann.csv", "\n".join(rows) + "\n")
    write_images(tmp_path / "imgs", [f for f, *_ in BY_TYPE])
    code, _, err = run_cli(capsys, "seg", "build", ann, "--images", tmp_path / "imgs", "--out", tmp_path / "out")
    assert code == 0, err
    built = pd.read_csv(tmp_path / "out" / "metadata.csv", dtype=str, keep_default_na=False)
    pd.DataFrame({"seg_id": built["id"], "file_name": built["file_name"],
                  "m": [s for *_, s in BY_TYPE]}).to_csv(tmp_path / "scores.csv", index=False)
    return tmp_path / "out"


def test_by_error_type_hand_computed(tmp_path, capsys):
    out = _by_type_dir(tmp_path, capsys)
    code, stdout, err = run_cli(capsys, "meta", tmp_path / "scores.csv", "--metadata", out / "metadata.csv",
                                "--by-error-type", "--json", "--n-bootstrap", 0)
    assert code == 0, err
    by_type = json.loads(stdout)["m"]["by_error_type"]
    assert sorted(by_type) == ["attribute", "missing"]  # no relation / action edge in this SEG
    missing, attribute = by_type["missing"]["summary"], by_type["attribute"]["summary"]
    # missing: walks 0 -> {cat} -> {cat, dog} and 0 -> {dog} -> {cat, dog}; scores (0.9, 0.9), 0.4 | 0.5, 0.1 fall
    # strictly with the error count: Spearman -1 on both, rank 100%
    assert missing["rank"]["avg"] == pytest.approx(1.0, abs=1e-12)
    # attribute: walk 0 -> {blue} -> {blue, red}, scores (0.9, 0.9), 0.88, 0.9: error ranks 1.5 1.5 3 4, score ranks
    # 3 3 1 3: cov -1, var 4.5 x 3, rho = -1/sqrt(13.5); walk 0 -> {red} -> {blue, red}, scores (0.9, 0.9), 0.92,
    # 0.9: rho = +1/sqrt(13.5). Four images each: rank = (4/sqrt(13.5) - 4/sqrt(13.5)) / 8 = 0
    assert attribute["rank"]["avg"] == pytest.approx(0.0, abs=1e-12)
    per_walk = 1 / math.sqrt(13.5)
    assert per_walk == pytest.approx(0.2722, abs=1e-4)  # each walk alone is far from 0; they cancel
    # sep: pairs on a common walk. missing: (0,cat) (0,dog) (0,cd) (cat,cd) (dog,cd) all fully separated -> 1.
    # attribute: (0,red) 1, (0,blue) 1, (0,br) 0 (0.9 vs 0.9, 0.9), (red,br) 1, (blue,br) 1 -> 4/5
    assert missing["sep"]["avg"] == pytest.approx(1.0)
    assert attribute["sep"]["avg"] == pytest.approx(0.8)
    # delta over the type's edges, over the population std of the SEG's 8 scores (the paper delta's divisor)
    std = statistics.pstdev([s for *_, s in BY_TYPE])
    gaps_missing = [0.9 - 0.4, 0.9 - 0.5, 0.4 - 0.1, 0.5 - 0.1]  # 0->cat, 0->dog, cat->cd, dog->cd
    gaps_attribute = [0.9 - 0.92, 0.9 - 0.88, 0.92 - 0.9, 0.88 - 0.9]  # 0->red, 0->blue, red->br, blue->br
    assert missing["delta"]["avg"] == pytest.approx(statistics.mean(gaps_missing) / std, abs=1e-9)
    assert attribute["delta"]["avg"] == pytest.approx(statistics.mean(gaps_attribute) / std, abs=1e-9)
    assert by_type["missing"]["n_walks"] == 2 and by_type["missing"]["n_edges"] == 4
    code, stdout, _ = run_cli(capsys, "meta", tmp_path / "scores.csv", "--metadata", out / "metadata.csv",
                              "--by-error-type")
    assert code == 0 and "by error type: walks from node 0 along edges of one type" in stdout
    line = next(line for line in stdout.splitlines() if " missing " in line)
    assert line.split()[:3] == ["m", "missing", "100.0"]


def test_by_error_type_reads_the_metadata_once(tmp_path, capsys, monkeypatch):
    """``ts2 meta --by-error-type``: the one reading of metadata.csv gives the error sets and is what the scores are
    joined with (no second reading, pandas' or the light path's)."""
    import scorers.tables.csv_tables as csv_tables
    import scorers.tables.pandas_tables as pandas_tables

    out = _by_type_dir(tmp_path, capsys)
    reads = []

    def counted(module, name):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda path: reads.append((name, Path(path).name)) or real(path))

    counted(pandas_tables, "read_metadata")
    counted(csv_tables, "light_metadata")
    code, stdout, err = run_cli(capsys, "meta", tmp_path / "scores.csv", "--metadata", out / "metadata.csv",
                                "--by-error-type", "--json", "--n-bootstrap", 0)
    assert code == 0, err
    assert reads == [("read_metadata", "metadata.csv")]
    assert json.loads(stdout)["m"]["by_error_type"]["missing"]["summary"]["rank"]["avg"] == pytest.approx(1.0)


def test_by_error_type_on_the_release_says_it_needs_error_types(capsys, shared_ts2):
    code, stdout, err = run_cli(capsys, "meta", shared_ts2 / "released_scores.csv", "--column", "clipscore",
                                "--metadata", shared_ts2 / "metadata.csv", "--by-error-type")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1
    assert "ts2 meta: error: --by-error-type needs error_types" in err and "release does not carry" in err


def test_by_error_type_refusals(tmp_path, capsys):
    out = _by_type_dir(tmp_path, capsys)
    code, _, err = run_cli(capsys, "meta", tmp_path / "scores.csv", "--metadata", out / "metadata.csv",
                           "--by-error-type", "--variant", "official")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--variant 'official' is not supported" in err
    meta = pd.read_csv(out / "metadata.csv", dtype=str, keep_default_na=False)
    meta.loc[2, ["errors", "error_types"]] = ["cat;dog", "missing;missing"]  # node 1b ({cat}) but two errors
    meta.to_csv(out / "metadata.csv", index=False)
    code, _, err = run_cli(capsys, "meta", tmp_path / "scores.csv", "--metadata", out / "metadata.csv",
                           "--by-error-type")
    assert code == 2
    assert "metadata.csv line 4 (SEG 0, images/000-02.png): node 1b has 1 error(s) but errors lists 2" in err


def _reference_walks(sets, types, kind):
    """Maximal paths from the empty set, each step adding one error of type ``kind`` (brute force)."""
    present = set(sets)

    def extend(path):
        last = path[-1]
        nxt = [s for s in present if len(s) == len(last) + 1 and last < s and types[next(iter(s - last))] == kind]
        if not nxt:
            return [path] if len(path) >= 2 else []
        return [w for s in nxt for w in extend(path + [s])]

    return extend([frozenset()])


def test_by_error_type_matches_a_scipy_reference_on_random_segs():
    from scipy import stats

    from scorers.stats.error_type_walks import error_type_meta

    rng = np.random.default_rng(3)
    labels = ["a", "b", "c", "d", "e"]
    types = {"a": "missing", "b": "missing", "c": "attribute", "d": "attribute", "e": "relation"}
    seg_ids, keys, scores, segs = [], [], [], {}
    for seg in range(12):
        universe = [frozenset()] + [frozenset(rng.choice(labels, size=k, replace=False)) for k in (1, 1, 1, 2, 2, 2, 3)]
        nodes = list(dict.fromkeys(universe))
        segs[seg] = {}
        for node in nodes:
            values = rng.normal(size=int(rng.integers(1, 4))).round(1)  # ties happen
            segs[seg][node] = values
            seg_ids += [seg] * len(values)
            keys += [";".join(sorted(node))] * len(values)
            scores += values.tolist()
    label_types = {(seg, e): types[e] for seg in segs for e in labels}
    std = float(np.std(scores))
    out = error_type_meta(np.array(seg_ids), keys, label_types, {"m": np.array(scores)}, score_std={"m": std},
                          partitions={s: "x" for s in segs})["m"]
    for kind in ("missing", "attribute"):
        for i, seg in enumerate(sorted(segs)):
            walks = _reference_walks(list(segs[seg]), types, kind)
            got = {m: out[kind].per_seg[m][i] for m in ("rank", "sep", "delta")} if kind in out else None
            if not walks:
                assert got is None or all(np.isnan(v) for v in got.values())
                continue
            total = weighted = 0.0
            for walk in walks:
                x = np.concatenate([np.full(len(segs[seg][n]), len(n)) for n in walk])
                y = np.concatenate([segs[seg][n] for n in walk])
                rho = stats.spearmanr(x, y).statistic
                weighted += len(y) * -(0.0 if np.isnan(rho) else rho)
                total += len(y)
            assert got["rank"] == pytest.approx(weighted / total, abs=1e-12)
            pairs = {(w[p], w[q]) for w in walks for p in range(len(w)) for q in range(p + 1, len(w))}
            ks = [stats.ks_2samp(segs[seg][a], segs[seg][b]).statistic for a, b in pairs]
            assert got["sep"] == pytest.approx(np.mean(ks), abs=1e-12)
            edges = {(w[p], w[p + 1]) for w in walks for p in range(len(w) - 1)}
            gaps = [segs[seg][a].mean() - segs[seg][b].mean() for a, b in edges]
            assert got["delta"] == pytest.approx(np.mean(gaps) / std, abs=1e-12)


def test_module_doctests_run():
    import doctest

    from scorers.stats import error_type_walks
    from scorers.ts2.seg import build as seg_build

    for module, least in ((error_type_walks, 5), (seg_build, 5)):
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert failed == 0 and attempted >= least, module.__name__


def test_by_error_type_intervals_on_a_built_dir(tmp_path, capsys):
    """``--by-error-type`` with ``--n-bootstrap`` / ``--seed``: each summary of each type has the main table's bootstrap
    interval over SEGs (the plain loop of tests/helpers/reference_bootstrap.py on the printed per-SEG values), under
    ``ci`` as the main table's, and the text table shows it in every cell."""
    from scorers.ts2.result_text import pct
    from tests.helpers.error_type_dir import PARTITIONS, build_error_type_dir
    from tests.helpers.reference_bootstrap import reference_intervals

    out, scores = build_error_type_dir(tmp_path, lambda *argv: run_cli(capsys, *argv))
    argv = ["meta", scores, "--metadata", out / "metadata.csv", "--by-error-type", "--n-bootstrap", 300, "--seed", 5]
    code, stdout, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    result = json.loads(stdout)
    checked = 0
    for column in ("m", "k"):
        assert set(result[column]["rank"]["ci"]) == {"avg", "p1", "p2"}  # the main table's field
        for kind, by_type in result[column]["by_error_type"].items():
            for m in ("rank", "sep", "delta"):
                per_seg = {int(s): v for s, v in by_type["per_seg"][m].items()}
                expected = reference_intervals(per_seg, PARTITIONS, 300, 0.95, 5)
                assert set(by_type["ci"][m]) == set(expected) == {"avg", "p1", "p2"}
                for key, (low, high) in expected.items():
                    assert by_type["ci"][m][key] == pytest.approx([low, high], abs=1e-12)
                    checked += 1
    assert checked == 2 * 2 * 3 * 3  # two columns, missing + attribute, three meta-metrics, avg + two partitions
    code, stdout, err = run_cli(capsys, *argv)
    assert code == 0, err
    table = stdout[stdout.index("by error type:"):]
    row = next(line for line in table.splitlines() if line.split()[:2] == ["m", "missing"])
    low, high = result["m"]["by_error_type"]["missing"]["ci"]["rank"]["avg"]
    value = result["m"]["by_error_type"]["missing"]["summary"]["rank"]["avg"]
    assert f"{pct(value)} [{pct(low)}, {pct(high)}]" in row
    # without resamples: no interval, as the main table
    code, stdout, err = run_cli(capsys, *argv[:-4], "--n-bootstrap", 0, "--json")
    assert code == 0, err
    assert "ci" not in json.loads(stdout)["m"]["by_error_type"]["missing"]
