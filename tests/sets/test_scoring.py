"""``ts2 score SCORER --set NAME`` and ``ts2 card --scorer``: the images of each set, in its real file format (the
generators of tests/sets/test_set_files.py and tests/cli/test_correlate.py, with real, distinct images), go through the one
runner path with a tiny offline CLIP.

References are computed outside the set path: the scorer called once on the decoded images and their prompts. The
tolerance 1e-6 covers fp32 batch-composition differences (the runner splits the items into batches of 2, the
reference scores them in one batch; matmul blocking changes the last bits), far below the scores' spread.

Run as ``python -m tests.sets.test_scoring KILL_AFTER ARGV...`` it is a ``ts2 score --set`` run whose scorer SIGKILLs
its own process during call KILL_AFTER + 1 (a batch in flight), as an OOM killer would.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.helpers.set_files import make_sets, write_image_files

ROOT = Path(__file__).resolve().parents[2]
ATOL = 1e-6  # fp32 batch composition (see the module docstring)
RUN = ["--batch-size", "2", "--num-workers", "0", "--no-progress", "--form", "cosine"]


@pytest.fixture(scope="module")
def clip_path():
    from tests.helpers.tiny_embed_models import tiny_models

    return tiny_models()["clip"]


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    return make_sets(tmp_path_factory.mktemp("sets"))


@pytest.fixture(scope="module")
def direct(clip_path):
    """Reference: the registered scorer called once on decoded images (no runner, no set code)."""
    from PIL import Image

    from scorers.scoring.registry import build_scorer

    scorer = build_scorer("clip_score", model=clip_path, device="cpu", form="cosine")

    def score(images, prompts):
        decoded = [Image.open(io.BytesIO(i) if isinstance(i, bytes) else i).convert("RGB") for i in images]
        return np.asarray(scorer.score(decoded, list(prompts)), dtype=np.float64)

    return score


def cli(*argv) -> tuple[int, str]:
    import contextlib

    from scorers.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def score_cli(name, entry, clip_path, out, *extra):
    argv = ["score", "clip_score", "--set", name, "--set-file", entry["file"], "--model", clip_path, "--out", out,
            *RUN, *extra]
    if entry["images_dir"] is not None:
        argv += ["--images-dir", entry["images_dir"]]
    return cli(*argv)


# ---- rating sets: one score per rating row -----------------------------------------------------------------------


def test_rating_sets_equal_direct_scoring(sets, clip_path, direct, tmp_path):
    import pyarrow.parquet as pq_

    for name in ("evalmuse", "tifa160", "genai_bench"):
        entry = sets[name]
        out = tmp_path / f"{name}.csv"
        code, err = score_cli(name, entry, clip_path, out)
        assert code == 0, err
        got = pd.read_csv(out, dtype={"item": str})
        if name == "evalmuse":
            raw = json.loads(Path(entry["file"]).read_text())
            images = [entry["images_dir"] / e["img_path"] for e in raw]
            prompts = [e["prompt"] for e in raw]
            assert got["human"].tolist() == [4.0, 1.5]  # the set's own columns are kept: mean of total_score
        elif name == "tifa160":
            raw = json.loads(Path(entry["file"]).read_text())
            images = [entry["images_dir"] / v["image_path"] for v in raw.values()]
            prompts = [v["text"] for v in raw.values()]
            assert got["clipscore_vitb32"].tolist() == [v["clipscore_vitb32"] for v in raw.values()]
        else:  # GenAI-Bench: rating rows per (prompt, model); images embedded, one column per model
            table = pq_.read_table(entry["file"]).to_pylist()
            images = [table[int(i)][s]["bytes"] for i, s in zip(got["item"], got["system"])]
            prompts = [table[int(i)]["Prompt"] for i in got["item"]]
            assert len(got) == 9
        assert got["prompt"].tolist() == prompts
        np.testing.assert_allclose(got["clip_score"].to_numpy(), direct(images, prompts), rtol=0, atol=ATOL)
        info = json.loads((tmp_path / f"{name}.set.json").read_text())
        assert info["kind"] == "ratings" and info["provenance"]["sha256"]


def test_a_new_set_is_one_record_and_its_loader(clip_path, direct, tmp_path, monkeypatch, capsys):
    """Adding a set = one registry record + its loader: a made-up rating set is then scored by `ts2 score --set`,
    read by `load_set`, named by the CLI and listed by `ts2 card --scorer`, through the normal paths."""
    from scorers.sets import registry
    from scorers.sets.scoring import load_set, score_sets

    rows = pd.DataFrame({"item": ["p0", "p0", "p1"], "system": ["a", "b", "a"],
                         "image": ["x/0.png", "x/1.png", "x/2.png"],
                         "prompt": ["a red cube", "a red cube", "two dogs"], "human_1": [4.0, 2.0, 5.0]})
    images_dir = write_image_files(tmp_path / "toy_images", list(rows["image"]), start=300)
    calls = []

    def load_toy(path=None, *, offline=None):
        calls.append((path, offline))
        return rows.copy(), {"source": "made up", "file": str(path), "sha256": None}

    monkeypatch.setattr(registry, "REGISTRY", dict(registry.REGISTRY))  # undone after the test
    registry.register(registry.SetRecord("toy_ratings", registry.RATINGS, aliases=("toy",), load=load_toy,
                                         images=registry.ImageSource("the toy images (made up by this test)")))
    with pytest.raises(ValueError, match="already a set's name or alias"):
        registry.register(registry.SetRecord("toy", registry.RATINGS, load=load_toy))

    table, _prov, kind = load_set("toy", offline=True)
    assert kind == "ratings" and table.equals(rows) and calls == [(None, True)]
    out = tmp_path / "toy.csv"
    code, err = cli("score", "clip_score", "--set", "toy", "--images-dir", images_dir, "--model", clip_path,
                    "--out", out, *RUN)
    assert code == 0, err
    got = pd.read_csv(out)
    assert got[["item", "system", "image", "prompt", "human_1"]].equals(rows)
    np.testing.assert_allclose(got["clip_score"].to_numpy(),
                               direct([images_dir / i for i in rows["image"]], list(rows["prompt"])), rtol=0, atol=ATOL)
    info = json.loads((tmp_path / "toy.set.json").read_text())
    assert (info["name"], info["kind"], info["rows"]) == ("toy_ratings", "ratings", 3)
    with pytest.raises(SystemExit):
        cli("score", "--help")
    assert "toy_ratings" in " ".join(capsys.readouterr().out.split())
    entries = score_sets("clip_score", ["toy"], tmp_path / "card", images_dirs={"toy": images_dir},
                         models={"clip_score": clip_path}, batch_size=2, num_workers=0, progress=False,
                         scorer_options={"form": "cosine"})
    assert entries["toy"]["status"] == "scored" and entries["toy"]["kind"] == "ratings"
    assert pd.read_csv(entries["toy"]["path"])["clip_score"].tolist() == got["clip_score"].tolist()
    entries = score_sets("clip_score", ["toy"], tmp_path / "card2", models={"clip_score": clip_path},
                         batch_size=2, num_workers=0, progress=False, scorer_options={"form": "cosine"})
    assert entries["toy"]["status"] == "not evaluated"
    assert "download the toy images (made up by this test) and pass images_dir=DIR" in entries["toy"]["reason"]


# ---- preference sets: one score per image, pairs joined --------------------------------------------------------------


def _pair_images(name, entry):
    """(image name -> image reference) read straight from the set's file, outside the set code."""
    if name == "pickapic_v2":
        t = pq.read_table(entry["file"]).to_pydict()
        return {**dict(zip(t["image_0_uid"], t["jpg_0"])), **dict(zip(t["image_1_uid"], t["jpg_1"]))}
    if name == "mjbench_alignment":
        t = pq.read_table(entry["file"]).to_pydict()
        file = Path(entry["file"]).name
        return {f"{file}#{k}/{c}": t[c][k]["bytes"] for k in range(len(t["label"])) for c in ("image0", "image1")}
    return {str(p.relative_to(entry["images_dir"])): p for p in entry["images_dir"].rglob("*") if p.is_file()}


