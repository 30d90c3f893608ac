"""What a report card reads: the metric's score files, the human sets (rating files, pair tables and their images'
score files), a weighted reward's parts, the baseline's source -- each read once into :class:`CardInputs`, a set that
cannot be read kept with its reason -- and the specs the CLI and the demo give (:class:`RatingSet`,
:class:`PreferenceSet`, :class:`RewardSpec`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from scorers.rewards.normalisation import weighted_reward
from scorers.sets.registry import PAIRS, canonical_name, find_set, set_names
from scorers.ts2.options import MetaOptions

__all__ = ["AUTO_BASELINE", "RELEASE_BASELINE", "SET_SCORE_KEYS", "CardInputs", "PreferenceSet", "RatingSet",
           "RewardSpec", "card_provenance",
           "file_sha256", "human_columns", "is_pairs", "pair_keys", "parse_reward_normalize", "rating_column", "rating_wanted",
           "read_inputs", "read_pair_table", "read_set_scores", "read_table", "resolve_baseline", "score_column"]


@dataclass
class RatingSet:
    """A human rating set as the card reads it: ``name``, ``source`` (a path, or ``tifa160`` for the pinned
    download), the ``human`` rater columns (default: every ``human_<k>`` column) and ``columns``, metric name ->
    column of the file holding that metric's per-item scores."""

    name: str
    source: str
    human: Sequence[str] = ()
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass
class PreferenceSet:
    """A preference set as the card reads it: ``name`` (a loader's name such as ``hpdv2`` gives its own headline
    convention), ``source`` (a pair table ``item, prompt, image_a, image_b, preference`` as CSV / Parquet / JSON, or
    the set's own file read by its loader (:mod:`scorers.sets.registry`), or the loader's name for its pinned
    download), ``scores``: per-image score files (:func:`read_set_scores`) and ``columns``, metric name -> their
    column holding that metric (default: the metric's name)."""

    name: str
    source: str
    scores: Sequence[str] = ()
    columns: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RewardSpec:
    """A weighted reward judged as one metric: ``weights`` ``{part: weight}`` over metrics of the card, and
    ``normalize`` as :func:`scorers.rewards.api.load` takes it (``"none"``, ``"running"``, ``{part: (shift, scale)}``)."""

    weights: Mapping[str, float]
    normalize: object = "none"
    name: str = "reward"


def parse_reward_normalize(text: str, weights: Mapping[str, float]):
    """``"none"`` / ``"running"`` / ``"pickscore=20:2,hpsv2=0.25:0.01"`` (``NAME=SHIFT:SCALE``, giving
    ``(r - SHIFT) / SCALE``; parts left out are not normalised), checked by :func:`scorers.rewards.api.check_normalize`,
    as :func:`scorers.rewards.api.load` checks it."""
    from scorers.rewards.api import check_normalize

    text = text.strip()
    if text in ("none", "running"):
        return text
    pairs = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, pair = part.partition("=")
        shift, colon, scale = pair.partition(":")
        if not sep or not colon:
            raise ValueError(f"--reward-normalize {part}: expected none, running or NAME=SHIFT:SCALE[,...]")
        pairs[name.strip()] = (shift.strip(), scale.strip())
    if not pairs:
        raise ValueError("--reward-normalize: expected none, running or NAME=SHIFT:SCALE[,...]")
    try:
        return check_normalize(pairs, weights)
    except ValueError as error:
        raise ValueError(f"--reward-normalize {text}: {error}") from None


def is_pairs(name: str) -> bool:
    """``name`` is a preference set of the registry (its own file has a loader; the card asks for pairs)."""
    record = find_set(name)
    return record is not None and record.kind == PAIRS


def read_table(path: str | Path):
    """A CSV / TSV / Parquet / JSON (list of records) / JSONL table as a pandas frame (text cells kept as text)."""
    import pandas as pd

    from scorers.tables.pandas_tables import check_unique_header, read_csv

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        check_unique_header(path, pq.read_schema(path).names)  # pandas would keep one of two same-named columns
        return pd.read_parquet(path)
    if suffix in (".json", ".jsonl"):
        try:
            return pd.read_json(path, lines=suffix == ".jsonl", orient="records", dtype=False)
        except ValueError as error:
            raise ValueError(f"{path}: not a JSON list of records ({str(error).splitlines()[0]})") from None
    return read_csv(path, dtype=str, keep_default_na=False, sep="\t" if suffix == ".tsv" else ",")


