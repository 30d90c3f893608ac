"""Which pip extra brings a missing module: one line instead of a ``ModuleNotFoundError`` traceback."""
from __future__ import annotations

__all__ = ["EXTRA_OF", "install_hint", "missing_extra_error"]

#: top-level module -> the ``ts2-evaluate`` extra that installs it
EXTRA_OF = {
    "torch": "models", "torchvision": "models", "transformers": "models", "accelerate": "models",
    "open_clip": "models", "sentence_transformers": "models", "sentencepiece": "models", "google": "models",
    "httpx": "served", "diffusers": "generate", "matplotlib": "report", "gradio": "demo",
    "ray": "ray",
}


def install_hint(extra: str) -> str:
    """How to install ``extra``: from a clone today, by name once the package is on PyPI."""
    return (f"install the {extra} extra: pip install '.[{extra}]' from a clone of ts2-evaluate "
            f"(pip install 'ts2-evaluate[{extra}]' once it is on PyPI)")


def missing_extra_error(error: ImportError) -> ValueError | None:
    """A one-line ``ValueError`` naming the extra for a missing optional dependency, else ``None``."""
    name = (getattr(error, "name", None) or "").split(".")[0]
    extra = EXTRA_OF.get(name)
    if not isinstance(error, ModuleNotFoundError) or extra is None:
        return None
    return ValueError(f"{error}; {install_hint(extra)}")
