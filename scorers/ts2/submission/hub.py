"""Every Hub read and write of a leaderboard submission.

Write: ``ts2 submit DIR --push --repo OWNER/NAME``: a submission folder as a pull request on a Hub dataset repository,
under ``submissions/NAME/`` (``huggingface_hub.HfApi.create_commit(..., create_pr=True, repo_type="dataset")``).

Read: the leaderboard's submissions (``ts2 leaderboard --submissions``, the demo's tab) from a local folder or from a
Hub dataset at a pinned revision (``OWNER/NAME@REVISION``, read with :func:`huggingface_hub.snapshot_download`, the
sizes listed first so that an oversized file is never downloaded): :func:`fetch_submissions`. A Hub revision read
before can be read again offline (``HF_HUB_OFFLINE=1``), from the cache.

The token is ``huggingface_hub``'s own: ``HF_TOKEN`` (or the token ``hf auth login`` saved), read by the client and
never by this module; no message this module writes holds it (:func:`scorers.models.redaction.redact` with the
token's value, for errors the client raises). ``HF_ENDPOINT`` (read at each call) points it at another Hub.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from scorers.errors import ParameterError, mention

__all__ = ["PushedSubmission", "REPO_PATTERN", "SUBMISSIONS_FOLDER", "SubmissionsSource", "check_repo_id",
           "check_submissions_source", "fetch_submissions", "push_submission", "token_values"]

#: the folder of the leaderboard's Hub dataset (and of a local copy) that holds one folder per submission
#: (``ts2 submit --push`` writes ``submissions/NAME/``)
SUBMISSIONS_FOLDER = "submissions"
#: ``OWNER/NAME`` as the Hub spells repository ids
REPO_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}")
#: a Hub dataset id with an optional revision: ``OWNER/NAME`` or ``OWNER/NAME@REVISION`` (where to read submissions)
_REPO_AT_REVISION = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?")
#: the variables huggingface_hub reads a token from (to keep their values out of every message)
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


@dataclass(frozen=True)
class PushedSubmission:
    """The pull request: ``pr_url`` (its discussion page), ``pr_revision`` (``refs/pr/N``, for
    ``ts2 leaderboard --submissions OWNER/NAME@refs/pr/N``), ``commit`` (its commit sha) and the ``paths`` added."""

    repo: str
    pr_url: str | None
    pr_revision: str | None
    commit: str
    paths: tuple[str, ...]


def check_repo_id(repo: object) -> str:
    """``repo`` when it reads ``OWNER/NAME`` (letters, digits, ``._-``), else a ``ParameterError`` naming ``repo``.

    Examples:
        >>> check_repo_id("ts2-bench/leaderboard")
        'ts2-bench/leaderboard'
        >>> check_repo_id("leaderboard")
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: repo='leaderboard' is not OWNER/NAME (a Hub dataset repository id)
    """
    if not isinstance(repo, str) or not REPO_PATTERN.fullmatch(repo) or ".." in repo:
        raise ParameterError("{repo=!r} is not OWNER/NAME (a Hub dataset repository id)", repo=repo)
    return repo


def token_values() -> list[str]:
    """The token values the environment holds (to redact from messages; never printed)."""
    return [os.environ[n].strip() for n in TOKEN_VARIABLES if os.environ.get(n, "").strip()]


def push_submission(folder: str | os.PathLike, repo: str, *, name: str, files, endpoint: str | None = None,
                    revision: str | None = None) -> PushedSubmission:
    """Open a pull request on the dataset ``repo`` adding ``files`` of ``folder`` under ``submissions/<name>/``.

    The caller has verified the folder (``ts2 submit --push`` runs
    :func:`scorers.ts2.submission.folder.verify_submission` first). ``endpoint``: the Hub's URL (default
    ``$HF_ENDPOINT``, else huggingface.co); ``revision``: the branch the pull request targets (default ``main``).

    Raises:
        ParameterError: a bad ``repo``.
        ValueError: the Hub refused (no token, no write access, no such repository): one line, the token hidden.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    from scorers.models.redaction import redact

    check_repo_id(repo)
    folder = Path(folder)
    paths = tuple(f"{SUBMISSIONS_FOLDER}/{name}/{f}" for f in files)
    operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(folder / f)) for p, f in zip(paths, files)]
    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None)
    try:
        info = api.create_commit(repo, operations, commit_message=f"Submission {name}",
                                 commit_description=f"TS2 leaderboard submission `{name}` (ts2 submit --push): "
                                                    f"{', '.join(files)}. Verify with `ts2 submit --verify`.",
                                 repo_type="dataset", create_pr=True, revision=revision)
    except Exception as error:  # the client's HTTP and auth errors: one line, without the token
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(redact(f"--push to {repo}: {type(error).__name__}: {text}", token_values())) from None
    return PushedSubmission(repo=repo, pr_url=info.pr_url, pr_revision=info.pr_revision, commit=info.oid,
                            paths=paths)