def read_pair_table(name: str, source: str, *, offline: bool | None = None):
    """``(pairs, provenance)`` of a preference set: ``source`` = the loader's name (its pinned download, ``offline``:
    cache only), the set's own file for its loader (``name`` a preference set of :mod:`scorers.sets.registry`), or a
    pair table with the columns ``item, prompt, image_a, image_b, preference`` (a/b/tie). Errors are one line naming
    the file."""
    from scorers.sets import PAIR_COLUMNS, SetFormatError, check_pairs

    canonical = canonical_name(name)
    loader = find_set(name).load if is_pairs(name) else None  # rating loaders give no pairs
    if loader is not None and source in (name, canonical):
        return loader(offline=offline)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"--preferences {name}={source}: no such file")
    from scorers.tables.pandas_tables import DuplicateHeaderError, check_unique_header

    try:
        if path.suffix.lower() == ".parquet":  # a set's own Parquet may embed images: read its schema first
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
            check_unique_header(path, names)
            frame = pq.read_table(path, columns=list(PAIR_COLUMNS)).to_pandas() \
                if all(c in names for c in PAIR_COLUMNS) else None
        else:
            frame = read_table(path)
        pair_table = frame is not None and all(c in frame.columns for c in PAIR_COLUMNS)
    except DuplicateHeaderError:
        raise
    except (ValueError, OSError, ImportError) as error:
        if loader is None:  # no loader to read it as the set's own file: the reader's reason is the answer
            raise SetFormatError(f"{path}: not a readable pair table ({_reason(path, error)})") from None
        frame, pair_table = None, False
    if pair_table:
        from scorers.sets import preference_labels

        frame = frame.copy()
        for column in ("item", "image_a", "image_b"):
            frame[column] = frame[column].astype(str)
        frame["preference"] = preference_labels(frame["preference"])
        from scorers.tables.release import sha256_file

        return check_pairs(frame, str(path)), {"source": str(path), "revision": None, "sha256": sha256_file(path),
                                               "sha256_pinned": False, "file": str(path),
                                               "note": "a pair table given by the user"}
    if loader is None:
        raise SetFormatError(f"{path}: not a pair table (columns {', '.join(PAIR_COLUMNS)}), and {name!r} is not a "
                             f"preference set with a loader ({', '.join(set_names(PAIRS))})")
    return loader(path)


