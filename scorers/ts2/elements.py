"""``ts2 elements``: which error did the metric see? Element-level verdicts on the release and on built SEGs.

Two truth sources (EvalMuse's per-element labels are the third, in :mod:`scorers.sets.element_labels`):

* **the release** (:func:`released_elements`): the six per-question files ``per_question/{mplug,llava,blip1}_
  {tifa,dsg}.csv`` (found like every release table, :func:`scorers.tables.release_download.paths`). Images are
  identified as the release lays them out: the rows of one image are consecutive and start at question 0, images in
  ``metadata.csv`` order. An answer is wrong when the release's matching says ``correct == 0`` (before DSG's parent
  gating). Only node-0 images have a known truth (every element shown: a wrong answer there is a false alarm), so
  the figure is the wrong-answer rate per node error count.
* **built SEGs** (:func:`built_elements`): per-question records (``ts2 score tifa|dsg``'s ``<out stem>.records.jsonl``,
  ``ts2 answers-to-scores``' records CSV, ``ts2 seg check``'s review CSV) + the built ``metadata.csv`` (each image's
  error set, :mod:`scorers.tables.error_columns`) + the question table whose ``element`` column names the error label
  a question checks (``ts2 seg plan`` writes it). An element is wrong in an image when it is in the image's error set.

Both return the one JSON shape of ``ts2 elements --json`` (``unit``, ``truth``, ``interval``, then one key per metric).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from scorers.stats.element_verdicts import element_detection, group_rate, wrong_rates

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["RELEASED_VARIANTS", "TRUTHS", "built_elements", "compare_elements", "element_rows", "load_element_summary",
           "read_element_records", "read_released_answers", "released_elements", "summary_header"]

#: the release's per-question files, ``<vlm>_<kind>``
RELEASED_VARIANTS = ("mplug_tifa", "llava_tifa", "blip1_tifa", "mplug_dsg", "llava_dsg", "blip1_dsg")
#: what a summary's ``truth`` may be
TRUTHS = ("released", "built", "evalmuse")
#: the reserved top-level keys of a summary (every other key is a metric)
RESERVED = ("unit", "truth", "interval", "paired")


def summary_header(truth: str, *, n_bootstrap: int, confidence: float = 0.95, over: str = "SEGs") -> dict:
    """The reserved keys that open every ``ts2 elements --json``."""
    return {"unit": "fraction", "truth": truth,
            "interval": {"confidence": confidence, "n_bootstrap": int(n_bootstrap), "over": over}}


def _check_variants(variants: Iterable[str] | None) -> list[str]:
    from scorers.errors import ParameterError

    chosen = list(RELEASED_VARIANTS if not variants else variants)
    unknown = [v for v in chosen if v not in RELEASED_VARIANTS]
    if unknown:
        raise ParameterError("{variants} names {unknown}; the release has {known}", unknown=", ".join(unknown),
                             known=", ".join(RELEASED_VARIANTS))
    return chosen


# --- the release -------------------------------------------------------------------------------------------------


def read_released_answers(path: str | Path, seg_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(image, question_id, correct)`` of one per-question file: ``image`` is each row's metadata row, numbered as
    the release lays the rows out (a new image where ``question_id == 0``, images in metadata order; ``seg_ids`` the
    metadata's SEG id per row). Whole-column operations, no loop over rows.

    Raises
    ------
    ValueError
        a missing column, a first row that is not question 0, a number of images that differs from the metadata's,
        or an image whose rows name another SEG than its metadata row (naming the file and the line).
    """
    from scorers.tables.pandas_tables import read_csv

    frame = read_csv(path)
    missing = [c for c in ("id", "question_id", "correct") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; a per-question file has id, question_id, "
                         "vqa_answer, mc_answer, correct")
    if frame.empty:
        raise ValueError(f"{path}: no rows")
    try:
        seg = frame["id"].to_numpy(dtype=np.int64)
        qid = frame["question_id"].to_numpy(dtype=np.int64)
        correct = frame["correct"].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: id, question_id and correct must be numbers ({error})") from None
    bad = np.flatnonzero(~np.isin(correct, (0.0, 1.0)))
    if bad.size:
        raise ValueError(f"{path} line {bad[0] + 2}: correct must be 0 or 1, got {frame['correct'].iloc[bad[0]]!r}")
    starts = qid == 0
    if not starts[0]:
        raise ValueError(f"{path} line 2: the first row must be question 0 of an image (got question {qid[0]})")
    image = np.cumsum(starts) - 1
    n_images = int(image[-1]) + 1
    if n_images != seg_ids.size:
        raise ValueError(f"{path}: {n_images} images (runs of rows starting at question_id 0) but metadata.csv has "
                         f"{seg_ids.size} rows; the release lays out one run per metadata row, in metadata order")
    step = np.diff(qid)
    inside = np.flatnonzero(~starts[1:] & (step != 1)) + 1
    if inside.size:
        r = int(inside[0])
        raise ValueError(f"{path} line {r + 2}: question {qid[r]} follows question {qid[r - 1]} inside one image "
                         "(an image's rows are question 0, 1, 2, ... in turn)")
    clash = np.flatnonzero(seg != seg_ids[image])
    if clash.size:
        r = int(clash[0])
        raise ValueError(f"{path} line {r + 2}: SEG {seg[r]} but the image it belongs to (metadata row "
                         f"{image[r] + 2}) is of SEG {seg_ids[image[r]]}; the images do not line up with metadata.csv")
    return image, qid, correct.astype(bool)


