"""Tests that need a release file say so before they run (a plugin; tests/conftest.py registers it).

A test that uses the ``shared_ts2`` fixture (the release folder) is marked ``release_files(NAME, ...)`` with every
release file its code names (a string constant that is the file's name or ends with ``/NAME``: ``shared_ts2 /
"paper_table2.csv"``), read as the quick tier reads code (tests/plugins/code_reading.py); a test may also carry the
marker by hand. Before its fixtures are set up, a marked test whose files no source of this run has (``$TS2_DATA``,
the cache, the pinned download: tests/helpers/release_data.py) is skipped with the file's one reason. A test that
fails is a failure: nothing here reads a test's outcome."""
from __future__ import annotations

import pytest

from tests.helpers import release_data
from tests.plugins.code_reading import item_code, reachable_facts


def named_release_files(roots) -> set[str]:
    """The release files (``scorers.tables.release.RELEASE_FILES``) that the code of ``roots`` names."""
    from scorers.tables.release import RELEASE_FILES

    named = set()
    for _names, strings in reachable_facts(roots):
        for text in strings:
            named.update(name for name in RELEASE_FILES if text == name or text.endswith("/" + name))
    return named


def pytest_collection_modifyitems(config, items):
    """Mark ``release_files`` the tests on the release folder with the files their code names."""
    for item in items:
        if "shared_ts2" not in getattr(item, "fixturenames", ()):
            continue
        named = named_release_files(item_code(item)) - {"metadata.csv"}  # shared_ts2 itself needs metadata.csv
        if named:
            item.add_marker(pytest.mark.release_files(*sorted(named)))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Skip, before any fixture runs, a test that needs a release file this run cannot have (the reason names it)."""
    needed = [name for marker in item.iter_markers("release_files") for name in marker.args]
    if "shared_ts2" in getattr(item, "fixturenames", ()):
        needed.insert(0, "metadata.csv")
    for name in dict.fromkeys(needed):
        if release_data.find(name) is None:
            pytest.skip(release_data.skip_reason(name))
