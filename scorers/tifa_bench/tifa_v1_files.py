"""TIFA v1.0 (Hu et al., ICCV 2023): its text inputs and question-answer pairs, read, validated and summarised.

The two public files of the TIFA repository (``Yushi-Hu/tifa``, folder ``tifa_v1.0/``):

* ``tifa_v1.0_text_inputs.json``: a list of ``{"id": "coco_301091", "caption": "...", "coco_val_id": "380711"}``
  (``coco_val_id`` for COCO captions only). The source is the id's prefix: ``coco`` (2,000 captions),
  ``drawbench`` (161), ``partiprompt`` (1,420), ``paintskill`` (500): 4,081 text inputs.
* ``tifa_v1.0_question_answers.json``: a list of ``{"id", "caption", "question", "choices": [...], "answer",
  "element_type", "element"[, "coco_val_id"]}``, several per text id. ``element_type`` is the category (object,
  animal/human, attribute, activity, spatial, location, color, counting, food, material, shape, other).

Pass local paths, or leave them out to download the files pinned in :data:`FILES` once into the Hugging Face cache
(:func:`pinned_path`, through ``scorers.tables.release_download.fetch``: the one place that downloads release files).

A text's questions get ids 0..n-1 in file order. Question rows are checked by the question content rules of TS2's
tables (``scorers.metrics.qga.questions.check_question``: non-blank question and answer, two or more distinct choices...);
an answer outside its choices is kept and logged, as for TS2. Every error names the file, the entry and the text id.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from scorers.errors import ParameterError
from scorers.tables.pandas_tables import read_json_list

__all__ = ["CATEGORIES", "FILES", "REVISION", "SOURCES", "TIFABench", "load_tifa_v1", "pinned_path",
           "read_question_answers", "read_text_inputs", "source_of"]

logger = logging.getLogger(__name__)

#: Commit of ``Yushi-Hu/tifa`` the files are pinned to (the commit at which ``tifa_v1.0_text_inputs.json`` was read
#: for this module; both files were released together on 2023-03-22 and live in the same folder).
REVISION = "5abab2dc3df7a9fa75db88083c20d6feae243512"
_RAW = "https://raw.githubusercontent.com/Yushi-Hu/tifa/{revision}/tifa_v1.0/{name}"
#: name -> (file name, sha256). The text inputs' digest is the same at :data:`REVISION` and at the repository's head.
#: ``None`` = the digest could not be read: trust on first use (``scorers.tables.release`` records the first download's digest
#: beside the cached copy, checks every later read against it, and logs the digest with a warning: paste it here).
FILES: dict[str, tuple[str, str | None]] = {
    "text_inputs": ("tifa_v1.0_text_inputs.json", "650281d508b056ac9782bc84d5493626424ee851a8778af90b9db554cfbc1a0f"),
    "question_answers": ("tifa_v1.0_question_answers.json", None),
}
#: Display names of the sources, in TIFA's Table 4 order.
SOURCES = {"coco": "COCO", "drawbench": "DrawBench", "partiprompt": "PartiPrompt", "paintskill": "PaintSkill"}
#: The 12 element categories of TIFA v1.0, in the paper's order (others found in a file are kept after these).
CATEGORIES = ("object", "animal/human", "attribute", "activity", "spatial", "location", "color", "counting", "food",
              "material", "shape", "other")


def source_of(text_id: str) -> str:
    """``"coco_301091"`` -> ``"coco"``: the text id's prefix before its last underscore."""
    prefix, sep, _ = str(text_id).rpartition("_")
    return prefix if sep and prefix else str(text_id)


