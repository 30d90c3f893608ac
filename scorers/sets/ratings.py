"""Rating sets: per-image human ratings next to metric scores, read into one frame (for
:mod:`scorers.stats.correlation` and the card).

Canonical columns: ``item`` (the prompt id: images of one prompt form a group), ``system`` (the T2I model),
``prompt``, one column per human rater (``human_1``, ``human_2``...) and one column per metric. Sources:

* a generic CSV or Parquet file with those (or any) columns -- name them with ``--human/--metric/--item-col``;
* TIFA160 (Hu et al., 2023): the TIFA repository's ``human_annotations/human_annotations_with_scores.json``, a JSON
  object keyed by image (``"<text_id>_<model>"``) whose values hold ``text_id``, ``image_path``, ``text``,
  ``human_scores`` (two 1-5 Likert ratings), ``human_avg`` and reference metric scores (``clipscore_vitb32``,
  ``tifa_mplug-large``...). 800 images = 160 prompts x 5 models. :func:`fetch_tifa160` downloads it once from a URL
  pinned at a commit and checked against its sha256 through ``scorers.tables.release_download.fetch`` (cache
  ``$HF_HOME/ts2-evaluate/<sha256>/``;
  ``--offline`` / ``HF_HUB_OFFLINE=1``: cache only);
* GenAI-Bench (Li et al., 2024), ``BaiqiL/GenAI-Bench`` on the Hub: a Parquet table with ``Index``, ``Prompt`` and a
  ``HumanRatings`` struct ``{model: [rating, ...]}`` (1-5 Likert, several raters) beside one image column per model.
  :func:`read_genai_bench` reads only those three columns (the images are never decoded) and returns one row per
  (prompt, model); join your metric's scores on ``item`` + ``system``. This is the layout of the dataset card at
  revision ``790172e`` (``dataset_info``); earlier revisions stored ``<model>_HumanRating`` columns instead, which
  this reader refuses with a message naming the columns it found.

The sets of the card's registry are read into the rating table ``item, system, image, prompt, human``:

* EvalMuse-40K (Han et al., 2024), Hub dataset ``DY-Evalab/EvalMuse``: ``train_list.json`` is a JSON list of
  ``{prompt_id, prompt, type, img_path, total_score: [per-annotator overall alignment scores], element_score
  (a string holding a dict), promt_meaningless, split_confidence, attribute_confidence, fidelity_label}``. ``human``
  = the mean of ``total_score`` (as the official ``process/process_train.py`` averages it); ``item`` = ``prompt_id``.
  The rows name no T2I model, so ``system`` is empty: group by ``item``. ``test.json`` holds the test prompts and
  images; its card says the annotations "will be available later", so reading it without ``total_score`` is refused.
* Gecko2K (Wiles et al., ICLR 2025): the pinned repository ``google-deepmind/gecko_benchmark_t2i`` releases the
  prompt set (``prompts.csv``: ``prompt_id``, ``prompt``, ``prompt_type`` Gecko(R)/Gecko(S), ``dataset_id``,
  reliability flags ``max_disagreement_less_X``); its ``DATABASE.md`` says the images and human annotations are still
  to come ("Working on."). :func:`load_gecko2k` reads the prompts (pinned download through ``release_download.fetch``) and,
  when you have ratings, joins a ratings table you give in this project's own long layout
  (``prompt_id, system, image, human``: not a Gecko file format) on ``prompt_id``.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from scorers.checks import as_scores
from scorers.errors import Wording
from scorers.tables.pandas_tables import check_unique_header, read_csv
from scorers.tables.release import PinnedFile
from scorers.tables.release_download import fetch
from scorers.sets.set_files import (HubFile, SetFormatError, SetImagesUnavailable, check_columns, check_ratings, fetch_hub,
                                  provenance, read_json_entries)

__all__ = ["EVALMUSE_TRAIN", "GECKO_PROMPTS", "TIFA160", "fetch_tifa160", "tifa160_unavailable", "load_evalmuse", "load_gecko2k",
           "load_genai_bench", "load_tifa160", "read_evalmuse", "read_genai_bench", "read_gecko_prompts",
           "read_ratings", "read_tifa_annotations"]


#: TIFA160 human ratings + reference metric scores, at the commit of the TIFA repository that holds them, with the
#: sha256 of that file (``release_download.fetch`` refuses any other content).
TIFA160 = PinnedFile(
    url="https://raw.githubusercontent.com/Yushi-Hu/tifa/d20b20066a593183f3436ce5cbff33982bb8d02f/"
        "human_annotations/human_annotations_with_scores.json",
    sha256="1720bb802c3c0821dd56df0d8c20a1214ff5085d7e5d9236a75736b1d39b7b3c",
    filename="human_annotations_with_scores.json",
    revision="d20b20066a593183f3436ce5cbff33982bb8d02f",
)
_TIFA_KEYS = ("text_id", "image_path", "text", "human_scores", "human_avg")


def fetch_tifa160(*, offline: bool | None = None, cache_dir: str | Path | None = None,
                  source: PinnedFile | None = None) -> Path:
    """The TIFA160 ratings file (see :data:`TIFA160`), downloaded once by ``scorers.tables.release_download.fetch`` (the one download
    path: cache, digest check, ``offline`` = cache only, default ``HF_HUB_OFFLINE``). When it can be had neither from
    the cache nor by download, the error names the file, where to get it and how to pass it (TIFA160 is not a TS2
    release file: ``$TS2_DATA`` and ``ts2 release fetch`` do not provide it)."""
    from scorers.tables.release import ReleaseFileUnavailable

    file = source or TIFA160
    try:
        return fetch(file, offline=offline, cache_dir=cache_dir, progress=False)
    except ReleaseFileUnavailable as error:
        raise ReleaseFileUnavailable(tifa160_unavailable(file, error)) from None


def tifa160_unavailable(file: PinnedFile, error: Exception) -> str:
    """One line for a TIFA160 ratings file that cannot be had: why (the first clause of ``error``), the file, where it
    comes from and how to pass a local copy."""
    text = " ".join(str(error).split())
    if "forbids downloading" in text:
        why = "not cached, and offline mode (offline=True or HF_HUB_OFFLINE=1) forbids downloading it"
    else:
        why = text.split(" Fix:")[0].removeprefix(f"{file.filename}: ").rstrip(".")
    return (f"the TIFA160 ratings file {file.filename} is not available here ({why}); it is not a TS2 release file "
            f"(TS2_DATA and `ts2 release fetch` do not provide it): download it from {file.url}"
            + (f" (sha256 {file.sha256[:12]}...)" if file.sha256 else "")
            + " and give its path in place of the name tifa160 (ts2 card --ratings tifa160=PATH, ts2 correlate "
            "PATH), or run once with network access to cache it")


def read_tifa_annotations(path: str | Path) -> pd.DataFrame:
    """TIFA's ``human_annotations_with_scores.json`` (or ``human_annotations.json``) as a canonical frame.

    One row per image: ``item`` (text_id), ``system`` (the image key without its ``<text_id>_`` prefix, e.g.
    ``stable_diffusion_v1_5``), ``image``, ``prompt``, ``human_1``... (one column per rating in ``human_scores``),
    ``human_avg`` and every other numeric field as a metric column.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(payload, dict) or not payload:
        raise ValueError(f"{path}: expected a JSON object keyed by image, as TIFA's human_annotations files are")
    rows = []
    n_raters = 0
    for key, entry in payload.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: entry {key!r} is not an object")
        missing = [k for k in ("text_id", "human_scores") if k not in entry]
        if missing:
            raise ValueError(f"{path}: entry {key!r} has no {', '.join(missing)}")
        text_id = str(entry["text_id"])
        scores = entry["human_scores"]
        if not isinstance(scores, list) or not scores:
            raise ValueError(f"{path}: entry {key!r}: human_scores must be a non-empty list, got {scores!r}")
        prefix = text_id + "_"
        system = key[len(prefix):] if key.startswith(prefix) else Path(str(entry.get("image_path", key))).stem
        row = {"item": text_id, "system": system, "image": entry.get("image_path", ""), "prompt": entry.get("text", "")}
        for k, rating in enumerate(scores, start=1):
            row[f"human_{k}"] = rating
        n_raters = max(n_raters, len(scores))
        if "human_avg" in entry:
            row["human_avg"] = entry["human_avg"]
        for name, value in entry.items():
            if name not in _TIFA_KEYS and not isinstance(value, (list, dict, str)):
                row[name] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    numeric = [c for c in frame.columns if c not in ("item", "system", "image", "prompt")]
    for column in numeric:
        frame[column] = as_scores(frame[column].tolist(), name=f"{path.name}: {column}")
    return frame


