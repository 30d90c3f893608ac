"""Straightforward TS2 meta-metrics: a per-walk / per-pair pandas + scipy loop.

Written for obviousness, not speed. The tests cross-check ``scorers.stats.meta`` against it, and
``benchmarks/bench_meta.py`` uses it as the speed baseline.
"""
from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats


def _errors(label: str) -> int:
    return int("".join(ch for ch in str(label) if ch.isdigit()))


def reference_meta(scores, seg_ids, nodes, *, higher_is_better=True, variant="paper"):
    """Per-SEG rank/sep/delta (dict seg_id -> value) and the delta std, computed the plain way.

    ``variant="official"`` follows the official TS2 evaluator (``DeltaEvaluator`` in its ``evaluators/base.py``): raw
    scores (``higher_is_better`` is not applied), delta over every node pair with different error counts where a node
    holding a NaN score has a NaN mean and its pairs are skipped, and 0 for a SEG with no usable pair; sep as its
    ``KSTestEvaluator``: scipy's ``ks_2samp`` on each node pair's scores as they are, a NaN statistic skipped."""
    frame = pd.DataFrame({"score": np.asarray(scores, dtype=float), "seg": seg_ids, "node": [str(n) for n in nodes]})
    if not higher_is_better and variant != "official":
        frame["score"] = -frame["score"]
    frame["err"] = frame["node"].map(_errors)
    std = float(np.std(frame["score"].dropna().to_numpy()))
    rank, sep, delta = {}, {}, {}
    for seg, group in frame.groupby("seg", sort=True):
        node_err = group.groupby("node")["err"].first()
        levels = sorted(node_err.unique())
        per_level = [sorted(node_err[node_err == lvl].index) for lvl in levels]
        # rank: weighted mean of -spearman over walks
        num, den = 0.0, 0.0
        for walk in itertools.product(*per_level):
            sub = group[group["node"].isin(walk)].dropna(subset=["score"])
            if len(sub) < 2:
                continue
            x, y = sub["err"].to_numpy(dtype=float), sub["score"].to_numpy()
            if np.all(x == x[0]) or np.all(y == y[0]):
                r = 0.0
            else:
                r = stats.spearmanr(x, y).statistic
            num += len(sub) * -r
            den += len(sub)
        rank[seg] = num / den if den else np.nan
        # sep and delta over node pairs
        values = {n: g["score"].dropna().to_numpy() for n, g in group.groupby("node")}
        ks, gaps = [], []
        for a, b in itertools.combinations(sorted(values), 2):
            ea, eb = node_err[a], node_err[b]
            if ea == eb:
                continue
            lo, hi = (a, b) if ea < eb else (b, a)
            if len(values[lo]) == 0 or len(values[hi]) == 0:
                continue
            if variant == "official":
                continue  # below: the official rule keeps NaN scores in the nodes
            with warnings.catch_warnings():  # only the statistic is used, not scipy's p-value method
                warnings.simplefilter("ignore", RuntimeWarning)
                ks.append(stats.ks_2samp(values[lo], values[hi]).statistic)
            if abs(ea - eb) == 1:
                gaps.append(values[lo].mean() - values[hi].mean())
        if variant == "official":
            with_nan = {n: g["score"].to_numpy() for n, g in group.groupby("node")}
            for a, b in itertools.combinations(sorted(with_nan), 2):
                ea, eb = node_err[a], node_err[b]
                if ea == eb:
                    continue
                lo, hi = (a, b) if ea < eb else (b, a)
                gap = with_nan[lo].mean() - with_nan[hi].mean()  # NaN when either node holds a NaN score
                if not np.isnan(gap):
                    gaps.append(gap)
                with warnings.catch_warnings():  # KSTestEvaluator: ks_2samp on the scores as they are, NaN included
                    warnings.simplefilter("ignore", RuntimeWarning)
                    statistic = stats.ks_2samp(with_nan[lo], with_nan[hi]).statistic  # NaN propagates
                if not np.isnan(statistic):
                    ks.append(statistic)
        sep[seg] = float(np.mean(ks)) if ks else 0.0  # the spec: a SEG with no computable pair has sep 0
        if variant == "official":
            delta[seg] = float(np.mean(gaps)) if gaps else 0.0  # no usable pair: 0, and the SEG counts
        elif not gaps or (variant == "paper" and std == 0.0):
            delta[seg] = np.nan  # no pair, or no spread to normalise by
        else:
            delta[seg] = float(np.mean(gaps)) / (std if variant == "paper" else 1.0)
    return {"rank": rank, "sep": sep, "delta": delta, "std": std}


