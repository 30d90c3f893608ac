"""T2IScoreScore (TS2): semantic error graphs (SEGs) of text-to-image outputs, with their TIFA and DSG questions.

A standalone Hugging Face ``datasets`` builder (needs only ``datasets``, its Pillow, ``huggingface_hub`` and the
standard library) with three configs:

* ``segs`` (default): one row per image -- ``seg_id``, ``prompt``, ``image``, ``file_name``, ``node``,
  ``error_count``, ``partition`` (synth/nat/real), ``image_source``, ``is_head``.
* ``tifa_questions``: ``seg_id``, ``prompt``, ``question_id``, ``question``, ``choices``, ``answer``, ``is_yes_no``.
* ``dsg_questions``: as ``tifa_questions`` plus ``parents`` (question ids this question depends on).

Sources: a local ``data_dir`` laid out like the Hub dataset (``metadata.csv``, ``images/``, ``tifa_questions.csv``,
``dsg_questions.csv``) -- nothing touches the network then -- or, without ``data_dir``, a snapshot of the Hub dataset
``saxon/T2IScoreScore`` (``repo_id``/``revision`` config options).

Everything is validated before a single row is written, and every error names the file, CSV line, SEG and image.

Ways in (see the dataset card):

* any ``datasets`` version: ``scorers.ts2.dataset.load_ts2("segs", data_dir=...)`` (imports this file by path);
* ``datasets`` < 4, which still runs scripts: ``load_dataset("dataset_script/ts2", "segs", data_dir=...,
  trust_remote_code=True)``;
* no script at all: ``ts2 dataset export`` writes Parquet shards + a card, loadable with ``load_dataset(OUT, "segs")``.

This file repeats the two tiny rules it needs from ``scorers.stats.graph`` (node label -> error count, SEG id ->
partition) so that it runs without the ``scorers`` package; a test checks both copies agree on the whole release.
"""
from __future__ import annotations

import csv
import graphlib
import io
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor

import datasets

logger = logging.getLogger(__name__)

_CITATION = """\
@misc{saxon2024evaluates,
  title         = {Who Evaluates the Evaluations? Objectively Scoring Text-to-Image Prompt Coherence Metrics with
                   T2IScoreScore (TS2)},
  author        = {Michael Saxon and Fatima Jahara and Mahsa Khoshnoodi and Yujie Lu and Aditya Sharma and
                   William Yang Wang},
  year          = {2024},
  eprint        = {2404.04251},
  archivePrefix = {arXiv},
  primaryClass  = {cs.CV}
}
"""

_DESCRIPTION = """\
T2IScoreScore (TS2) meta-evaluates text-to-image faithfulness metrics. Each of its 165 semantic error graphs (SEGs)
holds one prompt and images on nodes labelled 0, 0b, 1a, 2, ...: the label's digits count the image's semantic
errors against the prompt. A good metric orders every walk (head -> more errors) by error count and separates nodes.
"""

_HOMEPAGE = "https://github.com/michaelsaxon/T2IScoreScore"
_LICENSE = "mit"

#: The Hub dataset this builder downloads when no ``data_dir`` is given.
HUB_REPO = "saxon/T2IScoreScore"
METADATA_FILE = "metadata.csv"
IMAGES_DIR = "images"
QUESTION_FILES = {"tifa_questions": "tifa_questions.csv", "dsg_questions": "dsg_questions.csv"}

# --- the two rules shared with scorers.stats.graph (kept tiny; tests/ts2/test_dataset.py checks they agree) ----------
#: A node label: the error count's digits followed by an optional letter suffix (``0``, ``1a``, ``0b``, ``12c``).
NODE_LABEL = re.compile(r"^\s*(\d+)([A-Za-z]*)\s*$")
PARTITIONS = ("synth", "nat", "real")


def error_count(label: str) -> int:
    """Error count of a node label (its digits): ``"1a" -> 1``; ``ValueError`` if it is not digits + letters."""
    match = NODE_LABEL.match(str(label))
    if match is None:
        raise ValueError(f"node label {label!r} is not a TS2 node label (digits + optional letters)")
    return int(match.group(1))