@pytest.mark.parametrize("name", ["pickapic_v2", "hpdv2", "imagerewarddb", "mjbench_alignment"])
def test_preference_sets_score_each_image_once(name, sets, clip_path, direct, tmp_path):
    from scorers.sets.registry import get_set

    entry = sets[name]
    out = tmp_path / f"{name}.csv"
    code, err = score_cli(name, entry, clip_path, out)
    assert code == 0, err
    pairs, _ = get_set(name).load(entry["file"])
    got = pd.read_csv(out, dtype={"item": str})
    expected = list(dict.fromkeys([(a, p) for a, p in zip(pairs["image_a"], pairs["prompt"])]
                                  + [(b, p) for b, p in zip(pairs["image_b"], pairs["prompt"])]))
    assert sorted(zip(got["image"], got["prompt"])) == sorted(expected)  # each image once, none missing
    assert len(got) == len(expected) < 2 * len(pairs) or name in ("pickapic_v2", "mjbench_alignment")
    refs = _pair_images(name, entry)
    np.testing.assert_allclose(got["clip_score"].to_numpy(), direct([refs[i] for i in got["image"]],
                                                                    got["prompt"]), rtol=0, atol=ATOL)
    joined = pd.read_csv(tmp_path / f"{name}.pairs.csv", dtype={"item": str})
    by_image = dict(zip(got["image"], got["clip_score"]))
    assert joined["preference"].tolist() == pairs["preference"].tolist()
    assert joined["clip_score_a"].tolist() == [by_image[i] for i in joined["image_a"]]
    assert joined["clip_score_b"].tolist() == [by_image[i] for i in joined["image_b"]]


