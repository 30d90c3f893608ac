"""One registry of the image-text sets: one :class:`SetRecord` per set, read by set scoring (``ts2 score --set``), the
report card, the CLI's set names and the demo (through the card).

A record says what the set is (``kind``: TS2's SEGs, a bench of images, human ratings or preference pairs), the names
users give it, how its table is loaded, where its images come from, which columns hold its human ratings and what
the card reports first for it (its paper's headline convention). Adding a set is one record plus its loader::

    register(SetRecord("my_set", RATINGS, load=load_my_set, images=ImageSource("the images of my_set's folder")))

This module imports no pandas: the loaders, the embedded-image readers and the sets' own scoring paths are imported
when called (``ts2 --help`` lists the names from here).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from scorers.errors import ParameterError

__all__ = ["IMAGES", "PAIRS", "RATINGS", "REGISTRY", "SEGS", "Headline", "ImageSource", "SetRecord", "canonical_name",
           "check_set_name", "find_set", "get_set", "headline_of", "register", "set_names"]

#: a set's ``kind``: TS2's SEGs (scored by :func:`scorers.ts2.scoring.score_data_dir`), a bench of generated images
#: without human judgments (TIFA v1.0), human ratings (rows ``item, system, image, prompt, human...``) or preference
#: pairs (rows ``item, prompt, image_a, image_b, preference``). The strings are those written in ``.set.json``.
SEGS, IMAGES, RATINGS, PAIRS = "ts2", "images", "ratings", "pairs"
KINDS = (SEGS, IMAGES, RATINGS, PAIRS)


@dataclass(frozen=True)
class Headline:
    """What the card reports first for a set: ``statistic`` (a rating set's coefficient, e.g. ``spearman``; a
    preference set's tie convention, ``calibrated`` / ``excluded``; TS2's ``rank``), ``grouping`` (a rating set's
    grouping in the paired test) and ``convention``: the line the card prints, saying where it comes from."""

    statistic: str
    grouping: str
    convention: str


#: the headline of a rating / preference set without a convention of its own (a user's set, EvalMuse, Gecko2K)
DEFAULT_HEADLINES = {
    RATINGS: Headline("spearman", "none", "Spearman's rho over all items pooled (no set-specific convention known)"),
    PAIRS: Headline("calibrated", "", "pairwise accuracy with tie calibration (Deutsch et al. 2023; no set-specific "
                                      "convention known)"),
}


@dataclass(frozen=True)
class ImageSource:
    """Where a set's images come from. ``where``: one line naming them (said when they cannot be had: download it
    and pass ``images_dir``). ``embedded``: for a set whose Parquet file holds the image bytes,
    ``embedded(set_name, image_names, path) -> [bytes, ...]`` in the order of the names; None: files."""

    where: str
    embedded: Callable[[str, Sequence[str], Any], list] | None = None


@dataclass(frozen=True)
class SetRecord:
    """One set. ``load(path=None, *, offline=None) -> (table, provenance)`` reads a rating / pair table (``path``: a
    local copy, else the pinned download); ``score(scorer_name, out, *, data_dir, images_dir, set_file, offline,
    tifa_bench, **run_options) -> (frame, result)`` is the set's own scoring path (TS2, TIFA v1.0) in place of
    scoring its table's rows. ``human``: its human rating columns where they are not ``human_<k>``;
    ``metric_columns``: a release metric name -> the column of the set's file holding that metric's scores (the
    card's default for ``--ratings-column``)."""

    name: str
    kind: str
    aliases: tuple[str, ...] = ()
    load: Callable[..., tuple] | None = None
    score: Callable[..., tuple] | None = None
    images: ImageSource | None = None
    human: tuple[str, ...] = ()
    headline: Headline | None = None
    metric_columns: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"set {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if (self.load is None) == (self.score is None):
            raise ValueError(f"set {self.name!r}: give exactly one of load (a table) and score (its own path)")


# ------------------------------------------------------------------------------------------------------- the loaders


def _later(module: str, name: str) -> Callable:
    """``scorers.sets.<module>.<name>``, imported when first called: the registry stays light (no pandas), and each
    arrow stays visible to tests/project/test_import_contracts.py."""

    def call(*args, **kwargs):
        if module == "ratings":
            from scorers.sets import ratings as found
        elif module == "preferences":
            from scorers.sets import preferences as found
        elif module == "embedded":
            from scorers.sets import embedded as found
        else:
            from scorers.sets import own_paths as found
        return getattr(found, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


# -------------------------------------------------------------------------------------------------------- the records

_EMBEDDED = "the set's own Parquet file (images embedded)"
_CELL_BYTES = _later("embedded", "parquet_cell_bytes")

#: every set by its name, in the order the tools list them
REGISTRY: dict[str, SetRecord] = {record.name: record for record in (
    SetRecord("ts2", SEGS, score=_later("own_paths", "score_ts2"),
              images=ImageSource("the TS2 images (a data dir with metadata.csv + images/, or the Hub dataset)"),
              headline=Headline("rank", "avg", "rank (avg over SEGs), with sep and delta")),
    SetRecord("tifa_v1", IMAGES, score=_later("own_paths", "score_tifa_v1"),
              images=ImageSource("your generated images of the TIFA v1.0 texts (<text_id>.png or <text_id>/<k>.png)")),
    SetRecord("tifa160", RATINGS, load=_later("ratings", "load_tifa160"),
              images=ImageSource("the TIFA repository's TIFA160 images (the files named by image_path of "
                                 "human_annotations_with_scores.json)"),
              headline=Headline("spearman", "none", "Spearman's rho over all images pooled (TIFA, Hu et al. 2023, "
                                                    "reports Spearman's rho and Kendall's tau against the averaged "
                                                    "Likert ratings)"),
              metric_columns={"clipscore": "clipscore_vitb32", "mplug_tifa": "tifa_mplug-large"}),
    SetRecord("genai_bench", RATINGS, load=_later("ratings", "load_genai_bench"),
              images=ImageSource(_EMBEDDED, _CELL_BYTES),
              headline=Headline("pairwise_acc", "none", "pairwise accuracy with tie calibration (GenAI-Bench / "
                                                        "VQAScore, Lin et al. 2024, following Deutsch et al. 2023)")),
    SetRecord("evalmuse", RATINGS, load=_later("ratings", "load_evalmuse"), human=("human",),
              images=ImageSource("the EvalMuse-40K images of the Hub dataset DY-Evalab/EvalMuse (the files named by "
                                 "img_path)")),
    SetRecord("gecko2k", RATINGS, load=_later("ratings", "load_gecko2k"), human=("human",),
              images=ImageSource("the images your Gecko ratings table names in its image column (the pinned release "
                                 "has prompts only)")),
    SetRecord("pickapic_v2", PAIRS, load=_later("preferences", "load_pickapic_v2"),
              images=ImageSource(_EMBEDDED, _later("embedded", "pickapic_bytes")),
              headline=Headline("calibrated", "", "pairwise accuracy with human ties kept and a metric tie threshold "
                                                  "(Pick-a-Pic, Kirstain et al. 2023, tune the threshold on the "
                                                  "validation split; here epsilon is calibrated on the evaluated "
                                                  "pairs, Deutsch et al. 2023, which is optimistic)")),
    SetRecord("hpdv2", PAIRS, load=_later("preferences", "load_hpdv2"),
              images=ImageSource("the HPDv2 test images (test.tar.gz of the Hub dataset ymhao/HPDv2, the files named "
                                 "by image_path)"),
              headline=Headline("excluded", "", "pairwise accuracy over the human-ranked pairs, human ties dropped, a "
                                                "metric tie wrong (HPSv2, Wu et al. 2023, reports 1 - discordant/all "
                                                "pairs per prompt ranking, which also credits human- and metric-tied "
                                                "pairs; equal when neither ties)")),
    SetRecord("imagerewarddb", PAIRS, load=_later("preferences", "load_imagerewarddb"),
              images=ImageSource("the ImageRewardDB test images (images/test/*.zip of the Hub dataset "
                                 "THUDM/ImageRewardDB, extracted; the files named by image_path)"),
              headline=Headline("excluded", "", "pairwise accuracy with human ties dropped and a metric tie counted "
                                                "wrong (ImageReward, Xu et al. 2023, test accuracy)")),
    SetRecord("mjbench_alignment", PAIRS, aliases=("mj_bench",), load=_later("preferences", "load_mjbench_alignment"),
              images=ImageSource(_EMBEDDED, _CELL_BYTES),
              headline=Headline("excluded", "", "pairwise accuracy, a metric tie counted wrong (MJ-Bench, Chen et al. "
                                                "2024, report accuracy 'with ties', a score gap within their "
                                                "threshold counted as a wrong tie, here threshold 0; its labels have "
                                                "no human ties)")),
)}


def register(record: SetRecord) -> SetRecord:
    """Add ``record`` to :data:`REGISTRY`; its name and aliases must be new."""
    taken = {n for r in REGISTRY.values() for n in (r.name, *r.aliases)}
    clash = [n for n in (record.name, *record.aliases) if n in taken]
    if clash:
        raise ValueError(f"set {record.name!r}: the name {clash[0]!r} is already a set's name or alias")
    REGISTRY[record.name] = record
    return record


def set_names(*kinds: str) -> tuple[str, ...]:
    """The sets' names (of these ``kinds``; default all), in registry order."""
    return tuple(r.name for r in REGISTRY.values() if not kinds or r.kind in kinds)


def canonical_name(name: str) -> str:
    """The set's own name for ``name`` (an alias resolved); a name that is no set's comes back as it is."""
    record = find_set(name)
    return name if record is None else record.name


def find_set(name: str) -> SetRecord | None:
    """The record of the set named (or aliased) ``name``, else None."""
    if name in REGISTRY:
        return REGISTRY[name]
    return next((r for r in REGISTRY.values() if name in r.aliases), None)


def get_set(name: str) -> SetRecord:
    """The record of the set named (or aliased) ``name``, or a ``ValueError`` listing the names."""
    record = find_set(name)
    if record is None:
        aliases = ", ".join(f"{a} = {r.name}" for r in REGISTRY.values() for a in r.aliases)
        raise ParameterError("{set_name} {name!r}: not a set this tool knows; one of {names}{aliases}", name=name,
                             names=", ".join(REGISTRY), aliases=f" ({aliases})" if aliases else "")
    return record


def check_set_name(name: str) -> str:
    """The canonical set name, or a ``ValueError`` listing the names."""
    return get_set(name).name


def headline_of(name: str, kind: str) -> Headline:
    """The card's headline for a ``kind`` (ratings / pairs) set named ``name``: the set's own convention, else the
    kind's default (a set this registry does not know, or knows as another kind)."""
    record = find_set(name)
    if record is not None and record.kind == kind and record.headline is not None:
        return record.headline
    return DEFAULT_HEADLINES[kind]
