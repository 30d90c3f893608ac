"""Run the embedding runner on a data_dir from a subprocess (crash/resume and multi-process tests).

``--kill-after N`` SIGKILLs this process from inside the (N+1)-th scorer call, i.e. with a batch in flight, the way an
OOM killer or a pre-empted node would. ``--expect-processes K`` fails unless accelerate really started K processes.
``--pause-after N --gate DIR``: after N scorer calls, write ``DIR/ready-<rank>`` (holding the pid) and wait until
``DIR/go`` exists (at most 120 s), so a test can act while the run is known to be mid-way (holding its cache lock).
"""
from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path


class KillAfter:
    """Forwards to a scorer; dies by SIGKILL during call ``n + 1``."""

    def __init__(self, inner, n: int):
        self.inner, self.n, self.calls = inner, n, 0
        self.name, self.image_transform, self.config = inner.name, inner.image_transform, inner.config

    def score(self, images, prompts):
        self.calls += 1
        if self.calls > self.n:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.inner.score(images, prompts)


class PauseAfter:
    """Forwards to a scorer; before call ``n + 1`` announces itself in ``gate`` and waits for ``gate/go``."""

    def __init__(self, inner, n: int, gate: str, rank: int):
        self.inner, self.n, self.gate, self.rank, self.calls = inner, n, Path(gate), rank, 0
        self.name, self.image_transform, self.config = inner.name, inner.image_transform, inner.config

    def score(self, images, prompts):
        self.calls += 1
        if self.calls == self.n + 1:
            (self.gate / f"ready-{self.rank}").write_text(str(os.getpid()))
            deadline = time.monotonic() + 120
            while not (self.gate / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return self.inner.score(images, prompts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--cache-dir", required=True)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--kill-after", type=int)
    parser.add_argument("--expect-processes", type=int, default=1)
    parser.add_argument("--pause-after", type=int)
    parser.add_argument("--gate")
    args = parser.parse_args()

    from scorers.scoring.registry import build_scorer
    from scorers.scoring.runner import finish, process_state
    from scorers.scoring.rows import write_outputs
    from scorers.ts2.scoring import score_table
    from scorers.tables.pandas_tables import read_metadata

    state = process_state()
    assert state.num_processes == args.expect_processes, (state.num_processes, args.expect_processes)
    scorer = build_scorer("clip_score", model=args.model, device=state.device, form="cosine")
    if args.kill_after is not None:
        scorer = KillAfter(scorer, args.kill_after)
    if args.pause_after is not None:
        scorer = PauseAfter(scorer, args.pause_after, args.gate, state.process_index)
    frame, result = score_table(scorer, read_metadata(os.path.join(args.data_dir, "metadata.csv")), args.data_dir,
                                cache_dir=args.cache_dir, batch_size=args.batch_size, num_workers=args.num_workers,
                                progress=False)
    if state.is_main_process:
        write_outputs(frame, result, args.out)
    finish()


if __name__ == "__main__":
    main()
