"""Leaderboard submissions: a folder of per-image scores whose every number is recomputed before it is listed.

A submission folder holds :data:`SUBMISSION_FILES`:

``scores.csv``
    the per-image scores, keyed: ``seg_id, file_name, <column>`` (the cells as given, one row per image);
``result.json``
    the file ``ts2 meta --out`` writes (:mod:`scorers.ts2.result_file`): the numbers, variant, SEGs, seed, package
    version and the sha256 of its inputs (``scores.csv`` and the release's ``metadata.csv``);
``metric.json``
    a short description (:data:`METRIC_KEYS`): the submission's name, the score column, the metric's name, paper and
    code URLs, licence, FLOPs per image (null when unknown) and the scorer configuration when the scores came from
    ``ts2 score`` (registry name, model, pinned revision, the scorer's own config);
``manifest.json``
    the sha256 of every other file.

:func:`write_submission` runs the checks of ``ts2 meta`` (the same
:func:`~scorers.ts2.meta_from_tables.meta_from_tables`) before anything is written, and writes the folder atomically
(a staging folder renamed into place).
:func:`verify_submission` never trusts a claim: it checks the files (each within its size cap,
:data:`MAX_FILE_BYTES`, before it is read), every sha256, the name and the metadata keys, the cost the result asks
for (:data:`MAX_N_BOOTSTRAP`, before any recomputation), recomputes every number from ``scores.csv`` and the pinned
release ``metadata.csv`` (the scores' coverage too: an incomplete submission is listed, never ranked), and, with ``rescore=N``,
rescores N images with the registered scorer the metadata names. It never raises for a bad submission: it returns a
:class:`SubmissionCheck` with ``ok=False`` and one line naming the first problem (the field, what is claimed, what
was recomputed).
"""
from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from scorers.errors import ParameterError
from scorers.stats.graph import SEG_IDS_MAX

__all__ = ["MAX_FILE_BYTES", "MAX_N_BOOTSTRAP", "MAX_NAME_LENGTH", "MAX_SCORES_BYTES", "METRIC_KEYS",
           "RESULT_REL_TOL", "SUBMISSION_FILES", "SUBMISSION_FORMAT", "SubmissionCheck", "check_cost",
           "check_name", "file_cap", "name_key", "scorer_config_of", "verify_submission", "write_submission"]

SCORES_FILE, RESULT_FILE, METRIC_FILE, MANIFEST_FILE = "scores.csv", "result.json", "metric.json", "manifest.json"
#: the files a submission folder holds, no more and no fewer
SUBMISSION_FILES = (SCORES_FILE, RESULT_FILE, METRIC_FILE, MANIFEST_FILE)
SUBMISSION_FORMAT = "ts2-evaluate submission/1"
#: the keys ``metric.json`` must have (a value may be null where unknown: ``flops_per_image``, ``scorer``...)
METRIC_KEYS = ("format", "name", "column", "metric", "paper_url", "code_url", "license", "flops_per_image", "scorer")
#: the largest ``scores.csv`` accepted: TS2 has 2,840 images, one score each (~0.1 MiB); 8 MiB leaves room for long
#: file names and full-precision cells and keeps a listing of many submissions cheap
MAX_SCORES_BYTES = 8 * 2**20
#: the largest file of each kind a submission may hold, checked before a file is read (locally as on the Hub, where a
#: file over its cap is not downloaded): ``result.json`` holds ~50 KiB on TS2's 164 SEGs (per-SEG values, intervals,
#: the table), ``metric.json`` a few short fields and the scorer's configuration, ``manifest.json`` three sha256
MAX_FILE_BYTES = {SCORES_FILE: MAX_SCORES_BYTES, RESULT_FILE: 2 * 2**20, METRIC_FILE: 64 * 2**10,
                  MANIFEST_FILE: 16 * 2**10}
#: the most bootstrap resamples a submission may ask its verification for (``result.json``'s ``n_bootstrap``): the
#: leaderboard recomputes every submission, and the cost grows with it (10,000 resamples of 164 SEGs take well under
#: a second and a few tens of MB; 1e6 took 9 s and 2.6 GB); above it a submission is refused before any work
MAX_N_BOOTSTRAP = 10_000
MAX_NAME_LENGTH = 64
#: a claimed number equals the recomputed one when within this relative tolerance (``result.json`` writes Python's
#: shortest round-trip floats, ~17 significant digits; 1e-9 absorbs summation-order differences between NumPy builds
#: and platforms, far below the 0.1-point precision of any printed table)
RESULT_REL_TOL = 1e-9
RESULT_ABS_TOL = 1e-12
#: fields of ``results.<column>`` that describe how the scores were read, not numbers (they name files)
_DESCRIPTIVE = ("pairing", "notes")


