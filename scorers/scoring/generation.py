"""Generation sharded over processes (``accelerate launch``): the one way ``ts2 tifa-bench generate`` and
``ts2 seg generate`` split their images.

:func:`generate_shards` takes the whole list of images a run wants (``scorers.models.diffusion.ImageJob``: path,
prompt, noise seed) and

1. on the main process only: checks the settings against ``generation.json`` (``check_settings``), runs the caller's
   own check or preparation (``before``), and lists the images whose file is missing;
2. broadcasts that list (or the one-line error) to every process, so all of them split the same list, decided
   before any of them has written an image: each missing image has exactly one owner, and nothing is generated twice
   or left out, whatever the timing of the processes;
3. each process generates its contiguous share (:func:`scorers.scoring.runner.share`) with
   ``scorers.models.diffusion.generate_to_files`` (per-image seeds, atomic writes: a killed run resumes where it
   stopped);
4. the counts of every process are gathered, so every process returns the run's totals.

An image's seed is part of its job (derived by the caller from the base seed and the image's identity), never from
the process rank or the order: one process and several give the same images.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from scorers.errors import value_error, wording_of
from scorers.models.diffusion import ImageJob, check_settings, generate_to_files
from scorers.scoring.runner import broadcast, gather, process_state, share

__all__ = ["generate_shards"]


def generate_shards(pipeline, jobs: Sequence[ImageJob], out_dir: str | Path, settings: dict, *,
                    before: Callable[[], None] | None = None, parameter: str = "out_dir", batch_size: int = 4,
                    call_kwargs: dict | None = None, progress: bool = True) -> dict:
    """Generate the missing images of ``jobs`` over the processes of the run; returns the run's counts
    ``{"total", "existing", "generated", "processes"}`` (the same on every process).

    ``settings`` is recorded in (or checked against) ``out_dir/generation.json``; ``parameter`` is the option naming
    ``out_dir`` in the error. ``before`` runs on the main process after the settings check and before the missing
    images are listed (a layout check, a file written beside the images); a ``ValueError`` it raises is raised on
    every process.

    Raises
    ------
    ParameterError / ValueError
        ``out_dir`` holds images made with other settings, or ``before`` refused; ``generate_to_files``'s errors.
    """
    state = process_state()
    found: list[int] | str = []
    if state.is_main_process:
        try:
            check_settings(out_dir, settings, parameter=parameter)
            if before is not None:
                before()
            found = [i for i, job in enumerate(jobs) if not Path(job.path).is_file()]
        except ValueError as problem:
            found = wording_of(problem) or str(problem)  # a Wording keeps the option it names
    found = broadcast(state, found)
    if isinstance(found, str):
        raise value_error("{error}", error=found)
    mine = [jobs[i] for i in share(found, state)]
    generated = generate_to_files(pipeline, mine, batch_size=batch_size, call_kwargs=call_kwargs,
                                  progress=progress and state.is_main_process)
    return {"total": len(jobs), "existing": len(jobs) - len(found), "generated": sum(gather(state, [generated])),
            "processes": state.num_processes}
