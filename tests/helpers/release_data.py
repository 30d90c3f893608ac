"""Where the tests find the TS2 release tables: the way the package does (``scorers.tables.release``), per file.

1. ``$TS2_DATA`` (a folder laid out like the release), else ``../shared/ts2`` beside the repository when it exists (the
   default for ``TS2_DATA`` only: a clone has no such folder). In that default folder only,
   ``table2_full_precision.csv`` may also sit in ``../shared/published/`` (this workplace keeps it there).
2. The user's release cache: the Hugging Face hub cache for Hub files, ``$HF_HOME/ts2-evaluate`` for the others (as
   ``ts2 release fetch`` fills them), each copy checked against its pinned sha256.
3. The pinned download into that cache (verified by sha256, exactly ``ts2 release fetch``), unless the user's
   environment is offline (``HF_HUB_OFFLINE=1``) or the host does not answer its one probe (3 s at most).

The environment read is the one the test run started with (:data:`USER_ENV`, captured when ``tests/conftest.py``
imports this module, before it points the Hugging Face caches at a private folder and removes ``TS2_DATA``): code
under test never sees the tests' ``TS2_DATA`` unless a test sets it itself.

When nothing provides a file, :func:`require` skips the test with one reason per file that names the fix
(:func:`skip_reason`); ``tests/plugins/skip_summary.py`` counts the skips per reason at the end of the run.
"""
from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

REPO = Path(__file__).resolve().parents[2]
#: the default for ``TS2_DATA`` when it exists (this workplace's read-only copy of the release)
DEFAULT_DATA = REPO.parent / "shared" / "ts2"
#: where this workplace keeps ``table2_full_precision.csv`` beside ``DEFAULT_DATA`` (used for the default folder only)
DEFAULT_PUBLISHED = DEFAULT_DATA.parent / "published"

#: the variable naming a local release folder (``scorers.tables.release.DATA_ENV``)
DATA_ENV = "TS2_DATA"
_ENV_NAMES = ("TS2_DATA", "HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE", "XDG_CACHE_HOME",
              "HF_ENDPOINT", "TS2_GITHUB_URL")
#: where the run's first process leaves :data:`USER_ENV` for the others (pytest-xdist's workers start from the
#: environment tests/conftest.py has already changed: without it they would lose the user's TS2_DATA and caches)
SAVED_ENV = "TS2_TESTS_USER_ENV"


def _user_env() -> dict[str, str | None]:
    import json

    saved = os.environ.get(SAVED_ENV)
    if saved is not None:
        return json.loads(saved)
    env = {name: os.environ.get(name) for name in _ENV_NAMES}
    os.environ[SAVED_ENV] = json.dumps(env)
    return env


#: the environment the test run started with (before tests/conftest.py changes it), in every process of the run
USER_ENV: Mapping[str, str | None] = _user_env()

#: the one command that fills the release cache
FETCH_HINT = "set TS2_DATA to a release folder or run `ts2 release fetch --all`"


@dataclass(frozen=True)
class Sources:
    """Where release files may come from, in order: a local release folder, the cache, the download."""

    data_dir: Path | None
    hub_cache: Path
    cache_dir: Path
    download: bool
    published: Path | None = None  # table2_full_precision.csv's other place (the default folder only)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def sources(env: Mapping[str, str | None] | None = None) -> Sources:
    """The sources that ``env`` (default :data:`USER_ENV`) names: ``TS2_DATA`` or the existing default, the caches
    under its ``HF_HOME`` (defaults as in ``huggingface_hub``), and whether downloading is allowed."""
    env = USER_ENV if env is None else env
    data_dir, published = None, None
    if env.get("TS2_DATA"):
        data_dir = Path(env["TS2_DATA"]).expanduser().resolve()
    elif DEFAULT_DATA.is_dir():
        data_dir, published = DEFAULT_DATA, DEFAULT_PUBLISHED
    xdg = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = Path(env.get("HF_HOME") or xdg / "huggingface").expanduser()
    hub = Path(env.get("HF_HUB_CACHE") or env.get("HUGGINGFACE_HUB_CACHE") or home / "hub").expanduser()
    return Sources(data_dir, hub, home / "ts2-evaluate", not _truthy(env.get("HF_HUB_OFFLINE")), published)