def partition_of(seg_id: int) -> str:
    """TS2's partition of a SEG id: ``< 111`` synth, ``111-135`` nat, ``>= 136`` real."""
    return "synth" if seg_id < 111 else "nat" if seg_id < 136 else "real"


# --- validation ----------------------------------------------------------------------------------------------------
class TS2DataError(ValueError):
    """A TS2 source file breaks the release's layout; the message names the file, line, SEG and image."""


#: release column -> canonical column (either spelling is accepted in metadata.csv)
_METADATA_COLUMNS = {"id": "seg_id", "target_prompt": "prompt", "rank": "node"}
_QUESTION_COLUMNS = ("id", "prompt", "question_id", "question", "choices", "answer")
_PARENTS = re.compile(r"^(?:-1|\d+(?:-\d+)*)$")
_MAX_LISTED = 10


def _read_csv(path: str) -> tuple[list[str], list[tuple[int, dict]]]:
    """Header and ``(line number, row)`` pairs of a CSV (line numbers as an editor shows them).

    Values are kept verbatim: text (prompts, questions, answers, choices) is never altered; keys (ids, labels, file
    names) are stripped where they are parsed.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist")
    rows = []
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        for row in reader:
            if None in row:
                raise TS2DataError(f"{path} line {reader.line_num}: {len(header) + len(row[None])} fields, "
                                   f"header has {len(header)}")
            rows.append((reader.line_num, {k: v or "" for k, v in row.items()}))
    return header, rows


def _as_int(text: str, what: str, where: str) -> int:
    if not re.fullmatch(r"\s*-?\d+\s*", text):
        raise TS2DataError(f"{where}: {what} {text!r} is not an integer")
    return int(text)


def _raise_listed(title: str, problems: list[str]) -> None:
    shown = "\n  ".join(problems[:_MAX_LISTED])
    more = f"\n  ... and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
    raise TS2DataError(f"{title}:\n  {shown}{more}")


def read_metadata(path: str, *, warn_quirks: bool = True) -> list[dict]:
    """Validated rows of ``metadata.csv``: SEG ids are integers, prompts non-empty, labels parse, file names unique,
    and every SEG has an error-0 (head) node.

    Each row has ``seg_id, prompt, file_name, node, error_count, partition, image_source, is_head`` and ``line``
    (its CSV line number). Release column names (``id, target_prompt, rank``) or canonical ones are accepted.
    With ``warn_quirks``, a SEG whose rows disagree on the prompt is logged (the release has one: SEG 3).
    """
    header, raw = _read_csv(path)
    header = [_METADATA_COLUMNS.get(h, h) for h in header]
    release_name = {v: k for k, v in _METADATA_COLUMNS.items()}
    missing = [c for c in ("seg_id", "prompt", "file_name", "node") if c not in header]
    if missing:
        names = ", ".join(f"{release_name[c]} (or {c})" if c in release_name else c for c in missing)
        raise TS2DataError(f"{path}: missing column(s) {names}; expected the release's header id, target_prompt, "
                           "file_name, image_source, rank")
    rows, seen = [], {}
    for line, record in raw:
        record = {_METADATA_COLUMNS.get(k, k): v for k, v in record.items()}
        where = f"{path} line {line}"
        seg_id = _as_int(record["seg_id"], "SEG id", where)
        node, file_name = record["node"].strip(), record["file_name"].strip()
        where = f"{where} (SEG {seg_id}, {file_name or 'no file name'})"
        if not record["prompt"].strip():
            raise TS2DataError(f"{where}: empty prompt")
        if not file_name:
            raise TS2DataError(f"{where}: empty file_name")
        if file_name in seen:
            raise TS2DataError(f"{where}: file_name {file_name!r} already used on line {seen[file_name]}")
        seen[file_name] = line
        try:
            errors = error_count(node)
        except ValueError as error:
            raise TS2DataError(f"{where}: {error}") from None
        rows.append({
            "seg_id": seg_id, "prompt": record["prompt"], "file_name": file_name, "node": node,
            "error_count": errors, "partition": partition_of(seg_id),
            "image_source": record.get("image_source", "").strip(),
            "is_head": errors == 0, "line": line,
        })
    if not rows:
        raise TS2DataError(f"{path}: no rows")
    if "partition" in header:  # a data dir built by `ts2 seg build`: partitions come from the file
        first: dict[int, tuple[str, int]] = {}
        for row, (_, record) in zip(rows, raw):
            where = f"{path} line {row['line']} (SEG {row['seg_id']}, {row['file_name']})"
            value = record.get("partition", "").strip()
            if not value:
                raise TS2DataError(f"{where}: empty partition")
            seen_value, seen_line = first.setdefault(row["seg_id"], (value, row["line"]))
            if value != seen_value:
                raise TS2DataError(f"{where}: partition {value!r} but {seen_value!r} on line {seen_line}; a SEG has "
                                   "one partition")
            row["partition"] = value
    check_heads(rows, source=path)
    if warn_quirks:
        _warn_mixed_prompts(rows, path)
    return rows


def check_heads(rows: list[dict], *, source: str) -> None:
    """Every SEG needs an error-0 node; the error lists the SEG's nodes and CSV lines."""
    by_seg: dict[int, list[dict]] = {}
    for row in rows:
        by_seg.setdefault(row["seg_id"], []).append(row)
    for seg_id, members in by_seg.items():
        if not any(r["is_head"] for r in members):
            nodes = sorted({r["node"] for r in members}, key=lambda n: (error_count(n), n))
            lines = [r["line"] for r in members]
            raise TS2DataError(f"{source}: SEG {seg_id} has no error-0 (head) node (nodes: {', '.join(nodes)}; "
                               f"lines {min(lines)}-{max(lines)}); every SEG needs a head")