# ---- TS2 and the TIFA bench go through the same path ---------------------------------------------------------------


def test_set_ts2_is_the_default_byte_for_byte(clip_path, tmp_path):
    from tests.helpers.ts2_fixture_data import make_data_dir

    data = make_data_dir(tmp_path / "data", seg_ids=[0], image_size=16, with_questions=False)
    common = ["--data-dir", data, "--model", clip_path, *RUN]
    assert cli("score", "clip_score", *common, "--out", tmp_path / "default.csv")[0] == 0
    assert cli("score", "clip_score", "--set", "ts2", *common, "--out", tmp_path / "set.csv")[0] == 0
    assert (tmp_path / "default.csv").read_bytes() == (tmp_path / "set.csv").read_bytes()


def test_tifa_v1_images_against_their_captions(clip_path, direct, tmp_path):
    from scorers.sets.scoring import score_set
    from scorers.tifa_bench.tifa_v1_files import load_tifa_v1
    from tests.helpers.tifa_v1_files import TEXTS, write_images, write_tifa_files

    texts, qas = write_tifa_files(tmp_path / "tifa")
    images = write_images(tmp_path / "imgs")
    frame, result = score_set("clip_score", "tifa_v1", tmp_path / "tifa.csv", images_dir=images,
                              tifa_bench=load_tifa_v1(texts, qas), model=clip_path, scorer_options={"form": "cosine"},
                              batch_size=2, num_workers=0, progress=False)
    captions = {t["id"]: t["caption"] for t in TEXTS}
    paths = [images / (f"{t}.png" if i == "0" and (images / f"{t}.png").exists() else f"{t}/{i}.png")
             for t, i in zip(frame["text_id"], frame["image"])]
    np.testing.assert_allclose(frame["clip_score"].to_numpy(), direct(paths, [captions[t] for t in frame["text_id"]]),
                               rtol=0, atol=ATOL)
    assert pd.read_csv(tmp_path / "tifa.csv")["text_id"].tolist() == frame["text_id"].tolist()


def test_tifa_v1_with_tifa_is_the_bench_run(tmp_path):
    from scorers.sets.scoring import score_set
    from scorers.tifa_bench.image_scoring import score_images
    from scorers.tifa_bench.tifa_v1_files import load_tifa_v1
    from tests.helpers.tifa_v1_files import ANSWERS_A, ScriptedVQA, matcher, write_images, write_tifa_files

    texts, qas = write_tifa_files(tmp_path / "tifa")
    images = write_images(tmp_path / "imgs")
    bench = load_tifa_v1(texts, qas)
    options = dict(batch_size=2, num_workers=0, progress=False)
    frame, _ = score_set("tifa", "tifa_v1", tmp_path / "set.csv", images_dir=images, tifa_bench=bench,
                         scorer_options={"backend": ScriptedVQA(ANSWERS_A), "matcher": matcher()}, **options)
    bench_run = score_images(bench, images, tmp_path / "bench", backend=ScriptedVQA(ANSWERS_A),
                             scorer_options={"matcher": matcher()}, **options)
    assert (tmp_path / "set.csv").read_bytes() == (tmp_path / "bench" / "images.csv").read_bytes()
    assert (tmp_path / "set.questions.csv").read_bytes() == (tmp_path / "bench" / "questions.csv").read_bytes()
    pd.testing.assert_frame_equal(frame, bench_run.images)


