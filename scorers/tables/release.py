"""The official TS2 release files: where each one comes from (pinned), its sha256, and a verified local path.

This is the one module that downloads release tables. Each file of the release has

* a **local name**, the relative path used everywhere else (``metadata.csv``, ``raw_answers/mplug_tifa.csv``...): the
  layout of a local copy (``TS2_DATA``) and of the test data in ``../shared/ts2``;
* a **source URL at a pinned revision**: the Hub dataset ``saxon/T2IScoreScore`` at a commit, or a raw file of the
  official GitHub repository ``michaelsaxon/T2IScoreScore`` at a commit;
* its **sha256**, checked after every download and on every reuse, so a changed or damaged file is never used.

This is the one download path of the project: the TIFA160 human ratings (``scorers.sets.ratings``) and the TIFA v1.0
benchmark files (``scorers.tifa_bench.tifa_v1_files``) are :class:`PinnedFile` s fetched by :func:`fetch` too. A non-Hub file
whose digest was not known when it was pinned has ``sha256=None`` (*trust on first use*): its first download's digest
is recorded beside the cached copy (``<file>.sha256``) and logged with a warning saying it should be pinned, and
every later read (and any re-download) is checked against that record exactly as a pinned digest would be.

Where a file comes from, first hit wins (:func:`path`, :func:`paths`):

1. ``data_dir=`` (the CLI's ``--data-dir``) or ``$TS2_DATA``: a local folder laid out like the release, same file
   names. Nothing is downloaded. A file whose sha256 differs from the pinned one is used with a warning (or refused
   with ``strict=True``): a local folder is an explicit choice (a patched copy, a test fixture), but results computed
   from it may differ from the official release, so the difference is always reported.
2. The cache: Hub files live in the Hugging Face hub cache (``hf_hub_download``, which honours ``HF_ENDPOINT``,
   ``HF_HOME`` and ``HF_HUB_OFFLINE``); other URLs are stored under ``$HF_HOME/ts2-evaluate/<sha256>/<name>``
   (unpinned ones under ``$HF_HOME/ts2-evaluate/unpinned/<revision or URL hash>/<name>``). A verified cached file is
   reused without any request.
3. A download (unless offline: ``fetch(offline=True)`` or, by default, ``HF_HUB_OFFLINE=1``): written to a temporary
   file next to its destination, hashed, and moved into place only when the sha256 matches; a mismatching download
   is deleted and reported (:class:`ChecksumMismatch`).

Before a download, each host to be asked (or its proxy) is probed once (:func:`probe`: it must accept a connection and
answer within :data:`PROBE_TIMEOUT_S` seconds); when it does not, the call fails at once with one line naming the
files, the endpoint tried and the fix (``$TS2_DATA``, or ``ts2 release fetch`` with network), instead of half a minute
of retries.

``$TS2_GITHUB_URL`` replaces ``https://raw.githubusercontent.com`` (a mirror, or a test server), as ``HF_ENDPOINT``
does for the Hub. :class:`PinnedFile` and :func:`fetch` are generic: any other pinned table (e.g. TIFA160 ratings,
TIFA v1.0 questions) is one ``PinnedFile`` away.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import logging
import os
import re
import socket
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Iterable, Mapping
from urllib.parse import urlsplit

from scorers.atomic import write_text_atomic
from scorers.errors import Wording

__all__ = [
    "ChecksumMismatch",
    "DATA_ENV",
    "GITHUB_ENV",
    "PROBE_TIMEOUT_S",
    "PinnedFile",
    "RELEASE_FILES",
    "ReleaseFileUnavailable",
    "cached_path",
    "default_cache_dir",
    "fetch",
    "local_data_dir",
    "path",
    "paths",
    "probe",
    "resolved_url",
    "sha256_file",
]

log = logging.getLogger(__name__)

#: Environment variable naming a local folder laid out like the release (same file names): nothing is downloaded.
DATA_ENV = "TS2_DATA"
#: Environment variable replacing ``https://raw.githubusercontent.com`` in GitHub source URLs (mirror, test server).
GITHUB_ENV = "TS2_GITHUB_URL"
GITHUB_RAW = "https://raw.githubusercontent.com"
HUB_URL = "https://huggingface.co"

HUB_REPO = "saxon/T2IScoreScore"
#: "final update" of the Hub dataset (metadata.csv + images/); the Hub repo holds no other release table.
HUB_REVISION = "f450d74c2341a1b7b71752c57e8185f2a264f613"
GITHUB_REPO = "michaelsaxon/T2IScoreScore"

_SHA256 = re.compile(r"[0-9a-f]{64}")
_HUB_RESOLVE = re.compile(
    r"^https://huggingface\.co/(?:(?P<type>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"
)
_CHUNK = 1 << 20


class ReleaseFileUnavailable(FileNotFoundError):
    """A file cannot be had here: offline and not cached, missing from a local copy, no public source, HTTP error."""


class ChecksumMismatch(ValueError):
    """A file's sha256 differs from the pinned one (a download is then deleted, never kept)."""