def load_tifa160(path: str | Path | None = None, *, offline: bool | None = None):
    """TIFA160 (:data:`TIFA160`) as ``(ratings, provenance)``; ``path`` reads a local copy."""
    local = Path(path) if path is not None else fetch_tifa160(offline=offline)
    if not local.is_file():
        raise FileNotFoundError(f"{local}: no such file")
    prov = provenance(TIFA160.url if path is None else str(local), TIFA160.revision if path is None else None,
                      local, "see the TIFA repository (Yushi-Hu/tifa)", pinned_sha256=TIFA160.sha256,
                      local=path is not None)
    return read_tifa_annotations(local), prov


def load_genai_bench(path: str | Path | None = None, *, offline: bool | None = None):
    """GenAI-Bench's Parquet file (ratings and images in one table; not downloaded here) as ``(ratings,
    provenance)``, each rating row's ``image`` named ``<file>#<row>/<system>``: the image column of the model in the
    row of the prompt's ``Index``, as MJ-Bench's embedded images are named. ``offline`` has nothing to download."""
    import pyarrow.parquet as pq

    if path is None:
        raise SetImagesUnavailable(Wording("genai_bench: give the GenAI-Bench Parquet file (the Hub dataset "
                                           "BaiqiL/GenAI-Bench, ratings and images in one table) with "
                                           "{set_file=FILE}"))
    local = Path(path)
    if not local.is_file():
        raise FileNotFoundError(f"{local}: no such file")
    table = read_genai_bench(local)
    prov = provenance(str(local), None, local, "see the dataset card", pinned_sha256=None, local=True)
    index = [str(i) for i in pq.read_table(local, columns=["Index"]).column("Index").to_pylist()]
    row_of = {i: r for r, i in enumerate(index)}
    table.insert(3, "image", [f"{local.name}#{row_of[item]}/{system}"
                              for item, system in zip(table["item"], table["system"])])
    return table, prov


