"""The ``ts2`` and ``ts2-evaluate`` console scripts' entry (one entry, two names: the upstream T2IScoreScore package
also installs a ``ts2``): make sure ``import scorers`` finds this package, then run ``scorers.cli``.

The distribution is ``ts2-evaluate``; its import name is ``scorers``. A local file ``scorers.py`` (or a folder
``scorers`` without this package's modules) earlier on ``sys.path`` would shadow it and fail later with an obscure
``'scorers' is not a package``; :func:`check_scorers` says so plainly instead.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


class ShadowedPackage(ImportError):
    """``import scorers`` would not import the ts2-evaluate package."""


def check_scorers() -> None:
    """Raise :class:`ShadowedPackage` naming the file when ``scorers`` resolves to something other than this package."""
    spec = importlib.util.find_spec("scorers")
    if spec is None:
        raise ShadowedPackage("the `scorers` package (import name of ts2-evaluate) is not installed: "
                              "pip install ts2-evaluate")
    locations = list(spec.submodule_search_locations or [])
    if not locations or not any((Path(d) / "cli" / "__init__.py").is_file() for d in locations):
        where = Path(locations[0]) if locations else Path(spec.origin or "scorers.py")
        kind = "folder" if locations else "file"
        raise ShadowedPackage(f"a {kind} {where.name} in {where.parent} shadows the ts2-evaluate package "
                              f"(import name `scorers`); rename it")


COMMANDS = ("ts2", "ts2-evaluate")


def command_name() -> str:
    """The name this entry was started under (``ts2-evaluate`` or ``ts2``; ``ts2`` for ``python -m`` and the like)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name in COMMANDS else "ts2"


def main(argv: list[str] | None = None) -> int:
    try:
        check_scorers()
    except ShadowedPackage as err:
        print(f"{command_name()}: error: {err}", file=sys.stderr)
        return 2
    try:
        from scorers.cli import main as cli_main  # Ctrl+C later is scorers.cli.main's: one line, exit status 130
    except KeyboardInterrupt:
        given = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
        print(f"ts2{' ' + given[0] if given else ''}: interrupted", file=sys.stderr)
        return 130
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
