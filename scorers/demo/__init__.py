"""The TS2 Gradio demo (UI only): leaderboard, SEG explorer, score-your-image and report card, built on the ``scorers``
library.

``build_app(AppConfig(...))`` returns a ``gr.Blocks``; ``examples/space/app.py`` (the Space entry point, a few lines
importing this package) and ``ts2 demo`` both call it, so the Space and the local demo are the same app. Gradio is imported only by ``ui`` (and, inside
its tab builder, by ``report_card_tab``).
"""
from scorers.demo.config import AppConfig

__all__ = ["AppConfig", "build_app", "launch_kwargs"]


def __getattr__(name):
    if name in ("build_app", "launch_kwargs"):
        from scorers.demo import ui

        return getattr(ui, name)
    raise AttributeError(name)