# ----------------------------------------------------------------------------- reading: where the submissions are


@dataclass(frozen=True)
class SubmissionsSource:
    """Where the submissions were read: ``given`` (as the user wrote it), the local ``folder`` holding one folder
    per submission, and for a Hub dataset its ``repo``, the ``revision`` asked for, the ``commit`` it resolved to
    (the snapshot's own folder name) and the submissions ``refused`` before download (folder -> reason: a file over
    the size cap)."""

    given: str
    folder: Path
    repo: str | None = None
    revision: str | None = None
    commit: str | None = None
    refused: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        if self.repo is None:
            return f"folder {self.folder}"
        pinned = f"@{self.revision}" if self.revision else ""
        commit = f" (commit {self.commit})" if self.commit and self.commit != self.revision else ""
        return f"Hub dataset {self.repo}{pinned}{commit}"


def check_submissions_source(submissions: str | os.PathLike) -> tuple[Path | None, str | None, str | None]:
    """``(local folder, None, None)`` or ``(None, repo, revision)``: what ``submissions`` names, checked without a
    request (``ts2 demo --submissions`` is checked before the app starts).

    Raises:
        ParameterError: a file, or neither a folder nor ``OWNER/NAME[@REVISION]``.
    """
    given = str(submissions)
    path = Path(given).expanduser()
    if path.is_dir():
        return path, None, None
    if path.exists():
        raise ParameterError("{given}: a file, not a folder of submissions or a Hub dataset OWNER/NAME[@REVISION]",
                             given=mention("submissions", given))
    match = _REPO_AT_REVISION.fullmatch(given)
    if match is None:
        raise ParameterError("{given}: no such folder, and not a Hub dataset id OWNER/NAME[@REVISION]",
                             given=mention("submissions", given))
    return None, match["repo"], match["revision"]


def fetch_submissions(submissions: str | os.PathLike, *, cache_dir: str | os.PathLike | None = None
                      ) -> SubmissionsSource:
    """The submissions folder of ``submissions``: a local folder (used in place), else a Hub dataset
    ``OWNER/NAME[@REVISION]`` whose ``submissions/`` folder is downloaded with
    :func:`huggingface_hub.snapshot_download` at that revision (a commit sha pins it; a branch or tag is resolved and
    the commit stated; default ``main``) into ``cache_dir`` (default: the Hugging Face cache).

    Raises:
        ParameterError: ``submissions`` is neither a local folder nor a dataset id, or the dataset cannot be read
            (one line: the repo, the revision and why).
    """
    given = str(submissions)
    local, repo, revision = check_submissions_source(given)
    if local is not None:
        inner = local / SUBMISSIONS_FOLDER
        return SubmissionsSource(given=given, folder=inner if inner.is_dir() else local)
    from huggingface_hub import constants, snapshot_download

    record = _listing_record(repo, revision, cache_dir)
    try:
        if constants.HF_HUB_OFFLINE:  # the listing made when this revision was downloaded, and its snapshot
            listing = _read_listing(record)
        else:
            listing = _hub_listing(repo, revision)
        commit, patterns, refused = listing["commit"], listing["patterns"], listing["refused"]
        snapshot = snapshot_download(repo, repo_type="dataset", revision=commit, allow_patterns=patterns or
                                     [f"{SUBMISSIONS_FOLDER}/.none"],
                                     cache_dir=None if cache_dir is None else str(cache_dir))
        if not constants.HF_HUB_OFFLINE:
            from scorers.atomic import write_text_atomic

            record.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(record, json.dumps(listing))
    except Exception as error:  # the client's errors: offline, not found, revision not found, HTTP, OS
        raise ParameterError("{given}: no such local folder, and the Hub dataset could not be read ({why})",
                             given=mention("submissions", given), why=_hub_problem(error, repo, revision)) from None
    snapshot = Path(snapshot)
    return SubmissionsSource(given=given, folder=snapshot / SUBMISSIONS_FOLDER, repo=repo, revision=revision,
                             commit=snapshot.name, refused=refused)


