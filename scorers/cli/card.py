"""``ts2 card``: one report card per metric (TS2 + human rating sets + paired tests vs a baseline), from score files;
``--scorer`` first makes them (``scorers.sets.scoring.score_sets``, as ``ts2 score --set``)."""
from __future__ import annotations

import argparse
import json

from scorers.cli._options import DATA_DIR_HELP, SEGS_HELP, add_n_bootstrap_argument, add_walks_argument
from scorers.cli._validate import confidence, count, input_dir, input_file, seg_spec


def _name_value(option: str):
    def parse(text: str) -> tuple[str, str]:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
        return name.strip(), value.strip()

    parse.__name__ = option
    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    from scorers.sets.registry import PAIRS, set_names

    parser = subparsers.add_parser(
        "card",
        help="one report card per metric: TS2 and human sets, paired tests vs a baseline (md/html/json)",
        description="A report card per metric from its score files: TS2 rank/sep/delta with CIs (as ts2 meta) and its "
                    "place among the published rows; agreement with each human rating set (as ts2 correlate); "
                    "paired tests against the baseline on every set and a one-line verdict. The card reads scores; "
                    "it never scores images.",
    )
    parser.add_argument("--scores", nargs="+", action="extend", default=[], type=_name_value("--scores"),
                        metavar="NAME=FILE",
                        help="per-image TS2 scores of metric NAME (the column NAME, or the file's only score column); "
                             "or --scorer")
    parser.add_argument("--baseline", default="auto",
                        help="baseline metric: a --scores NAME, or a column of the release's released_scores.csv "
                             "(on the release's metadata only); 'none' for no paired tests; default auto: the "
                             "release's clipscore on the release's metadata, none on other metadata (--metadata "
                             "OUT/metadata.csv), with a line saying so")
    parser.add_argument("--ratings", action="append", default=[], type=_name_value("--ratings"), metavar="SET=FILE",
                        help="a human rating set: tifa160=FILE (TIFA's JSON; FILE 'tifa160' = the pinned download) "
                             "or any ratings table ts2 correlate reads, holding the metrics' per-item scores")
    parser.add_argument("--preferences", action="append", default=[], type=_name_value("--preferences"),
                        metavar="SET=FILE", help="a preference set: a pair table (item, prompt, image_a, image_b, "
                                                 "preference a/b/tie; CSV, Parquet or JSON), or the set's own file "
                                                 f"for its loader ({', '.join(set_names(PAIRS))}), or FILE = the "
                                                 "set's name for its pinned download; its images' scores come from "
                                                 "--preference-scores")
    parser.add_argument("--preference-scores", action="append", default=[], type=_name_value("--preference-scores"),
                        metavar="SET=FILE", help="per-image scores of a --preferences set: a table with an image key "
                                                 "column (image, key, image_path or file_name, as image_a/image_b "
                                                 "name them) and one column per metric; repeat to join several")
    parser.add_argument("--reward", metavar="NAME=W,...", help="also judge the weighted reward sum_k W_k * score_k "
                                                               "over --scores parts (e.g. pickscore=1,hpsv2=0.5), "
                                                               "against the baseline and each part")
    parser.add_argument("--reward-normalize", default="none", metavar="none|running|NAME=SHIFT:SCALE,...",
                        help="per-part normalisation before the weighted sum, as scorers.rewards.api.load: none "
                             "(default), running (z-score over each set's images) or fixed (r - SHIFT) / SCALE")
    parser.add_argument("--ratings-column", action="append", default=[], type=_name_value("--ratings-column"),
                        metavar="NAME=COL", help="the ratings (and preference score) files' column holding metric "
                                                 "NAME's scores (default: COL = NAME; tifa160 maps clipscore and "
                                                 "mplug_tifa to its columns)")
    parser.add_argument("--human", action="append", default=[], metavar="COL",
                        help="human rating column(s) (default: every human_<k> column)")
    parser.add_argument("--sets", default="", help="comma-separated set names the card must list (a set without a "
                                                   "file is listed as not evaluated, with the reason)")
    parser.add_argument("--lower-is-better", action="append", default=[], metavar="NAME",
                        help="metric NAME (a --scores name or the baseline) is better when lower (default: known "
                             "release facts, else higher is better)")
    parser.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters from numeric "
                                                                    "cells of the --scores files")
    parser.add_argument("--elements", action="append", default=[], metavar="[NAME=]FILE",
                        help="a 'finds the error' section: a ts2 elements --json file, or per-question records "
                             "(built SEGs: with --metadata OUT/metadata.csv); each card takes the entry named as its "
                             "metric, NAME=FILE gives card NAME the file's entry NAME or its only entry (repeatable)")
    parser.add_argument("--metadata", type=input_file, help="TS2 metadata.csv (default: the release's)")
    parser.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    parser.add_argument("--segs", dest="seg_subset", type=seg_spec, default="default", help=SEGS_HELP)
    add_walks_argument(parser)
    scoring = parser.add_argument_group("scoring the sets first (--scorer; instead of --scores)")
    scoring.add_argument("--scorer", metavar="NAME[,NAME...]",
                         help="registered scorer(s) (ts2 score --list): score each --sets set with it, as ts2 score "
                              "--set does, into OUT/scores/, then build its card (several: one card each, e.g. the "
                              "parts of a --reward)")
    scoring.add_argument("--model", action="append", default=[], metavar="M|NAME=M",
                         help="--scorer's checkpoint (default: the scorer's own); with several scorers, NAME=M for "
                              "each that needs one (repeatable)")
    scoring.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                         help="extra scorer argument (repeatable), as ts2 score --option")
    scoring.add_argument("--images-dir", action="append", default=[], type=_name_value("--images-dir"),
                         metavar="SET=DIR", help="a set's image folder (ts2=DIR: a TS2 data dir with metadata.csv + "
                                                 "images/, default the Hub dataset); a set whose images cannot be had "
                                                 "is listed as not evaluated")
    scoring.add_argument("--set-file", action="append", default=[], type=_name_value("--set-file"),
                         metavar="SET=FILE", help="a local copy of a set's ratings/pairs file (default: its pinned "
                                                  "download)")
    scoring.add_argument("--batch-size", type=count(1), default=32, help="images per model call")
    scoring.add_argument("--num-workers", type=count(0, 256), default=2, help="DataLoader worker processes")
    scoring.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                         help="unreadable image: stop with its name, or record it and go on")
    add_n_bootstrap_argument(parser)
    parser.add_argument("--confidence", type=confidence, default=0.95, help="CI level (default 0.95)")
    parser.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    parser.add_argument("--offline", action="store_true",
                        help="use the Hugging Face cache only (tifa160, preference sets by name)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for <metric>.md/.html/.json/.png")
    parser.add_argument("--json", action="store_true", help="print {metric: card} as one JSON object")
    parser.set_defaults(handler=run_card)


