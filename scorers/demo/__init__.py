"""The TS2 Gradio demo (UI only): leaderboard, SEG explorer, score-your-image and report card, built on the ``scorers``
library.

``build_app(AppConfig(...))`` returns a ``gr.Blocks``; ``examples/space/app.py`` (the Space entry point, a few lines
importing this package) and ``ts2 demo`` both call it, so the Space and the local demo are the same app. ``ui`` composes
the tabs, each built by its own module's ``build_<name>_tab``; gradio is imported by ``ui`` and ``score_tab`` (its
image input), and by the other tab modules only inside their ``build_<name>_tab``.
"""
from scorers.demo.config import AppConfig

__all__ = ["AppConfig", "build_app", "launch_kwargs"]


def __getattr__(name):
    if name in ("build_app", "launch_kwargs"):
        from scorers.demo import ui

        return getattr(ui, name)
    raise AttributeError(name)
