"""FLOPs per image of the reward scorers in the report's metadata (``scorers.report.costs.MEASURED_FLOPS``).

The figures were counted by ``benchmarks/bench_rewards.py --only flops`` (``FlopCounterMode``, 2 FLOPs per
multiply-add). Here they are checked against hand counts from the published architecture sizes (a transformer layer
costs ``2 * tokens * weights`` in its linear layers plus ``4 * tokens^2 * width`` in attention), which do not use
``FlopCounterMode``: the figures are printed to 4 significant digits, so the tolerance is 0.1% (plus the small terms
left out of the hand count: layer norms, biases, GELU, which FlopCounterMode does not count either).
"""
from __future__ import annotations

import pandas as pd
import pytest

from scorers.report.costs import CLIP_B16_FLOPS, MEASURED_FLOPS, measured_flops_note, merged_flops


def vit_flops(tokens: int, width: int, layers: int, mlp: int) -> float:
    """One pre-norm transformer stack: q, k, v, o projections + 2 MLP matrices, and the two attention matmuls."""
    linear = 2 * tokens * (4 * width * width + 2 * width * mlp)
    attention = 2 * 2 * tokens * tokens * width
    return layers * (linear + attention)


def test_clip_b16_and_table2_ratio_by_hand():
    # openai/clip-vit-base-patch16: 196 patches + CLS, width 768, 12 layers, MLP 3072; patch conv 16x16x3 -> 768;
    # text: 14 tokens, width 512, 12 layers, MLP 2048; projections to 512
    image = vit_flops(197, 768, 12, 3072) + 2 * 196 * (16 * 16 * 3 * 768) + 2 * 768 * 512
    text = vit_flops(14, 512, 12, 2048) + 2 * 512 * 512
    assert image + text == pytest.approx(CLIP_B16_FLOPS["counted"], rel=1e-3)
    assert CLIP_B16_FLOPS["table2"] == 604e6  # ../shared/ts2/paper_table2.csv, clipscore
    assert CLIP_B16_FLOPS["counted"] / CLIP_B16_FLOPS["table2"] == pytest.approx(59.9, abs=0.05)


def test_pickscore_vit_h14_by_hand():
    # CLIP ViT-H/14: 256 patches + CLS, width 1280, 32 layers, MLP 5120; text 14 tokens, width 1024, 24 layers
    image = vit_flops(257, 1280, 32, 5120) + 2 * 256 * (14 * 14 * 3 * 1280) + 2 * 1280 * 1024
    text = vit_flops(14, 1024, 24, 4096) + 2 * 1024 * 1024
    assert image + text == pytest.approx(MEASURED_FLOPS["pickscore"], rel=1e-3)


def test_unifiedreward_language_model_by_hand():
    # Qwen3-8B text model: width 4096, 36 layers, 32 query heads x 128, 8 KV heads x 128, MLP 12288 (gate, up,
    # down), vocabulary 151936; 488 tokens; the LM head on the 32 generated positions. Vision tower: 927.6G (the
    # benchmark's CPU count, not re-derived here)
    weights = 4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 12288
    text = 36 * (2 * 488 * weights + 2 * 2 * 488 * 488 * 4096) + 2 * 32 * 4096 * 151936
    assert text + 927.6e9 == pytest.approx(MEASURED_FLOPS["unifiedreward"], rel=2e-3)


def test_every_reward_scorer_has_a_figure():
    from scorers.scoring.registry import SCORERS

    rewards = ["pickscore", "hpsv2", "imagereward", "hpsv3", "unifiedreward"]
    assert set(MEASURED_FLOPS) == set(rewards) and set(rewards) <= set(SCORERS)


def test_merge_order_paper_then_measured_then_overrides():
    paper = pd.DataFrame({"column": ["clipscore", "pickscore"], "flop_per_image": ["604M", "1G"]})
    merged = merged_flops(paper, {"hpsv2": 5e9}, measured={"pickscore": 2e9, "hpsv2": 3e9, "hpsv3": 4e9})
    assert merged == {"clipscore": 6.04e8, "pickscore": 1e9, "hpsv2": 5e9, "hpsv3": 4e9}
    assert merged_flops(paper) == {"clipscore": 6.04e8, "pickscore": 1e9}  # measured figures only when asked


def test_note_names_the_measured_columns_and_the_convention():
    paper = pd.DataFrame({"column": ["clipscore"], "flop_per_image": ["604M"]})
    note = measured_flops_note(["clipscore", "pickscore", "hpsv3", "mine"], paper, {"hpsv3": 1e12})
    assert note.startswith("rank_vs_flops.png: the FLOPs of pickscore are this toolkit's counts")
    assert "2 FLOPs per multiply-add" in note and "36.2G by ours, 604M in Table 2, 59.9x" in note
    assert measured_flops_note(["clipscore", "mine"], paper) is None


def test_ts2_report_places_a_reward_column_on_the_flops_figure(shared_ts2, tmp_path, capsys):
    import numpy as np

    from scorers.cli import main
    from scorers.tables.pandas_tables import read_metadata

    metadata = read_metadata(shared_ts2 / "metadata.csv")
    rng = np.random.default_rng(0)
    scores = metadata[["seg_id", "file_name"]].assign(pickscore=-metadata["error_count"] + rng.normal(0, 2, len(metadata)),
                                                      mine=rng.normal(0, 1, len(metadata)))
    scores.to_csv(tmp_path / "scores.csv", index=False)
    code = main(["report", str(tmp_path / "scores.csv"), "--metadata", str(shared_ts2 / "metadata.csv"),
                 "--paper", str(shared_ts2 / "paper_table2.csv"), "--on", "seg_id", "file_name",
                 "--n-bootstrap", "0", "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0
    assert "the FLOPs of pickscore are this toolkit's counts" in printed
    assert "leaves out 1 metric(s) without a FLOPs cost: mine" in printed
