"""More rating sets as rating tables: ``item, system, image, prompt, human`` (one row per image).

* EvalMuse-40K (Han et al., 2024), Hub dataset ``DY-Evalab/EvalMuse``: ``train_list.json`` is a JSON list of
  ``{prompt_id, prompt, type, img_path, total_score: [per-annotator overall alignment scores], element_score
  (a string holding a dict), promt_meaningless, split_confidence, attribute_confidence, fidelity_label}``. ``human``
  = the mean of ``total_score`` (as the official ``process/process_train.py`` averages it); ``item`` = ``prompt_id``.
  The rows name no T2I model, so ``system`` is empty: group by ``item``. ``test.json`` holds the test prompts and
  images; its card says the annotations "will be available later", so reading it without ``total_score`` is refused.
* Gecko2K (Wiles et al., ICLR 2025): the pinned repository ``google-deepmind/gecko_benchmark_t2i`` releases the
  prompt set (``prompts.csv``: ``prompt_id``, ``prompt``, ``prompt_type`` Gecko(R)/Gecko(S), ``dataset_id``,
  reliability flags ``max_disagreement_less_X``); its ``DATABASE.md`` says the images and human annotations are still
  to come ("Working on."). :func:`load_gecko2k` reads the prompts (pinned download through ``release.fetch``) and,
  when you have ratings, joins a ratings table you give in this project's own long layout
  (``prompt_id, system, image, human``: not a Gecko file format) on ``prompt_id``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..release import PinnedFile, fetch
from ._common import HubFile, SetFormatError, check_columns, check_ratings, fetch_hub, provenance, read_json_entries

__all__ = ["EVALMUSE_TRAIN", "GECKO_PROMPTS", "load_evalmuse", "load_gecko2k", "read_evalmuse", "read_gecko_prompts"]

EVALMUSE_TRAIN = HubFile(
    "DY-Evalab/EvalMuse", "fd2087b4bde6486ee1358a4ee546e3ee6c1860a6", "train_list.json",
    licence="BSD-3-Clause (Hub dataset licence)",
    sha256="a3ea6941fd5f727a81fc2bbdd6d2360726c6fdd3d8546213b6a43ae46a26bf86",
    note="revision: the Hub tree at commit fd2087b ('Update README.md'), where train_list.json (44.6 MB) was last "
         "changed by 'modify the train_list.json'; sha256: the Git LFS pointer of that version as the file page "
         "of main shows it (commit 9015c8e, same message and size). A different file at this revision is refused")
#: Gecko2K prompts at a commit of the official repository; digest not readable here, so trust on first use
#: (``release.fetch`` records the first download's sha256 and refuses any other content later).
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
    import pandas as pd

    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"prompt_id": str})
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise SetFormatError(f"{path}: not a CSV file ({type(error).__name__})") from None
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
    given = pd.read_parquet(rpath) if rpath.suffix.lower() in (".parquet", ".pq") else pd.read_csv(
        rpath, dtype={"prompt_id": str})
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