def released_elements(variants: Sequence[str] | None = None, *, data_dir=None, questions=None, n_bootstrap: int = 1000,
                      confidence: float = 0.95, seed: int = 0) -> dict:
    """The ``--released`` summary: per variant, the wrong-answer rate per node error count (before DSG's parent
    gating) with its count and bootstrap interval over SEGs (:func:`scorers.stats.element_verdicts.wrong_rates`).

    ``variants``: some of :data:`RELEASED_VARIANTS` (default: all six). ``data_dir``: a local release copy (default
    ``$TS2_DATA``, then the cache / download). ``questions``: question tables of the release's questions that carry an
    ``element_type`` (one path or several; a table with ``parent_question_id`` is DSG's, else TIFA's; the release's own
    carry none): each variant of that family also gets ``by_type``, the wrong-answer rate per type.
    """
    from scorers.tables.pandas_tables import read_metadata
    from scorers.tables.release_download import paths

    chosen = _check_variants(variants)
    found = paths(["metadata.csv", *(f"per_question/{v}.csv" for v in chosen)], data_dir)
    metadata = read_metadata(found["metadata.csv"])
    seg_ids = metadata["seg_id"].to_numpy(dtype=np.int64)
    counts = metadata["error_count"].to_numpy(dtype=np.int64)
    out = summary_header("released", n_bootstrap=n_bootstrap, confidence=confidence)
    typed = _typed_questions(questions)
    kw = dict(n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    for variant in chosen:
        image, qid, correct = read_released_answers(found[f"per_question/{variant}.csv"], seg_ids)
        out[variant] = {"by_error_count": wrong_rates(~correct, counts[image], seg_ids[image], **kw).to_dict()}
        table = typed.get(variant.rsplit("_", 1)[1])
        if table is not None:
            out[variant]["by_type"] = _rates_by_type(~correct, seg_ids[image], qid, table, **kw)
    return out


def _typed_questions(questions) -> dict[str, pd.DataFrame]:
    """``{"tifa" | "dsg": table}`` of the question tables given (their family read from the header)."""
    from scorers.tables.pandas_tables import read_csv

    out: dict = {}
    for path in ([] if questions is None else [questions] if isinstance(questions, (str, Path)) else questions):
        family = "dsg" if "parent_question_id" in read_csv(path, nrows=0).columns else "tifa"
        if family in out:
            raise ValueError(f"{path}: a second {family.upper()} question table; give one per family")
        table = read_element_questions(path)
        if not table["element_type"].ne("").any():
            raise ValueError(f"{path}: no element_type column (or every cell empty): nothing to group the rates by")
        out[family] = table
    return out


def _rates_by_type(said: np.ndarray, segs: np.ndarray, qid: np.ndarray, table: pd.DataFrame, **kw) -> dict:
    """The wrong-answer rate per question type: each answer's type looked up by (SEG, question id) in ``table``;
    answers of untyped questions left out."""
    import pandas as pd

    keyed = table.drop_duplicates(["seg_id", "question_id"]).set_index(["seg_id", "question_id"])["element_type"]
    types = keyed.reindex(pd.MultiIndex.from_arrays([segs, qid])).fillna("").to_numpy(dtype=object)
    return type_rates(said, segs, types, **kw)


def type_rates(said: np.ndarray, segs: np.ndarray, types: np.ndarray, **kw) -> dict:
    """``{type: rate entry}``: the wrong-answer rate of each non-empty type, its interval over the SEGs (``segs``)."""
    _, group_index = np.unique(segs, return_inverse=True)
    n_groups = int(group_index.max()) + 1 if group_index.size else 0
    return {t: _rate_entry(group_rate(said[types == t], group_index[types == t], n_groups, **kw))
            for t in sorted({t for t in types if t})}


# --- built SEGs --------------------------------------------------------------------------------------------------

RECORD_COLUMNS = ("seg_id", "file_name", "question_id", "question", "expected", "answer", "correct", "p_expected")


def _jsonl_records(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path} line {number}: not JSON ({error.msg})") from None
            key, record = (entry.get("key"), entry.get("record")) if isinstance(entry, dict) else (None, None)
            if not isinstance(key, str) or ":" not in key or not isinstance(record, dict):
                raise ValueError(f"{path} line {number}: a records line is {{\"key\": \"SEG:FILE_NAME\", \"record\": "
                                 "{\"questions\": [...]}} (what ts2 score tifa|dsg writes)")
            seg, file_name = key.split(":", 1)
            for q in record.get("questions") or []:
                if "question_id" not in q or "correct" not in q:
                    raise ValueError(f"{path} line {number}: a question without question_id / correct")
                p = q.get("p_expected", q.get("probability"))
                rows.append({"seg_id": seg, "file_name": file_name, "question_id": q["question_id"],
                             "question": q.get("question", ""), "expected": q.get("expected", ""),
                             "answer": q.get("answer", q.get("chosen", "")), "correct": q["correct"],
                             "p_expected": np.nan if p is None else p, "line": number})
    return rows


def _review_records(frame: pd.DataFrame, path: Path, questions: pd.DataFrame | None) -> list[dict]:
    """``ts2 seg check``'s review CSV: ``answers`` maps each yes/no question to the judge's P(yes) (expected: yes)."""
    if questions is None:
        raise ValueError(f"{path}: a ts2 seg check review names questions by their text; pass the question table "
                         "(--questions, the dsg_questions.csv ts2 seg plan wrote) to know their elements")
    ids = {(int(s), str(q).strip()): int(k) for s, q, k in
           zip(questions["seg_id"], questions["question"], questions["question_id"])}
    rows = []
    for line, seg, file_name, answers in zip(frame["line"], frame["seg_id"], frame["file_name"], frame["answers"]):
        try:
            answered = json.loads(answers) if str(answers).strip() else {}
        except json.JSONDecodeError:
            raise ValueError(f"{path} line {line}: answers is not JSON ({str(answers)[:60]!r})") from None
        for question, p in answered.items():
            if p is None:  # the judge's answer was unclear
                continue
            key = (int(seg), str(question).strip())
            if key not in ids:
                raise ValueError(f"{path} line {line}: question {question!r} is not a question of SEG {seg} in the "
                                 "question table")
            rows.append({"seg_id": seg, "file_name": file_name, "question_id": ids[key], "question": question,
                         "expected": "yes", "answer": "yes" if p >= 0.5 else "no", "correct": p >= 0.5,
                         "p_expected": float(p), "line": line})
    return rows


def read_element_records(path: str | Path, *, questions: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (image, question) answer, columns :data:`RECORD_COLUMNS` + ``line``, from any of the records
    files the package writes: ``<out stem>.records.jsonl`` (``ts2 score tifa|dsg``), the records CSV of ``ts2
    answers-to-scores`` (run with ``--metadata``, so rows carry ``file_name``) and the review CSV of ``ts2 seg check``
    (``answers``: P(yes) per question; needs ``questions``). ``p_expected``: the probability of the expected answer
    where the scorer gives one (NaN otherwise).

    Raises
    ------
    ValueError
        a file of none of these layouts, or a row missing a field (naming the file and the line).
    """
    import pandas as pd

    from scorers.tables.pandas_tables import read_csv

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"records file {path} does not exist")
    if path.suffix == ".jsonl":
        rows = _jsonl_records(path)
    else:
        frame = read_csv(path, dtype=str, keep_default_na=False)
        frame["line"] = np.arange(2, len(frame) + 2)
        if {"answers", "errors", "file_name", "seg_id"} <= set(frame.columns):
            rows = _review_records(frame, path, questions)
        elif {"seg_id", "question_id", "correct"} <= set(frame.columns):
            if "file_name" not in frame.columns:
                raise ValueError(f"{path}: records without file_name; run ts2 answers-to-scores with --metadata so "
                                 "each answer names its image")
            frame = frame.rename(columns={"chosen": "answer"} if "answer" not in frame.columns else {})
            for column, default in (("question", ""), ("expected", ""), ("answer", ""), ("p_expected", "")):
                if column not in frame.columns:
                    frame[column] = default
            truth = frame["correct"].str.strip().str.lower()
            known = truth.isin(["true", "false", "1", "0", "1.0", "0.0"])
            if not known.all():
                k = int(np.flatnonzero(~known.to_numpy())[0])
                raise ValueError(f"{path} line {k + 2}: correct must be true/false or 1/0, got "
                                 f"{frame['correct'].iloc[k]!r}")
            frame["correct"] = truth.isin(["true", "1", "1.0"])
            frame["p_expected"] = pd.to_numeric(frame["p_expected"], errors="coerce")
            rows = frame[[*RECORD_COLUMNS, "line"]].to_dict("records")
        else:
            raise ValueError(f"{path}: not a records file: expected ts2 score's .records.jsonl, ts2 answers-to-scores' "
                             "records CSV (seg_id, question_id, correct, file_name) or ts2 seg check's review CSV "
                             f"(seg_id, file_name, errors, answers); got columns {', '.join(map(str, frame.columns))}")
    out = pd.DataFrame(rows, columns=[*RECORD_COLUMNS, "line"])
    if out.empty:
        raise ValueError(f"{path}: no answers")
    for column in ("seg_id", "question_id"):
        numbers = pd.to_numeric(out[column], errors="coerce")
        if numbers.isna().any():
            k = int(np.flatnonzero(numbers.isna().to_numpy())[0])
            raise ValueError(f"{path} line {out['line'].iloc[k]}: {column} must be an integer, got "
                             f"{out[column].iloc[k]!r}")
        out[column] = numbers.astype(np.int64)
    out["correct"] = out["correct"].astype(bool)
    out["p_expected"] = out["p_expected"].astype(np.float64)
    out["file_name"] = out["file_name"].astype(str).str.strip()
    return out


def read_element_questions(path: str | Path) -> pd.DataFrame:
    """A question table with its ``element`` column (``ts2 seg plan`` writes it): ``seg_id, question_id, question,
    element, element_type`` (``element_type`` empty where the table has none)."""
    from scorers.tables.pandas_tables import read_csv

    frame = read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in ("id", "question_id", "question") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}; a question table has id, prompt, "
                         "question_id, question, choices, answer (+ element, the error label it checks)")
    for column in ("element", "element_type", "element_of"):
        if column not in frame.columns:
            frame[column] = ""
    out = frame.rename(columns={"id": "seg_id"})[["seg_id", "question_id", "question", "element", "element_type",
                                                  "element_of"]]
    out = out.assign(seg_id=out["seg_id"].astype(np.int64), question_id=out["question_id"].astype(np.int64),
                     element=out["element"].str.strip(), element_type=out["element_type"].str.strip(),
                     element_of=out["element_of"].str.strip())
    return out


def _dependencies(qtable) -> dict[int, dict[str, set[str]]]:
    """Per SEG, each element's entities (the question table's ``element_of``): removing one removes the element."""
    from scorers.stats.error_sets import ERROR_SEPARATOR

    out: dict[int, dict[str, set[str]]] = {}
    if qtable is None or "element_of" not in qtable.columns:
        return out
    rows = qtable.loc[qtable["element_of"].astype(str).str.len() > 0, ["seg_id", "element", "element_of"]]
    for seg, element, of in rows.drop_duplicates().itertuples(index=False):
        out.setdefault(int(seg), {}).setdefault(element, set()).update(of.split(ERROR_SEPARATOR))
    return out


def _removed(errors: list[str], depends: dict[str, set[str]]) -> set[str]:
    """An image's errors plus, transitively, every element that depends on one of them: an attribute of a missing
    entity is not shown either (``ts2 seg plan``'s ``removed``), so a "no" to it is right, not a false alarm."""
    gone = set(errors)
    grew = bool(depends)
    while grew:
        more = {element for element, of in depends.items() if element not in gone and of & gone}
        gone |= more
        grew = bool(more)
    return gone


def built_frame(records, *, metadata, questions=None) -> pd.DataFrame:
    """The records joined with the truth: per answer ``error_count``, ``said_wrong``, ``truly_wrong`` (the element is
    in the image's errors, or depends on one through the question table's ``element_of``; None where the question names
    no element), ``element``, ``element_type``, ``prob_wrong`` (1 - ``p_expected``)."""
    import pandas as pd

    from scorers.stats.error_sets import ERROR_SEPARATOR
    from scorers.tables.error_columns import parse_error_columns
    from scorers.tables.pandas_tables import read_metadata

    meta = read_metadata(metadata) if not isinstance(metadata, pd.DataFrame) else metadata
    source = str(metadata) if not isinstance(metadata, pd.DataFrame) else "metadata"
    if "errors" not in meta.columns:
        raise ValueError(f"{source}: no errors column; built SEGs (ts2 seg build) list each image's errors; for the "
                         "release use --released")
    frame = meta[["seg_id", "file_name", "node", "errors"]].copy()
    frame["line"] = meta["line"].to_numpy() if "line" in meta.columns else np.arange(2, len(frame) + 2)
    frame["errors"] = frame["errors"].astype(str).str.strip()
    if "error_types" in meta.columns:  # a dir built from ANNOTATIONS without types has none (or an empty column)
        types = meta["error_types"].fillna("").astype(str).str.strip()
        if (types != "").any():
            frame["error_types"] = types
    parse_error_columns(frame, source)
    qtable = (read_element_questions(questions) if questions is not None and not isinstance(questions, pd.DataFrame)
              else questions)
    answers = records if isinstance(records, pd.DataFrame) else read_element_records(records, questions=qtable)
    rows = pd.Series(np.arange(len(frame)), index=frame["file_name"].to_numpy())
    where = answers["file_name"].map(rows)
    if where.isna().any():
        k = int(np.flatnonzero(where.isna().to_numpy())[0])
        where_records = "records" if isinstance(records, pd.DataFrame) else str(records)
        raise ValueError(f"{where_records} line {answers['line'].iloc[k]}: image {answers['file_name'].iloc[k]!r} is "
                         f"not in {source}")
    at = where.to_numpy(dtype=np.int64)
    out = answers.copy()
    out["seg_id"] = frame["seg_id"].to_numpy(dtype=np.int64)[at]
    out["node"] = frame["node"].to_numpy()[at]
    out["error_count"] = meta["error_count"].to_numpy(dtype=np.int64)[at]
    out["said_wrong"] = ~out["correct"].to_numpy(dtype=bool)
    out["prob_wrong"] = 1.0 - out["p_expected"].to_numpy(dtype=np.float64)
    out["element"], out["element_type"] = "", ""
    if qtable is not None:
        keyed = qtable.drop_duplicates(["seg_id", "question_id"]).set_index(["seg_id", "question_id"])
        index = pd.MultiIndex.from_arrays([out["seg_id"], out["question_id"]])
        out["element"] = keyed["element"].reindex(index).fillna("").to_numpy(dtype=object)
        out["element_type"] = keyed["element_type"].reindex(index).fillna("").to_numpy(dtype=object)
    errors = frame["sorted_errors"].to_numpy(dtype=object)[at]
    label_types: dict[tuple[int, str], str] = {}
    for seg, errs, kinds in zip(frame["seg_id"], frame["sorted_errors"], frame["sorted_types"]):
        if errs and kinds:
            label_types.update({(int(seg), e): t for e, t in zip(errs.split(ERROR_SEPARATOR),
                                                                  kinds.split(ERROR_SEPARATOR))})
    depends = _dependencies(qtable)
    sets = [_removed(e.split(ERROR_SEPARATOR) if e else [], depends.get(int(seg), {}))
            for e, seg in zip(errors, out["seg_id"])]
    element = out["element"].to_numpy(dtype=object)
    out["truly_wrong"] = [None if not el else el in s for el, s in zip(element, sets)]
    fill = [t or label_types.get((int(s), el), "") for t, s, el in zip(out["element_type"], out["seg_id"], element)]
    out["element_type"] = fill
    return out


def _detection_block(frame: pd.DataFrame, *, n_bootstrap: int, confidence: float, seed: int) -> dict:
    known = frame[frame["truly_wrong"].notna()]
    if known.empty:
        return {"overall": None, "by_type": {}}
    prob = known["prob_wrong"].to_numpy(dtype=np.float64)
    prob = None if np.isnan(prob).all() else prob

    def figure(part: pd.DataFrame, p: np.ndarray | None) -> dict:
        return element_detection(part["said_wrong"].to_numpy(dtype=bool), part["truly_wrong"].to_numpy(dtype=bool),
                                 part["seg_id"].to_numpy(), prob_wrong=p, n_bootstrap=n_bootstrap,
                                 confidence=confidence, seed=seed).to_dict()

    out = {"overall": figure(known, prob), "by_type": {}}
    for kind in sorted({t for t in known["element_type"] if t}):
        mask = (known["element_type"] == kind).to_numpy()
        out["by_type"][kind] = figure(known[mask], None if prob is None else prob[mask])
    return out


def built_elements(records, *, metadata, questions=None, n_bootstrap: int = 1000, confidence: float = 0.95,
                   seed: int = 0, name: str | None = None) -> dict:
    """The built-SEG summary of one or more records files (``records``: a path or a list of paths; each is one
    metric, keyed by its file stem, or ``name`` for a single one): per metric ``by_error_count``, ``by_type``,
    ``detection`` (overall and per error type), ``false_alarm_rate_node0`` and ``detection_by_error_count``."""
    paths = [records] if isinstance(records, (str, Path)) or not isinstance(records, Sequence) else list(records)
    qtable = read_element_questions(questions) if questions is not None else None
    out = summary_header("built", n_bootstrap=n_bootstrap, confidence=confidence)
    for path in paths:
        frame = built_frame(path, metadata=metadata, questions=qtable)
        key = name if name and len(paths) == 1 else metric_name(path)
        out[key] = built_summary(frame, n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    return out


def metric_name(path) -> str:
    """A records file's metric name: its file name without ``.records.jsonl`` / ``.records.csv`` / ``.csv``."""
    name = Path(str(path)).name
    for suffix in (".records.jsonl", ".records.csv", ".jsonl", ".json", ".csv"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _rate_entry(rate: tuple, key: str = "wrong_rate") -> dict:
    from scorers.json_safe import json_float

    value, n, low, high, _ = rate
    return {key: json_float(value), "n": n, "low": json_float(low), "high": json_float(high)}


def built_summary(frame: pd.DataFrame, *, n_bootstrap: int, confidence: float, seed: int) -> dict:
    """One metric's block of the built summary from :func:`built_frame`'s frame."""
    said = frame["said_wrong"].to_numpy(dtype=bool)
    counts = frame["error_count"].to_numpy(dtype=np.int64)
    segs = frame["seg_id"].to_numpy(dtype=np.int64)
    _, group_index = np.unique(segs, return_inverse=True)
    n_groups = int(group_index.max()) + 1
    kw = dict(n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    out = {"by_error_count": wrong_rates(said, counts, segs, **kw).to_dict()}
    out["by_type"] = type_rates(said, segs, frame["element_type"].to_numpy(dtype=object), **kw)
    out["detection"] = _detection_block(frame, **kw)
    head = counts == 0
    out["false_alarm_rate_node0"] = _rate_entry(group_rate(said[head], group_index[head], n_groups, **kw))
    truth = frame["truly_wrong"].to_numpy(dtype=object)
    wrong = np.asarray([t is True for t in truth])
    out["detection_by_error_count"] = {
        str(int(c)): _rate_entry(group_rate(said[wrong & (counts == c)], group_index[wrong & (counts == c)],
                                            n_groups, **kw), "detection_rate")
        for c in np.unique(counts[wrong])}
    return out


# --- rows for the demo, summaries read back -----------------------------------------------------------------------


def element_rows(variant_or_records, *, metadata=None, data_dir=None, image=None, questions=None) -> pd.DataFrame:
    """One row per (image, question): ``image`` (file name), ``seg_id``, ``question_id``, ``question``, ``answer``
    (the metric's), ``expected``, ``said_wrong``, ``truly_wrong`` (None where unknown: a released image with errors,
    a question naming no element), ``element`` (None where unknown). ``variant_or_records``: a released variant
    (:data:`RELEASED_VARIANTS`) or a records file (with ``metadata``, the built ``metadata.csv``, and ``questions``).
    ``image``: keep one image (its file name).
    """
    import pandas as pd

    if isinstance(variant_or_records, str) and variant_or_records in RELEASED_VARIANTS:
        frame = _released_rows(variant_or_records, data_dir)
    else:
        if metadata is None:
            raise ValueError("element_rows of a records file needs metadata (the built metadata.csv)")
        built = built_frame(variant_or_records, metadata=metadata, questions=questions)
        frame = pd.DataFrame({"image": built["file_name"], "seg_id": built["seg_id"],
                              "question_id": built["question_id"], "question": built["question"],
                              "answer": built["answer"], "expected": built["expected"],
                              "said_wrong": built["said_wrong"], "truly_wrong": built["truly_wrong"]})
        # object, so that "no element" stays None (pandas 3 would read a str column's None back as NaN)
        frame["element"] = pd.Series([e or None for e in built["element"]], index=frame.index, dtype=object)
    if image is not None:
        frame = frame[frame["image"] == str(image)].reset_index(drop=True)
    return frame


def _released_rows(variant: str, data_dir) -> pd.DataFrame:
    import pandas as pd

    from scorers.tables.pandas_tables import read_csv, read_metadata
    from scorers.tables.release_download import paths

    kind = variant.split("_")[1]
    found = paths(["metadata.csv", f"per_question/{variant}.csv", f"{kind}_questions.csv"], data_dir)
    metadata = read_metadata(found["metadata.csv"])
    seg_ids = metadata["seg_id"].to_numpy(dtype=np.int64)
    image, qid, correct = read_released_answers(found[f"per_question/{variant}.csv"], seg_ids)
    answers = read_csv(found[f"per_question/{variant}.csv"], dtype=str, keep_default_na=False)
    table = read_csv(found[f"{kind}_questions.csv"], dtype=str, keep_default_na=False)
    table = table.assign(id=table["id"].astype(np.int64), question_id=table["question_id"].astype(np.int64))
    keyed = table.drop_duplicates(["id", "question_id"]).set_index(["id", "question_id"])
    index = pd.MultiIndex.from_arrays([seg_ids[image], qid])
    head = metadata["error_count"].to_numpy()[image] == 0
    return pd.DataFrame({
        "image": metadata["file_name"].to_numpy()[image], "seg_id": seg_ids[image], "question_id": qid,
        "question": keyed["question"].reindex(index).fillna("").to_numpy(dtype=object),
        "answer": answers["mc_answer"].to_numpy(dtype=object) if "mc_answer" in answers.columns else "",
        "expected": keyed["answer"].reindex(index).fillna("").to_numpy(dtype=object),
        "said_wrong": ~correct, "truly_wrong": np.where(head, False, None).astype(object), "element": None})


def load_element_summary(path, *, metadata=None, questions=None) -> dict:
    """A ``ts2 elements --json`` file read back (checked: ``unit`` is ``fraction``, ``truth`` one of :data:`TRUTHS`,
    every metric a dict), or a records file turned into the built summary (needs ``metadata``)."""
    path = Path(path)
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: not a readable ts2 elements --json file ({error})") from None
        if not isinstance(data, dict) or data.get("unit") != "fraction" or data.get("truth") not in TRUTHS:
            raise ValueError(f"{path}: not a ts2 elements --json file (needs unit 'fraction' and truth one of "
                             f"{', '.join(TRUTHS)})")
        bad = [k for k, v in data.items() if k not in RESERVED and not isinstance(v, dict)]
        if bad:
            raise ValueError(f"{path}: metric {bad[0]!r} is not an object")
        return data
    if metadata is None:
        raise ValueError(f"{path}: a records file needs the built metadata.csv (metadata=...) to know the truth")
    return built_elements(path, metadata=metadata, questions=questions)


# --- two metrics on the same questions ---------------------------------------------------------------------------


def compare_elements(a, b, *, metadata=None, questions=None, data_dir=None, method: str = "mcnemar",
                     n_bootstrap: int = 1000, confidence: float = 0.95, seed: int = 0) -> dict:
    """The paired test (:func:`scorers.stats.element_verdicts.paired_element_test`) of two metrics answered on the
    same questions, as the summary's ``paired`` entry: ``{"a", "b", "on", **test}``.

    * two released variants of one question set (``mplug_tifa`` and ``llava_tifa``): the answers on node-0 images,
      where the expected answer is the truth (``correct`` is the release's matching); rows paired by position, checked
      to name the same SEG and question;
    * two records files (with ``metadata``): the answers whose element is known, ``correct`` = the verdict
      (said wrong or not) equals the truth; paired on (image, question).

    Raises
    ------
    ValueError
        variants of different question sets, or records that share no (image, question).
    """
    import pandas as pd

    from scorers.stats.element_verdicts import paired_element_test

    if isinstance(a, str) and isinstance(b, str) and a in RELEASED_VARIANTS and b in RELEASED_VARIANTS:
        if a.split("_")[1] != b.split("_")[1]:
            raise ValueError(f"--compare {a} {b}: variants answer different question sets (tifa vs dsg); compare "
                             "two of one set")
        from scorers.tables.pandas_tables import read_metadata
        from scorers.tables.release_download import paths

        found = paths(["metadata.csv", f"per_question/{a}.csv", f"per_question/{b}.csv"], data_dir)
        metadata_frame = read_metadata(found["metadata.csv"])
        seg_ids = metadata_frame["seg_id"].to_numpy(dtype=np.int64)
        image_a, qid_a, correct_a = read_released_answers(found[f"per_question/{a}.csv"], seg_ids)
        image_b, qid_b, correct_b = read_released_answers(found[f"per_question/{b}.csv"], seg_ids)
        if image_a.size != image_b.size or (image_a != image_b).any() or (qid_a != qid_b).any():
            raise ValueError(f"--compare {a} {b}: the two files do not answer the same questions row by row")
        head = metadata_frame["error_count"].to_numpy()[image_a] == 0
        correct_a, correct_b, groups, on = correct_a[head], correct_b[head], seg_ids[image_a][head], \
            "answers on node-0 images (expected answer = truth)"
    else:
        if metadata is None:
            raise ValueError("comparing two records files needs the built metadata.csv (--metadata)")
        qtable = read_element_questions(questions) if questions is not None else None
        frames = [built_frame(r, metadata=metadata, questions=qtable) for r in (a, b)]
        cols = ["file_name", "question_id", "seg_id", "said_wrong", "truly_wrong"]
        known = [f.loc[f["truly_wrong"].notna(), cols] for f in frames]
        joined = pd.merge(known[0], known[1][["file_name", "question_id", "said_wrong"]],
                          on=["file_name", "question_id"], suffixes=("_a", "_b"))
        if joined.empty:
            raise ValueError(f"--compare {a} {b}: the records share no (image, question) whose element is known")
        truth = joined["truly_wrong"].to_numpy(dtype=bool)
        correct_a = joined["said_wrong_a"].to_numpy(dtype=bool) == truth
        correct_b = joined["said_wrong_b"].to_numpy(dtype=bool) == truth
        groups, on = joined["seg_id"].to_numpy(), "answers whose element is known (verdict = truth)"
        a, b = metric_name(a), metric_name(b)
    test = paired_element_test(correct_a, correct_b, groups, method=method, n_bootstrap=n_bootstrap,
                               confidence=confidence, seed=seed)
    return {"a": str(a), "b": str(b), "on": on, **test.to_dict()}