def _pinned(name: str):
    from scorers.tables.release import RELEASE_FILES

    if name not in RELEASE_FILES:
        raise KeyError(f"{name!r} is not a TS2 release file; known: {', '.join(RELEASE_FILES)}")
    return RELEASE_FILES[name]


def _cache_root(file, src: Sources) -> Path:
    from scorers.tables.release import HUB_URL

    return src.hub_cache if file.url.startswith(HUB_URL + "/") else src.cache_dir


@contextlib.contextmanager
def _hub_online(env: Mapping[str, str | None]):
    """Let ``hf_hub_download`` ask the Hub (tests/conftest.py makes the process offline for models) and use the
    endpoints of ``env``, for one download."""
    from huggingface_hub import constants

    saved = {key: os.environ.get(key) for key in ("HF_ENDPOINT", "TS2_GITHUB_URL")}
    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False
    for key in saved:  # the user's endpoints, not a test's stand-in server
        if env.get(key):
            os.environ[key] = env[key]
        else:
            os.environ.pop(key, None)
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = offline
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@functools.lru_cache(maxsize=None)
def _probe(origin: str) -> str | None:  # one probe per host and run
    from scorers.tables.release_download import probe

    return probe(origin)


def locate(name: str, src: Sources | None = None, env: Mapping[str, str | None] | None = None
           ) -> tuple[Path | None, str]:
    """``(path, where)`` of release file ``name``: where is ``"TS2_DATA"``, ``"cache"`` or ``"download"``, or
    ``(None, why)`` when no source has it. ``src`` defaults to :func:`sources` of ``env``."""
    from scorers.tables.release import ChecksumMismatch, ReleaseFileUnavailable, resolved_url
    from scorers.tables.release_download import fetch

    env = USER_ENV if env is None else env
    src = sources(env) if src is None else src
    file = _pinned(name)
    if src.data_dir is not None:
        for folder in (src.data_dir, src.published):
            if folder is not None and (folder / name).is_file():
                return folder / name, "TS2_DATA"
    if file.url is None:
        return None, "no public download"
    root = _cache_root(file, src)
    try:
        return fetch(file, cache_dir=root, progress=False, offline=True), "cache"
    except (ReleaseFileUnavailable, ChecksumMismatch):
        pass
    if not src.download:
        return None, "offline (HF_HUB_OFFLINE=1) and not cached"
    with _hub_online(env):
        from urllib.parse import urlsplit

        parts = urlsplit(resolved_url(file))
        reason = _probe(f"{parts.scheme}://{parts.netloc}")
        if reason is not None:
            return None, f"not cached and the download failed ({reason})"
        try:
            return fetch(file, cache_dir=root, progress=False, offline=False), "download"
        except (ReleaseFileUnavailable, ChecksumMismatch) as error:
            return None, f"not cached and the download failed ({str(error).splitlines()[0]})"


@functools.lru_cache(maxsize=None)
def find(name: str) -> Path | None:
    """Local path of release file ``name`` from the run's sources (TS2_DATA, cache, download), or None."""
    return locate(name)[0]


def skip_reason(name: str) -> str:
    """The one reason a test that needs release file ``name`` skips when no source has it."""
    if _pinned(name).url is None:
        return (f"release table {name} not found: set TS2_DATA to a release folder holding it "
                "(it has no public download)")
    return f"release table {name} not found: {FETCH_HINT}"


def require(name: str) -> Path:
    """Local path of release file ``name``; skips the calling test (one reason, naming the fix) when none has it."""
    found = find(name)
    if found is None:
        import pytest

        pytest.skip(skip_reason(name))
    return found


@functools.lru_cache(maxsize=None)
def release_dir() -> Path | None:
    """A folder laid out like the release holding every file this run can have (None when it cannot have
    ``metadata.csv``): the local release folder itself when it provides all of them, else a folder of links (made once
    per run) to each file where it was found."""
    from scorers.tables.release import RELEASE_FILES

    src = sources()
    found = {name: locate(name, src) for name in RELEASE_FILES}
    if found["metadata.csv"][0] is None:
        return None
    if src.data_dir is not None and all(where == "TS2_DATA" for path, where in found.values() if path is not None):
        return src.data_dir
    folder = Path(tempfile.mkdtemp(prefix="ts2-tests-release-")) / "ts2"
    for name, (path, _where) in found.items():
        if path is not None:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).symlink_to(path)
    return folder