def run_card(args: argparse.Namespace) -> int:
    import os

    from scorers.report.card import (PreferenceSet, RatingSet, RewardSpec, build_cards, parse_reward_normalize,
                               write_card)
    from scorers.cli._validate import reward_weights
    from scorers.cli._options import release_or_given, walks_options
    from scorers.cli._saved import command_line
    from scorers.ts2.options import MetaOptions

    if bool(args.scores) == bool(args.scorer):
        raise ValueError("give the metric's score files (--scores NAME=FILE...) or a scorer to run (--scorer NAME)"
                         if not args.scores else "--scores and --scorer: give one of them")
    scored = _score_sets(args) if args.scorer else {}
    if args.scorer:
        args.scores = list(zip(scored["ts2"]["columns"], scored["ts2"]["score_paths"]))
        args.ratings = args.ratings + [(n, e["path"]) for n, e in scored.items()
                                       if e.get("kind") == "ratings" and e["status"] == "scored"]
        for name, entry in scored.items():  # a card with preference sets: the pairs and their images' scores
            if entry.get("kind") == "pairs" and entry["status"] == "scored":
                args.preferences = args.preferences + [(name, entry["pairs_path"])]
                args.preference_scores = args.preference_scores + [(name, p) for p in entry["score_paths"]]
    scores = {}
    for name, path in args.scores:
        if name in scores:
            raise ValueError(f"--scores {name}: given twice")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--scores {name}={path}: no such file")
        scores[name] = path
    columns = dict(args.ratings_column)
    human = [part.strip() for value in args.human for part in value.split(",") if part.strip()]
    ratings = [RatingSet(name=name, source=source, human=human, columns=columns) for name, source in args.ratings]
    preference_scores: dict[str, list[str]] = {}
    for name, path in args.preference_scores:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--preference-scores {name}={path}: no such file")
        preference_scores.setdefault(name, []).append(path)
    given = [name for name, _source in args.preferences]
    orphan = [name for name in preference_scores if name not in given]
    if orphan:
        raise ValueError(f"--preference-scores {orphan[0]}=...: no --preferences {orphan[0]}=FILE")
    preferences = []
    from scorers.report.card.inputs import is_pairs
    from scorers.sets.registry import canonical_name

    for name, source in args.preferences:
        by_name = is_pairs(name) and source in (name, canonical_name(name))  # the set's pinned download
        if not by_name and not os.path.isfile(source):
            raise FileNotFoundError(f"--preferences {name}={source}: no such file")
        if name in [p.name for p in preferences]:
            raise ValueError(f"--preferences {name}: given twice")
        if name not in preference_scores:
            raise ValueError(f"--preferences {name}: no --preference-scores {name}=FILE with its images' scores "
                             f"(the card reads scores; it never scores images)")
        preferences.append(PreferenceSet(name=name, source=source, scores=preference_scores[name], columns=columns))
    reward = None
    if args.reward:
        weights = reward_weights(args.reward, "--reward")
        reward = RewardSpec(weights=weights, normalize=parse_reward_normalize(args.reward_normalize, weights))
    elif args.reward_normalize != "none":
        raise ValueError("--reward-normalize: only with --reward")
    lower = [part.strip() for value in args.lower_is_better for part in value.split(",") if part.strip()]
    unknown = [n for n in lower if n not in scores and n != args.baseline]
    if unknown:
        raise ValueError(f"--lower-is-better {unknown[0]}: not a --scores name nor the baseline")
    for rating in ratings:  # --scorer: a scored set's own human rating columns (EvalMuse's mean "human")
        rating.human = list(rating.human) or scored.get(rating.name, {}).get("human", [])
    metadata = release_or_given(args.metadata, "metadata.csv", args.data_dir)
    baseline = None if args.baseline.lower() == "none" else args.baseline
    options = MetaOptions(seg_subset=args.seg_subset, n_bootstrap=args.n_bootstrap, confidence=args.confidence,
                          seed=args.seed, clean_quotes=args.clean_quotes, lower_is_better=lower,
                          **walks_options(args.walks, metadata))
    cards = build_cards(scores, metadata=metadata, elements=_element_sources(args.elements, scores), baseline=baseline, ratings=ratings,
                        sets=[s.strip() for s in args.sets.split(",") if s.strip()], data_dir=args.data_dir,
                        options=options, offline=True if args.offline else None, command=command_line(args.argv),
                        preferences=preferences, reward=reward, reward_dir=args.out)
    for card in cards.values():  # --scorer: what was scored, and why a set was not (never dropped)
        _scored_sets(card, scored, args.option_names.say)
    written = {name: write_card(card, args.out) for name, card in cards.items()}
    if args.json:
        from scorers.json_safe import json_default

        print(json.dumps({name: card.to_dict() for name, card in cards.items()}, default=json_default))
    else:
        for name, card in cards.items():
            print(f"{name}: {card.verdict}")
            if card.parts_verdict:
                print(f"  against its parts: {card.parts_verdict}")
            for set_name, reason in card.not_evaluated.items():
                print(f"  {set_name}: not evaluated: {reason}")
            for note in card.notes:
                print(f"  note: {note}")
            print(f"  wrote {', '.join(str(p) for p in written[name].values())}")
    return 0