def reference_edge_meta(scores, seg_ids, nodes, edges, *, higher_is_better=True, variant="paper"):
    """Per-SEG rank/sep/delta under the edge rule (a built dir's own edges), computed the plain way, written apart
    from the library: ``edges`` is ``{seg_id: [(from label, to label), ...]}``.

    rank: every path that starts at an error-0 node (node "0" of a built SEG) and follows edges until a node with no outgoing edge; per path
    -spearman(error count, score) over its images (NaN dropped, < 2 images skipped, constant input 0), weighted by
    its number of images. sep: ks_2samp over every pair (u, v) where v can be reached from u along edges. delta
    (paper): mean(u) - mean(v) over those pairs one error apart, over the population std of the scores; (official):
    over every such pair, raw, NaN means skipped, 0 without a pair."""
    frame = pd.DataFrame({"score": np.asarray(scores, dtype=float), "seg": seg_ids, "node": [str(n) for n in nodes]})
    if not higher_is_better and variant != "official":
        frame["score"] = -frame["score"]
    std = float(np.std(frame["score"].dropna().to_numpy()))
    rank, sep, delta = {}, {}, {}
    for seg, group in frame.groupby("seg", sort=True):
        out_of = {}
        for a, b in edges[int(seg)]:
            out_of.setdefault(a, []).append(b)

        def paths_from(node):
            if not out_of.get(node):
                return [[node]]
            return [[node] + rest for child in out_of[node] for rest in paths_from(child)]

        def reachable(node):
            seen, todo = set(), list(out_of.get(node, []))
            while todo:
                n = todo.pop()
                if n not in seen:
                    seen.add(n)
                    todo.extend(out_of.get(n, []))
            return seen

        num = den = 0.0
        heads = sorted(n for n in set(group["node"]) if _errors(n) == 0)  # node "0" of a built SEG
        for path in [p for head in heads for p in paths_from(head)]:
            sub = group[group["node"].isin(path)].dropna(subset=["score"])
            if len(sub) < 2:
                continue
            x = sub["node"].map(_errors).to_numpy(dtype=float)
            y = sub["score"].to_numpy()
            r = 0.0 if np.all(x == x[0]) or np.all(y == y[0]) else stats.spearmanr(x, y).statistic
            num += len(sub) * -r
            den += len(sub)
        rank[seg] = num / den if den else np.nan
        raw = {n: g["score"].to_numpy() for n, g in group.groupby("node")}
        ks, gaps = [], []
        for u in sorted(raw):
            for v in sorted(reachable(u)):
                one_apart = _errors(v) - _errors(u) == 1
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    if variant == "official":
                        statistic = stats.ks_2samp(raw[u], raw[v]).statistic  # NaN when a node holds a NaN
                        if not np.isnan(statistic):
                            ks.append(statistic)
                        gap = raw[u].mean() - raw[v].mean()
                        if not np.isnan(gap):
                            gaps.append(gap)
                        continue
                    a, b = raw[u][~np.isnan(raw[u])], raw[v][~np.isnan(raw[v])]
                    if len(a) == 0 or len(b) == 0:
                        continue
                    ks.append(stats.ks_2samp(a, b).statistic)
                if one_apart:
                    gaps.append(a.mean() - b.mean())
        sep[seg] = float(np.mean(ks)) if ks else 0.0
        if variant == "official":
            delta[seg] = float(np.mean(gaps)) if gaps else 0.0
        else:
            delta[seg] = float(np.mean(gaps)) / std if gaps and std > 0 else np.nan
    return {"rank": rank, "sep": sep, "delta": delta, "std": std}


def _partition(seg: int) -> str:
    # TS2's partitions as the paper states them: Synth < 111, Nat 111-135, Real >= 136
    return "synth" if seg < 111 else ("nat" if seg < 136 else "real")


def reference_summary(per_seg: dict, partitions: dict | None = None) -> dict:
    """Plain means of per-SEG values (NaN skipped): ``avg`` and each partition (TS2's by SEG id, or ``partitions``:
    ``{seg_id: name}``, a built dir's own)."""
    def mean(values):
        values = [v for v in values if not np.isnan(v)]
        return sum(values) / len(values) if values else float("nan")

    out = {"avg": mean(per_seg.values())}
    if partitions is not None:
        for part in dict.fromkeys(partitions[int(s)] for s in per_seg):
            out[part] = mean([v for s, v in per_seg.items() if partitions[int(s)] == part])
        return out
    for part in ("synth", "nat", "real"):
        out[part] = mean([v for s, v in per_seg.items() if _partition(int(s)) == part])
    return out