def _warn_mixed_prompts(rows: list[dict], path: str) -> None:
    prompts: dict[int, dict[str, list[int]]] = {}
    for row in rows:
        prompts.setdefault(row["seg_id"], {}).setdefault(row["prompt"], []).append(row["line"])
    for seg_id, by_prompt in prompts.items():
        if len(by_prompt) > 1:
            main = max(by_prompt, key=lambda p: len(by_prompt[p]))
            odd = {p: ls for p, ls in by_prompt.items() if p != main}
            logger.warning("%s: SEG %d mixes prompts: %d row(s) say %r, line(s) %s say %s (kept as released)",
                           path, seg_id, len(by_prompt[main]), main,
                           ", ".join(str(x) for ls in odd.values() for x in ls), ", ".join(map(repr, odd)))


def parse_parents(text: str, *, where: str = "parent_question_id") -> list[int]:
    """DSG ``parent_question_id`` -> question ids: ``"-1"`` -> ``[]``, ``"0"`` -> ``[0]``, ``"1-0"`` -> ``[1, 0]``."""
    text = str(text).strip()
    if not _PARENTS.match(text):
        raise TS2DataError(f"{where}: parent_question_id {text!r} is not -1 or question ids joined by '-' (e.g. 1-0)")
    return [] if text == "-1" else [int(part) for part in text.split("-")]


def read_question_csv(path: str, kind: str | None = None) -> tuple[str, list[int], list[dict]]:
    """``(kind, lines, records)`` of a TIFA/DSG question CSV, header checked, rows not yet validated.

    ``kind`` ``None`` means ``"dsg"`` when the header has ``parent_question_id``, else ``"tifa"``. ``records`` are the
    CSV's rows as dicts of verbatim strings (extra columns kept); ``lines[k]`` is record k's CSV line. Pass them to
    :func:`validate_question_rows` (what :func:`read_questions` does).
    """
    if kind not in (None, "tifa", "dsg"):
        raise ValueError(f"kind must be 'tifa', 'dsg' or None (from the header), got {kind!r}")
    header, raw = _read_csv(path)
    if kind is None:
        kind = "dsg" if "parent_question_id" in header else "tifa"
    needed = list(_QUESTION_COLUMNS) + (["parent_question_id"] if kind == "dsg" else [])
    missing = [c for c in needed if c not in header]
    if missing:
        raise TS2DataError(f"{path}: missing column(s) {missing}; expected {needed}")
    return kind, [line for line, _ in raw], [record for _, record in raw]