def _element_sources(given: list[str], scores: dict) -> list:
    """``--elements [NAME=]FILE`` values as the card reads them; NAME must be a ``--scores`` name."""
    import os

    from scorers.report.card.elements import ElementSource

    sources = []
    for text in given:
        name, sep, path = text.partition("=")
        if not sep or os.path.isfile(text):  # a path holding "=" is a path
            name, path = None, text
        name = name.strip() if name else None
        if name is not None and name not in scores:
            raise ValueError(f"--elements {text}: {name} is not a --scores name ({', '.join(scores)})")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"--elements {text}: no such file")
        sources.append(ElementSource(path=path, metric=name))
    return sources


def _score_sets(args: argparse.Namespace) -> dict:
    """``--scorer``: score every ``--sets`` set (TS2 always) into ``OUT/scores/`` through ``ts2 score --set``'s path."""
    import os

    from scorers.sets.registry import check_set_name
    from scorers.sets.scoring import score_sets
    from scorers.cli._validate import models_by_name
    from scorers.cli.score import parse_options

    sets = list(dict.fromkeys(["ts2"] + [s.strip() for s in args.sets.split(",") if s.strip()]))
    scorers = [s.strip() for s in args.scorer.split(",") if s.strip()]
    models = models_by_name(args.model, scorers, "--scorer")
    for name in sets:
        check_set_name(name)
    images_dirs, set_files = dict(args.images_dir), dict(args.set_file)
    for option, given in (("--images-dir", images_dirs), ("--set-file", set_files)):
        unknown = [n for n in given if n not in sets]
        if unknown:
            raise ValueError(f"{option} {unknown[0]}=...: not one of the --sets ({', '.join(sets)})")
        for name, path in given.items():
            if not os.path.exists(path):
                raise FileNotFoundError(f"{option} {name}={path}: no such file or folder")
    return score_sets(scorers, sets, os.path.join(args.out, "scores"), images_dirs=images_dirs,
                      set_files=set_files, models=models, scorer_options=parse_options(args.option),
                      batch_size=args.batch_size, num_workers=args.num_workers, on_error=args.on_error,
                      progress=False, offline=True if args.offline else None)


def _scored_sets(card, scored: dict, say) -> None:
    """Put ``--scorer``'s outcome in a card: sets that could not be scored as not evaluated with their reason (worded by
    ``say``: the command's :meth:`scorers.cli._validate.OptionNames.say`), preference sets (scored; pairs file)
    where the card has no section for them, and each scored file's set provenance."""
    for name, entry in scored.items():
        if entry["status"] != "scored":  # the library's reason names parameters; ``say`` names the flags
            card.sets[name] = {"status": "not evaluated", "reason": say(entry["reason"])}
        elif entry["kind"] == "pairs" and card.sets.get(name, {}).get("status") != "evaluated":
            card.sets[name] = {"status": "not evaluated", "scores": entry["pairs_path"],
                                  "reason": f"scored ({entry['pairs_path']}: {entry['info'].get('rows')} pairs with "
                                            f"{entry['column']}_a/_b), but this card has no preference-set section"}
        elif entry["kind"] == "images":
            card.sets[name] = {"status": "not evaluated", "scores": entry["path"],
                                  "reason": f"scored ({entry['path']}); TIFA v1.0 is a bench without human ratings"}
    card.provenance["scored_sets"] = {n: {k: v for k, v in e.items() if k != "status"}
                                         for n, e in scored.items()}
