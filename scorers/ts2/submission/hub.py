"""``ts2 submit DIR --push --repo OWNER/NAME``: a submission folder as a pull request on a Hub dataset repository,
under ``submissions/NAME/`` (``huggingface_hub.HfApi.create_commit(..., create_pr=True, repo_type="dataset")``).

The token is ``huggingface_hub``'s own: ``HF_TOKEN`` (or the token ``hf auth login`` saved), read by the client and
never by this module; no message this module writes holds it (:func:`scorers.models.redaction.redact` with the
token's value, for errors the client raises). ``HF_ENDPOINT`` (read at each call) points it at another Hub.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from scorers.errors import ParameterError

__all__ = ["PushedSubmission", "REPO_PATTERN", "SUBMISSIONS_FOLDER", "check_repo_id", "push_submission",
           "token_values"]

#: where submissions live in the leaderboard's dataset repository
SUBMISSIONS_FOLDER = "submissions"
#: ``OWNER/NAME`` as the Hub spells repository ids
REPO_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}")
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

    The caller has verified the folder (``ts2 submit --push`` runs :func:`scorers.ts2.submission.verify_submission`
    first). ``endpoint``: the Hub's URL (default ``$HF_ENDPOINT``, else huggingface.co); ``revision``: the branch the
    pull request targets (default ``main``).

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