def read_genai_bench(path: str | Path) -> pd.DataFrame:
    """GenAI-Bench's Parquet (``Index``, ``Prompt``, ``HumanRatings`` struct of rating lists per model) as a canonical
    long frame: one row per (prompt, model) with ``item``, ``prompt``, ``system`` and ``human_1``... Image columns
    are not read."""
    import pyarrow.parquet as pq

    path = Path(path)
    schema = pq.read_schema(path)
    needed = ["Index", "Prompt", "HumanRatings"]
    missing = [c for c in needed if c not in schema.names]
    if missing:
        raise ValueError(f"{path}: not a GenAI-Bench table: missing column(s) {missing} (has {schema.names})")
    table = pq.read_table(path, columns=needed).to_pylist()
    rows = []
    for position, record in enumerate(table):
        ratings = record["HumanRatings"]
        if not isinstance(ratings, dict):
            raise ValueError(f"{path}: row {position}: HumanRatings must be a struct {{model: [ratings]}}")
        for model, values in ratings.items():
            if values is None:
                continue
            row = {"item": str(record["Index"]), "prompt": record["Prompt"], "system": model}
            for k, rating in enumerate(values, start=1):
                row[f"human_{k}"] = float(rating)
            rows.append(row)
    return pd.DataFrame(rows)


