"""The ``ts2`` command called in process, as a test reads it."""
from __future__ import annotations


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """``ts2 ARGV...`` in this process (``scorers.cli.main``, each argument as ``str``): its exit code, stdout, stderr."""
    from scorers.cli import main

    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str) -> str:
    """The one line of an error output (fails the test when there is more or none)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
