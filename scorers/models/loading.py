"""Where a model is loaded from, and one clear error when it cannot be: shared by every model family.

``with model_source(name, option="model") as source: Model.from_pretrained(source)``

* a local folder (or file) is used as it is; a path-like name that does not exist (``./models/clp``, ``/x/y``,
  ``a/b/c``) fails at once: ``model='./models/clp': no such folder``;
* a Hub id (``owner/name``) is loaded by name while the Hub answers; when it does not (``HF_HUB_OFFLINE=1``, or no
  answer within :data:`PROBE_TIMEOUT_S` seconds) it is loaded from its cached snapshot, and when it is not cached the
  load fails in seconds instead of after a minute of retries;
* errors raised while loading (``OSError``, invalid ids) become one line naming the model, the cache looked in and the
  parameter that takes a local path (:class:`ModelLoadError`, a ``ValueError``: the CLI prints it, naming its flag
  instead, no traceback).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from typing import Iterator, Sequence

from scorers.errors import ParameterError, Wording, mention
from scorers.tables.release_download import PROBE_TIMEOUT_S, probe  # the one reachability probe

__all__ = ["ModelLoadError", "cached_file", "check_model_source", "hub_cache_dir", "hub_reachable",
           "model_source"]
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[\w.\-]+)?$")
_reachable: dict[str, bool] = {}


class ModelLoadError(ParameterError):
    """A model could not be found or loaded (the message says which, where it looked, and what to pass); it names
    the parameter that passes the model (``model='x': ...``)."""


def hub_cache_dir() -> str:
    """The Hugging Face Hub cache folder in use (``HF_HUB_CACHE``, ``HF_HOME/hub``...)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def hub_reachable() -> bool:
    """Whether the Hub endpoint answers: :func:`scorers.tables.release_download.probe` with ``answer=True`` (a connection and a
    first answer, each within :data:`PROBE_TIMEOUT_S` seconds), asked once per endpoint and remembered for the
    process."""
    from huggingface_hub import constants

    endpoint = constants.ENDPOINT
    if endpoint not in _reachable:
        _reachable[endpoint] = probe(endpoint, answer=True) is None
    return _reachable[endpoint]


def cached_file(repo_id: str, files: Sequence[str]) -> str | None:
    """The path of the first of ``files`` of ``repo_id`` that is in the Hub cache, else ``None``."""
    from huggingface_hub import try_to_load_from_cache

    for name in files:
        try:
            found = try_to_load_from_cache(repo_id, name)
        except Exception:  # an id the Hub would reject: not cached
            return None
        if isinstance(found, str):
            return found
    return None


def _cached_snapshot(repo_id: str, files: Sequence[str]) -> str | None:
    """The cached snapshot folder of ``repo_id`` when one of ``files`` is in the Hub cache, else ``None``."""
    found = cached_file(repo_id, files)
    return None if found is None else os.path.dirname(found)


def _looks_like_path(name: str) -> bool:
    return (name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") > 1 or "\\" in name
            or not _HUB_ID.match(name))


def _resolve(name: str, option: str, files: Sequence[str]) -> str:
    if os.path.exists(os.path.expanduser(name)):
        return os.path.expanduser(name)
    if _looks_like_path(name):
        raise ModelLoadError("{given}: no such folder (a local model folder, or a Hub id like owner/name)",
                             given=mention(option, name))
    from huggingface_hub import constants

    snapshot = _cached_snapshot(name, files)
    if constants.is_offline_mode():
        if snapshot is None:
            raise ModelLoadError("{given}: not a local folder and not in the Hugging Face cache ({cache}), and "
                                 "HF_HUB_OFFLINE=1 forbids downloading it; pass a local model folder with {path}",
                                 given=mention(option, name, quoted=True), cache=hub_cache_dir(), path=_path(option))
        return snapshot
    if hub_reachable():
        return name
    if snapshot is not None:
        return snapshot
    raise ModelLoadError("{given}: not a local folder and not in the Hugging Face cache ({cache}), and {endpoint} "
                         "did not answer within {timeout:g} s; pass a local model folder with {path} (or connect and "
                         "run once to cache it)", given=mention(option, name, quoted=True), cache=hub_cache_dir(),
                         endpoint=constants.ENDPOINT, timeout=PROBE_TIMEOUT_S, path=_path(option))


