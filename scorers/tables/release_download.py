"""Getting the pinned files of :mod:`scorers.tables.release` onto this machine: the one module that downloads release
tables. The reachability probe (:func:`probe`, also the model loads' first question), :func:`fetch` (one pinned file:
a verified cached copy, else one verified download), a release file's local path by name (:func:`path`,
:func:`paths`: ``data_dir`` / ``$TS2_DATA``, the cache, a download), and :func:`fetch_hub_unpinned` (a Hub file at a
commit whose digest could not be read). The order, the cache layout and trust on first use are described in
:mod:`scorers.tables.release`.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import socket
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit

from scorers.atomic import write_text_atomic
from scorers.errors import Wording
from scorers.tables.release import (CHUNK, DATA_ENV, HUB_URL, PinnedFile, ReleaseFileUnavailable, cache_target,
                                    cached_path, checksum_mismatch, default_cache_dir, expected_sha256, hub_parts,
                                    is_offline, local_data_dir, local_paths, offline_message, record_of, release_files,
                                    resolved_url, sha256_file)

__all__ = ["PROBE_TIMEOUT_S", "fetch", "fetch_hub_unpinned", "path", "paths", "probe"]

log = logging.getLogger(__name__)


#: seconds a host (or its proxy) may take to accept a connection and to answer before it counts as unreachable
PROBE_TIMEOUT_S = 3.0


def probe(url: str, *, answer: bool = False) -> str | None:
    """``None`` when the host of ``url`` (or the proxy set for it) accepts a TCP connection within
    :data:`PROBE_TIMEOUT_S` seconds, else why not, in a few words. The one reachability probe: release downloads
    (here) and model loads (:func:`scorers.models.loading.hub_reachable`) ask it first, so an unreachable host costs
    one timeout, not half a minute of retries.

    ``answer=False`` sends nothing (no request reaches the host: nothing is counted or logged). ``answer=True`` also
    waits, as long again at most, for the host's first byte: an ``https`` host's half of the TLS handshake (still no
    HTTP request), an ``http`` host's status line of a ``HEAD /``, a proxy's answer to ``CONNECT`` (or to the
    ``HEAD``); so a host that accepts connections but stays silent is unreachable too (model loads ask this: the Hub
    client would otherwise retry for a minute)."""
    parts = urlsplit(url)
    target = parts
    proxy = urllib.request.getproxies().get(parts.scheme)
    if proxy and not urllib.request.proxy_bypass(parts.hostname or ""):
        target = urlsplit(proxy if "://" in proxy else "http://" + proxy)
    host = target.hostname or ""
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as connection:
            if answer:
                _first_answer(connection, parts, via_proxy=target is not parts)
    except socket.gaierror:
        return f"cannot resolve {host} (no network or DNS?)"
    except ConnectionRefusedError:
        return f"{host}:{port} refused the connection"
    except TimeoutError:
        return f"{host}:{port} did not answer within {PROBE_TIMEOUT_S:g} s"
    except OSError as error:
        return f"{host}:{port}: {error.strerror or error}"
    return None


def _first_answer(connection: socket.socket, parts, *, via_proxy: bool) -> None:
    """Wait (the connection's timeout) for the first byte the server at the other end of ``connection`` sends."""
    import ssl

    if parts.scheme == "https" and not via_proxy:
        try:
            ssl.create_default_context().wrap_socket(connection, server_hostname=parts.hostname).close()
        except ssl.SSLError:  # it answered, in a way the download will word (a certificate problem...)
            pass
        return
    if parts.scheme == "https":
        request = f"CONNECT {parts.hostname}:{parts.port or 443} HTTP/1.1\r\nHost: {parts.hostname}\r\n\r\n"
    else:
        root = f"{parts.scheme}://{parts.netloc}/" if via_proxy else "/"  # the host's root: no file is asked for
        request = f"HEAD {root} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n\r\n"
    connection.sendall(request.encode("ascii", "replace"))
    if not connection.recv(1):
        raise ConnectionResetError(errno.ECONNRESET, "closed the connection without answering")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _unreachable_message(files: Iterable[PinnedFile], url: str, reason: str) -> Wording:
    """One line: which files, the endpoint tried and why it failed, and the fix."""
    return Wording("{names}: not cached, and the download from {origin} failed ({reason}). Fix: set {env} to a folder "
                   "holding the release files (or pass {data_dir}), or run `ts2 release fetch --all` once with network "
                   "access (cache: {cache} and the Hugging Face hub cache).",
                   names=", ".join(f.filename for f in files), origin=_origin(url), reason=reason, env=DATA_ENV,
                   cache=default_cache_dir())


def _check_reachable(files: list[PinnedFile]) -> None:
    """One probe per host that the not-yet-cached ``files`` would be downloaded from; raise on the first that fails."""
    by_origin: dict[str, list[PinnedFile]] = {}
    for file in files:
        if file.url is not None and cached_path(file) is None:
            by_origin.setdefault(_origin(resolved_url(file)), []).append(file)
    for origin, group in by_origin.items():
        reason = probe(origin)
        if reason is not None:
            raise ReleaseFileUnavailable(_unreachable_message(group, resolved_url(group[0]), reason))


# --- fetching one pinned file ------------------------------------------------------------------------------------


def fetch(file: PinnedFile, *, cache_dir: str | os.PathLike | None = None, progress: bool = True,
          offline: bool | None = None) -> Path:
    """Local path of ``file``: a verified cached copy (no request), else downloaded once, verified and cached.

    Raises :class:`~scorers.tables.release.ReleaseFileUnavailable` when it cannot be had (offline and not cached, HTTP
    error, no public URL) and :class:`~scorers.tables.release.ChecksumMismatch` when the downloaded bytes differ from
    the pinned sha256 (nothing is kept).
    ``cache_dir``: root for this file's cache (default: the hub cache for Hub URLs, ``$HF_HOME/ts2-evaluate`` else).
    ``offline``: True = cache only, never a request; None (default) = ``HF_HUB_OFFLINE``; False = may download
    (for a Hub file huggingface_hub itself still obeys ``HF_HUB_OFFLINE=1``).
    """
    if file.url is None:
        raise ReleaseFileUnavailable(Wording("{name}: no public download; {note}", name=file.filename, note=file.note))
    offline = is_offline() if offline is None else bool(offline)
    if not offline and cached_path(file, cache_dir) is None:
        reason = probe(resolved_url(file))
        if reason is not None:
            raise ReleaseFileUnavailable(_unreachable_message([file], resolved_url(file), reason))
    if hub_parts(file.url) is not None:
        return _fetch_hub(file, cache_dir, progress, offline)
    return _fetch_url(file, cache_dir, progress, offline)


def _fetch_hub(file: PinnedFile, cache_dir, progress: bool, offline: bool) -> Path:
    was_cached = cached_path(file, cache_dir) is not None
    if offline and not was_cached:
        raise ReleaseFileUnavailable(offline_message([file]))
    local = _hub_download(file, cache_dir, progress, offline)
    got = sha256_file(local)
    if got != file.sha256 and was_cached and not offline:
        log.warning("%s: cached copy %s is damaged (sha256 differs); fetching it again", file.filename, local)
        _discard_hub_file(local)
        local = _hub_download(file, cache_dir, progress, offline)
        got = sha256_file(local)
    if got != file.sha256:
        _discard_hub_file(local)
        raise checksum_mismatch(file, got, resolved_url(file))
    return local


def _discard_hub_file(local: Path) -> None:
    blob = local.resolve()
    for stale in {local, blob}:  # the snapshot pointer and its blob: a refused file is not kept
        stale.unlink(missing_ok=True)


def _hub_download(file: PinnedFile, cache_dir, progress: bool, offline: bool) -> Path:
    """``hf_hub_download`` of a Hub resolve URL (honours HF_ENDPOINT, HF_HOME, HF_HUB_OFFLINE); errors in one line."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.utils import (LocalEntryNotFoundError, are_progress_bars_disabled, disable_progress_bars,
                                       enable_progress_bars)

    repo_type, repo_id, revision, filename = hub_parts(file.url)
    bars_were_off = are_progress_bars_disabled()
    if not progress:
        disable_progress_bars()
    try:
        return Path(hf_hub_download(
            repo_id, filename, repo_type=repo_type, revision=revision, cache_dir=cache_dir,
            endpoint=os.environ.get("HF_ENDPOINT") or None, local_files_only=offline,
        ))
    except LocalEntryNotFoundError as error:
        if offline or is_offline():
            raise ReleaseFileUnavailable(offline_message([file])) from None
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ReleaseFileUnavailable(_unreachable_message([file], resolved_url(file), reason)) from None
    except Exception as error:  # HTTP errors, missing repo/revision/file: all mean "not available from here"
        raise ReleaseFileUnavailable(
            f"{file.filename}: could not download {resolved_url(file)} ({type(error).__name__}: {error})"
        ) from None
    finally:
        if not progress and not bars_were_off:
            enable_progress_bars()


def _fetch_url(file: PinnedFile, cache_dir, progress: bool, offline: bool) -> Path:
    target = cache_target(file, cache_dir)
    expected = expected_sha256(file, target)
    if target.is_file():
        if expected is not None and sha256_file(target) == expected:
            return target
        # damaged, or an unpinned copy without its record (not written by fetch: the record is written first)
        log.warning("%s: cached copy %s is damaged (sha256 differs%s); fetching it again", file.filename, target,
                    "" if expected is not None else ": no recorded digest")
        target.unlink()
    if offline:
        raise ReleaseFileUnavailable(offline_message([file], cache_dir))
    url = resolved_url(file)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=".part-", delete=False)
    try:
        with handle:
            got = _download(url, handle, file.filename, progress)
        if expected is None:  # trust on first use: record the digest (before the file: no copy without a record)
            _write_record(target, got)
            log.warning("%s: no pinned sha256; the first download from %s has sha256 %s, recorded in %s and checked "
                        "on every later read; pin it (PinnedFile.sha256=%r)", file.filename, url, got,
                        record_of(target), got)
        elif got != expected:
            raise checksum_mismatch(file, got, url, expected)
        os.replace(handle.name, target)  # atomic: a reader sees the whole verified file or none
    finally:
        Path(handle.name).unlink(missing_ok=True)
        if not target.exists():
            with contextlib.suppress(OSError):  # leave no empty folder behind a refused download
                target.parent.rmdir()
    return target


def _write_record(target: Path, digest: str) -> None:
    write_text_atomic(record_of(target), digest + "\n")


def _download(url: str, out, name: str, progress: bool) -> str:
    """Stream ``url`` into the open binary file ``out``; returns the sha256 of what was written."""
    from tqdm.auto import tqdm

    request = urllib.request.Request(url, headers={"User-Agent": "ts2-evaluate"})
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=name, disable=not progress or None,
                      leave=False) as bar:
                for chunk in iter(lambda: response.read(CHUNK), b""):
                    digest.update(chunk)
                    out.write(chunk)
                    bar.update(len(chunk))
    except urllib.error.HTTPError as error:
        raise ReleaseFileUnavailable(f"{name}: could not download {url}: HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ReleaseFileUnavailable(Wording(
            "{name}: could not download {url}: {reason}. Fix: set {env} to a folder holding it (or pass {data_dir}), "
            "or run `ts2 release fetch` again with network access.", name=name, url=url, reason=reason, env=DATA_ENV,
        )) from None
    return digest.hexdigest()


# --- the release by name -----------------------------------------------------------------------------------------


def path(name: str, data_dir: str | os.PathLike | None = None, *, strict: bool = False,
         progress: bool = True) -> Path:
    """Local path of one release file (see :mod:`scorers.tables.release` for the order: data_dir/``$TS2_DATA``, cache,
    download)."""
    return paths([name], data_dir, strict=strict, progress=progress)[name]


def paths(names: Iterable[str] | None = None, data_dir: str | os.PathLike | None = None, *,
          strict: bool = False, progress: bool = True) -> dict[str, Path]:
    """Local paths of several release files (default: all), in the order given.

    Every problem is reported at once: all files missing from a local folder, or all files that offline mode cannot
    download, in one message. ``strict``: a local copy whose sha256 differs is an error instead of a warning.
    ``progress``: show download progress bars (on a terminal).
    """
    files = release_files(names)
    folder = local_data_dir(data_dir)
    if folder is not None:
        return local_paths(files, folder, strict)
    if is_offline():
        missing = [f for f in files if f.url is None or cached_path(f) is None]
        if missing:
            raise ReleaseFileUnavailable(offline_message(missing))
    else:
        _check_reachable(files)
    return {f.filename: fetch(f, progress=progress) for f in files}


# --- Hub files whose sha256 could not be read --------------------------------------------------------------------


def fetch_hub_unpinned(repo_id: str, filename: str, revision: str, *, repo_type: str = "dataset",
                       cache_dir: str | os.PathLike | None = None, offline: bool | None = None,
                       progress: bool = False) -> Path:
    """A Hub file at a full commit hash whose sha256 is not known (a human-judgment set whose Git LFS digest could
    not be read; ``scorers.sets``): downloaded once by ``hf_hub_download`` at ``revision`` (honours ``HF_ENDPOINT``,
    ``HF_HOME``; ``offline`` = cache only, default ``HF_HUB_OFFLINE``). No digest is checked: callers report the
    digest of what they read. A file with a known digest is a :class:`PinnedFile` for :func:`fetch` instead."""
    if not re.fullmatch(r"[0-9a-f]{40}", revision):
        raise ValueError(f"{repo_id}/{filename}: revision must be a full commit hash, got {revision!r}")
    from huggingface_hub import hf_hub_download

    offline = is_offline() if offline is None else bool(offline)
    prefix = {"dataset": "datasets/", "space": "spaces/", "model": ""}[repo_type]
    url = resolved_url(PinnedFile(f"{HUB_URL}/{prefix}{repo_id}/resolve/{revision}/{filename}", "0" * 64,
                                  filename, revision))
    name = f"{repo_id}/{filename}@{revision[:7]}"
    try:
        return Path(hf_hub_download(repo_id, filename, repo_type=repo_type, revision=revision, cache_dir=cache_dir,
                                    endpoint=os.environ.get("HF_ENDPOINT") or None, local_files_only=offline))
    except Exception as error:  # offline and not cached, HTTP errors, gated repos: all mean "not available here"
        if offline:
            raise ReleaseFileUnavailable(Wording("{name}: not cached, and offline mode ({offline=True} or "
                                                 "HF_HUB_OFFLINE=1) forbids downloading it; run once with network "
                                                 "access", name=name)) from None
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ReleaseFileUnavailable(f"{name}: could not download {url} ({type(error).__name__}: {first})") from None
