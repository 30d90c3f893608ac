"""``ts2 reproduce`` vs the official T2IScoreScore evaluators, as whole processes, on the release's per-image scores.

The official way (``src/T2IScoreScore/run/compute_metrics.py`` of michaelsaxon/T2IScoreScore) is one process per
metric: ``pandas.read_csv`` of an ``id,image_id,rank,score`` table, then ``SpearmanEvaluator`` (walks; scipy's
``spearmanr`` per walk; ``invert_scores``, sample-weighted), ``KSTestEvaluator`` (scipy's ``ks_2samp`` per node pair)
and ``DeltaEvaluator`` (mean difference per node pair), each looping over SEGs with ``df[df.id == g]`` and over walks
and node pairs in Python, then the per-SEG and partition-average CSVs. :func:`official_worker` re-states that algorithm
(this file's own code, written from reading theirs: the same loops, the same pandas and scipy calls, and the debug
strings their ``logger.debug(f"...")`` lines build whether or not debug logging is on; ``--lean`` drops those).

Both sides get the 19 metric columns of ``released_scores.csv`` (``--data-dir`` / ``$TS2_DATA``, see ``benchmarks/release_tables.py``). The per-metric tables
are written to a temporary folder (the release data is not copied into the project). Timed, median seconds of
``--repeat`` runs of ``ts2 reproduce`` and ``--official-repeat`` runs of each official case (after a warm-up run):

* official, one process per metric, 19 processes in turn (how their CLI runs);
* official, one process for all 19 metrics (``--lean``: no debug strings), the most favourable way to run their code;
* ``ts2 reproduce`` (one process: 19 metrics x rank/sep/delta, 1,000 bootstrap resamples, the paper comparison).

The ratios are printed in the same run, of wall and of CPU seconds (user + system: on a machine shared with other
jobs CPU time moves less than wall time). A check compares the official averages with ``ts2 reproduce --variant
official --segs all --json`` and prints the largest difference per meta-metric (rank and delta agree to the JSON's
rounding; sep differs on the three TIFA columns with NaN scores, see the printed note).

    python benchmarks/bench_official.py [--data-dir DIR] [--repeat 5] [--official-repeat 1]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------------------------------------
# The official evaluators, re-stated (run in the worker processes only)
# --------------------------------------------------------------------------------------------------------------------

def official_worker(tables: list[Path], out_dir: Path, lean: bool) -> None:
    """Meta-metrics of each ``id,image_id,rank,score`` table the official way; writes ``<name>.csv`` (per SEG) and
    ``<name>_averages.csv`` (overall and per partition) into ``out_dir``."""
    from collections import defaultdict

    import numpy as np
    import pandas as pd
    from scipy.stats import ks_2samp, spearmanr

    def error_count(node):
        return int("".join(filter(str.isdigit, node)))

    def debug(text):  # their logger.debug(f"...") arguments are built even with debug logging off
        return None if lean else text

    def walks_of(node_ids):
        by_level = {}
        for node in set(node_ids):
            by_level.setdefault(error_count(node), []).append(node)
        walks = [[node] for node in by_level.get(0, [])]
        for level in range(1, max(by_level) + 1):
            if level not in by_level:
                continue
            walks = [walk + [node] for walk in walks for node in by_level[level]]
        if not lean:
            for walk in walks:
                debug(" -> ".join(f"{node}:[{', '.join(str(x) for x in node_ids.count(node) * [1])}]" for node in walk))
        return walks

    def spearman_graph(node_ids, scores):
        by_node = defaultdict(list)
        for node, score in zip(node_ids, scores):
            by_node[node].append(score)
        values, counts = [], []
        for walk in walks_of(node_ids):
            debug(f"Evaluating walk: {' -> '.join(walk)}")
            node_scores = [by_node[node] for node in walk]
            debug(f"  All values in walk: {' -> '.join(f'{n}:{s}' for n, s in zip(walk, node_scores))}")
            flat = [s for node_list in node_scores for s in node_list]
            errors = [error_count(node) for node in walk for _ in by_node[node]]
            keep = [i for i, s in enumerate(flat) if not np.isnan(s)]
            if len(keep) <= 1:
                continue
            errors, flat = [errors[i] for i in keep], [flat[i] for i in keep]
            debug(f"  Final values for correlation: error_counts={errors}, scores={flat}")
            rho = spearmanr(np.array(errors), np.array(flat)).correlation
            rho = 0.0 if np.isnan(rho) else rho
            if not np.isnan(rho):
                values.append(-rho)  # invert_scores=True
                counts.append(len(keep))
        if not values:
            return float("nan"), 0
        return sum(v * c for v, c in zip(values, counts)) / sum(counts), len(values)

    def pair_graph(node_ids, scores, statistic):
        by_node = defaultdict(list)
        for node, score in zip(node_ids, scores):
            by_node[node].append(score)
        by_node = {k: np.array(v) for k, v in by_node.items()}
        nodes = sorted(by_node, key=error_count)
        found = []
        for i, first in enumerate(nodes):
            for second in nodes[i + 1:]:
                if error_count(first) != error_count(second) and len(by_node[first]) and len(by_node[second]):
                    value = statistic(by_node[first], by_node[second])
                    if not np.isnan(value):
                        found.append(value)
                        debug(f"Nodes {first}->{second} score: {value:.3f}")
                        debug(f"  Node {first}: {by_node[first].tolist()}")
                        debug(f"  Node {second}: {by_node[second].tolist()}\n")
        return sum(found) / len(found) if found else 0.0

    evaluators = {
        "spearman": lambda nodes, scores: spearman_graph(nodes, scores),
        "kstest": lambda nodes, scores: (pair_graph(nodes, scores, lambda a, b: ks_2samp(a, b)[0]), 1),
        "delta": lambda nodes, scores: (pair_graph(nodes, scores, lambda a, b: np.mean(a) - np.mean(b)), 1),
    }
    for table in tables:
        name = table.stem
        frame = pd.read_csv(table)
        frame["image_source"] = frame["id"].apply(lambda g: "synth" if g < 111 else "nat" if g < 136 else "real")
        per_graph = {}
        for key, evaluate in evaluators.items():
            per_graph[key] = {}
            for graph in frame["id"].unique():
                graph_frame = frame[frame["id"] == graph]
                per_graph[key][graph] = evaluate(graph_frame["rank"].tolist(), graph_frame["score"].tolist())
        rows = [{"id": graph, "image_source": frame[frame["id"] == graph]["image_source"].iloc[0],
                 **{key: per_graph[key][graph][0] for key in evaluators}, "count": per_graph["spearman"][graph][1]}
                for graph in per_graph["spearman"]]
        results = pd.DataFrame(rows)
        results.to_csv(out_dir / f"{name}.csv", index=False)
        averages = [{"partition": "overall", "count": len(results), **{k: results[k].mean() for k in evaluators}}]
        for partition in ("synth", "nat", "real"):
            part = results[results["image_source"] == partition]
            averages.append({"partition": partition, "count": len(part), **{k: part[k].mean() for k in evaluators}})
        pd.DataFrame(averages).to_csv(out_dir / f"{name}_averages.csv", index=False)


# --------------------------------------------------------------------------------------------------------------------
# The benchmark (driver process)
# --------------------------------------------------------------------------------------------------------------------

def write_tables(shared: Path, folder: Path) -> list[Path]:
    """One ``id,image_id,rank,score`` table per metric column of the release (the official evaluator's layout; the
    stray quotes of ``llmscore_over`` stripped), in ``folder``."""
    import csv

    with open(shared / "metadata.csv", newline="", encoding="utf-8-sig") as handle:
        metadata = list(csv.DictReader(handle))
    with open(shared / "released_scores.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = [c for c in reader.fieldnames if c not in ("id", "image_id")]
        scores = list(reader)
    assert len(scores) == len(metadata), "released_scores.csv and metadata.csv are row-aligned"
    position: dict[str, int] = {}
    keys = []
    for row in metadata:
        k = position.get(row["id"], 0)
        position[row["id"]] = k + 1
        keys.append((row["id"], k, row["rank"].strip()))
    paths = []
    for column in columns:
        path = folder / f"{column}.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "image_id", "rank", "score"])
            for (seg, image, node), row in zip(keys, scores):
                writer.writerow([seg, image, node, row[column].strip().strip("\"'")])
        paths.append(path)
    return paths


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of one run of ``argv`` (must exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.decode(errors='replace')}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def _sum(runs) -> tuple[float, float]:
    runs = list(runs)
    return sum(w for w, _ in runs), sum(c for _, c in runs)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.release_tables import add_data_dir, release_folder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    parser.add_argument("--repeat", type=int, default=5, help="runs of ts2 reproduce (the median is printed)")
    parser.add_argument("--official-repeat", type=int, default=1, help="runs of each official case (about a minute)")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)  # OUT_DIR TABLE...: one official process
    parser.add_argument("--lean", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        official_worker([Path(p) for p in args.worker[1:]], Path(args.worker[0]), args.lean)
        return

    worker = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shared = release_folder(args.data_dir, ["metadata.csv", "released_scores.csv", "paper_table2.csv"], tmp)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep), TS2_DATA=str(shared), HF_HUB_OFFLINE="1")
        tables = write_tables(shared, tmp)
        out = tmp / "official"
        out.mkdir()
        cases = {
            f"official, {len(tables)} processes (one per metric)":
                lambda: _sum(timed(worker + [str(out), str(t)], env) for t in tables),
            f"official, 1 process, {len(tables)} metrics, --lean":
                lambda: timed(worker + [str(out)] + [str(t) for t in tables] + ["--lean"], env),
            "ts2 reproduce": lambda: timed([sys.executable, "-m", "scorers.cli", "reproduce"], env),
        }
        walls, cpus = {}, {}
        for label, run in cases.items():
            timed(worker + [str(out), str(tables[0])], env) if label.startswith("official") else run()  # warm caches
            runs = [run() for _ in range(args.repeat if label == "ts2 reproduce" else args.official_repeat)]
            walls[label] = statistics.median(w for w, _ in runs)
            cpus[label] = statistics.median(c for _, c in runs)
        print(f"{'case':<46} {'wall s':>8} {'x ours':>7} {'cpu s':>8} {'x ours':>7}")
        for label in cases:
            print(f"{label:<46} {walls[label]:8.2f} {walls[label] / walls['ts2 reproduce']:7.1f} {cpus[label]:8.2f} "
                  f"{cpus[label] / cpus['ts2 reproduce']:7.1f}")
        check = subprocess.run([sys.executable, "-m", "scorers.cli", "reproduce", "--variant", "official", "--segs",
                                "all", "--n-bootstrap", "0", "--json"], env=env, cwd=ROOT, capture_output=True,
                               text=True, check=True)
        ours_rows = {(r["column"], r["meta_metric"], r["partition"]): r["ours"]
                     for r in json.loads(check.stdout)["rows"]}
        import csv

        names = {"spearman": "rank", "kstest": "sep", "delta": "delta"}
        parts = {"overall": "avg", "synth": "synth", "nat": "nat", "real": "real"}
        worst = dict.fromkeys(names.values(), (0.0, ""))
        for table in tables:
            with open(out / f"{table.stem}_averages.csv", newline="") as handle:
                for row in csv.DictReader(handle):
                    for key, meta_metric in names.items():
                        gap = abs(float(row[key]) - ours_rows[(table.stem, meta_metric, parts[row["partition"]])])
                        worst[meta_metric] = max(worst[meta_metric], (gap, f"{table.stem} {row['partition']}"))
        print("largest |official - ts2 reproduce --variant official --segs all| (fractions; ts2 JSON rounds to "
              "1e-6): " + ", ".join(f"{m} {gap:.1e} ({where})" for m, (gap, where) in worst.items()))
        print("(a node holding a NaN score: the official KSTestEvaluator passes it to scipy's ks_2samp, whose NaN "
              "statistic skips the pair; variant official does the same)")
    load = ", load average %.1f" % os.getloadavg()[0] if hasattr(os, "getloadavg") else ""
    print(f"(ts2 reproduce {args.repeat} runs, official {args.official_repeat}; medians; {sys.executable}, "
          f"{os.cpu_count()} CPUs{load})")


if __name__ == "__main__":
    main()