@dataclass(frozen=True)
class SubmissionCheck:
    """What :func:`verify_submission` found.

    ``name``: the submission's name (``metric.json``; the folder's name when that is unreadable); ``ok``: every check
    passed; ``reason``: None when ok, else one line naming the first problem; ``result`` / ``metadata``: the parsed
    ``result.json`` / ``metric.json`` (None when unreadable); ``variant``: the delta variant of the numbers;
    ``segs``: the evaluated SEGs as a range (``"0-163"``, the default set); ``verified_by``: the ts2-evaluate version
    that checked.
    ``rescored``: the images rescored (``seg_id:file_name``) with ``rescore=N``."""

    name: str
    ok: bool
    reason: str | None
    result: dict | None
    metadata: dict | None
    variant: str | None
    segs: str | None
    verified_by: str
    rescored: tuple[str, ...] = ()
    #: the recomputed :class:`scorers.stats.coverage.Coverage` of the scores (None when not recomputed): a
    #: submission that leaves images of its SEGs without a finite score is incomplete, and is not ranked
    coverage: Any = None
    #: :func:`scorers.stats.coverage.score_fingerprint` of the scores (None when not recomputed): the same scores
    #: under another name have the same one
    fingerprint: str | None = None


def check_name(name: object) -> str:
    """``name`` when it can name a submission folder (``submissions/NAME/`` on the Hub), else a ``ParameterError``.

    Allowed: letters, digits, ``.``, ``_``, ``-``, at most :data:`MAX_NAME_LENGTH` characters, not starting with ``.``.

    Raises:
        ParameterError: path characters (``/``, ``\\``, ``..``), control or other non-printing characters, spaces or
            other characters, an empty or over-long name; the message names ``name`` and the offending characters.

    Examples:
        >>> check_name("clip-vit-b16_v2")
        'clip-vit-b16_v2'
        >>> check_name("a/b")
        Traceback (most recent call last):
        ...
        scorers.errors.ParameterError: name='a/b' has path characters ('/'): use letters, digits, '.', '_', '-'
    """
    if not isinstance(name, str) or not name:
        raise ParameterError("{name} must be non-empty text")
    path_chars = [c for c in ("..", "/", "\\") if c in name]
    if path_chars:
        raise ParameterError("{name=!r} has path characters ({chars}): use letters, digits, '.', '_', '-'",
                             name=name, chars=", ".join(map(repr, path_chars)))
    controls = sorted({c for c in name if unicodedata.category(c)[0] in "CZ" and c != " "})
    if controls:
        raise ParameterError("{name=!r} has control characters ({chars}): use letters, digits, '.', '_', '-'",
                             name=name,
                             chars=", ".join(repr(c.encode("unicode_escape").decode("ascii")) for c in controls))
    other = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "._-"))})
    if other or name.startswith("."):
        raise ParameterError("{name=!r} may hold only letters, digits, '.', '_', '-' and not start with '.' "
                             "(found {chars})", name=name,
                             chars=", ".join(map(repr, other)) or "a leading '.'")
    if len(name) > MAX_NAME_LENGTH:
        raise ParameterError("{name} is {n} characters long; at most {limit}", n=len(name), limit=MAX_NAME_LENGTH)
    return name


def name_key(name: str) -> str:
    """What makes two submission names one name: Unicode-normalised (NFKC), case-folded, outer spaces dropped, and
    every run of ``-``, ``_``, ``.`` or spaces read as one ``-``.

    Examples:
        >>> name_key("clip-ref") == name_key("clip_ref") == name_key("CLIP.Ref") == name_key("clip__ref")
        True
    """
    import re

    return re.sub(r"[-_.\s]+", "-", unicodedata.normalize("NFKC", str(name)).casefold().strip())