def test_engine_ray_scores_a_set_as_the_default_engine(local_ray, sets, clip_path, tmp_path):
    """The set path hands the engine choice to the same builder as TS2: a local Ray gives the default's scores
    (embedded image bytes travel to the actors) within 1e-6, the Ray engine test's tolerance."""
    from scorers.sets.scoring import score_set

    common = dict(set_file=sets["pickapic_v2"]["file"], model=clip_path, scorer_options={"form": "cosine"},
                  batch_size=2, num_workers=0, progress=False)
    default, _ = score_set("clip_score", "pickapic_v2", tmp_path / "a.csv", **common)
    on_ray, result = score_set("clip_score", "pickapic_v2", tmp_path / "b.csv", engine="ray",
                               engine_options={"workers": 1}, **common)
    assert result.extra.get("engine") == "ray" and result.computed == len(default)
    np.testing.assert_allclose(on_ray["clip_score"].to_numpy(), default["clip_score"].to_numpy(), rtol=0, atol=1e-6)


def test_two_accelerate_processes_score_a_set_as_one(sets, clip_path, tmp_path):
    """``accelerate launch`` (2 CPU processes, the form that really starts two) on a preference set: each rank
    scores its half (its own cache shard), the main process writes the same tables as one process."""
    import socket

    from tests.helpers.environment import console_script

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    entry = sets["hpdv2"]
    args = ["score", "clip_score", "--set", "hpdv2", "--set-file", str(entry["file"]), "--images-dir",
            str(entry["images_dir"]), "--model", clip_path, *RUN]
    env = dict(os.environ, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    command = [console_script("accelerate"), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
               "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(port),
               console_script("ts2"), *args, "--out", str(tmp_path / "two.csv")]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shards = {p.name: len(p.read_text().splitlines()) for p in (tmp_path / "two.csv.cache").glob("rank*.jsonl")}
    assert shards == {"rank0.jsonl": 3, "rank1.jsonl": 3}  # 6 images, disjoint halves
    assert cli(*args, "--out", tmp_path / "one.csv")[0] == 0
    two, one = pd.read_csv(tmp_path / "two.csv"), pd.read_csv(tmp_path / "one.csv")
    pd.testing.assert_frame_equal(two.drop(columns="clip_score"), one.drop(columns="clip_score"))
    np.testing.assert_allclose(two["clip_score"], one["clip_score"], rtol=0, atol=ATOL)


# ---- errors: one line, exit 2 -------------------------------------------------------------------------------------


def test_bad_set_name_is_one_line(tmp_path):
    code, err = cli("score", "clip_score", "--set", "nope", "--out", tmp_path / "o.csv")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'nope'" in err and "pickapic_v2" in err


def test_images_not_available_offline_say_how_to_supply_them(sets, clip_path, tmp_path):
    code, err = cli("score", "clip_score", "--set", "hpdv2", "--set-file", sets["hpdv2"]["file"], "--model",
                    clip_path, "--out", tmp_path / "o.csv", *RUN)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "not available offline" in err and "--images-dir" in err and "00000.jpg" in err
    code, err = cli("score", "clip_score", "--set", "hpdv2", "--set-file", sets["hpdv2"]["file"], "--images-dir",
                    tmp_path, "--model", clip_path, "--out", tmp_path / "o.csv", *RUN)
    assert code == 2 and "none of the 6 images" in err and len(err.strip().splitlines()) == 1


def test_a_missing_image_stops_or_is_recorded_with_on_error_skip(sets, clip_path, tmp_path):
    import shutil

    images = tmp_path / "imgs"
    shutil.copytree(sets["hpdv2"]["images_dir"], images)
    (images / "00003.jpg").unlink()
    argv = ["score", "clip_score", "--set", "hpdv2", "--set-file", sets["hpdv2"]["file"], "--images-dir", images,
            "--model", clip_path, *RUN]
    code, err = cli(*argv, "--out", tmp_path / "a.csv")
    assert code == 2 and "1 of 6 images" in err and "00003.jpg" in err and "--on-error skip" in err
    code, err = cli(*argv, "--on-error", "skip", "--out", tmp_path / "a.csv")
    assert code == 0, err
    errors = pd.read_csv(tmp_path / "a.errors.csv")
    assert list(errors.columns) == ["item", "image", "prompt", "error"] and errors["image"].tolist() == ["00003.jpg"]
    got = pd.read_csv(tmp_path / "a.csv")
    assert got["clip_score"].isna().tolist() == [i == "00003.jpg" for i in got["image"]]


# ---- a killed run resumes without rescoring --------------------------------------------------------------------------


class Counting:
    """Forwards to a scorer; counts calls and items (or SIGKILLs its process during call ``kill_after + 1``)."""

    def __init__(self, inner, kill_after: int | None = None):
        self.inner, self.kill_after, self.calls, self.items = inner, kill_after, 0, 0
        self.name, self.image_transform, self.config = inner.name, inner.image_transform, inner.config

    def score(self, images, prompts):
        self.calls += 1
        if self.kill_after is not None and self.calls > self.kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        self.items += len(prompts)
        return self.inner.score(images, prompts)


def _wrap_build(monkeypatch_or_none, kill_after=None):
    import scorers.scoring.registry as registry

    built = []
    original = registry.build_scorer

    def build(*args, **kwargs):
        built.append(Counting(original(*args, **kwargs), kill_after))
        return built[-1]

    if monkeypatch_or_none is None:
        registry.build_scorer = build
    else:
        monkeypatch_or_none.setattr(registry, "build_scorer", build)
    return built


def test_killed_set_run_resumes_without_rescoring(sets, clip_path, tmp_path, monkeypatch):
    entry = sets["hpdv2"]  # 6 distinct images, batches of 2: 3 scorer calls
    argv = ["score", "clip_score", "--set", "hpdv2", "--set-file", entry["file"], "--images-dir",
            entry["images_dir"], "--model", clip_path, *RUN]
    killed = subprocess.run([sys.executable, "-m", "tests.sets.test_scoring", "2", *map(str, argv), "--out",
                             str(tmp_path / "a.csv")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (tmp_path / "a.csv").exists()

    built = _wrap_build(monkeypatch)
    code, err = cli(*argv, "--out", tmp_path / "a.csv")
    assert code == 0, err
    assert built[0].items == 2 and built[0].calls == 1  # 4 images finished before the kill: only 2 scored now
    assert "2 scored now, 4 from cache" in err
    code, _ = cli(*argv, "--out", tmp_path / "fresh.csv")
    assert code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()
    assert (tmp_path / "a.pairs.csv").read_bytes() == (tmp_path / "fresh.pairs.csv").read_bytes()


# ---- ts2 card --scorer -----------------------------------------------------------------------------------------------


def test_card_scorer_scores_each_set_then_builds_the_card(sets, clip_path, tmp_path, shared_ts2):
    import contextlib

    from scipy.stats import spearmanr

    from scorers.cli import main
    from tests.helpers.ts2_fixture_data import make_data_dir

    data = make_data_dir(tmp_path / "data", seg_ids=[0, 1, 2], image_size=16, with_questions=False)
    out = tmp_path / "card"
    argv = ["card", "--scorer", "clip_score", "--model", clip_path, "--option", "form=cosine",
            "--sets", "ts2,tifa160,evalmuse,hpdv2,pickapic_v2,gecko2k",
            "--images-dir", f"ts2={data}", "--set-file", f"tifa160={sets['tifa160']['file']}",
            "--images-dir", f"tifa160={sets['tifa160']['images_dir']}",
            "--set-file", f"evalmuse={sets['evalmuse']['file']}", "--images-dir",
            f"evalmuse={sets['evalmuse']['images_dir']}", "--set-file", f"hpdv2={sets['hpdv2']['file']}",
            "--set-file", f"pickapic_v2={sets['pickapic_v2']['file']}", "--offline",
            "--data-dir", shared_ts2, "--segs", "0-2", "--n-bootstrap", "50", "--batch-size", "4",
            "--num-workers", "0", "--out", out, "--json"]
    buffer, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(err):
        assert main([str(a) for a in argv]) == 0, err.getvalue()
    card = json.loads(buffer.getvalue())["clip_score"]
    s = card["sets"]
    assert s["ts2"]["status"] == "evaluated"
    ts2_scores = pd.read_csv(out / "scores" / "ts2.csv")
    assert len(ts2_scores) == len(pd.read_csv(data / "metadata.csv"))
    # TIFA160: the headline (Spearman, pooled) of the new scores against the mean rating, as scipy computes it
    tifa = pd.read_csv(out / "scores" / "tifa160.csv")
    assert s["tifa160"]["status"] == "evaluated"
    rho = spearmanr(tifa[["human_1", "human_2"]].mean(axis=1), tifa["clip_score"]).statistic
    assert s["tifa160"]["headline_value"] == pytest.approx(rho, abs=1e-12)
    assert s["tifa160"]["baseline_column"] == "clipscore_vitb32"  # the set's own CLIPScore column: a paired test
    assert s["evalmuse"]["status"] == "evaluated" and s["evalmuse"]["human"] == ["human"]
    # never silently dropped: no images for hpdv2, gecko2k's prompt file not cached (--offline); pickapic scored
    assert s["hpdv2"]["status"] == "not evaluated" and "--images-dir" in s["hpdv2"]["reason"]
    assert s["gecko2k"]["status"] == "not evaluated" and "gecko_prompts.csv" in s["gecko2k"]["reason"]
    pick = s["pickapic_v2"]
    if pick["status"] == "evaluated":  # a card that reads preference sets: the pairs file and its images' scores
        pairs = pd.read_csv(out / "scores" / "pickapic_v2.pairs.csv")
        human = pairs["preference"].map({"a": 1, "b": -1, "tie": 0}).to_numpy()
        gap = (pairs["clip_score_a"] - pairs["clip_score_b"]).to_numpy()
        # Pick-a-Pic's headline keeps human ties with a calibrated metric tie threshold: a plain loop over epsilon
        best = max(np.mean([(0 if abs(g) <= eps else np.sign(g)) == h for g, h in zip(gap, human)])
                   for eps in [0.0, *np.abs(gap)])
        assert pick["headline_value"] == pytest.approx(best, abs=1e-12)
        missing = {"hpdv2", "gecko2k"}
    else:  # a card without preference sections lists the set, scored, with its pairs file
        assert "pickapic_v2.pairs.csv" in pick["reason"]
        missing = {"hpdv2", "gecko2k", "pickapic_v2"}
    assert set(card["not_evaluated"]) == missing
    assert {p.suffix for p in out.iterdir() if p.is_file()} >= {".md", ".html", ".json"}



def test_card_with_several_scorers_joins_their_columns(sets, clip_path, tmp_path, shared_ts2):
    """``--scorer a,b`` (e.g. a reward's parts): one card per scorer; a rating set's file holds both columns."""
    import contextlib

    from scipy.stats import spearmanr

    from scorers.cli import main
    from tests.helpers.tiny_embed_models import tiny_models
    from tests.helpers.ts2_fixture_data import make_data_dir

    data = make_data_dir(tmp_path / "data", seg_ids=[0], image_size=16, with_questions=False)
    out = tmp_path / "card"
    argv = ["card", "--scorer", "clip_score,align_score", "--model", f"clip_score={clip_path}", "--model",
            f"align_score={tiny_models()['align']}", "--option", "form=cosine", "--sets", "ts2,tifa160,pickapic_v2",
            "--images-dir", f"ts2={data}", "--set-file", f"tifa160={sets['tifa160']['file']}",
            "--images-dir", f"tifa160={sets['tifa160']['images_dir']}",
            "--set-file", f"pickapic_v2={sets['pickapic_v2']['file']}", "--offline", "--data-dir", shared_ts2,
            "--segs", "0", "--n-bootstrap", "20", "--batch-size", "4", "--num-workers", "0", "--out", out, "--json"]
    buffer, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(err):
        assert main([str(a) for a in argv]) == 0, err.getvalue()
    cards = json.loads(buffer.getvalue())
    assert set(cards) == {"clip_score", "align_score"}
    tifa = pd.read_csv(out / "scores" / "tifa160.csv")
    alone = pd.read_csv(out / "scores" / "align_score" / "tifa160.csv")
    assert tifa["align_score"].tolist() == alone["align_score"].tolist()
    clip_alone = pd.read_csv(out / "scores" / "clip_score" / "tifa160.csv")
    assert tifa["clip_score"].tolist() == clip_alone["clip_score"].tolist()
    rho = spearmanr(tifa[["human_1", "human_2"]].mean(axis=1), tifa["align_score"]).statistic
    assert cards["align_score"]["sets"]["tifa160"]["headline_value"] == pytest.approx(rho, abs=1e-12)
    code, err_line = cli("card", "--scorer", "clip_score,align_score", "--model", clip_path, "--out", tmp_path / "x")
    assert code == 2 and "NAME=M" in err_line and len(err_line.strip().splitlines()) == 1

if __name__ == "__main__":
    _wrap_build(None, kill_after=int(sys.argv[1]))
    from scorers.cli import main as _main

    sys.exit(_main(sys.argv[2:]))
