"""EvalMuse-40K's per-element human labels as the truth of element verdicts (``ts2 elements --set evalmuse``).

EvalMuse's ``train_list.json`` (:data:`scorers.sets.ratings.EVALMUSE_TRAIN`) holds per image ``total_score`` (one
overall score per rater) and ``element_score``: a *string* holding a Python dict ``{element: [one label per rater]}``,
each element written ``"name (category)"`` (``"dog (animal)"``, ``"red (color)"``). The reading and the rule follow
EvalMuse's own code (read in the repository ``2kxx/EvalMuse``, a copy of the official code):

* ``process/process_train.py``: ``ast.literal_eval(item["element_score"])``, each element's labels averaged
  (``round(np.mean(values), 6)``), ``total_score`` averaged;
* ``eval.py``: ``binarize`` (``1 if x >= 0.5 else 0``) applied to the true and the predicted element scores, and
  ``calculate_accuracy`` = the fraction of elements whose binarised values agree: the element accuracy EvalMuse reports;
  a metric's output there is a JSON list of ``{prompt, img_path, total_score, element_score: {element: score}}``
  (``element.rpartition('(')[0]`` is the element's name, the rest its category).

An element is *wrong* in an image when its mean label is below 0.5; a metric *says* it is wrong when its score is below
0.5; the probability of "wrong" is 1 - score. Intervals resample prompts (``prompt_id``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from scorers.sets.set_files import SetFormatError, read_json_entries

__all__ = ["THRESHOLD", "element_category", "evalmuse_elements", "read_element_predictions", "read_evalmuse_elements"]

#: EvalMuse's binarisation threshold (``eval.py``: ``1 if x >= 0.5 else 0``)
THRESHOLD = 0.5


def element_category(element: str) -> str:
    """The category of an EvalMuse element ``"name (category)"`` (``""`` when it names none).

    Examples:
        >>> element_category("red (color)"), element_category("a dog")
        ('color', '')
    """
    head, paren, tail = str(element).rpartition("(")
    return tail.rstrip().rstrip(")").strip() if paren and head.strip() else ""


def _element_dict(value, where: str) -> dict:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise SetFormatError(f"{where}: element_score is not a dict literal ({value[:60]!r})") from None
    if not isinstance(value, dict):
        raise SetFormatError(f"{where}: element_score must be a dict of element -> labels, got "
                             f"{type(value).__name__}")
    return value


def _numbers(values, where: str) -> list[float]:
    values = values if isinstance(values, (list, tuple)) else [values]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise SetFormatError(f"{where}: labels must be a number or a list of numbers, got {values!r}")
    return [float(v) for v in values]


def read_evalmuse_elements(path: str | Path):
    """One row per (image, element) of an EvalMuse ``train_list.json`` (or a file of its layout): ``item``
    (``prompt_id``), ``image`` (``img_path``), ``element``, ``category``, ``label`` (the mean of the raters' labels,
    rounded to 6 places as ``process_train.py`` does), ``n_raters``, ``truly_wrong`` (``label < 0.5``) and
    ``human_total`` (the mean ``total_score``).

    Raises
    ------
    SetFormatError
        an entry without ``prompt_id`` / ``img_path`` / ``element_score``, an unreadable ``element_score``, labels that
        are not numbers (naming the entry and the element).
    """
    import pandas as pd

    rows = []
    for k, entry in enumerate(read_json_entries(path, "EvalMuse entries")):
        where = f"{path}: entry {k}"
        missing = [c for c in ("prompt_id", "img_path", "element_score") if c not in entry]
        if missing:
            raise SetFormatError(f"{where}: missing {', '.join(missing)} (an annotated EvalMuse entry has prompt_id, "
                                 "prompt, img_path, total_score, element_score)")
        total = entry.get("total_score")
        human_total = float(np.mean(_numbers(total, f"{where} total_score"))) if total is not None else np.nan
        for element, labels in _element_dict(entry["element_score"], where).items():
            values = _numbers(labels, f"{where} element {element!r}")
            label = round(float(np.mean(values)), 6)
            rows.append({"item": str(entry["prompt_id"]), "image": str(entry["img_path"]), "element": str(element),
                         "category": element_category(element), "label": label, "n_raters": len(values),
                         "truly_wrong": label < THRESHOLD, "human_total": human_total})
    if not rows:
        raise SetFormatError(f"{path}: no element labels")
    return pd.DataFrame(rows)


def read_element_predictions(path: str | Path):
    """A metric's element scores in the layout EvalMuse's ``eval.py`` writes (a JSON list of ``{img_path,
    element_score: {element: score}}``) or a CSV ``img_path, element, score``: one row per (image, element) with
    ``image``, ``element``, ``score`` (in [0, 1])."""
    import pandas as pd

    from scorers.tables.pandas_tables import read_csv

    path = Path(path)
    if path.suffix == ".json":
        rows = []
        for k, entry in enumerate(read_json_entries(path, "element predictions")):
            if "img_path" not in entry or "element_score" not in entry:
                raise SetFormatError(f"{path}: entry {k}: needs img_path and element_score (the layout EvalMuse's "
                                     "eval.py writes)")
            for element, score in _element_dict(entry["element_score"], f"{path}: entry {k}").items():
                value = _numbers(score, f"{path}: entry {k} element {element!r}")[0]
                rows.append({"image": str(entry["img_path"]), "element": str(element), "score": value, "line": k})
        frame = pd.DataFrame(rows, columns=["image", "element", "score", "line"])
    else:
        frame = read_csv(path)
        missing = [c for c in ("img_path", "element", "score") if c not in frame.columns]
        if missing:
            raise SetFormatError(f"{path}: missing column(s) {', '.join(missing)}; element predictions are img_path, "
                                 "element, score")
        frame = pd.DataFrame({"image": frame["img_path"].astype(str), "element": frame["element"].astype(str),
                              "score": pd.to_numeric(frame["score"], errors="coerce"),
                              "line": np.arange(2, len(frame) + 2)})
    bad = frame["score"].isna() | (frame["score"] < 0) | (frame["score"] > 1)
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise SetFormatError(f"{path}: entry/line {frame['line'].iloc[k]}: element {frame['element'].iloc[k]!r} "
                             f"score must be a number in [0, 1], got {frame['score'].iloc[k]!r}")
    return frame


def _match_images(predicted, labelled) -> np.ndarray:
    """Each predicted image path's labelled ``img_path``: equal, or ending in ``/img_path`` (``eval.py`` joins the
    dataset folder in front)."""
    known = set(labelled)
    out = []
    for image in predicted:
        if image in known:
            out.append(image)
            continue
        parts = image.replace("\\", "/").split("/")
        match = next(("/".join(parts[i:]) for i in range(1, len(parts)) if "/".join(parts[i:]) in known), None)
        out.append(match)
    return np.asarray(out, dtype=object)


def evalmuse_elements(records_or_path, *, evalmuse=None, name: str | None = None, n_bootstrap: int = 1000,
                      confidence: float = 0.95, seed: int = 0, offline: bool | None = None) -> dict:
    """The EvalMuse summary of one metric's element scores (``records_or_path``: a file for
    :func:`read_element_predictions`, or its frame): EvalMuse's ``element_accuracy`` and the detection figures
    (:func:`scorers.stats.element_verdicts.element_detection`) overall and per element category, intervals over
    prompts. ``evalmuse``: the labelled ``train_list.json`` (default: the pinned Hub file).

    Raises
    ------
    ValueError
        a predicted (image, element) that the labels do not have (naming it).
    """
    import pandas as pd

    from scorers.json_safe import json_float
    from scorers.stats.element_verdicts import element_detection
    from scorers.ts2.elements import metric_name, summary_header

    if evalmuse is None:
        from scorers.sets.ratings import EVALMUSE_TRAIN
        from scorers.sets.set_files import fetch_hub

        evalmuse = fetch_hub(EVALMUSE_TRAIN, offline=offline)
    labels = evalmuse if isinstance(evalmuse, pd.DataFrame) else read_evalmuse_elements(evalmuse)
    predicted = (records_or_path if isinstance(records_or_path, pd.DataFrame)
                 else read_element_predictions(records_or_path))
    predicted = predicted.assign(image=_match_images(predicted["image"].tolist(), labels["image"].unique()))
    joined = predicted.merge(labels, on=["image", "element"], how="left", indicator=True)
    lost = joined["_merge"] != "both"
    if lost.any():
        k = int(np.flatnonzero(lost.to_numpy())[0])
        raise ValueError(f"{records_or_path}: entry/line {joined['line'].iloc[k]}: element "
                         f"{joined['element'].iloc[k]!r} of image {predicted['image'].iloc[k]!r} has no EvalMuse label")
    said = (joined["score"].to_numpy(dtype=np.float64) < THRESHOLD)
    truth = joined["truly_wrong"].to_numpy(dtype=bool)
    prob = 1.0 - joined["score"].to_numpy(dtype=np.float64)
    kw = dict(n_bootstrap=n_bootstrap, confidence=confidence, seed=seed)
    items = joined["item"].to_numpy()

    def figure(mask) -> dict:
        return element_detection(said[mask], truth[mask], items[mask], prob_wrong=prob[mask], **kw).to_dict()

    everything = np.ones(len(joined), dtype=bool)
    overall = figure(everything)
    low, high = overall["intervals"].get("accuracy", [None, None])
    categories = joined["category"].to_numpy(dtype=object)
    out = summary_header("evalmuse", n_bootstrap=n_bootstrap, confidence=confidence, over="prompts")
    key = name or (metric_name(records_or_path) if not isinstance(records_or_path, pd.DataFrame) else "metric")
    out[key] = {
        "element_accuracy": {"accuracy": json_float(overall["accuracy"]), "n": overall["n"], "low": low,
                             "high": high},
        "detection": {"overall": overall,
                      "by_type": {c: figure(categories == c) for c in sorted({c for c in categories if c})}},
    }
    return out