def pinned_path(name: str, *, offline: bool | None = None) -> Path:
    """The local copy of pinned file ``name`` (``"text_inputs"`` / ``"question_answers"``), downloaded once.

    Goes through ``scorers.tables.release_download.fetch`` (download into the HF cache, sha256 check, reuse; a clear error when
    offline and not cached; ``offline=None`` follows ``HF_HUB_OFFLINE``). A file pinned in :data:`FILES` must have
    that digest; for one with ``None`` the first download's digest is recorded and every later read is checked
    against it.
    """
    from scorers.tables.release import PinnedFile
    from scorers.tables.release_download import fetch  # the release download module owns every download

    if name not in FILES:
        raise ValueError(f"unknown TIFA v1.0 file {name!r}; choose from {sorted(FILES)}")
    filename, sha256 = FILES[name]
    url = _RAW.format(revision=REVISION, name=filename)
    return fetch(PinnedFile(url=url, sha256=sha256, filename=filename, revision=REVISION), offline=offline)


def _text(entry: dict, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, (str, int)) or not str(value).strip():
        raise ValueError(f"{where}: field {key!r} is missing or blank (got {value!r})")
    return str(value)


def read_text_inputs(path: str | Path) -> pd.DataFrame:
    """``tifa_v1.0_text_inputs.json`` -> one row per text: ``text_id, caption, source, coco_val_id``.

    Ids must be unique and captions non-blank; errors name the file, the entry index and the id.
    """
    rows, seen = [], {}
    for k, entry in enumerate(read_json_list(path, "text input")):
        where = f"{path} entry {k}"
        text_id = _text(entry, "id", where).strip()
        where = f"{where} (id {text_id!r})"
        if text_id in seen:
            raise ValueError(f"{where}: id already used by entry {seen[text_id]}")
        seen[text_id] = k
        rows.append({"text_id": text_id, "caption": _text(entry, "caption", where), "source": source_of(text_id),
                     "coco_val_id": str(entry.get("coco_val_id") or "")})
    return pd.DataFrame(rows, columns=["text_id", "caption", "source", "coco_val_id"])


def read_question_answers(path: str | Path, texts: pd.DataFrame | None = None) -> pd.DataFrame:
    """``tifa_v1.0_question_answers.json`` -> one row per question: ``text_id, question_id, caption, question,
    choices`` (list), ``answer, element, category``; ``question_id`` is 0..n-1 per text in file order.

    With ``texts`` (:func:`read_text_inputs`), every question's id must be one of theirs. A choice list that repeats
    a choice is de-duplicated (order kept; the nearest-choice match and the score are unchanged) and logged.
    """
    known = None if texts is None else set(texts["text_id"])
    rows, counts, deduplicated = [], {}, []
    for k, entry in enumerate(read_json_list(path, "question-answer")):
        where = f"{path} entry {k}"
        text_id = _text(entry, "id", where).strip()
        where = f"{where} (id {text_id!r})"
        if known is not None and text_id not in known:
            raise ValueError(f"{where}: id is not among the text inputs")
        choices = entry.get("choices")
        if not isinstance(choices, list) or not all(isinstance(c, (str, int, float)) for c in choices):
            raise ValueError(f"{where}: 'choices' must be a list of strings, got {choices!r}")
        choices = [str(c) for c in choices]
        unique = list(dict.fromkeys(c.strip() for c in choices))
        if len(unique) != len(choices):
            deduplicated.append(f"entry {k} ({text_id})")
        if any("|" in c for c in unique):
            raise ValueError(f"{where}: a choice contains '|', which question tables use as separator: {choices!r}")
        question_id = counts.get(text_id, 0)
        counts[text_id] = question_id + 1
        rows.append({"text_id": text_id, "question_id": question_id, "caption": str(entry.get("caption") or ""),
                     "question": _text(entry, "question", where), "choices": unique,
                     "answer": _text(entry, "answer", where), "element": str(entry.get("element") or ""),
                     "category": str(entry.get("element_type") or "").strip()})
    if deduplicated:
        logger.warning("%s: %d question(s) list a choice twice (de-duplicated): %s", path, len(deduplicated),
                       "; ".join(deduplicated[:10]) + (" ..." if len(deduplicated) > 10 else ""))
    frame = pd.DataFrame(rows, columns=["text_id", "question_id", "caption", "question", "choices", "answer",
                                        "element", "category"])
    _validate(frame, str(path))
    return frame


