"""Speed of human-agreement bootstrap CIs: 20 metrics x 5 coefficients x 1,000 bootstrap resamples on 10,000 items.

Data: 2,000 prompts x 5 T2I models = 10,000 images (TIFA160's layout, scaled up), a 1-5 Likert rating averaged over
two raters, and 20 synthetic metrics of varying noise (half of them quantised like TIFA's question fractions, so ties
are common). Grouping ``item`` (per-prompt coefficients averaged; the bootstrap resamples prompts).

Ours: ``scorers.stats.agreement.agreement_many`` (every coefficient recomputed on every resample, pairwise accuracy with its
epsilon re-calibrated on every resample).

Baseline, in the same run: the plain loop -- for every metric x coefficient x resample, the resampled prompts'
coefficients with ``scipy.stats`` (pearsonr, spearmanr, kendalltau b/c) one prompt at a time, averaged; pairwise
accuracy by the straightforward sort-and-sweep of Deutsch et al.'s tie calibration in Python. The loop is far too slow
to run 100,000 times, so it runs ``--baseline-resamples`` resamples per metric x coefficient (the same resamples ours
draws, which are checked to give the same values) and its time is extrapolated linearly to all 1,000; the printout says
so.

    python benchmarks/bench_agreement.py [--items 10000] [--metrics 20] [--n-bootstrap 1000] [--baseline-resamples 2]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scorers.stats.agreement import COEFFICIENTS, agreement_many  # noqa: E402
from scorers.stats.resampling import resample_indices  # noqa: E402

SCIPY = {
    "pearson": lambda h, m: stats.pearsonr(h, m).statistic,
    "spearman": lambda h, m: stats.spearmanr(h, m).statistic,
    "kendall_b": lambda h, m: stats.kendalltau(h, m, variant="b").statistic,
    "kendall_c": lambda h, m: stats.kendalltau(h, m, variant="c").statistic,
}


def make_data(n_items: int, n_metrics: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_systems = 5
    n_prompts = n_items // n_systems
    items = np.repeat(np.arange(n_prompts), n_systems).astype(str)
    quality = rng.normal(0, 1, n_prompts * n_systems)
    raters = [np.clip(np.round(3 + quality + rng.normal(0, 0.7, quality.size)), 1, 5) for _ in range(2)]
    human = (raters[0] + raters[1]) / 2
    metrics = {}
    for k in range(n_metrics):
        score = quality + rng.normal(0, 0.3 + 0.15 * k, quality.size)
        if k % 2:  # TIFA-like: fraction of 4 questions answered right -> many ties
            score = np.round(np.clip((score + 2) / 4, 0, 1) * 4) / 4
        metrics[f"metric_{k:02d}"] = score
    return human, metrics, items


def plain_grouped_pairwise(groups) -> float:
    """Mean per-prompt acc_eq with one epsilon shared by all prompts: sort every pair by metric gap, sweep."""
    pairs = []
    per_group = []
    for g, (h, m) in enumerate(groups):
        n = len(h)
        per_group.append(n * (n - 1) / 2)
        for i in range(n):
            for j in range(i + 1, n):
                dh, dm = h[j] - h[i], m[j] - m[i]
                pairs.append((abs(dm), g, int(dh == 0), int(dh * dm > 0)))
    pairs.sort(key=lambda p: p[0])
    n_groups = len(groups)
    total = sum(float(con) / per_group[g] for _, g, _, con in pairs) / n_groups
    k = 0
    while k < len(pairs) and pairs[k][0] <= 0:
        _, g, tie, con = pairs[k]
        total += (tie - con) / per_group[g] / n_groups
        k += 1
    best = total
    while k < len(pairs):
        gap = pairs[k][0]
        while k < len(pairs) and pairs[k][0] == gap:
            _, g, tie, con = pairs[k]
            total += (tie - con) / per_group[g] / n_groups
            k += 1
        best = max(best, total)
    return best


def baseline_resample(coefficient, human, metric, members, chosen) -> float:
    groups = [(human[members[g]], metric[members[g]]) for g in chosen]
    if coefficient == "pairwise_acc":
        return plain_grouped_pairwise([(list(h), list(m)) for h, m in groups if len(h) >= 2])
    values = []
    for h, m in groups:
        if len(h) >= 2 and np.ptp(h) > 0 and np.ptp(m) > 0:
            values.append(SCIPY[coefficient](h, m))
    return float(np.mean(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--n-bootstrap", type=int, default=1000)
    parser.add_argument("--baseline-resamples", type=int, default=2,
                        help="resamples of the plain loop actually run per metric x coefficient (extrapolated)")
    args = parser.parse_args()
    human, metrics, items = make_data(args.items, args.metrics)

    start = time.perf_counter()
    ours = agreement_many(human, metrics, coefficients=COEFFICIENTS, grouping="item", items=items,
                          n_bootstrap=args.n_bootstrap, seed=0)
    ours_s = time.perf_counter() - start

    labels = np.unique(items)
    members_all = {label: np.flatnonzero(items == label) for label in labels}
    baseline_s = 0.0
    worst = 0.0
    run = min(args.baseline_resamples, args.n_bootstrap)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for result in ours:
            metric = metrics[result.metric]
            # the prompts ours kept (defined per-prompt values; every prompt with >= 2 images for pairwise_acc)
            kept = sorted(result.per_group)
            members = [members_all[label] for label in kept]
            idx = resample_indices(len(kept), args.n_bootstrap, 0)[:run]
            t0 = time.perf_counter()
            plain = [baseline_resample(result.coefficient, human, metric, members, row) for row in idx]
            baseline_s += (time.perf_counter() - t0) / run * args.n_bootstrap
            worst = max(worst, float(np.max(np.abs(np.array(plain) - result.bootstrap[:run]))))

    # a smarter loop for the four correlations: scipy once per prompt, then only the means are resampled
    # (pairwise accuracy cannot do this: its epsilon is re-calibrated on each resample)
    smart_s = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for result in ours:
            if result.coefficient == "pairwise_acc":
                continue
            metric = metrics[result.metric]
            t0 = time.perf_counter()
            values = np.array([baseline_resample(result.coefficient, human, metric, [members_all[label]], [0])
                               for label in labels])
            values = values[~np.isnan(values)]
            smart = values[resample_indices(values.size, args.n_bootstrap, 0)].mean(axis=1)
            smart_s += time.perf_counter() - t0
            worst = max(worst, float(np.max(np.abs(smart - result.bootstrap))))
    ours_corr = sum(1 for r in ours if r.coefficient != "pairwise_acc")

    n_pairs = len(metrics) * len(COEFFICIENTS)
    print(f"{args.items} items ({args.items // 5} prompts x 5 models), {len(metrics)} metrics x "
          f"{len(COEFFICIENTS)} coefficients x {args.n_bootstrap} bootstrap resamples, grouping=item")
    print(f"ours (vectorised, scorers.stats.agreement):   {ours_s:8.2f} s")
    print(f"plain scipy loop (extrapolated):        {baseline_s:8.2f} s   "
          f"[{run} of {args.n_bootstrap} resamples run per metric x coefficient, x{args.n_bootstrap / run:.0f}]")
    print(f"speed-up: {baseline_s / ours_s:.1f}x   ({n_pairs} metric x coefficient intervals)")
    print(f"smarter loop for the {ours_corr} correlation intervals only (scipy once per prompt, numpy-resampled "
          f"means): {smart_s:.2f} s; pairwise accuracy has no such shortcut (epsilon is re-calibrated per resample)")
    print(f"max |ours - baseline| over every value compared: {worst:.2e}")


if __name__ == "__main__":
    main()
