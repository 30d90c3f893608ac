"""The official TS2 release files: where each one comes from (pinned), its sha256, and a verified local path.

The downloads are :mod:`scorers.tables.release_download`'s (the reachability probe, ``fetch``, and a release file's
local path by name, ``path`` / ``paths``), the one module that downloads release tables; this module holds what they
work from: the pinned files, their sha256, the cache locations, ``TS2_DATA``. Each file of the release has

* a **local name**, the relative path used everywhere else (``metadata.csv``, ``raw_answers/mplug_tifa.csv``...): the
  layout of a local copy (``TS2_DATA``, or ``ts2 release fetch --out DIR``), the test data's included;
* a **source URL at a pinned revision**: the Hub dataset ``saxon/T2IScoreScore`` at a commit, or a raw file of the
  official GitHub repository ``michaelsaxon/T2IScoreScore`` at a commit;
* its **sha256**, checked after every download and on every reuse, so a changed or damaged file is never used.

This is the one download path of the project: the TIFA160 human ratings (``scorers.sets.ratings``) and the TIFA v1.0
benchmark files (``scorers.tifa_bench.tifa_v1_files``) are :class:`PinnedFile` s fetched by
:func:`~scorers.tables.release_download.fetch` too. A non-Hub file whose digest was not known when it was pinned has
``sha256=None`` (*trust on first use*): its first download's digest is recorded beside the cached copy
(``<file>.sha256``) and logged with a warning saying it should be pinned, and every later read (and any re-download)
is checked against that record exactly as a pinned digest would be.

Where a file comes from, first hit wins (:func:`~scorers.tables.release_download.path`,
:func:`~scorers.tables.release_download.paths`):

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

Before a download, each host to be asked (or its proxy) is probed once
(:func:`~scorers.tables.release_download.probe`: it must accept a connection and answer within
:data:`~scorers.tables.release_download.PROBE_TIMEOUT_S` seconds); when it does not, the call fails at once with one
line naming the files, the endpoint tried and the fix (``$TS2_DATA``, or ``ts2 release fetch`` with network), instead
of half a minute of retries.

``$TS2_GITHUB_URL`` replaces ``https://raw.githubusercontent.com`` (a mirror, or a test server), as ``HF_ENDPOINT``
does for the Hub. :class:`PinnedFile` and :func:`~scorers.tables.release_download.fetch` are generic: any other pinned
table (e.g. TIFA160 ratings, TIFA v1.0 questions) is one ``PinnedFile`` away.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Iterable, Mapping

from scorers.errors import Wording

__all__ = [
    "ChecksumMismatch",
    "DATA_ENV",
    "GITHUB_ENV",
    "PinnedFile",
    "RELEASE_FILES",
    "ReleaseFileUnavailable",
    "cached_path",
    "default_cache_dir",
    "local_data_dir",
    "release_files",
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
CHUNK = 1 << 20  # bytes read or written at a time


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

#: The official TS2 release files by local name (the layout of a ``TS2_DATA`` folder; ``table2_full_precision.csv``
#: may sit beside the others there).
RELEASE_FILES: Mapping[str, PinnedFile] = MappingProxyType({f.filename: f for f in _FILES})


# --- small helpers -----------------------------------------------------------------------------------------------


def sha256_file(file: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(file, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.lru_cache(maxsize=256)
def _sha256_cached(file: str, size: int, mtime_ns: int) -> str:  # keyed by size + mtime: an edited file is re-hashed
    return sha256_file(file)


def _sha256_of(file: Path) -> str:
    stat = file.stat()
    return _sha256_cached(str(file), stat.st_size, stat.st_mtime_ns)


def is_offline() -> bool:
    """Whether the Hugging Face client's offline mode (``HF_HUB_OFFLINE=1``) is on: the default of ``offline``."""
    from huggingface_hub import constants

    return bool(constants.is_offline_mode())


def default_cache_dir() -> Path:
    """Where non-Hub downloads live: ``$HF_HOME/ts2-evaluate`` (Hub files stay in the hub cache)."""
    from huggingface_hub import constants

    return Path(constants.HF_HOME) / "ts2-evaluate"


def hub_parts(url: str) -> tuple[str, str, str, str] | None:
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


def cache_target(file: PinnedFile, cache_dir: str | os.PathLike | None) -> Path:
    """Where a non-Hub file is cached: ``<root>/<sha256>/<name>``, unpinned ones under ``<root>/unpinned/<key>/``."""
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if file.sha256 is None:  # unpinned: keyed by the pinned revision, or by the URL when it names none
        key = file.revision or hashlib.sha256(file.url.encode()).hexdigest()[:16]
        return root / "unpinned" / key / PurePosixPath(file.filename).name
    return root / file.sha256 / PurePosixPath(file.filename).name


def record_of(target: Path) -> Path:
    """Where the first download's digest of an unpinned file is recorded: ``<file>.sha256`` beside the copy."""
    return target.with_name(target.name + ".sha256")


def expected_sha256(file: PinnedFile, target: Path) -> str | None:
    """The digest ``file`` must have: the pinned one, else the recorded first download's, else None (none yet)."""
    if file.sha256 is not None:
        return file.sha256
    record = record_of(target)
    return record.read_text().strip() if record.is_file() else None


def cached_path(file: PinnedFile, cache_dir: str | os.PathLike | None = None) -> Path | None:
    """The cached copy of ``file`` if there is one (no request, no hashing), else None."""
    if file.url is None:
        return None
    hub = hub_parts(file.url)
    if hub is None:
        target = cache_target(file, cache_dir)
        return target if target.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    repo_type, repo_id, revision, filename = hub
    found = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir, revision=revision, repo_type=repo_type)
    return Path(found) if isinstance(found, str) else None


def checksum_mismatch(file: PinnedFile, got: str, where: str, expected: str | None = None) -> ChecksumMismatch:
    """The error for ``file`` whose bytes at ``where`` have sha256 ``got`` instead of the pinned (or recorded) one."""
    pinned = f"pinned {file.sha256}" if file.sha256 is not None else f"recorded {expected} (first download)"
    return ChecksumMismatch(
        f"{file.filename}: sha256 {got} of {where} does not match the {pinned}; the file was refused "
        "(the source changed or the transfer was damaged)"
    )


def offline_message(files: Iterable[PinnedFile], cache_dir=None) -> Wording:
    """What to do about ``files`` that offline mode cannot download: worded for the TS2 release files (a ``TS2_DATA``
    folder, ``ts2 release fetch``) when all of them are, else for pinned files in general."""
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


def release_files(names: Iterable[str] | None = None) -> list[PinnedFile]:
    """The pinned release files of ``names`` (default: all), in the order given; ``KeyError`` naming the known ones
    for an unknown name."""
    return [_release_file(name) for name in (RELEASE_FILES if names is None else names)]


def local_paths(files: list[PinnedFile], folder: Path, strict: bool) -> dict[str, Path]:
    """The paths of ``files`` in a local release ``folder``: all missing ones named in one error; a copy whose sha256
    differs from the pinned one is refused with ``strict``, else used with a warning (once per file version)."""
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
                raise checksum_mismatch(file, got, str(found[file.filename]))
            _warn_local_difference(str(found[file.filename]), got, file.sha256)
    return found


@functools.lru_cache(maxsize=None)
def _warn_local_difference(where: str, got: str, pinned: str) -> None:  # once per file version
    log.warning("%s differs from the official release file (sha256 %s..., pinned %s...): results computed from it "
                "may differ from the published ones", where, got[:12], pinned[:12])