def _validate(frame: pd.DataFrame, source: str) -> None:
    """The question content rules of TS2's tables (:func:`scorers.metrics.qga.questions.check_question`: non-blank question
    and answer, two or more distinct choices), each error labelled the TIFA way: file, entry (the JSON list index,
    row k of ``frame``), text id and question id. An answer outside its choices is kept and logged."""
    from scorers.metrics.qga.questions import check_question

    off_choice = []
    for k, (text_id, question_id, question, choices, answer) in enumerate(zip(
            frame["text_id"], frame["question_id"], frame["question"], frame["choices"], frame["answer"])):
        where = f"{source} entry {k} (id {text_id!r}) question {question_id}"
        if not check_question(question, "|".join(choices), answer, where=where)[1]:
            off_choice.append(f"entry {k} ({text_id} q{question_id}: {answer!r})")
    if off_choice:
        logger.warning("%s: %d answer(s) are not among their choices (kept as released): %s", source,
                       len(off_choice), "; ".join(off_choice[:10]) + (" ..." if len(off_choice) > 10 else ""))


@dataclass
class TIFABench:
    """TIFA v1.0 (or a subset): ``texts`` (one row per text input) and ``questions`` (one row per question)."""

    texts: pd.DataFrame
    questions: pd.DataFrame
    source: str = "<memory>"

    @property
    def text_ids(self) -> list[str]:
        return list(self.texts["text_id"])

    def subset(self, text_ids) -> "TIFABench":
        """The texts ``text_ids`` (in the bench's order) and their questions."""
        wanted = set(text_ids)
        unknown = sorted(wanted - set(self.texts["text_id"]))
        if unknown:
            raise ValueError(f"unknown text id(s) {unknown[:5]}")
        return TIFABench(self.texts[self.texts["text_id"].isin(wanted)].reset_index(drop=True),
                         self.questions[self.questions["text_id"].isin(wanted)].reset_index(drop=True), self.source)

    def text_digests(self) -> dict[str, str]:
        """Per text id, a sha256 (16 hex digits) of its questions as scored (ids, questions, choices, answers): part
        of each scored image's cache key, so an edited question is asked again, while scoring a subset first and
        the full benchmark later reuses every finished image."""
        columns = ["question_id", "question", "choices", "answer"]
        out = {}
        for text_id, group in self.questions.groupby("text_id", sort=False):
            payload = json.dumps(group[columns].to_dict("split")["data"], ensure_ascii=False, default=str)
            out[str(text_id)] = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
        return out

    def question_set(self):
        """The questions as a :class:`scorers.metrics.qga.questions.QuestionSet` whose "SEG ids" are text positions
        (``texts`` row numbers), each text's questions in id order, with ``element``/``category`` kept."""
        from scorers.metrics.qga.questions import Question, QuestionSet

        position = {t: i for i, t in enumerate(self.texts["text_id"])}
        captions = dict(zip(self.texts["text_id"], self.texts["caption"]))
        by_seg: dict[int, list] = {}
        for row in self.questions.to_dict("records"):
            seg = position[row["text_id"]]
            by_seg.setdefault(seg, []).append(Question(
                seg, int(row["question_id"]), row["question"].strip(), tuple(row["choices"]), row["answer"].strip(),
                prompt=captions[row["text_id"]], element=row["element"], category=row["category"]))
        return QuestionSet(by_seg, kind="tifa", source=str(self.source))

    def write_question_table(self, path: str | Path) -> Path:
        """The questions as a TS2-layout question CSV (``id`` = text position, ``prompt`` = caption, ``choices``
        ``|``-joined, + ``element``/``category``): what ``ts2 score tifa --option questions=...`` and the
        ``evaluate_modules/tifa_score`` module read. They look questions up by caption, so captions must differ."""
        path = Path(path)
        self.question_set().to_frame().to_csv(path, index=False)
        return path

    def stats(self) -> dict[str, Any]:
        """Counts: prompts per source, questions, questions per category, distinct elements per category, texts
        without questions. Keys follow :data:`SOURCES` / :data:`CATEGORIES` order, unknown ones after."""
        per_source = self.texts["source"].value_counts()
        questions = self.questions
        per_category = questions["category"].value_counts()
        elements = questions.assign(element=questions["element"].str.strip().str.lower()).drop_duplicates(
            ["text_id", "category", "element"])["category"].value_counts()
        with_questions = set(questions["text_id"])
        return {
            "prompts": int(len(self.texts)),
            "prompts_per_source": _ordered(per_source, SOURCES),
            "questions": int(len(questions)),
            "questions_per_category": _ordered(per_category, CATEGORIES),
            "elements_per_category": _ordered(elements, CATEGORIES),
            "texts_without_questions": [t for t in self.texts["text_id"] if t not in with_questions],
        }

    def export_parquet(self, out: str | Path, *, overwrite: bool = False) -> dict[str, Path]:
        """``OUT/texts/train-00000-of-00001.parquet`` and ``OUT/questions/...`` plus a ``README.md`` whose YAML
        ``configs`` make ``datasets.load_dataset(OUT, "questions")`` work (the layout of ``ts2 dataset export``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = Path(out)
        if out.exists() and any(out.iterdir()) and not overwrite:
            raise ParameterError("{out} is not empty; pass {overwrite=True} to replace the export there", out=out)
        paths = {}
        for config, frame in (("texts", self.texts), ("questions", self.questions)):
            folder = out / config
            folder.mkdir(parents=True, exist_ok=True)
            paths[config] = folder / "train-00000-of-00001.parquet"
            pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), paths[config])
        paths["readme"] = out / "README.md"
        paths["readme"].write_text(_CARD.format(revision=REVISION), encoding="utf-8")
        return paths


def _ordered(counts: pd.Series, order) -> dict[str, int]:
    keys = [k for k in order if k in counts.index] + sorted(k for k in counts.index if k not in order)
    return {str(k): int(counts[k]) for k in keys}


def load_tifa_v1(text_inputs: str | Path | None = None, question_answers: str | Path | None = None, *,
                 offline: bool | None = None, require_questions: bool = True) -> TIFABench:
    """TIFA v1.0 from local files, or (paths left out) from the pinned files, downloaded once.

    ``require_questions=False`` allows a bench without its question file (``stats`` on the text inputs alone).
    """
    texts_path = Path(text_inputs) if text_inputs else pinned_path("text_inputs", offline=offline)
    texts = read_text_inputs(texts_path)
    source = str(texts_path)
    if question_answers is None and not require_questions:
        questions = pd.DataFrame(columns=["text_id", "question_id", "caption", "question", "choices", "answer",
                                          "element", "category"])
    else:
        qa_path = Path(question_answers) if question_answers else pinned_path("question_answers", offline=offline)
        questions = read_question_answers(qa_path, texts)
        source = str(qa_path)
    return TIFABench(texts, questions, source=source)


_CARD = """---
configs:
- config_name: texts
  default: true
  data_files:
  - split: train
    path: texts/train-*.parquet
- config_name: questions
  data_files:
  - split: train
    path: questions/train-*.parquet
---

# TIFA v1.0

Text inputs and GPT-3 question-answer pairs of TIFA v1.0 (Hu et al., "TIFA: Accurate and Interpretable
Text-to-Image Faithfulness Evaluation with Question Answering", ICCV 2023), from `github.com/Yushi-Hu/tifa` at
commit `{revision}`, exported by `ts2 tifa-bench export`.

* `texts`: `text_id`, `caption`, `source` (coco, drawbench, partiprompt, paintskill), `coco_val_id`.
* `questions`: `text_id`, `question_id` (0..n-1 per text, file order), `caption`, `question`, `choices`, `answer`,
  `element`, `category` (the release's `element_type`).
"""