def _reason(path, error: Exception) -> str:
    """An error's message without the file name it starts with (the caller names the file once)."""
    text = " ".join(str(error).split())
    for prefix in (f"{path}: ", f"{path} "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


#: the key column of a per-image score file of a preference set, first found
SET_SCORE_KEYS = ("image", "key", "image_path", "file_name")


def read_set_scores(paths: Sequence[str | Path]):
    """The per-image scores of a set's images from one or more files: a frame with one float column per metric,
    indexed by image name (as the pair table's ``image_a`` / ``image_b`` name them), or by ``(image, prompt)`` when
    an image is scored under more than one prompt, as ``ts2 score --set`` writes a preference set (one score per
    (image, prompt); :func:`pair_keys` looks the pairs up either way). Each file has a key column
    (:data:`SET_SCORE_KEYS`, first found) and score columns; files are joined on the key, a column in two files or a
    duplicated key is an error, and a non-numeric cell is an error naming the file, row and column."""
    import pandas as pd

    frames = []
    for path in paths:
        frame = read_table(path)
        key = next((k for k in SET_SCORE_KEYS if k in frame.columns), None)
        if key is None:
            raise ValueError(f"{path}: no image key column (one of {', '.join(SET_SCORE_KEYS)}) naming the images as "
                             f"the pair table's image_a / image_b do")
        frames.append((path, frame, key))
    if not frames:
        raise ValueError("no per-image score file was given for the set")
    # one image under several prompts (HPDv2 names its images per prompt list): key every file on (image, prompt)
    by_prompt = any(frame[key].astype(str).duplicated().any() and "prompt" in frame.columns
                    for _path, frame, key in frames)
    merged = None
    owner: dict[str, str] = {}
    for path, frame, key in frames:
        keys = frame[key].astype(str)
        if by_prompt:
            if "prompt" not in frame.columns:
                raise ValueError(f"{path}: no prompt column, and the set's other score files key their images on "
                                 f"(image, prompt); give every file a prompt column")
            index = pd.MultiIndex.from_arrays([keys.to_numpy(), frame["prompt"].astype(str).to_numpy()],
                                              names=["image", "prompt"])
            repeated = index[index.duplicated()]
            if len(repeated):
                image, prompt = repeated[0]
                raise ValueError(f"{path}: image {image!r} with prompt {prompt!r} appears more than once")
        else:
            duplicated = keys[keys.duplicated()]
            if len(duplicated):
                more = ("" if "prompt" in frame.columns else "; a file that scores one image under several prompts "
                        "needs a prompt column (as ts2 score --set writes)")
                raise ValueError(f"{path}: image {duplicated.iloc[0]!r} appears more than once in column {key!r}"
                                 f"{more}")
            index = pd.Index(keys.to_numpy(), name="image")
        columns = {}
        for column in frame.columns:
            if column == key or column in SET_SCORE_KEYS or column in ("prompt", "item", "error", "record"):
                continue
            cells = frame[column]
            text = cells.astype(str).str.strip()
            values = pd.to_numeric(cells.where(~text.isin(["", "nan", "NaN", "None"])), errors="coerce")
            bad = values.isna() & ~text.isin(["", "nan", "NaN", "None"]) & cells.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise ValueError(f"{path}: row {row}, column {column!r}: {cells.iloc[row]!r} is not a number")
            if np.isinf(values.to_numpy(dtype=np.float64)).any():
                row = int(np.flatnonzero(np.isinf(values.to_numpy(dtype=np.float64)))[0])
                raise ValueError(f"{path}: row {row}, column {column!r}: infinite score")
            if column in owner:
                raise ValueError(f"column {column!r} is in both {owner[column]} and {path}")
            owner[column] = str(path)
            columns[column] = values.to_numpy(dtype=np.float64)
        part = pd.DataFrame(columns, index=index)
        merged = part if merged is None else merged.join(part, how="outer")
    return merged


def pair_keys(scores, pairs, side: str):
    """The index labels of a pair table's ``image_<side>`` in a :func:`read_set_scores` frame: the image names, or
    ``(image, prompt)`` when the scores are keyed on both."""
    import pandas as pd

    images = pairs[f"image_{side}"].astype(str).to_numpy()
    if isinstance(scores.index, pd.MultiIndex):
        return pd.MultiIndex.from_arrays([images, pairs["prompt"].astype(str).to_numpy()])
    return images


def file_sha256(path) -> str | None:
    from scorers.tables.release import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None


def score_column(table, name: str, source: str) -> str:
    from scorers.tables.pandas_tables import score_columns

    available = score_columns(table)
    if name in available:
        return name
    if len(available) == 1:
        return available[0]
    raise ValueError(f"--scores {name}={source}: the file has {len(available)} score columns and none is named "
                     f"{name!r}; available: {', '.join(available[:10])}")


def _rating_frame(rating: RatingSet, offline):
    from scorers.sets.ratings import read_ratings

    return read_ratings(rating.source, offline=offline)


def rating_wanted(rating: RatingSet, name: str) -> str:
    """The column of a rating file that should hold metric ``name``'s scores: ``--ratings-column``, else the set's
    own column for that release metric (its registry record), else the metric's name."""
    record = find_set(rating.name)
    return rating.columns.get(name) or (record.metric_columns.get(name) if record else None) or name


def rating_column(rating: RatingSet, name: str, frame) -> str | None:
    column = rating_wanted(rating, name)
    return column if column in frame.columns else None


def human_columns(rating: RatingSet, frame) -> list[str]:
    """A rating set's human rater columns: its ``human``, else every ``human_<k>`` column of its file, else the
    set's own human columns of the registry (EvalMuse's and Gecko2K's ``human``, as ``ts2 score --set`` writes
    them)."""
    found = list(rating.human) or [c for c in frame.columns if str(c).startswith("human_") and c != "human_avg"]
    record = find_set(rating.name)
    return found or ([c for c in record.human if c in frame.columns] if record is not None else [])


def _write_reward_scores(reward: RewardSpec, scores, columns, meta_frame, segs, clean_quotes, target: Path) -> dict:
    """The weighted reward's per-image TS2 scores (metadata order, ``seg_id, file_name, <name>``) written to
    ``target``; each part is joined with the metadata as ``ts2 meta`` joins it. Returns the reward's provenance."""
    import pandas as pd

    from scorers.atomic import write_text_atomic
    from scorers.stats.graph import resolve_seg_subset
    from scorers.tables.join import join_scores
    from scorers.tables.pandas_tables import column_scores, read_score_table

    subset = resolve_seg_subset(segs, meta_frame["seg_id"])
    parts = {}
    for part in reward.weights:
        table = read_score_table(scores[part], [columns[part]])
        try:
            joined = join_scores(table, meta_frame, required_segs=subset)
        except ValueError as error:
            raise ValueError(f"{scores[part]}: {error}") from None
        parts[part] = column_scores(joined.frame, columns[part], clean_quotes=clean_quotes)
    total, stats = weighted_reward(parts, reward.weights, reward.normalize)
    frame = pd.DataFrame({"seg_id": meta_frame["seg_id"].to_numpy(), "file_name": meta_frame["file_name"].to_numpy(),
                          reward.name: total})
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, frame.to_csv(index=False))
    return {"name": reward.name, "weights": dict(reward.weights),
            "normalize": reward.normalize if isinstance(reward.normalize, str) else
            {k: list(v) for k, v in reward.normalize.items()},
            "stats": {"ts2": stats}, "ts2_scores": str(target),
            "definition": "sum_k w_k * n_k(score_k) per image, n_k as scorers.rewards.api.load(normalize=...); "
                          "'running' = z-score with the mean and population std of the part's scores on each set"}