def read_ratings(source: str | Path, *, offline: bool | None = None) -> pd.DataFrame:
    """A rating set by name or path: ``tifa160`` (downloaded once), a TIFA-format ``.json``, a GenAI-Bench
    ``.parquet`` (has ``HumanRatings``), or any ``.csv`` / ``.parquet`` table."""
    if str(source).lower() == "tifa160":
        return read_tifa_annotations(fetch_tifa160(offline=offline))
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"ratings file {path} not found (or use the name 'tifa160')")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return read_tifa_annotations(path)
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        names = pq.read_schema(path).names
        check_unique_header(path, names)
        if "HumanRatings" in names:
            return read_genai_bench(path)
        return pd.read_parquet(path)
    if suffix in (".csv", ".tsv", ".txt"):
        return read_csv(path, sep="\t" if suffix == ".tsv" else ",", keep_default_na=True)
    raise ValueError(f"{path}: unknown ratings format {suffix!r}; expected .csv, .tsv, .parquet or TIFA .json")


EVALMUSE_TRAIN = HubFile(
    "DY-Evalab/EvalMuse", "fd2087b4bde6486ee1358a4ee546e3ee6c1860a6", "train_list.json",
    licence="BSD-3-Clause (Hub dataset licence)",
    sha256="a3ea6941fd5f727a81fc2bbdd6d2360726c6fdd3d8546213b6a43ae46a26bf86",
    note="revision: the Hub tree at commit fd2087b ('Update README.md'), where train_list.json (44.6 MB) was last "
         "changed by 'modify the train_list.json'; sha256: the Git LFS pointer of that version as the file page "
         "of main shows it (commit 9015c8e, same message and size). A different file at this revision is refused")
#: Gecko2K prompts at a commit of the official repository; digest not readable here, so trust on first use
#: (``release_download.fetch`` records the first download's sha256 and refuses any other content later).
GECKO_PROMPTS = PinnedFile(
    url="https://raw.githubusercontent.com/google-deepmind/gecko_benchmark_t2i/"
        "84eda5c42188f639108b579ec98843b9bea2046a/prompts.csv",
    sha256=None, filename="gecko_prompts.csv", revision="84eda5c42188f639108b579ec98843b9bea2046a")
GECKO_LICENCE = "CC-BY-4.0 (materials; code Apache-2.0), per the repository README"


def read_evalmuse(path: str | Path):
    """EvalMuse's ``train_list.json`` (or a file of the same layout) as rating rows, plus ``n_raters`` and
    ``prompt_type`` (the ``type`` field)."""
    import pandas as pd

    path = Path(path)
    payload = read_json_entries(path, "EvalMuse entries")
    rows = []
    for k, entry in enumerate(payload):
        check_columns(entry.keys(), ("prompt_id", "prompt", "img_path", "total_score"), f"{path}: entry {k}",
                      "an annotated EvalMuse entry (test.json has no annotations yet)")
        scores = entry["total_score"]
        scores = scores if isinstance(scores, list) else [scores]
        if not scores or not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
            raise SetFormatError(f"{path}: entry {k}: total_score must be a number or a list of numbers, "
                                 f"got {entry['total_score']!r}")
        rows.append({"item": str(entry["prompt_id"]), "system": "", "image": str(entry["img_path"]),
                     "prompt": entry["prompt"], "human": float(np.mean(scores)), "n_raters": len(scores),
                     "prompt_type": entry.get("type")})
    return check_ratings(pd.DataFrame(rows), str(path))


