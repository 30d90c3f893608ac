"""Engines: how a set of (image, prompt) items is scored. ``accelerate`` is :func:`scorers.runner.run` (the default);
``ray`` is :mod:`scorers.engines.ray_data` (Ray Data actors, one scorer per actor). Both honour the same cache and
resume rules (:mod:`scorers.cache`) and give the same :class:`scorers.runner.RunResult`. ``ray`` is imported only here
and in :mod:`scorers.serve`."""

ENGINES = ("accelerate", "ray")