def _add_reward_column(reward: RewardSpec, frame, column_of, where: str, info: dict) -> None:
    """Add the reward's per-row score to a set's frame from its parts' columns (when all are there), with the
    normalisation statistics of that set's rows; ``info['stats'][where]`` records them."""
    if reward.name in frame.columns:
        raise ValueError(f"{where}: already has a column named {reward.name!r}, the reward's name")
    found = {part: column_of(part) for part in reward.weights}
    found = {part: c for part, c in found.items() if c is not None and c in frame.columns}
    if len(found) < len(reward.weights):
        info["stats"][where] = {"missing parts": [p for p in reward.weights if p not in found]}
        return
    from scorers.checks import as_scores

    values = {part: as_scores(frame[c].tolist(), name=f"{where} column {c!r}") for part, c in found.items()}
    frame[reward.name], info["stats"][where] = weighted_reward(values, reward.weights, reward.normalize)


@dataclass
class CardInputs:
    """Every file a card reads, read once: ``meta_frame`` (TS2 metadata), ``scores`` / ``columns`` (metric -> its TS2
    score file and column; a weighted reward's file included), ``parts_of`` (reward -> its parts), ``baseline_source``
    (``(file, column, clean_quotes)`` of the baseline's TS2 scores, or None with ``baseline_note`` saying why),
    the rating ``frames``, the preference sets' ``pair_tables`` and per-image ``set_scores``, ``unavailable`` (set ->
    why it could not be read), ``asked`` (every set the cards list, in order) and ``files`` (role -> path, for the
    provenance)."""

    meta_frame: object
    scores: dict
    columns: dict[str, str]
    ratings: list[RatingSet]
    preferences: list[PreferenceSet]
    parts_of: dict[str, list[str]] = field(default_factory=dict)
    reward: RewardSpec | None = None
    reward_info: dict | None = None
    baseline_source: tuple | None = None
    baseline_note: str | None = None
    frames: dict = field(default_factory=dict)
    pair_tables: dict = field(default_factory=dict)
    set_scores: dict = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def rating(self, name: str) -> RatingSet:
        return next(r for r in self.ratings if r.name == name)

    def preference(self, name: str) -> PreferenceSet:
        return next(p for p in self.preferences if p.name == name)