def _hub_cache_dir_cheap() -> str:
    """The Hub cache folder as huggingface_hub computes it (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
    ``XDG_CACHE_HOME/huggingface/hub``), read from the environment without importing huggingface_hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.path.expanduser(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface")
    return os.path.join(os.path.expanduser(home), "hub")


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def check_model_source(source: str | None, *, flag: str = "--model") -> None:
    """Refuse a model that cannot be found, cheaply (no torch, transformers or huggingface_hub import; no network),
    before a command starts anything heavy: one :class:`~scorers.errors.ParameterError` naming ``flag`` and the value.

    * ``None`` (the command's default model) and served models (``openai:MODEL``) are left to their loaders;
    * an existing local file or folder is accepted, also as open_clip's ``local-dir:PATH``;
    * a path-looking value (starts with ``/ . ~``, or holds a path separator beyond one ``owner/name`` slash, or is
      not a valid Hub id) that does not exist fails: ``--model '/nope': no such file or folder``;
    * a Hub id (``owner/name``, or ``hf-hub:owner/name``) is accepted; with ``HF_HUB_OFFLINE=1`` it must be in the
      local Hugging Face cache (a bare name such as ``gpt2`` or an open_clip architecture is left to its loader).

        >>> check_model_source("/nope/model", flag="--clip-model")
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: --clip-model '/nope/model': no such file or folder (a local model folder, or a Hub id like owner/name)
    """
    if source is None:
        return
    name = str(source)
    if name.startswith("openai:"):
        return
    if not name.strip():
        raise ParameterError("{flag} is empty: pass a local model folder or a Hub id like owner/name", flag=flag)
    if name.startswith("local-dir:"):  # open_clip's schema for a saved folder: only a path can follow
        if os.path.exists(os.path.expanduser(name[len("local-dir:"):])):
            return
        raise ParameterError("{flag} {name!r}: no such file or folder (a local model folder, or a Hub id like "
                             "owner/name)", flag=flag, name=name)
    if os.path.exists(os.path.expanduser(name)):
        return
    repo_id = name[len("hf-hub:"):] if name.startswith("hf-hub:") else name
    if name.startswith(("/", ".", "~")) or not _HUB_ID.match(repo_id) or "--" in repo_id or ".." in repo_id:
        raise ParameterError("{flag} {name!r}: no such file or folder (a local model folder, or a Hub id like "
                             "owner/name)", flag=flag, name=name)
    if "/" in repo_id and _hub_offline():
        cache = _hub_cache_dir_cheap()
        snapshots = os.path.join(cache, "models--" + repo_id.replace("/", "--"), "snapshots")
        if not (os.path.isdir(snapshots) and os.listdir(snapshots)):
            raise ParameterError("{flag} {name!r}: not a local folder and not in the Hugging Face cache ({cache}), "
                                 "and HF_HUB_OFFLINE=1 forbids downloading it; pass a local model folder with "
                                 "{flag} PATH", flag=flag, name=name, cache=cache)


def _path(option: str) -> Wording:
    """``option=PATH`` (``ts2``: ``--model PATH``)."""
    return Wording(f"{{{option}=PATH}}")


@contextmanager
def model_source(name: str, *, option: str = "model", files: Sequence[str] = ("config.json",),
                 resolve: bool = True, errors: tuple[type[BaseException], ...] = ()) -> Iterator[str]:
    """Yield where to load ``name`` from (see module docstring); loading errors inside the block become a
    :class:`ModelLoadError`. ``option`` is the parameter that passes another model (``model``, ``sbert``): the
    errors name it (``model='x': ...``, a :class:`~scorers.errors.ParameterError`: ``ts2`` names its flag instead);
    ``files`` are the checkpoint files that show a Hub repo is cached (``config.json``; ``modules.json`` for
    sentence-transformers; ``open_clip_config.json`` for open_clip). ``resolve=False`` yields ``name`` unchanged
    (names the loader resolves itself, e.g. an open_clip architecture + tag); ``errors`` adds exception types that
    mean "could not load" for that loader (open_clip raises ``RuntimeError`` for a missing tag or download)."""
    source = _resolve(str(name), option, files) if resolve else str(name)
    try:
        yield source
    except ModelLoadError:
        raise
    except (OSError, ValueError, *errors) as error:
        from huggingface_hub.errors import HFValidationError

        if isinstance(error, ValueError) and not isinstance(error, (HFValidationError, *errors)):
            raise  # a model that loaded but is unsupported, etc.: the library's own message is the clear one
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ModelLoadError("{given}: cannot load it ({first_line}); looked in {source!r} and the Hugging Face "
                             "cache {cache}; pass a local model folder with {path}",
                             given=mention(option, name, quoted=True), first_line=first_line, source=source,
                             cache=hub_cache_dir(), path=_path(option)) from None