def read_questions(path: str, kind: str, *, seg_ids: set | None = None) -> list[dict]:
    """Validated rows of a TIFA (``kind="tifa"``) or DSG (``kind="dsg"``) question CSV.

    The CSV is read by :func:`read_question_csv` and its rows checked by :func:`validate_question_rows` (see there
    for the rules). Each row has ``seg_id, prompt, question_id, question, choices, answer, is_yes_no, line`` and, for
    DSG, ``parents``.
    """
    if kind not in ("tifa", "dsg"):
        raise ValueError(f"kind must be 'tifa' or 'dsg', got {kind!r}")
    kind, lines, records = read_question_csv(path, kind)
    return validate_question_rows(records, kind, source=path, line_of=lines, seg_ids=seg_ids)


def is_yes_no_choices(choices) -> bool:
    """A binary question: choices exactly yes and no, either order, any case (the package's
    ``scorers.metrics.qga.questions.is_yes_no``, repeated here so the script runs standalone)."""
    return len(choices) == 2 and {str(c).strip().lower() for c in choices} == {"yes", "no"}


def _text(value) -> str:
    return "" if value is None else str(value)


def validate_question_rows(records, kind: str, *, source: str, line_of=None, seg_ids: set | None = None
                           ) -> list[dict]:
    """Check question rows (dicts with the CSV's columns, from a file or built in memory) and return them parsed.

    TS2's question-table rules for the dataset build (:func:`read_questions`). The ``scorers`` library validates
    question tables with its own copy (``scorers.metrics.qga.questions.validate_question_rows``), since this file runs
    standalone; ``tests/dataset_script/test_question_table_parity.py`` checks both accept and reject the same tables with the same
    messages:

    * ``id`` (SEG) and ``question_id`` are integers, ``question_id >= 0`` and unique within its SEG; with ``seg_ids``,
      every SEG id must be one of them;
    * ``question`` and ``answer`` are not blank;
    * ``choices`` is ``|``-joined, at least two choices, none blank, none repeated (compared without surrounding
      spaces): a one-choice question is always right and a repeated choice makes answer matching ambiguous;
    * an answer that is not among its choices is kept (the release's TIFA table has four; such a question can never
      be answered correctly, as in the release's own scores) and logged once per call;
    * ``parent_question_id`` (required for ``kind="dsg"``, parsed for any kind when present): ``-1`` or question ids
      joined by ``-``; parents exist in the same SEG and form no cycle (:func:`check_dsg_graph`).

    ``line_of``: the CSV line of each record, a sequence or a function of its index (default: index + 2, the line
    of data row k below a header). Values are kept verbatim (ids parsed); text may be ``str`` or anything ``str()``
    turns into the text (ids may be ints). Errors are :class:`TS2DataError` naming ``source``, the line, the SEG and
    the question.
    """
    if line_of is None:
        line_at = lambda k: k + 2  # noqa: E731
    elif callable(line_of):
        line_at = line_of
    else:
        line_at = list(line_of).__getitem__
    required = ["id", "question_id", "question", "choices", "answer"] + (
        ["parent_question_id"] if kind == "dsg" else [])
    rows, first_line, off_choice, has_parents = [], {}, [], False
    for k, record in enumerate(records):
        line = line_at(k)
        where = f"{source} line {line}"
        missing = [c for c in required if c not in record]
        if missing:
            raise TS2DataError(f"{where}: missing column(s) {missing}; expected {required}")
        seg_id = _as_int(_text(record["id"]), "SEG id", where)
        where = f"{where} (SEG {seg_id})"
        if seg_ids is not None and seg_id not in seg_ids:
            raise TS2DataError(f"{where}: SEG {seg_id} is not in metadata.csv (known SEG ids: "
                               f"{min(seg_ids)}-{max(seg_ids)}, {len(seg_ids)} SEGs)")
        question_id = _as_int(_text(record["question_id"]), "question_id", where)
        where = f"{where} question {question_id}"
        if question_id < 0:
            raise TS2DataError(f"{where}: question_id must be >= 0")
        if (seg_id, question_id) in first_line:
            raise TS2DataError(f"{where}: question_id {question_id} already used on line "
                               f"{first_line[seg_id, question_id]}")
        first_line[seg_id, question_id] = line
        question, text, answer = _text(record["question"]), _text(record["choices"]), _text(record["answer"])
        if not question.strip():
            raise TS2DataError(f"{where}: empty question")
        choices = text.split("|")
        stripped = [c.strip() for c in choices]
        if len(choices) < 2 or not all(stripped):
            raise TS2DataError(f"{where}: choices {text!r} is not a '|'-joined list of at least two non-empty "
                               "choices (e.g. 'yes|no' or 'red|blue|green')")
        repeated = sorted({c for c in stripped if stripped.count(c) > 1})
        if repeated:
            raise TS2DataError(f"{where}: choices {text!r} repeat {', '.join(map(repr, repeated))}")
        if not answer.strip():
            raise TS2DataError(f"{where}: empty answer")
        if answer.strip() not in stripped:
            off_choice.append(f"line {line} (SEG {seg_id} q{question_id}: {answer!r})")
        row = {
            "seg_id": seg_id, "prompt": _text(record.get("prompt")), "question_id": question_id, "question": question,
            "choices": choices, "answer": answer,
            "is_yes_no": is_yes_no_choices(stripped), "line": line,
        }
        if "parent_question_id" in record:
            row["parents"] = parse_parents(_text(record["parent_question_id"]), where=where)
            has_parents = True
        rows.append(row)
    if off_choice:
        logger.warning("%s: %d answer(s) are not among their choices (kept as released): %s", source,
                       len(off_choice), "; ".join(off_choice))
    if has_parents:
        check_dsg_graph(rows, source=source)
    return rows


