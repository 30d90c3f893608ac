"""Which pip extra brings a missing module: one line instead of a ``ModuleNotFoundError`` traceback. The table and
the wording live in :mod:`scorers.errors` (so the library's layers below the CLI give the same hint); this module
keeps the names the commands import."""
from __future__ import annotations

from scorers.errors import EXTRA_OF, install_hint, missing_extra_error

__all__ = ["EXTRA_OF", "install_hint", "missing_extra_error"]