def file_cap(name: str) -> int:
    """The most bytes file ``name`` of a submission may take (:data:`MAX_FILE_BYTES`; a file of another name, which
    no submission holds, the smallest cap)."""
    return MAX_FILE_BYTES.get(name, min(MAX_FILE_BYTES.values()))


def check_cost(n_bootstrap: object) -> None:
    """Refuse a number of bootstrap resamples above :data:`MAX_N_BOOTSTRAP` (what a submission's verification would
    cost): a ``ParameterError`` naming ``n_bootstrap``, the value and the cap."""
    if isinstance(n_bootstrap, int) and not isinstance(n_bootstrap, bool) and n_bootstrap > MAX_N_BOOTSTRAP:
        raise ParameterError("{n_bootstrap} is {value}; a submission may ask for at most {cap} bootstrap resamples "
                             "(its verification costs time and memory in proportion)", value=n_bootstrap,
                             cap=MAX_N_BOOTSTRAP)


def scorer_config_of(scores: str | os.PathLike) -> dict | None:
    """The scorer configuration ``ts2 score`` recorded next to ``scores`` (``<scores>.cache/fingerprint.json``) as
    ``metric.json``'s ``scorer``: ``{"registry": name or None, "model", "revision", "config"}``; None when there is
    none (scores from elsewhere)."""
    fingerprint = Path(f"{scores}.cache") / "fingerprint.json"
    if not fingerprint.is_file():
        return None
    config = json.loads(fingerprint.read_text(encoding="utf-8"))
    from scorers.scoring.registry import SCORER_INFO

    name = config.get("name") if isinstance(config, dict) else None
    return {"registry": name if name in SCORER_INFO else None, "model": config.get("model"),
            "revision": config.get("revision") or _pinned_revision(name, config.get("model")), "config": config}


def _pinned_revision(scorer: str | None, model: str | None) -> str | None:
    """The Hub commit ts2-evaluate pins for a scorer's default checkpoint (the scorer's config names the model, not
    the commit it loaded); None for any other model (a local folder, another Hub id: its config is all there is)."""
    from scorers.models.reward_checkpoints import (DEFAULT_HPSV3_MODEL, DEFAULT_HPSV3_REVISION,
                                                   DEFAULT_IMAGEREWARD_MODEL, DEFAULT_IMAGEREWARD_REVISION)

    pins = {("imagereward", DEFAULT_IMAGEREWARD_MODEL): DEFAULT_IMAGEREWARD_REVISION,
            ("hpsv3", DEFAULT_HPSV3_MODEL): DEFAULT_HPSV3_REVISION}
    if scorer == "pickscore":
        from scorers.metrics.reward_models import PICKSCORE_MODEL, PICKSCORE_REVISION

        pins[("pickscore", PICKSCORE_MODEL)] = PICKSCORE_REVISION
    return pins.get((scorer, model))