def check_dsg_graph(rows: list[dict], *, source: str) -> None:
    """DSG parents must name existing questions of the same SEG and form no cycle (a question is never its own
    ancestor). Errors name the SEG, the question and its CSV line."""
    by_seg: dict[int, dict[int, dict]] = {}
    for row in rows:
        by_seg.setdefault(row["seg_id"], {})[row["question_id"]] = row
    for seg_id, questions in by_seg.items():
        for qid, row in questions.items():
            for parent in row.get("parents", ()):
                if parent not in questions:
                    raise TS2DataError(f"{source} line {row['line']} (SEG {seg_id} question {qid}): parent question "
                                       f"{parent} does not exist (SEG {seg_id} has questions {sorted(questions)})")
        sorter = graphlib.TopologicalSorter({q: row.get("parents", ()) for q, row in questions.items()})
        try:
            sorter.prepare()
        except graphlib.CycleError as error:
            # graphlib lists the cycle parent -> child; print it child -> parent, from its smallest question id
            ring = list(reversed(error.args[1]))[:-1]
            start = ring.index(min(ring))
            cycle = ring[start:] + ring[:start] + [ring[start]]
            row = questions[cycle[0]]
            raise TS2DataError(f"{source} line {row['line']} (SEG {seg_id}): DSG parents form a cycle: "
                               f"{' -> '.join(f'q{q}' for q in cycle)} (each arrow points to a parent)") from None


def check_image(path: str) -> str | None:
    """``None`` if ``path`` is a readable image whose data decodes completely, else why not (``"missing"`` if absent).

    Truncated files are caught: the decode runs with Pillow's ``LOAD_TRUNCATED_IMAGES`` off whatever its global value.
    JPEGs decode in draft (downscaled) mode, which still reads every byte but skips most of the pixel work.
    """
    with _strict_pillow():
        return _decode_check(path)


class _strict_pillow:
    """Pillow's global ``LOAD_TRUNCATED_IMAGES`` off for the block (set once around a whole thread pool)."""

    def __enter__(self):
        from PIL import ImageFile

        self.previous, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, False

    def __exit__(self, *exc):
        from PIL import ImageFile

        ImageFile.LOAD_TRUNCATED_IMAGES = self.previous