#: the environment variable naming a folder shared by the processes of one test run (pytest-xdist's workers), where
#: :func:`released_reference` keeps what it computed (tests/conftest.py sets it for the run and removes it after)
RUN_CACHE_ENV = "TS2_TESTS_RUN_CACHE"


def released_reference(shared_dir, column: str, *, higher_is_better: bool = True, variant: str = "paper",
                       max_seg: int = 163) -> dict:
    """The reference loop on one column of the release's ``released_scores.csv`` over SEGs 0..max_seg.

    Cells are parsed with plain ``float`` after stripping stray quotes (the release's ``llmscore_over`` has ``"3``).
    Returns ``{"rank"|"sep"|"delta": {"per_seg": {...}, "summary": {...}}}``. Computed once per process and
    arguments, and once per test run when ``$TS2_TESTS_RUN_CACHE`` names a folder: the result is kept there under the
    sha256 of both tables, the arguments and this file's source, so a changed input or a changed loop is computed
    afresh."""
    return _released_reference(str(shared_dir), column, bool(higher_is_better), variant, int(max_seg))


@functools.lru_cache(maxsize=None)
def _released_reference(shared_dir: str, column: str, higher_is_better: bool, variant: str, max_seg: int) -> dict:
    import hashlib
    import json
    import os
    from pathlib import Path

    digest = hashlib.sha256(Path(__file__).read_bytes())
    for name in ("metadata.csv", "released_scores.csv"):
        digest.update(Path(shared_dir, name).read_bytes())
    digest.update(json.dumps([column, higher_is_better, variant, max_seg]).encode())
    folder = os.environ.get(RUN_CACHE_ENV)
    kept = Path(folder) / f"reference-{digest.hexdigest()}.json" if folder else None
    if kept is not None and kept.is_file():
        saved = json.loads(kept.read_text())
        return {m: {"per_seg": {int(s): v for s, v in saved[m]["per_seg"].items()}, "summary": saved[m]["summary"]}
                for m in ("rank", "sep", "delta")}
    md = pd.read_csv(f"{shared_dir}/metadata.csv", dtype=str, keep_default_na=False)
    released = pd.read_csv(f"{shared_dir}/released_scores.csv", dtype=str, keep_default_na=False)
    keep = md["id"].astype(int) <= max_seg
    values = np.array([float(c.strip("\"'")) if c.strip("\"' ") else np.nan for c in released[column][keep]])
    ref = reference_meta(values, md["id"][keep].astype(int).to_numpy(), md["rank"][keep].to_numpy(),
                         higher_is_better=higher_is_better, variant=variant)
    result = {m: {"per_seg": {int(s): float(v) for s, v in ref[m].items()}, "summary": reference_summary(ref[m])}
              for m in ("rank", "sep", "delta")}
    if kept is not None:  # written whole, then renamed: a process reading it never sees half a file
        partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(result))
        os.replace(partial, kept)
    return result


def built_dir_reference(out, scores_csv, column: str, *, walks: str = "levels") -> dict:
    """The reference loops on a built data dir (``ts2 seg build``'s ``out``) and a score file keyed by its names:
    ``{"rank"|"sep"|"delta": {"per_seg": {...}, "summary": {"avg", partition...}}}`` under ``walks`` (``"levels"``:
    :func:`reference_meta`; ``"edges"``: :func:`reference_edge_meta` on the edges of ``out/segs.json``, read with the
    json module alone)."""
    import json
    from pathlib import Path

    md = pd.read_csv(Path(out) / "metadata.csv", dtype=str, keep_default_na=False)
    table = pd.read_csv(scores_csv, dtype={"file_name": str})
    by_name = dict(zip(table["file_name"], table[column].astype(float)))
    values = np.array([by_name[name] for name in md["file_name"]])
    seg_ids, nodes = md["id"].astype(int).to_numpy(), md["rank"].to_numpy()
    if walks == "edges":
        edges = {seg["seg_id"]: [(e["from"], e["to"]) for e in seg["edges"]]
                 for seg in json.loads((Path(out) / "segs.json").read_text(encoding="utf-8"))["segs"]}
        ref = reference_edge_meta(values, seg_ids, nodes, edges)
    else:
        ref = reference_meta(values, seg_ids, nodes)
    partitions = dict(zip(seg_ids.tolist(), md["partition"]))
    return {m: {"per_seg": {int(s): float(v) for s, v in ref[m].items()},
                "summary": reference_summary(ref[m], partitions)} for m in ("rank", "sep", "delta")}
