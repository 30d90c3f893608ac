"""Engines: how a set of (image, prompt) items is scored. ``accelerate`` is :func:`scorers.scoring.runner.run` (the default);
``ray`` is :mod:`scorers.scoring.engines.ray_data` (Ray Data actors, one scorer per actor). Both honour the same cache and
resume rules (:mod:`scorers.scoring.cache`) and give the same :class:`scorers.scoring.runner.RunResult`. ``ray`` is imported only here
and in :mod:`scorers.rewards.serve`."""

ENGINES = ("accelerate", "ray")