def _staged_scores(scores, column: str, out: Path) -> Path:
    """``scores`` (path or frame) reduced to ``seg_id, file_name, column`` (cells as given) at ``out``."""
    import pandas as pd

    if isinstance(scores, pd.DataFrame):
        frame = scores.astype(str)
    else:
        if not os.path.isfile(scores):
            raise FileNotFoundError(f"scores {scores}: no such file")
        frame = pd.read_csv(scores, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [k for k in ("seg_id", "file_name") if k not in frame.columns]
    if missing:
        raise ParameterError("{scores} must be keyed by seg_id,file_name (missing: {missing}); a submission is never "
                             "paired by row position", missing=", ".join(missing))
    if column not in frame.columns:
        from scorers.tables.columns import preview_names

        raise ParameterError("{column=!r} is not a column of the scores; available: {available}", column=column,
                             available=preview_names([c for c in frame.columns if c not in ("seg_id", "file_name")]))
    frame[["seg_id", "file_name", column]].to_csv(out, index=False)
    if out.stat().st_size > MAX_SCORES_BYTES:
        raise ParameterError("{scores}: the per-image scores take {size} bytes; a submission's scores.csv may take at "
                             "most {cap}", size=out.stat().st_size, cap=MAX_SCORES_BYTES)
    return out


def _meta_command(column: str, options, higher_is_better: bool) -> str:
    """The ``ts2 meta`` command that makes ``result.json`` again from inside the folder."""
    from scorers.stats.graph import format_seg_range

    segs = options.seg_subset
    segs = segs if isinstance(segs, str) or segs is None else format_seg_range(segs)
    argv = ["ts2", "meta", SCORES_FILE, "--column", column, "--variant", options.variant, "--segs", segs or "all",
            "--seed", str(options.seed), "--n-bootstrap", str(options.n_bootstrap)]
    if not higher_is_better:
        argv += ["--lower-is-better", column]
    if options.walks != "levels":
        argv += ["--walks", options.walks]
    return shlex.join(argv + ["--out", RESULT_FILE])


def _release_metadata(metadata):
    if metadata is not None:
        return metadata
    from scorers.tables.release_download import path

    return path("metadata.csv")


def _options(options):
    from scorers.ts2.options import MetaOptions

    return MetaOptions() if options is None else options


def write_submission(scores, *, column: str, name: str, out: str | os.PathLike, metadata=None,
                     info: Mapping[str, Any] | None = None, options=None) -> Path:
    """Write the submission folder ``out`` for score ``column`` of ``scores`` and return its path.

    ``scores``: a per-image scores CSV (or frame) keyed by ``seg_id, file_name``; ``metadata``: the TS2
    ``metadata.csv`` (default: the release's, :func:`scorers.tables.release_download.path`); ``info``: ``metric.json``'s
    description (``metric``, ``paper_url``, ``code_url``, ``license``, ``flops_per_image``, ``scorer``; unknown
    keys are refused; ``scorer`` defaults to what ``ts2 score`` recorded next to ``scores``); ``options``: a
    :class:`~scorers.ts2.options.MetaOptions` (SEGs, variant, seed, bootstrap, orientation).

    Every check of ``ts2 meta`` runs first (on the exact ``scores.csv`` that will be written); nothing is written
    when one fails. ``out`` must not exist or be an empty folder.

    Raises:
        ParameterError: a bad ``name`` (:func:`check_name`), an unknown ``info`` key, scores without keys, a missing
            ``column``, scores over :data:`MAX_SCORES_BYTES`, ``out`` not empty.
        ValueError, FileNotFoundError: what ``ts2 meta`` refuses (bad cells, unknown SEGs...), missing files.
    """
    from scorers import __version__
    from scorers.tables.release import sha256_file
    from scorers.ts2.meta_from_tables import meta_from_tables
    from scorers.ts2.result_file import save_result
    from scorers.ts2.result_text import meta_text

    check_name(name)
    info = dict(info or {})
    unknown = sorted(set(info) - set(METRIC_KEYS[3:]))
    if unknown:
        raise ParameterError("{info} has unknown key(s) {unknown}; known: {known}",
                             unknown=", ".join(map(repr, unknown)), known=", ".join(METRIC_KEYS[3:]))
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ParameterError("{out} {path} exists and is not an empty folder; choose a new one", path=str(out))
    options = _options(options)
    _check_options(options)
    metadata = _release_metadata(metadata)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp's folder is private (0700); the submission is an ordinary folder
    try:
        scores_file = _staged_scores(scores, column, staging / SCORES_FILE)
        segs = _segs_input(options, metadata)
        evaluated = meta_from_tables(str(scores_file), metadata, columns=[column], options=options)
        result = evaluated.results[column]
        scorer = info.pop("scorer", None)
        if scorer is None and not _is_frame(scores):
            scorer = scorer_config_of(scores)
        save_result(staging / RESULT_FILE, command=_meta_command(column, options, result.higher_is_better),
                    results=evaluated.to_dict(), table=meta_text(evaluated, options.variant),
                    segs=result.rank.seg_ids, seed=options.seed, n_bootstrap=options.n_bootstrap,
                    variant=options.variant, inputs={"scores": scores_file, "metadata": metadata, **segs},
                    scorer_config={"scores": scorer["config"]} if scorer else {},
                    recorded_paths={"scores": SCORES_FILE, "metadata": "metadata.csv (TS2 release)",
                                    "segs": "segs.json (beside metadata.csv)"})
        described = {"format": SUBMISSION_FORMAT, "name": name, "column": column, "metric": info.get("metric", column),
                     "paper_url": info.get("paper_url"), "code_url": info.get("code_url"),
                     "license": info.get("license"), "flops_per_image": info.get("flops_per_image"),
                     "scorer": scorer, "written_by": f"ts2-evaluate {__version__}"}
        problem = _described_problem(described)
        if problem is not None:
            from scorers.errors import mention

            raise ParameterError("{field} {problem}", field=mention(problem[0], described[problem[0]], quoted=True),
                                 problem=problem[1])
        (staging / METRIC_FILE).write_text(json.dumps(described, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        for file in (RESULT_FILE, METRIC_FILE):
            size = (staging / file).stat().st_size
            if size > file_cap(file):
                raise ParameterError("{file} would take {size} bytes; a submission's {file} may take at most {cap} "
                                     "(a long scorer configuration or text field?)", file=file, size=size,
                                     cap=file_cap(file))
        manifest = {"format": SUBMISSION_FORMAT,
                    "sha256": {f: sha256_file(staging / f) for f in SUBMISSION_FILES if f != MANIFEST_FILE}}
        (staging / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return out


def _segs_input(options, metadata) -> dict:
    """``{"segs": path}`` of the ``segs.json`` the edge walk rule follows (its sha256 is recorded), else ``{}``."""
    from scorers.tables.segs_file import find_segs_file

    found = find_segs_file(options.walks, metadata=metadata, segs_file=options.segs_file)
    return {} if found is None else {"segs": found}


def _check_options(options) -> None:
    """Refuse the options that ``result.json`` does not record (``--verify`` could not recompute with them)."""
    from scorers.ts2.options import MetaOptions

    default = MetaOptions()
    if options.clean_quotes:
        raise ParameterError("{clean_quotes=True}: a submission's scores are numbers as written; clean the cells first")
    if options.on is not None or options.lacking_keys_by_position:
        raise ParameterError("{on}: a submission is joined on seg_id, file_name, always")
    check_cost(options.n_bootstrap)
    if options.confidence != default.confidence:
        raise ParameterError("{confidence} must be {default} (the leaderboard's intervals), got {given}",
                             default=default.confidence, given=options.confidence)


def _is_frame(value) -> bool:
    return type(value).__name__ == "DataFrame"


# --- verification ------------------------------------------------------------------------------------------------


class _Rejected(Exception):
    """One problem of a submission (its one-line reason)."""


def _version() -> str:
    from scorers import __version__

    return __version__


def verify_submission(path: str | os.PathLike, *, metadata=None, rescore: int = 0, seed: int = 0,
                      data_dir: str | os.PathLike | None = None) -> SubmissionCheck:
    """Check the submission folder ``path`` and recompute every number it claims.

    In order, the first problem found is the ``reason``: the folder (missing or extra files), a file over its cap
    (:data:`MAX_FILE_BYTES`, measured before it is read), the manifest (its form, each file's sha256), ``metric.json`` (keys of
    :data:`METRIC_KEYS`, the name, :func:`check_name`), ``result.json`` (its fields, its table against its numbers,
    ``n_bootstrap`` over :data:`MAX_N_BOOTSTRAP`, the sha256 of its inputs: ``scores.csv`` and the release
    ``metadata.csv``), then every number under ``results`` (``coverage`` included)
    recomputed from ``scores.csv`` and ``metadata`` (default: the pinned release file,
    :func:`scorers.tables.release_download.path`) with the result's own options: equal within :data:`RESULT_REL_TOL`, else
    ``results.<column>.<path>: claimed X, recomputed Y``. With ``rescore=N`` and a registered scorer in
    ``metric.json``: N images drawn with ``seed`` are scored again (images from ``data_dir``, else the Hub dataset)
    and compared within the scorer's tolerance.

    Never raises for a bad submission (``ok=False``); an unavailable release metadata raises as
    :func:`scorers.tables.release_download.path` does (nothing could be verified).
    """
    folder = Path(path)
    state: dict[str, Any] = {"name": folder.name, "result": None, "metadata": None, "rescored": (),
                             "coverage": None, "fingerprint": None}
    metadata = _release_metadata(metadata)  # unavailable: raises (nothing can be verified), before any check
    try:
        _verify(folder, state, metadata, rescore, seed, data_dir)
        reason = None
    except _Rejected as problem:
        reason = str(problem)
    except Exception as error:  # noqa: BLE001 - a bad submission never raises: whatever broke is its reason
        text = str(error).strip().splitlines()
        reason = f"unreadable submission ({type(error).__name__}: {text[0] if text else ''})"
    result = state["result"]
    column_result = _column_result(result, state["metadata"])
    return SubmissionCheck(
        name=_one_line(state["name"]), ok=reason is None, reason=None if reason is None else _one_line(reason), result=result, metadata=state["metadata"],
        variant=result.get("variant") if isinstance(result, dict) else None,
        segs=column_result.get("segs") if isinstance(column_result, dict) else None,
        verified_by=_version(), rescored=tuple(state["rescored"]),
        coverage=state["coverage"] if reason is None else None,
        fingerprint=state["fingerprint"] if reason is None else None)


#: the longest reason (a listing shows one line per rejected submission)
MAX_REASON_LENGTH = 400


def _one_line(text: str) -> str:
    """``text`` with every control or non-printing character escaped (a submission's own text cannot move the
    cursor, recolour or reorder a terminal or break the line), cut to :data:`MAX_REASON_LENGTH` characters."""
    from scorers.formatting import escape_controls

    text = escape_controls(str(text))
    return text if len(text) <= MAX_REASON_LENGTH else text[:MAX_REASON_LENGTH - 3] + "..."


def _column_result(result, described) -> dict | None:
    if not isinstance(result, dict) or not isinstance(result.get("results"), dict):
        return None
    column = described.get("column") if isinstance(described, dict) else None
    found = result["results"].get(column) if column else next(iter(result["results"].values()), None)
    return found if isinstance(found, dict) else None


def _read_json(file: Path, field: str) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError) as error:
        raise _Rejected(f"{field}: not readable JSON ({type(error).__name__}: {str(error).splitlines()[0]})") from None


def _verify(folder: Path, state: dict, metadata, rescore: int, seed: int, data_dir) -> None:
    from scorers.tables.release import sha256_file

    if not folder.is_dir():
        raise _Rejected("not a submission folder")
    present = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    missing = [f for f in SUBMISSION_FILES if f not in present]
    if missing:
        raise _Rejected(f"missing file: {missing[0]}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    extra = [f for f in present if f not in SUBMISSION_FILES]
    if extra:
        raise _Rejected(f"extra file: {extra[0]!r}; a submission holds {', '.join(SUBMISSION_FILES)} only")
    not_files = [f for f in SUBMISSION_FILES if not (folder / f).is_file()]  # a link is read (the Hub cache's are)
    if not_files:
        raise _Rejected(f"{not_files[0]}: not a file")
    for name in SUBMISSION_FILES:  # before any file is read
        size = (folder / name).stat().st_size
        if size > file_cap(name):
            raise _Rejected(f"{name}: {size} bytes, over the cap of {file_cap(name)}")
    manifest = _read_json(folder / MANIFEST_FILE, MANIFEST_FILE)
    if not isinstance(manifest, dict) or manifest.get("format") != SUBMISSION_FORMAT:
        raise _Rejected(f"{MANIFEST_FILE}: field 'format' must be {SUBMISSION_FORMAT!r}")
    listed = manifest.get("sha256")
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise _Rejected(f"{MANIFEST_FILE}: field 'sha256' must map each file to its sha256")
    expected = [f for f in SUBMISSION_FILES if f != MANIFEST_FILE]
    for name in expected:
        if name not in listed:
            raise _Rejected(f"{MANIFEST_FILE}: sha256.{name} is missing")
    for name in listed:
        if name not in expected:
            raise _Rejected(f"{MANIFEST_FILE}: sha256.{name!r} names no file of a submission")
    for name in expected:
        got = sha256_file(folder / name)
        if got != listed[name]:
            raise _Rejected(f"sha256 mismatch: {name}: manifest {listed[name]}, file {got}")
    described = _read_json(folder / METRIC_FILE, METRIC_FILE)
    if not isinstance(described, dict):
        raise _Rejected(f"{METRIC_FILE}: must be a JSON object")
    absent = [k for k in METRIC_KEYS if k not in described]
    if absent:
        raise _Rejected(f"{METRIC_FILE}: missing key(s) {', '.join(absent)}")
    state["metadata"] = described
    try:
        state["name"] = check_name(described["name"])
    except ParameterError as error:
        state["name"] = str(described["name"]).encode("unicode_escape").decode("ascii") \
            if isinstance(described["name"], str) else folder.name
        raise _Rejected(f"{METRIC_FILE}: {error}") from None
    problem = _described_problem(described)
    if problem is not None:
        raise _Rejected(f"{METRIC_FILE}: {problem[0]} {problem[1]}")
    column = described["column"]
    _check_scores_header(folder / SCORES_FILE, column)
    result = _read_json(folder / RESULT_FILE, RESULT_FILE)
    from scorers.ts2.result_file import FORMAT, check_payload, check_table

    if not isinstance(result, dict) or result.get("format") != FORMAT:
        raise _Rejected(f"{RESULT_FILE}: not a saved ts2 result (no \"format\": \"{FORMAT}\")")
    state["result"] = result
    try:
        check_payload(result, RESULT_FILE)
    except ValueError as error:
        raise _Rejected(str(error)) from None
    try:  # what the recomputation would cost, before any of it
        check_cost(result["n_bootstrap"])
        if isinstance(result["segs"], list) and len(result["segs"]) > SEG_IDS_MAX:
            raise ParameterError("{segs} lists {n} SEG ids; at most {cap}", n=len(result["segs"]), cap=SEG_IDS_MAX)
    except ParameterError as error:
        raise _Rejected(f"{RESULT_FILE}: {error}") from None
    if list(result["results"]) != [column]:
        raise _Rejected(f"{RESULT_FILE}: results must hold column {column!r} only (metric.json), found "
                        f"{', '.join(map(repr, result['results']))}")
    _check_inputs(folder, result, metadata)
    evaluated = _recompute(folder, result, column, metadata)
    state["coverage"], state["fingerprint"] = evaluated.coverage[column], evaluated.fingerprints[column]
    try:  # after the numbers: a changed number is named by its field, not by the table line it shows in
        check_table(result, RESULT_FILE)
    except ValueError as error:
        raise _Rejected(str(error)) from None
    if rescore:
        state["rescored"] = _rescore(folder, described, column, rescore, seed, data_dir)


#: the text fields of ``metric.json`` (besides ``name``), shown by the leaderboard: at most this many characters
MAX_TEXT_LENGTH = 300


def _described_problem(described: dict) -> tuple[str, str] | None:
    """``(key, what is wrong)`` for the first bad field of ``metric.json`` (what the leaderboard shows must be plain
    text, links http(s)), else None."""
    if described["format"] != SUBMISSION_FORMAT:
        return "format", f"must be {SUBMISSION_FORMAT!r}"
    for key in ("column", "metric"):
        if not isinstance(described[key], str) or not described[key].strip():
            return key, "must be non-empty text"
    for key in ("column", "metric", "paper_url", "code_url", "license"):
        value = described[key]
        if value is None:
            continue
        if not isinstance(value, str):
            return key, "must be text or null"
        if len(value) > MAX_TEXT_LENGTH or any(not c.isprintable() for c in value):
            return key, f"must be printable text of at most {MAX_TEXT_LENGTH} characters"
        if key.endswith("_url") and not value.startswith(("https://", "http://")):
            return key, f"must be an http(s) URL, got {_shown(value)}"
    flops = described["flops_per_image"]
    if flops is not None and (isinstance(flops, bool) or not isinstance(flops, (int, float)) or not
                              math.isfinite(flops) or flops <= 0):
        return "flops_per_image", "must be a positive number or null"
    if described["scorer"] is not None and not isinstance(described["scorer"], dict):
        return "scorer", "must be an object or null"
    return None


def _check_scores_header(scores: Path, column: str) -> None:
    import csv

    with open(scores, newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    if header != ["seg_id", "file_name", column]:
        raise _Rejected(f"{SCORES_FILE}: columns must be seg_id, file_name, {column} (metric.json's column); found "
                        f"{', '.join(map(repr, header[:6]))}")


def _check_inputs(folder: Path, result: dict, metadata) -> None:
    from scorers.tables.release import sha256_file

    inputs = result["inputs"]
    for role in ("scores", "metadata"):
        if role not in inputs:
            raise _Rejected(f"{RESULT_FILE}: inputs.{role} is missing")
    got = sha256_file(folder / SCORES_FILE)
    if inputs["scores"]["sha256"] != got:
        raise _Rejected(f"inputs.scores.sha256: claimed {inputs['scores']['sha256']}, recomputed {got} "
                        f"({SCORES_FILE})")
    if "segs" in inputs:  # the edge walk rule: the segs.json beside the metadata
        from scorers.tables.segs_file import segs_file_beside

        beside = segs_file_beside(metadata)
        got = sha256_file(beside) if beside.is_file() else "(no such file)"
        if inputs["segs"]["sha256"] != got:
            raise _Rejected(f"inputs.segs.sha256: claimed {inputs['segs']['sha256']}, recomputed {got} ({beside})")
    release = sha256_file(metadata)
    if inputs["metadata"]["sha256"] != release:
        raise _Rejected(f"inputs.metadata.sha256: claimed {inputs['metadata']['sha256']}, recomputed {release} (the "
                        "numbers were computed on another metadata.csv than the release's)")


def _recompute(folder: Path, result: dict, column: str, metadata):
    from scorers.ts2.meta_from_tables import meta_from_tables
    from scorers.ts2.options import MetaOptions

    claimed = result["results"][column]
    if not isinstance(claimed, dict):
        raise _Rejected(f"results.{column}: must be an object")
    hib = claimed.get("higher_is_better", True)
    if not isinstance(hib, bool):
        raise _Rejected(f"results.{column}.higher_is_better: must be true or false")
    from scorers.stats.graph import WALK_RULES

    walks = claimed.get("walks", "levels")  # absent: TS2's level rule, as every result before the edge rule
    if walks not in WALK_RULES:
        raise _Rejected(f"results.{column}.walks: must be one of {', '.join(WALK_RULES)}, got {_shown(walks)}")
    options = MetaOptions(seg_subset=result["segs"], variant=result["variant"] or "paper",
                          n_bootstrap=result["n_bootstrap"] or 0, seed=result["seed"] or 0,
                          higher_is_better={column: hib}, walks=walks)
    try:
        evaluated = meta_from_tables(str(folder / SCORES_FILE), metadata, columns=[column], options=options)
    except (ValueError, KeyError, TypeError) as error:
        raise _Rejected(f"recomputing from {SCORES_FILE}: {str(error).splitlines()[0]}") from None
    recomputed = json.loads(json.dumps(evaluated.to_dict()[column]))
    first = _first_difference(claimed, recomputed, f"results.{column}")
    if first is not None:
        raise _Rejected(first)
    return evaluated


def _same(claimed, recomputed) -> bool:
    if isinstance(claimed, bool) or isinstance(recomputed, bool):
        return claimed is recomputed
    if isinstance(claimed, (int, float)) and isinstance(recomputed, (int, float)):
        return math.isclose(claimed, recomputed, rel_tol=RESULT_REL_TOL, abs_tol=RESULT_ABS_TOL)
    return claimed == recomputed


def _first_difference(claimed, recomputed, where: str) -> str | None:
    """``FIELD: claimed X, recomputed Y`` for the first difference (in the recomputed result's order), else None."""
    if isinstance(recomputed, dict):
        if not isinstance(claimed, dict):
            return f"{where}: claimed {_shown(claimed)}, recomputed an object"
        for key, value in recomputed.items():
            if where.count(".") == 1 and key in _DESCRIPTIVE:
                continue
            if key not in claimed:
                return f"{where}.{key}: claimed nothing, recomputed {_shown(value)}"
            found = _first_difference(claimed[key], value, f"{where}.{key}")
            if found:
                return found
        extra = [k for k in claimed if k not in recomputed]
        if extra:
            return f"{where}.{extra[0]}: claimed {_shown(claimed[extra[0]])}, recomputed nothing"
        return None
    if isinstance(recomputed, list):
        if not isinstance(claimed, list) or len(claimed) != len(recomputed):
            return f"{where}: claimed {_shown(claimed)}, recomputed {_shown(recomputed)}"
        for k, (a, b) in enumerate(zip(claimed, recomputed)):
            found = _first_difference(a, b, f"{where}[{k}]")
            if found:
                return found
        return None
    if _same(claimed, recomputed):
        return None
    return f"{where}: claimed {_shown(claimed)}, recomputed {_shown(recomputed)}"


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _rescore(folder: Path, described: dict, column: str, n: int, seed: int, data_dir) -> tuple[str, ...]:
    from scorers.ts2.submission.rescore import rescore_check

    try:
        return rescore_check(folder / SCORES_FILE, described, column, n, seed=seed, data_dir=data_dir)
    except ValueError as error:
        raise _Rejected(str(error).splitlines()[0]) from None