def load_evalmuse(path: str | Path | None = None, *, offline: bool | None = None, cache_dir=None):
    """EvalMuse-40K ratings (:data:`EVALMUSE_TRAIN`) as ``(ratings, provenance)``; ``path`` reads a local copy."""
    local = Path(path) if path is not None else fetch_hub(EVALMUSE_TRAIN, offline=offline, cache_dir=cache_dir)
    if not local.is_file():
        raise FileNotFoundError(f"{local}: no such file")
    source = f"hf://datasets/{EVALMUSE_TRAIN.repo_id}/{EVALMUSE_TRAIN.filename}" if path is None else str(local)
    return read_evalmuse(local), provenance(source, EVALMUSE_TRAIN.revision if path is None else None, local,
                                            EVALMUSE_TRAIN.licence, pinned_sha256=EVALMUSE_TRAIN.sha256,
                                            note=EVALMUSE_TRAIN.note, local=path is not None)


def read_gecko_prompts(path: str | Path):
    """Gecko's ``prompts.csv`` (``prompt_id``, ``prompt``, ``prompt_type``, ...) as a frame, ``prompt_id`` as str."""
    path = Path(path)
    try:
        frame = read_csv(path, dtype={"prompt_id": str})
    except ValueError as error:  # read_csv's CSVReadError: not UTF-8, not CSV, a duplicated header name
        raise SetFormatError(str(error)) from None
    check_columns(frame.columns, ("prompt_id", "prompt", "prompt_type"), str(path), "Gecko's prompts.csv")
    return frame.drop(columns=[c for c in frame.columns if c.startswith("Unnamed")])


def load_gecko2k(ratings: str | Path | None = None, *, prompts: str | Path | None = None,
                 offline: bool | None = None, cache_dir=None, source: PinnedFile | None = None):
    """Gecko2K as ``(table, provenance)``. Without ``ratings``: the prompt set with ``human`` NaN (the human
    annotations are not released at the pinned commit). With ``ratings`` (a CSV/Parquet with ``prompt_id, system,
    image, human``): one rating row per image, prompts joined from ``prompts.csv``; a ``prompt_id`` absent from the
    prompt set is refused."""
    import pandas as pd

    file = source or GECKO_PROMPTS
    local = Path(prompts) if prompts is not None else fetch(file, offline=offline, cache_dir=cache_dir,
                                                             progress=False)
    table = read_gecko_prompts(local)
    prov = provenance(file.url if prompts is None else str(local), file.revision if prompts is None else None,
                      local, GECKO_LICENCE, pinned_sha256=file.sha256, local=prompts is not None,
                      note="prompts only at this commit; human ratings: the file given as ratings=")
    if ratings is None:
        frame = table.rename(columns={"prompt_id": "item"}).assign(system="", image="", human=np.nan)
        return check_ratings(frame, str(local)), prov
    rpath = Path(ratings)
    given = pd.read_parquet(rpath) if rpath.suffix.lower() in (".parquet", ".pq") else read_csv(
        rpath, dtype={"prompt_id": str})
    check_unique_header(rpath, given.columns)
    check_columns(given.columns, ("prompt_id", "system", "image", "human"), str(rpath), "a Gecko ratings table")
    given["prompt_id"] = given["prompt_id"].astype(str)
    unknown = ~given["prompt_id"].isin(table["prompt_id"])
    if unknown.any():
        row = int(unknown.to_numpy().nonzero()[0][0])
        raise SetFormatError(f"{rpath}: row {row}: prompt_id {given['prompt_id'].iloc[row]!r} is not in Gecko2K")
    frame = given.merge(table[["prompt_id", "prompt", "prompt_type"]], on="prompt_id", how="left")
    frame = frame.rename(columns={"prompt_id": "item"})
    prov["ratings"] = {"file": str(rpath), "sha256": provenance("", None, rpath, "", pinned_sha256=None)["sha256"]}
    return check_ratings(frame, str(rpath)), prov