@dataclass(frozen=True)
class PinnedFile:
    """One downloadable file at a pinned revision.

    ``url``: where it comes from (a Hub ``.../resolve/<commit>/<path>`` URL is fetched with ``hf_hub_download``, any
    other URL with plain HTTP), or ``None`` when no public file has this content (``note`` says where it comes from).
    ``sha256``: hex digest of the exact bytes, or ``None`` for a non-Hub URL whose digest is not known yet (trust on
    first use: recorded at the first download, see the module docstring). ``filename``: local relative name
    (``raw_answers/mplug_tifa.csv``).
    ``revision``: the commit the URL pins (must appear in the URL).
    """

    url: str | None
    sha256: str | None
    filename: str
    revision: str | None = None
    note: str = ""

    def __post_init__(self) -> None:
        if self.sha256 is None:
            if self.url is None or _HUB_RESOLVE.match(self.url):
                raise ValueError(f"{self.filename}: sha256=None (trust on first use) is only allowed for a non-Hub "
                                 f"URL; pin the digest of {self.url or 'this file'}")
        elif not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"{self.filename}: sha256 must be 64 lowercase hex digits, got {self.sha256!r}")
        name = PurePosixPath(self.filename)
        if name.is_absolute() or ".." in name.parts or not name.parts:
            raise ValueError(f"filename must be a relative path inside the release, got {self.filename!r}")
        if self.url is None and not self.note:
            raise ValueError(f"{self.filename}: a file without a URL needs a note saying where it comes from")
        if self.url is not None and self.revision and f"/{self.revision}/" not in self.url:
            raise ValueError(f"{self.filename}: revision {self.revision} does not appear in its URL {self.url}")


def _github(path: str, commit: str, sha256: str, filename: str) -> PinnedFile:
    return PinnedFile(f"{GITHUB_RAW}/{GITHUB_REPO}/{commit}/{path}", sha256, filename, commit)