def _listing_record(repo: str, revision: str | None, cache_dir) -> Path:
    """Where the listing of ``repo`` at ``revision`` is kept beside the Hugging Face cache, for offline reads."""
    from urllib.parse import quote

    from huggingface_hub import constants

    root = Path(cache_dir) if cache_dir is not None else Path(constants.HF_HUB_CACHE)
    return root / "ts2-leaderboard" / repo.replace("/", "--") / f"{quote(revision or 'main', safe='')}.json"


def _read_listing(record: Path) -> dict:
    from huggingface_hub.errors import OfflineModeIsEnabled

    try:
        return json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise OfflineModeIsEnabled("this revision was never listed here") from None


def _hub_listing(repo: str, revision: str | None) -> dict:
    """``{"commit", "patterns", "refused"}`` of the dataset's ``submissions/`` at ``revision``: the commit it
    resolves to (the download then reads that commit, whatever the branch does meanwhile), every file of a
    submission whose files are all within their cap (:func:`scorers.ts2.submission.folder.file_cap`, the caps the
    local verification applies), and for each other submission folder the reason it is refused, so that an
    oversized file is never downloaded."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import EntryNotFoundError

    from scorers.ts2.submission.folder import file_cap

    api = HfApi()
    commit = revision if revision and re.fullmatch(r"[0-9a-f]{40}", revision) else \
        api.repo_info(repo, repo_type="dataset", revision=revision).sha
    try:
        entries = list(api.list_repo_tree(repo, path_in_repo=SUBMISSIONS_FOLDER, recursive=True, revision=commit,
                                          repo_type="dataset"))
    except EntryNotFoundError:  # no submissions/ folder yet
        entries = []
    files: dict[str, list[tuple[str, int]]] = {}
    for entry in entries:
        size = getattr(entry, "size", None)
        if size is None:  # a folder
            continue
        inside = entry.path[len(SUBMISSIONS_FOLDER) + 1:]
        folder, _, rest = inside.partition("/")
        files.setdefault(folder, []).append((entry.path, int(size)))
    patterns, refused = [], {}
    for folder, listed in sorted(files.items()):
        big = [(path, size) for path, size in listed if size > file_cap(path.rpartition('/')[2])]
        if big:
            path, size = big[0]
            name = path.rpartition('/')[2]
            refused[folder] = f"{name}: {size} bytes on the Hub, over the cap of {file_cap(name)} (not downloaded)"
        else:
            patterns += [path for path, _ in listed]
    return {"commit": commit, "patterns": patterns, "refused": refused}


def _hub_problem(error: BaseException, repo: str, revision: str | None) -> str:
    """Why ``snapshot_download`` failed, in a few words: the client wraps the HTTP error in others."""
    chain, seen = [], error
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    names = {type(e).__name__ for e in chain}
    status = next((getattr(getattr(e, "response", None), "status_code", None) for e in chain
                   if getattr(getattr(e, "response", None), "status_code", None) is not None), None)
    url = next((str(getattr(getattr(e, "response", None), "url", "")) for e in chain
                if getattr(e, "response", None) is not None), "")
    if "RevisionNotFoundError" in names or (status == 404 and "/revision/" in url):
        return f"revision {revision or 'main'} not found in {repo}"
    if "RepositoryNotFoundError" in names or status in (401, 403, 404):
        return f"no dataset {repo} (a private or gated one needs HF_TOKEN)"
    from huggingface_hub import constants

    if any("Connect" in n or "Timeout" in n for n in names):
        endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
        return f"the Hub ({endpoint}) cannot be reached and this revision is not in the local cache"
    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set and this revision is not in the local cache"
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