def _one_line(source, error: Exception) -> str:
    """``source: message`` on one line; the source is not repeated when the message already starts with it."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return text if text.startswith(str(source)) else f"{source}: {text}"


def read_inputs(scores: Mapping[str, str | Path], *, metadata, baseline: str | None, ratings: Sequence[RatingSet],
                preferences: Sequence[PreferenceSet], sets: Sequence[str] | None, data_dir: str | None,
                options: MetaOptions, offline: bool | None, reward: RewardSpec | None,
                reward_dir: str | Path | None) -> CardInputs:
    """Read every input of :func:`~scorers.report.card.build.build_cards` (its parameters, same names). A score file
    without the metric's column, a reward part without a score file and an unknown baseline are errors; a human
    set that cannot be read is kept in ``unavailable`` with its reason. The weighted reward's TS2 scores are written
    to ``reward_dir`` here, and its column added to each human set's table from its parts' columns."""
    from dataclasses import replace

    from scorers.tables.pandas_tables import read_metadata, read_score_table

    segs, clean_quotes = options.seg_subset, options.clean_quotes
    meta_frame = read_metadata(metadata)
    scores = dict(scores)
    preferences = [replace(p, name=canonical_name(p.name)) for p in preferences]
    columns = {name: score_column(read_score_table(src), name, str(src)) for name, src in scores.items()}
    read = CardInputs(meta_frame=meta_frame, scores=scores, columns=columns, ratings=list(ratings),
                      preferences=preferences, reward=reward)
    if reward is not None:
        missing = [p for p in reward.weights if p not in scores]
        if missing:
            raise ValueError(f"--reward: {missing[0]} has no --scores file (every part needs --scores "
                             f"{missing[0]}=FILE)")
        if reward.name in scores:
            raise ValueError(f"--reward: the reward's name {reward.name!r} is also a --scores name")
        target = Path(reward_dir or ".") / f"{reward.name}_ts2_scores.csv"
        read.reward_info = _write_reward_scores(reward, scores, columns, meta_frame, segs, clean_quotes, target)
        scores[reward.name], columns[reward.name] = target, reward.name
        read.parts_of[reward.name] = list(reward.weights)
    read.files = {f"scores:{n}": str(s) for n, s in scores.items()}
    read.files["metadata"] = str(metadata)
    if baseline:
        _baseline_source(read, baseline, data_dir, clean_quotes)
    for rating in ratings:
        try:
            read.frames[rating.name] = _rating_frame(rating, offline)
            src = rating.source
            if str(src).lower() == "tifa160":
                from scorers.sets.ratings import fetch_tifa160

                src = fetch_tifa160(offline=offline)
            read.files[f"ratings:{rating.name}"] = str(src)
        except FileNotFoundError as error:  # e.g. TIFA160 by name, offline and not cached: listed, go on
            read.unavailable[rating.name] = _one_line(rating.source, error)
        except ValueError as error:
            if str(rating.source).lower() != "tifa160":  # a malformed file the user gave: an error of the command
                raise ValueError(_one_line(rating.source, error)) from None
            read.unavailable[rating.name] = _one_line(rating.source, error)
    for pset in preferences:
        _read_preference_set(read, pset, offline)
    _check_named_columns(read)
    if reward is not None:
        for rating in ratings:
            if rating.name in read.frames:
                frame = read.frames[rating.name]
                _add_reward_column(reward, frame, lambda part, r=rating, f=frame: rating_column(r, part, f),
                                   f"ratings:{rating.name}", read.reward_info)
    read.asked = list(dict.fromkeys(["ts2"] + [r.name for r in ratings] + [p.name for p in preferences]
                                    + [canonical_name(x) for x in (sets or ())]))
    return read


def _check_named_columns(read: CardInputs) -> None:
    """A column the user named (``--ratings-column NAME=COL``) must be in at least one of the human sets' files that
    were read: a name in none of them is a typo, an error naming it (not a set "not evaluated")."""
    named: dict[str, str] = {}
    for spec in [*read.ratings, *read.preferences]:
        named.update(spec.columns)
    tables = {**{f"ratings {r.source}": read.frames[r.name] for r in read.ratings if r.name in read.frames},
              **{f"preference scores of {p.name}": read.set_scores[p.name] for p in read.preferences
                 if p.name in read.set_scores}}
    if not named or not tables:
        return
    from scorers.tables.columns import preview_names

    for metric, column in named.items():
        if not any(column in frame.columns for frame in tables.values()):
            where, frame = next(iter(tables.items()))
            raise ValueError(f"--ratings-column {metric}={column}: no column {column!r} in the human sets' files "
                             f"({where} has {preview_names([str(c) for c in frame.columns], 6)})")


#: the baseline a card takes when none is named (``baseline="auto"``, ``ts2 card`` without ``--baseline``)
AUTO_BASELINE = "auto"
#: what ``"auto"`` becomes on the release's metadata: the release's CLIPScore column
RELEASE_BASELINE = "clipscore"


def resolve_baseline(baseline: str | None, scores: Mapping[str, object], ours,
                     release) -> tuple[str | None, str | None]:
    """``(baseline, note)`` of a card computed on the metadata ``ours`` (a :class:`scorers.tables.comparable.Basis`;
    ``release``: the release's). ``"auto"`` (unless a ``scores`` name) is the release's :data:`RELEASE_BASELINE` on
    the release's metadata, else None with a note saying why. A baseline that is no ``scores`` name is a column of
    the release's ``released_scores.csv``, whose scores are of the release's images only: on other metadata it is
    an error naming ``--baseline none`` and ``--baseline NAME``."""
    from scorers.tables.comparable import published_mismatch

    if baseline is None or baseline in scores:
        return baseline, None
    on_release = published_mismatch(ours, release) is None
    if baseline == AUTO_BASELINE:
        if on_release:
            return RELEASE_BASELINE, None
        return None, (f"no baseline: the default baseline is the release's {RELEASE_BASELINE}, whose scores are of "
                      f"the release's images, and these scores are on {ours.metadata_text()}; --baseline NAME (one of "
                      "the --scores names) gives paired tests")
    if not on_release:
        raise ValueError(f"--baseline {baseline}: not one of the --scores names ({', '.join(scores)}), and the "
                         f"release's released_scores.csv holds scores of the release's images, not of "
                         f"{ours.source}; give --baseline none (no paired tests) or --baseline NAME with NAME one "
                         "of the --scores names")
    return baseline, None


def _baseline_source(read: CardInputs, baseline: str, data_dir, clean_quotes: bool) -> None:
    """The baseline's TS2 scores: a ``--scores`` file, else its column of the release's ``released_scores.csv``."""
    from scorers.tables.pandas_tables import read_score_table

    if baseline in read.scores:
        read.baseline_source = (read.scores[baseline], read.columns[baseline], clean_quotes)
        return
    from scorers.tables.release_download import path

    try:
        src = path("released_scores.csv", data_dir, progress=False)
    except FileNotFoundError as error:
        read.baseline_note = f"baseline {baseline}: the release's scores are not available ({error})"
        return
    from scorers.tables.pandas_tables import score_columns

    if baseline not in score_columns(read_score_table(src)):
        raise ValueError(f"--baseline {baseline}: not one of the --scores names nor a column of the "
                         f"release's released_scores.csv")
    read.files["baseline"] = str(src)
    read.baseline_source = (src, baseline, True)


def _read_preference_set(read: CardInputs, pset: PreferenceSet, offline) -> None:
    """A preference set's pair table and its images' scores (the reward's column added), or why they cannot be read."""
    try:
        read.pair_tables[pset.name], prov = read_pair_table(pset.name, pset.source, offline=offline)
        read.set_scores[pset.name] = read_set_scores(pset.scores)
        if read.reward is not None:
            _add_reward_column(read.reward, read.set_scores[pset.name],
                               lambda part, p=pset: p.columns.get(part) or part, f"preferences:{pset.name}",
                               read.reward_info)
        read.files[f"preferences:{pset.name}"] = prov.get("file") or str(pset.source)
        for k, score_file in enumerate(pset.scores):
            read.files[f"preference_scores:{pset.name}:{k}"] = str(score_file)
        read.pair_tables[pset.name].attrs["provenance"] = {**{k: v for k, v in prov.items() if k != "file"},
                                                           "n_pairs": int(len(read.pair_tables[pset.name]))}
    except (FileNotFoundError, OSError) as error:  # e.g. a pinned download offline and not cached: listed, go on
        read.pair_tables.pop(pset.name, None)
        read.unavailable[pset.name] = _one_line(pset.source, error)
    # a ValueError (a malformed pair table or score file the user gave) is an error of the command, not a set
    # "not evaluated": it propagates, one line naming the file once


def card_provenance(read: CardInputs, *, command: str, options: MetaOptions) -> dict:
    """The provenance every card of one run shares: the command, the package version, bootstrap settings, each
    input's path and sha256 (``segs`` is filled in by the TS2 section)."""
    from scorers import __version__

    provenance = {
        "command": command, "ts2_evaluate_version": __version__, "segs": None,
        "n_bootstrap": options.n_bootstrap, "confidence": options.confidence, "seed": options.seed,
        "inputs": {role: {"path": str(Path(p).resolve()), "sha256": file_sha256(p)} for role, p in read.files.items()},
        "preference_sets": {n: t.attrs.get("provenance") for n, t in read.pair_tables.items()},
    }
    if options.walks != "levels":  # absent: TS2's level rule
        provenance["walks"] = options.walks
    if read.reward_info is not None:
        provenance["reward"] = read.reward_info
    if any(r.name == "tifa160" for r in read.ratings):
        from scorers.sets.ratings import TIFA160

        provenance["tifa160_revision"] = TIFA160.revision  # the pinned file's; matches_pinned says if it was read
        given = provenance["inputs"].get("ratings:tifa160")
        if given:
            given["matches_pinned"] = given["sha256"] == TIFA160.sha256
    return provenance