# Each GitHub path/commit below holds a file whose length and last bytes equal the release copy's
# (docs/judge-a-metric.md, "The TS2 release files", lists the evidence); the sha256 is of the release copy, so any other content is refused.
_FILES = (
    PinnedFile(f"{HUB_URL}/datasets/{HUB_REPO}/resolve/{HUB_REVISION}/metadata.csv",
               "cab9a658cbac13331ed6b8b3fc826ace54b47dc26d68a1be6c63068ca59758cf", "metadata.csv", HUB_REVISION),
    _github("data/TS2_TIFA_Q.csv", "9b74430a44e261e65dd3b7ee1b71aa25db0940be",
            "99a6ab6cb685e46d7a12e428609c0e490562649cc2a53d900ae743b77dfd08d7", "tifa_questions.csv"),
    _github("data/T2S_DSG_Q_dependency.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "039c675c91e7f087a21a0bb0d5d11f9eefcda9ebb6b4e05686b4716cafef3037", "dsg_questions.csv"),
    _github("output/scores_final_all_3.csv", "b77c0343762e8667d00dc5786d9ad50ebab6806c",
            "a33fd04f55584a22292f44d0c717f8106ea678ba16caf079ce534997d30e0c5c", "released_scores.csv"),
    _github("output/scores/clipscore_scores.csv", "054444cc06e58b8d19560c63e9549a769fc981df",
            "1467c061a3b4539507a51dd6bf489e0c7de2f469a23ef09d5500ab29f8839883", "clipscore_fullprecision.csv"),
    _github("output/raw_answers/DSG/blip1_dsg.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "23bb9b929c5754b3145db1fe236635c5157d2350d4a1da7d9c00131fcda41027", "raw_answers/blip1_dsg.csv"),
    _github("output/raw_answers/DSG/llava_dsg.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "26d23b3a74a06b2691443c55cf5e0cd7e3b550492181b1c67599e93312833fee", "raw_answers/llava_dsg.csv"),
    _github("output/raw_answers/DSG/mplug_dsg.csv", "16c019113e6e16d654b4f5f81bde8503bc299ff0",
            "d14fb6f7b413ab86828f5cb23515cec9af03a17cd2b961eddee5775b60bf73db", "raw_answers/mplug_dsg.csv"),
    _github("output/mahsa_csvs/blip1_tifa.csv", "13f1f9d487de57013c623118421e207f294295f0",
            "b5189a694467e7523f3f5142267086046252e056bb1e82760d916c78388f7cbe", "raw_answers/blip1_tifa.csv"),
    _github("output/output_csvs_correct/a_llava_tifa.csv_headline.csv", "236e131eb6b876c5feffbadc9230c393cdb946c4",
            "19c7616ed95f6a9407e324ef1bb0579e9b751d1d2575dd79b2f7b4941c32dfe2", "raw_answers/llava_tifa.csv"),
    _github("output/output_csvs_correct/a_mplug_tifa.csv_headline.csv", "7b5dfb5465427e0c0a48cc214fd17997c6a6d0d3",
            "5de03ce73530af6960315a14ef7b11ee0d5f5a3bc29ceb6280896a8a4d2047c8", "raw_answers/mplug_tifa.csv"),
    _github("output/score_per_question/DSG/blip1_dsg_mc.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "c5ec534748b73460f164e73a70a57a72b74d1f4bebe41e3a763b70dc9a8373ea", "per_question/blip1_dsg.csv"),
    _github("output/score_per_question/DSG/llava_dsg_mc.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "8aefea920f070f505416e115f0b26ea8e4a0078b59e04685f835708a985512f2", "per_question/llava_dsg.csv"),
    _github("output/score_per_question/DSG/mplug_dsg_mc.csv", "35632cd733ff0a003928090cc18a8f793a15a7c0",
            "50c2f4cdba3ef2061c8a04841df99903d79b8f73b1ab8d1f9ec08df9ce72960b", "per_question/mplug_dsg.csv"),
    _github("output/score_per_question/TIFA/blip1_tifa_mc.csv", "35632cd733ff0a003928090cc18a8f793a15a7c0",
            "837b869b0f0293ccb96e60d03a2638794194edd4a18e78c3010b1c49f14ad56e", "per_question/blip1_tifa.csv"),
    _github("output/score_per_question/TIFA/llava_tifa_mc.csv", "45f789a8315640318c44f324c6f157cbc4c31f06",
            "af0cf6df12411443a8fe78cb1fa030a41575fa9e7854b2bb330c737321166b68", "per_question/llava_tifa.csv"),
    _github("output/output_csvs_correct/a_mplug_tifa_mc.csv_headline_mc.csv", "8fb35f1d6729929d1a75f2a843f57d185d226b8f",
            "92c43f8193f752d4eb69670430d50ca4b67b39caddfce1de4190546fddd68130", "per_question/mplug_tifa.csv"),
    # The numbers of the paper's Table 2 at full precision: the official repository's source of its Pareto figures.
    # All 228 values (19 metrics x rank/sep/delta x Avg/Synth/Nat/Real) round to the printed Table 2
    # (docs/judge-a-metric.md, "The TS2 release files").
    PinnedFile(f"{GITHUB_RAW}/{GITHUB_REPO}/b77c0343762e8667d00dc5786d9ad50ebab6806c/src/output/pareto_information.csv",
               "0ba6f118a99014540695542bf710417fcc1e596dbe45ebab38bb9ae2a45286d8", "table2_full_precision.csv",
               "b77c0343762e8667d00dc5786d9ad50ebab6806c"),
    PinnedFile(None, "5b042131a4acf7ee86cfe2b7c6672a78e685a31255f0d94f1489cb583b46c9b5", "paper_table2.csv",
               note=Wording("the paper's Table 2 (arXiv:2404.04251) as printed, transcribed to CSV with names, "
                            "families and FLOPs; no public file has this content, so it is only read from "
                            "{data_dir}/$TS2_DATA (the same numbers at full precision download as "
                            "table2_full_precision.csv)")),
)

#: The official TS2 release files by local name (the layout of ``../shared/ts2`` and of a ``TS2_DATA`` folder).
RELEASE_FILES: Mapping[str, PinnedFile] = MappingProxyType({f.filename: f for f in _FILES})


# --- small helpers -----------------------------------------------------------------------------------------------


def sha256_file(file: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _sha256_cached(file: str, size: int, mtime_ns: int) -> str:  # keyed by size + mtime: an edited file is re-hashed
    return sha256_file(file)


def _sha256_of(file: Path) -> str:
    stat = file.stat()
    return _sha256_cached(str(file), stat.st_size, stat.st_mtime_ns)


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def default_cache_dir() -> Path:
    """Where non-Hub downloads live: ``$HF_HOME/ts2-evaluate`` (Hub files stay in the hub cache)."""
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "ts2-evaluate"


def _hub_parts(url: str) -> tuple[str, str, str, str] | None:
    """``(repo_type, repo_id, revision, path)`` of a Hub resolve URL, else None."""
    match = _HUB_RESOLVE.match(url)
    if not match:
        return None
    repo_type = {"datasets": "dataset", "spaces": "space", None: "model"}[match["type"]]
    return repo_type, match["repo"], match["rev"], match["path"]


def resolved_url(file: PinnedFile) -> str | None:
    """The URL a download would use now: ``$HF_ENDPOINT`` / ``$TS2_GITHUB_URL`` replace the public hosts."""
    if file.url is None:
        return None
    for env, host in (("HF_ENDPOINT", HUB_URL), (GITHUB_ENV, GITHUB_RAW)):
        base = os.environ.get(env)
        if base and file.url.startswith(host + "/"):
            return base.rstrip("/") + file.url[len(host):]
    return file.url


def _cache_target(file: PinnedFile, cache_dir: str | os.PathLike | None) -> Path:
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if file.sha256 is None:  # unpinned: keyed by the pinned revision, or by the URL when it names none
        key = file.revision or hashlib.sha256(file.url.encode()).hexdigest()[:16]
        return root / "unpinned" / key / PurePosixPath(file.filename).name
    return root / file.sha256 / PurePosixPath(file.filename).name


def _record_of(target: Path) -> Path:
    """Where the first download's digest of an unpinned file is recorded: ``<file>.sha256`` beside the copy."""
    return target.with_name(target.name + ".sha256")


def _expected_sha256(file: PinnedFile, target: Path) -> str | None:
    """The digest ``file`` must have: the pinned one, else the recorded first download's, else None (none yet)."""
    if file.sha256 is not None:
        return file.sha256
    record = _record_of(target)
    return record.read_text().strip() if record.is_file() else None


def cached_path(file: PinnedFile, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """The cached copy of ``file`` if there is one (no request, no hashing), else None."""
    if file.url is None:
        return None
    hub = _hub_parts(file.url)
    if hub is None:
        target = _cache_target(file, cache_dir)
        return target if target.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    repo_type, repo_id, revision, filename = hub
    found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision, repo_type=repo_type)
    return Path(found) if isinstance(found, str) else None


def _mismatch(file: PinnedFile, got: str, where: str, expected: str | None = None) -> ChecksumMismatch:
    pinned = f"pinned {file.sha256}" if file.sha256 is not None else f"recorded {expected} (first download)"
    return ChecksumMismatch(
        f"{file.filename}: sha256 {got} of {where} does not match the {pinned}; the file was refused "
        "(the source changed or the transfer was damaged)"
    )


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

    Raises :class:`ReleaseFileUnavailable` when it cannot be had (offline and not cached, HTTP error, no public URL)
    and :class:`ChecksumMismatch` when the downloaded bytes differ from the pinned sha256 (nothing is kept).
    ``cache_dir``: root for this file's cache (default: the hub cache for Hub URLs, ``$HF_HOME/ts2-evaluate`` else).
    ``offline``: True = cache only, never a request; None (default) = ``HF_HUB_OFFLINE``; False = may download
    (for a Hub file huggingface_hub itself still obeys ``HF_HUB_OFFLINE=1``).
    """
    if file.url is None:
        raise ReleaseFileUnavailable(Wording("{name}: no public download; {note}", name=file.filename, note=file.note))
    offline = _offline() if offline is None else bool(offline)
    if not offline and cached_path(file, cache_dir) is None:
        reason = probe(resolved_url(file))
        if reason is not None:
            raise ReleaseFileUnavailable(_unreachable_message([file], resolved_url(file), reason))
    if _hub_parts(file.url) is not None:
        return _fetch_hub(file, cache_dir, progress, offline)
    return _fetch_url(file, cache_dir, progress, offline)


def _fetch_hub(file: PinnedFile, cache_dir, progress: bool, offline: bool) -> Path:
    was_cached = cached_path(file, cache_dir) is not None
    if offline and not was_cached:
        raise ReleaseFileUnavailable(_offline_message([file]))
    local = _hub_download(file, cache_dir, progress, offline)
    got = sha256_file(local)
    if got != file.sha256 and was_cached and not offline:
        log.warning("%s: cached copy %s is damaged (sha256 differs); fetching it again", file.filename, local)
        _discard_hub_file(local)
        local = _hub_download(file, cache_dir, progress, offline)
        got = sha256_file(local)
    if got != file.sha256:
        _discard_hub_file(local)
        raise _mismatch(file, got, resolved_url(file))
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

    repo_type, repo_id, revision, filename = _hub_parts(file.url)
    bars_were_off = are_progress_bars_disabled()
    if not progress:
        disable_progress_bars()
    try:
        return Path(hf_hub_download(
            repo_id, filename, repo_type=repo_type, revision=revision, cache_dir=cache_dir,
            endpoint=os.environ.get("HF_ENDPOINT") or None, local_files_only=offline,
        ))
    except LocalEntryNotFoundError as error:
        if offline or _offline():
            raise ReleaseFileUnavailable(_offline_message([file])) from None
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
    target = _cache_target(file, cache_dir)
    expected = _expected_sha256(file, target)
    if target.is_file():
        if expected is not None and sha256_file(target) == expected:
            return target
        # damaged, or an unpinned copy without its record (not written by fetch: the record is written first)
        log.warning("%s: cached copy %s is damaged (sha256 differs%s); fetching it again", file.filename, target,
                    "" if expected is not None else ": no recorded digest")
        target.unlink()
    if offline:
        raise ReleaseFileUnavailable(_offline_message([file], cache_dir))
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
                        _record_of(target), got)
        elif got != expected:
            raise _mismatch(file, got, url, expected)
        os.replace(handle.name, target)  # atomic: a reader sees the whole verified file or none
    finally:
        Path(handle.name).unlink(missing_ok=True)
        if not target.exists():
            with contextlib.suppress(OSError):  # leave no empty folder behind a refused download
                target.parent.rmdir()
    return target


def _write_record(target: Path, digest: str) -> None:
    write_text_atomic(_record_of(target), digest + "\n")


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
                for chunk in iter(lambda: response.read(_CHUNK), b""):
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


def _offline_message(files: Iterable[PinnedFile], cache_dir=None) -> Wording:
    files = list(files)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if not all(RELEASE_FILES.get(f.filename) == f for f in files):  # e.g. TIFA160 ratings, TIFA v1.0 files
        lines = [Wording("{n} file(s) are not cached and offline mode ({offline=True} or HF_HUB_OFFLINE=1) forbids "
                         "downloading them:", n=len(files))]
        lines += [f"  {f.filename}  <-  {resolved_url(f)}" for f in files]
        lines.append(Wording("Run once with network access (without {offline=True}, HF_HUB_OFFLINE unset) to cache "
                             "them under {cache} and the Hugging Face hub cache, or pass a local copy of the file.",
                             cache=cache))
        return Wording.joined("\n", lines)
    lines = [f"{len(files)} TS2 release file(s) are not cached and HF_HUB_OFFLINE=1 forbids downloading them:"]
    for file in files:
        lines.append(Wording("  {name}  <-  {source}", name=file.filename,
                             source=resolved_url(file) or Wording("no public download: {note}", note=file.note)))
    lines.append(Wording(
        "Download them under those names (keeping subfolders) into one folder and set {env}=that folder (or pass "
        "{data_dir}), or run `ts2 release fetch --all` once with network access (cache: {cache} and the Hugging Face "
        "hub cache).", env=DATA_ENV, cache=cache,
    ))
    return Wording.joined("\n", lines)


# --- the release by name -----------------------------------------------------------------------------------------


def local_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """The local release folder in use: ``data_dir`` if given, else ``$TS2_DATA``, else None (download/cache)."""
    chosen = data_dir if data_dir is not None else os.environ.get(DATA_ENV) or None
    if chosen is None:
        return None
    folder = Path(chosen).expanduser().resolve()
    if not folder.is_dir():
        origin = "data_dir" if data_dir is not None else f"${DATA_ENV}"
        raise ReleaseFileUnavailable(f"{origin}={str(chosen)!r} is not a folder (it should hold the release tables, "
                                     f"e.g. metadata.csv, released_scores.csv)")
    return folder


def _release_file(name: str) -> PinnedFile:
    try:
        return RELEASE_FILES[name]
    except KeyError:
        raise KeyError(f"unknown TS2 release file {name!r}; known: {', '.join(RELEASE_FILES)}") from None


def path(name: str, data_dir: str | os.PathLike | None = None, *, strict: bool = False,
         progress: bool = True) -> Path:
    """Local path of one release file (see the module docstring for the order: data_dir/``$TS2_DATA``, cache, download)."""
    return paths([name], data_dir, strict=strict, progress=progress)[name]


def paths(names: Iterable[str] | None = None, data_dir: str | os.PathLike | None = None, *,
          strict: bool = False, progress: bool = True) -> dict[str, Path]:
    """Local paths of several release files (default: all), in the order given.

    Every problem is reported at once: all files missing from a local folder, or all files that offline mode cannot
    download, in one message. ``strict``: a local copy whose sha256 differs is an error instead of a warning.
    ``progress``: show download progress bars (on a terminal).
    """
    files = [_release_file(name) for name in (RELEASE_FILES if names is None else names)]
    folder = local_data_dir(data_dir)
    if folder is not None:
        return _local_paths(files, folder, strict)
    if _offline():
        missing = [f for f in files if f.url is None or cached_path(f) is None]
        if missing:
            raise ReleaseFileUnavailable(_offline_message(missing))
    else:
        _check_reachable(files)
    return {f.filename: fetch(f, progress=progress) for f in files}


def _local_paths(files: list[PinnedFile], folder: Path, strict: bool) -> dict[str, Path]:
    found = {f.filename: folder / f.filename for f in files}
    missing = [name for name, p in found.items() if not p.is_file()]
    if missing:
        raise ReleaseFileUnavailable(Wording(
            "{folder} has no {missing} (a local release copy uses the release's names: {names}); add them, or unset "
            "{env} / drop {data_dir} to download them", folder=folder, missing=", ".join(missing),
            names=", ".join(RELEASE_FILES), env=DATA_ENV,
        ))
    for file in files:
        if file.sha256 is None:  # nothing pinned to compare a local copy with
            continue
        got = _sha256_of(found[file.filename])
        if got != file.sha256:
            if strict:
                raise _mismatch(file, got, str(found[file.filename]))
            _warn_local_difference(str(found[file.filename]), got, file.sha256)
    return found


@functools.lru_cache(maxsize=None)
def _warn_local_difference(where: str, got: str, pinned: str) -> None:  # once per file version
    log.warning("%s differs from the official release file (sha256 %s..., pinned %s...): results computed from it "
                "may differ from the published ones", where, got[:12], pinned[:12])


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

    offline = _offline() if offline is None else bool(offline)
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
