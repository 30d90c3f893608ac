"""The card reads what ``ts2 score --set`` writes, for every set (scores keyed by each set's own image names)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.score_tables import release_columns


def _stable(key: str) -> float:
    import hashlib

    return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) / 2 ** 32


@pytest.fixture
def fake_scoring(monkeypatch):
    """``score_set``'s own path with the model call replaced: each item's score is a hash of its cache key
    (``image|prompt``), so one image under two prompts gets two scores, as a real scorer gives."""
    from scorers.scoring.runner import RunResult
    from scorers.sets import scoring

    class Fake:
        name = "mine"
        higher_is_better = {}

    def fake_run(scorer, images, prompts, keys, **_options):
        scores = np.asarray([_stable(k) for k in keys])
        n = len(keys)
        return RunResult(keys=list(keys), scores=scores, records=[None] * n, errors=[None] * n, computed=n)

    monkeypatch.setattr(scoring, "build_run_scorer", lambda *a, **k: (Fake(), fake_run))
    return scoring


def _gecko(root: Path, monkeypatch) -> dict:
    """A Gecko2K ratings table and the prompts file it joins (the pinned prompts download replaced by a local
    copy)."""
    from scorers.sets import ratings
    from tests.helpers.set_files import write_image_files

    root.mkdir(parents=True, exist_ok=True)
    prompts = root / "prompts.csv"
    pd.DataFrame({"prompt_id": ["1", "2"], "prompt": ["a red cube", "two birds"],
                  "prompt_type": ["color", "count"]}).to_csv(prompts, index=False)
    monkeypatch.setattr(ratings, "fetch", lambda *a, **k: prompts)
    table = root / "gecko_ratings.csv"
    pd.DataFrame({"prompt_id": ["1", "1", "2", "2"], "system": ["s1", "s2", "s1", "s2"],
                  "image": ["g1.png", "g2.png", "g3.png", "g4.png"], "human": [0.9, 0.2, 0.5, 0.7]}).to_csv(
        table, index=False)
    return {"file": table, "images_dir": write_image_files(root / "images", ["g1.png", "g2.png", "g3.png", "g4.png"], start=300)}


def _hpdv2_shared_names(root: Path) -> dict:
    """HPDv2's layout where two prompts' lists name the same image file (``00000.jpg``), as the real test.json does:
    ``ts2 score --set hpdv2`` scores it once per prompt."""
    from tests.helpers.set_files import write_image_files

    root.mkdir(parents=True, exist_ok=True)
    entries = [{"prompt": "a cat", "image_path": ["00000.jpg", "00001.jpg", "00002.jpg"], "rank": [1, 3, 2],
                "raw_annotations": []},
               {"prompt": "a dog", "image_path": ["00000.jpg", "00003.jpg"], "rank": [2, 1], "raw_annotations": []}]
    (root / "test.json").write_text(json.dumps(entries))
    return {"file": root / "test.json",
            "images_dir": write_image_files(root / "images", [f"0000{k}.jpg" for k in range(4)], "JPEG", start=400)}


def loop_accuracy_excluded(pairs: pd.DataFrame, column: str) -> float:
    """Pairwise accuracy with human ties dropped and a metric tie wrong, one pair at a time."""
    right = total = 0
    for row in pairs.itertuples(index=False):
        human = row.preference
        if human == "tie":
            continue
        a, b = getattr(row, f"{column}_a"), getattr(row, f"{column}_b")
        total += 1
        right += (a > b and human == "a") or (b > a and human == "b")
    return right / total


def test_card_reads_what_score_set_writes_for_every_set(fake_scoring, tmp_path, monkeypatch, capsys, shared_ts2):
    from scorers.sets.registry import IMAGES, PAIRS, RATINGS, SEGS, REGISTRY
    from tests.helpers.set_files import make_sets

    sets = make_sets(tmp_path / "sets")
    sets["gecko2k"] = _gecko(tmp_path / "gecko", monkeypatch)
    sets["hpdv2"] = _hpdv2_shared_names(tmp_path / "hpdv2")
    # every set with a table: TS2 (its own path, read by --scores: tests/sets/test_scoring.py's card test) and TIFA v1.0
    # (a bench without human judgments, never a card section) are the others
    tabled = {name for name, r in REGISTRY.items() if r.kind in (RATINGS, PAIRS)}
    assert tabled == set(sets), "a registered set without a generated file here"
    assert {r.kind for n, r in REGISTRY.items() if n not in tabled} <= {SEGS, IMAGES}
    argv = []
    written = {}
    for name, entry in sets.items():
        out = tmp_path / "scores" / f"{name}.csv"
        fake_scoring.score_set("fake", name, out, set_file=entry["file"], images_dir=entry["images_dir"],
                               batch_size=2, num_workers=0, progress=False)
        written[name] = out
        if REGISTRY[name].kind == PAIRS:
            argv += ["--preferences", f"{name}={out.with_name(name + '.pairs.csv')}",
                     "--preference-scores", f"{name}={out}"]
        else:
            argv += ["--ratings", f"{name}={out}"]
    frame = pd.read_csv(written["hpdv2"], dtype=str, keep_default_na=False)
    assert list(frame.columns[:3]) == ["item", "image", "prompt"]
    assert (frame["image"] == "00000.jpg").sum() == 2  # one score per (image, prompt), as score --set writes
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, out, err = run_cli(capsys, "card", "--scores", f"mine={mine}", *argv, "--baseline", "none",
                             "--data-dir", shared_ts2, "--n-bootstrap", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    card = json.loads(out)["mine"]
    for name in sets:
        section = card["sets"][name]
        if name == "gecko2k" or REGISTRY[name].kind == RATINGS:
            assert section["status"] == "evaluated", (name, section.get("reason"))
            assert section["n_scored"] == len(pd.read_csv(written[name])), name
            continue
        assert section["status"] == "evaluated", (name, section.get("reason"))
        pairs = pd.read_csv(written[name].with_name(name + ".pairs.csv"), dtype={"preference": str})
        assert section["n_scored"] == len(pairs) and section["n_skipped"] == 0, name
        if section["headline_ties"] == "excluded":  # the set's own convention, by a plain loop over the pairs
            assert section["headline_value"] == pytest.approx(loop_accuracy_excluded(pairs, "mine"), abs=1e-12)


def test_hpdv2_scores_are_looked_up_by_image_and_prompt(fake_scoring, tmp_path, capsys, shared_ts2):
    """The image 00000.jpg has one score under 'a cat' and another under 'a dog': each pair takes its prompt's."""
    entry = _hpdv2_shared_names(tmp_path / "hpdv2")
    out = tmp_path / "hpdv2.csv"
    fake_scoring.score_set("fake", "hpdv2", out, set_file=entry["file"], images_dir=entry["images_dir"],
                           batch_size=2, num_workers=0, progress=False)
    mine = release_columns(shared_ts2, ["id", "image_id", "mine"], ["clipscore"], tmp_path / "mine.csv")
    code, text, err = run_cli(capsys, "card", "--scores", f"mine={mine}", "--preferences", f"hpdv2={entry['file']}",
                              "--preference-scores", f"hpdv2={out}", "--baseline", "none", "--data-dir", shared_ts2,
                              "--n-bootstrap", 0, "--out", tmp_path / "o", "--json")
    assert code == 0, err
    section = json.loads(text)["mine"]["sets"]["hpdv2"]
    # by hand: the pairs of 'a cat' (ranks 1, 3, 2) and 'a dog' (2, 1), each image's score = hash of image|prompt
    score = {(i, p): _stable(f"{i}|{p}") for i, p in [("00000.jpg", "a cat"), ("00001.jpg", "a cat"),
                                                      ("00002.jpg", "a cat"), ("00000.jpg", "a dog"),
                                                      ("00003.jpg", "a dog")]}
    pairs = [("00000.jpg", "00001.jpg", "a cat", "a"), ("00000.jpg", "00002.jpg", "a cat", "a"),
             ("00001.jpg", "00002.jpg", "a cat", "b"), ("00000.jpg", "00003.jpg", "a dog", "b")]
    right = sum((score[(a, p)] > score[(b, p)]) == (h == "a") for a, b, p, h in pairs)
    assert section["n_scored"] == 4 and section["headline_value"] == pytest.approx(right / 4, abs=1e-12)
