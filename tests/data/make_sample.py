"""Writes the README's worked-example files (run from the repository root: python tests/data/make_sample.py).

Made from scratch, nothing taken from the TS2 release: four invented SEGs (ids 0 and 1 in Synth, 111 in Nat, 136 in
Real, so every partition has one or two), each a prompt with images on nodes of 0-2 errors, and a metric that scores
images with more errors lower, plus seeded noise:

* ``sample_metadata.csv``: the release's metadata layout (``id,target_prompt,file_name,image_source,rank``; the
  release calls the node column ``rank``);
* ``my_scores.csv``: ``seg_id,file_name,my_metric`` rows in shuffled order (keyed: joined with ``--on seg_id
  file_name``).
"""
from __future__ import annotations

import csv
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEGS = {  # id -> (prompt, nodes with their image counts)
    0: ("a red cube on top of a blue sphere", {"0": 3, "1a": 2, "1b": 2, "2": 3}),
    1: ("two cats sleeping on a green sofa", {"0": 2, "1": 3, "2": 2}),
    111: ("a lighthouse on a cliff at sunset", {"0": 3, "1a": 2, "1b": 2, "2": 2}),
    136: ("a child holding a yellow umbrella in the rain", {"0": 2, "1": 2, "2a": 2, "2b": 2}),
}


def main() -> None:
    rng = random.Random(0)
    metadata, scores = [], []
    for seg_id, (prompt, nodes) in SEGS.items():
        k = 0
        for node, count in nodes.items():
            errors = int(node[0])
            for _ in range(count):
                file_name = f"images/{seg_id:03d}-{k:02d}.jpg"
                metadata.append([seg_id, prompt, file_name, "sample", node])
                scores.append([seg_id, file_name, round(0.9 - 0.2 * errors + rng.gauss(0, 0.06), 4)])
                k += 1
    rng.shuffle(scores)
    with open(HERE / "sample_metadata.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["id", "target_prompt", "file_name", "image_source", "rank"], *metadata])
    with open(HERE / "my_scores.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([["seg_id", "file_name", "my_metric"], *scores])


if __name__ == "__main__":
    main()