def _decode_check(path: str) -> str | None:
    from PIL import Image

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        return f"cannot be read ({error})"
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format == "JPEG":
                image.draft("RGB", (max(1, image.width // 8), max(1, image.height // 8)))
            image.load()
    except Exception as error:  # Pillow raises OSError, SyntaxError, ValueError... for broken files
        return f"does not decode as an image ({type(error).__name__}: {error})"
    return None


def check_images(root: str, rows: list[dict], *, skip_missing: bool = False, decode: bool = True,
                 num_workers: int | None = None, source: str = METADATA_FILE) -> list[dict]:
    """The rows whose image exists (and decodes, with ``decode``); raises for anything else.

    With ``skip_missing`` a missing file is logged (one warning per image plus a summary) and its row dropped;
    undecodable files always raise. If skipping leaves a SEG without an error-0 image, that raises too.
    """
    paths = [os.path.join(root, row["file_name"]) for row in rows]
    if decode:
        workers = num_workers or min(16, 2 * (os.cpu_count() or 1) + 2)
        with _strict_pillow(), ThreadPoolExecutor(max_workers=workers) as pool:
            verdicts = list(pool.map(_decode_check, paths, chunksize=32))
    else:
        verdicts = [None if os.path.isfile(p) else "missing" for p in paths]
    kept, skipped, problems = [], [], []
    for row, verdict in zip(rows, verdicts):
        where = f"{source} line {row['line']} (SEG {row['seg_id']}, node {row['node']})"
        if verdict is None:
            kept.append(row)
        elif verdict == "missing" and skip_missing:
            logger.warning("%s: image %s is missing under %s; skipped (skip_missing_images=True)", where,
                           row["file_name"], root)
            skipped.append(row)
        elif verdict == "missing":
            problems.append(f"{where}: image {row['file_name']} does not exist")
        else:
            problems.append(f"{where}: image {row['file_name']} {verdict}")
    if problems and len(problems) == len(rows) and all(p.endswith("does not exist") for p in problems):
        raise TS2DataError(f"none of the {len(rows)} images listed in {source} exist under {root} (first: "
                           f"{rows[0]['file_name']}); is that the folder holding {IMAGES_DIR}/?")
    if problems:
        hint = ("re-download the images, or remove the broken files and build with skip_missing_images=True"
                if any("does not exist" not in p for p in problems) else
                "download the missing images, or build with skip_missing_images=True to drop their rows")
        _raise_listed(f"{len(problems)} image problem(s) under {root} ({hint})", problems)
    if skipped:
        lost = sorted({r["seg_id"] for r in skipped} - {r["seg_id"] for r in kept})
        logger.warning("skipped %d of %d images whose files are missing under %s%s", len(skipped), len(rows), root,
                       f"; SEG(s) {lost} have no image left and are absent" if lost else "")
        check_heads(kept, source=f"{source} after skipping missing images")
    return kept


# --- the builder ---------------------------------------------------------------------------------------------------
_list = getattr(datasets, "List", None) or datasets.Sequence  # datasets >= 4 spells it List, older Sequence

_QUESTION_FEATURES = {
    "seg_id": datasets.Value("int32"),
    "prompt": datasets.Value("string"),
    "question_id": datasets.Value("int32"),
    "question": datasets.Value("string"),
    "choices": _list(datasets.Value("string")),
    "answer": datasets.Value("string"),
    "is_yes_no": datasets.Value("bool"),
}
FEATURES = {
    "segs": datasets.Features({
        "seg_id": datasets.Value("int32"),
        "prompt": datasets.Value("string"),
        "image": datasets.Image(),
        "file_name": datasets.Value("string"),
        "node": datasets.Value("string"),
        "error_count": datasets.Value("int32"),
        "partition": datasets.Value("string"),
        "image_source": datasets.Value("string"),
        "is_head": datasets.Value("bool"),
    }),
    "tifa_questions": datasets.Features(dict(_QUESTION_FEATURES)),
    "dsg_questions": datasets.Features({**_QUESTION_FEATURES, "parents": _list(datasets.Value("int32"))}),
}
_CONFIG_DESCRIPTIONS = {
    "segs": "One row per image: SEG id, prompt, image, node label, error count, partition, source, head flag.",
    "tifa_questions": "TIFA question-answer pairs per SEG prompt (multiple choice; yes/no flagged).",
    "dsg_questions": "Davidsonian Scene Graph questions per SEG prompt, with parent question ids.",
}


class TS2Config(datasets.BuilderConfig):
    """A TS2 config. Options (all keyword, all recorded in the cache id):

    * ``skip_missing_images``: drop (and log) rows whose image file is absent instead of failing.
    * ``check_images``: fully decode every image while building (default True; False only checks existence).
    * ``repo_id`` / ``revision``: the Hub dataset used when no ``data_dir`` is given.
    """

    def __init__(self, *, skip_missing_images: bool = False, check_images: bool = True, repo_id: str = HUB_REPO,
                 revision: str | None = None, **kwargs):
        kwargs.setdefault("version", datasets.Version("1.0.0"))
        super().__init__(**kwargs)
        self.skip_missing_images = bool(skip_missing_images)
        self.check_images = bool(check_images)
        self.repo_id = repo_id
        self.revision = revision


class TS2(datasets.GeneratorBasedBuilder):
    """TS2 semantic error graphs (``segs``) and their TIFA / DSG questions, validated while building."""

    BUILDER_CONFIG_CLASS = TS2Config
    DEFAULT_WRITER_BATCH_SIZE = 100  # rows per Arrow record batch: images are ~0.1 MB each in the release
    BUILDER_CONFIGS = [TS2Config(name=name, description=text) for name, text in _CONFIG_DESCRIPTIONS.items()]
    DEFAULT_CONFIG_NAME = "segs"

    def _info(self):
        return datasets.DatasetInfo(
            description=_DESCRIPTION + "\n" + _CONFIG_DESCRIPTIONS[self.config.name],
            features=FEATURES[self.config.name],
            homepage=_HOMEPAGE,
            license=_LICENSE,
            citation=_CITATION,
        )

    def _source_dir(self) -> str:
        """The local data_dir, or a snapshot of the Hub dataset (only the files this config needs)."""
        if self.config.data_dir:
            root = os.path.abspath(os.path.expanduser(str(self.config.data_dir)))
            if not os.path.isdir(root):
                raise FileNotFoundError(f"data_dir {root} does not exist (expected metadata.csv, images/ and the "
                                        "question CSVs, the layout of the Hub dataset)")
            return root
        patterns = [METADATA_FILE] + ([f"{IMAGES_DIR}/*"] if self.config.name == "segs"
                                      else [QUESTION_FILES[self.config.name]])
        try:
            from huggingface_hub import snapshot_download

            root = snapshot_download(repo_id=self.config.repo_id, repo_type="dataset",
                                     revision=self.config.revision, allow_patterns=patterns)
        except Exception as error:
            raise FileNotFoundError(
                f"could not fetch the TS2 dataset {self.config.repo_id!r} from the Hugging Face Hub "
                f"({type(error).__name__}: {error}). Offline (HF_HUB_OFFLINE=1) or no network? Pass data_dir=DIR "
                f"holding {METADATA_FILE}, {IMAGES_DIR}/ and the question CSVs (the Hub repo's layout)."
            ) from error
        question_file = QUESTION_FILES.get(self.config.name)
        if question_file and not os.path.isfile(os.path.join(root, question_file)):
            raise FileNotFoundError(
                f"the Hub dataset {self.config.repo_id!r} has no {question_file}; the TIFA/DSG "
                f"question CSVs come with the TS2 GitHub release ({_HOMEPAGE}): put them next to {METADATA_FILE} in a "
                "data_dir, or load an exported TS2 Parquet repo that has all three configs"
            )
        return root

    def _split_generators(self, dl_manager):
        # All validation happens here, before generation, so errors surface as themselves (datasets wraps
        # exceptions raised inside _generate_examples into a generic DatasetGenerationError).
        root = self._source_dir()
        metadata = read_metadata(os.path.join(root, METADATA_FILE), warn_quirks=self.config.name == "segs")
        if self.config.name == "segs":
            rows = check_images(root, metadata, skip_missing=self.config.skip_missing_images,
                                decode=self.config.check_images, source=os.path.join(root, METADATA_FILE))
        else:
            kind = self.config.name.split("_")[0]
            rows = read_questions(os.path.join(root, QUESTION_FILES[self.config.name]), kind,
                                  seg_ids={row["seg_id"] for row in metadata})
        return [datasets.SplitGenerator(name=datasets.Split.TRAIN, gen_kwargs={"rows": rows, "root": root})]

    def _generate_examples(self, rows, root):
        fields = list(FEATURES[self.config.name])
        for row in rows:
            example = {k: row[k] for k in fields if k != "image"}
            if self.config.name == "segs":
                with open(os.path.join(root, row["file_name"]), "rb") as handle:
                    example["image"] = {"path": row["file_name"], "bytes": handle.read()}
            yield row["line"], example
