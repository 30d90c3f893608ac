"""``ts2 card``: one report card per metric (TS2 + human rating sets + paired tests vs a baseline), from score files."""
from __future__ import annotations

import argparse
import json

from ._options import DATA_DIR_HELP, SEGS_HELP, add_n_bootstrap_argument
from ._validate import confidence, count, input_dir, input_file, seg_spec


def _name_value(option: str):
    def parse(text: str) -> tuple[str, str]:
        name, sep, value = text.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
        return name.strip(), value.strip()

    parse.__name__ = option
    return parse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "card",
        help="one report card per metric: TS2 and human sets, paired tests vs a baseline (md/html/json)",
        description="A report card per metric from its score files: TS2 rank/sep/delta with CIs (as ts2 meta) and its "
                    "place among the published rows; agreement with each human rating set (as ts2 correlate); "
                    "paired tests against the baseline on every set and a one-line verdict. The card reads scores; "
                    "it never scores images.",
    )
    parser.add_argument("--scores", nargs="+", action="extend", required=True, type=_name_value("--scores"),
                        metavar="NAME=FILE",
                        help="per-image TS2 scores of metric NAME (the column NAME, or the file's only score column)")
    parser.add_argument("--baseline", default="clipscore",
                        help="baseline metric: a --scores NAME or a column of the release's released_scores.csv; "
                             "'none' for no paired tests")
    parser.add_argument("--ratings", action="append", default=[], type=_name_value("--ratings"), metavar="SET=FILE",
                        help="a human rating set: tifa160=FILE (TIFA's JSON; FILE 'tifa160' = the pinned download) "
                             "or any ratings table ts2 correlate reads, holding the metrics' per-item scores")
    parser.add_argument("--preferences", action="append", default=[], type=_name_value("--preferences"),
                        metavar="SET=FILE", help="a preference set: a pair table (item, prompt, image_a, image_b, "
                                                 "preference a/b/tie; CSV, Parquet or JSON), or the set's own file "
                                                 "for its loader (pickapic_v2, hpdv2, imagerewarddb, "
                                                 "mjbench_alignment), or FILE = the set's name for its pinned "
                                                 "download; its images' scores come from --preference-scores")
    parser.add_argument("--preference-scores", action="append", default=[], type=_name_value("--preference-scores"),
                        metavar="SET=FILE", help="per-image scores of a --preferences set: a table with an image key "
                                                 "column (image, key, image_path or file_name, as image_a/image_b "
                                                 "name them) and one column per metric; repeat to join several")
    parser.add_argument("--reward", metavar="NAME=W,...", help="also judge the weighted reward sum_k W_k * score_k "
                                                               "over --scores parts (e.g. pickscore=1,hpsv2=0.5), "
                                                               "against the baseline and each part")
    parser.add_argument("--reward-normalize", default="none", metavar="none|running|NAME=SHIFT:SCALE,...",
                        help="per-part normalisation before the weighted sum, as scorers.rewards.load: none "
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
    parser.add_argument("--metadata", type=input_file, help="TS2 metadata.csv (default: the release's)")
    parser.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    parser.add_argument("--segs", type=seg_spec, default="default", help=SEGS_HELP)
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

    from ..report.card import (PreferenceSet, RatingSet, RewardSpec, build_cards, parse_reward_normalize,
                               parse_reward_weights, write_card)
    from ._options import release_or_given
    from ._saved import command_line

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
    for name, source in args.preferences:
        if name in [p.name for p in preferences]:
            raise ValueError(f"--preferences {name}: given twice")
        if name not in preference_scores:
            raise ValueError(f"--preferences {name}: no --preference-scores {name}=FILE with its images' scores "
                             f"(the card reads scores; it never scores images)")
        preferences.append(PreferenceSet(name=name, source=source, scores=preference_scores[name], columns=columns))
    reward = None
    if args.reward:
        weights = parse_reward_weights(args.reward)
        reward = RewardSpec(weights=weights, normalize=parse_reward_normalize(args.reward_normalize, weights))
    elif args.reward_normalize != "none":
        raise ValueError("--reward-normalize: only with --reward")
    lower = [part.strip() for value in args.lower_is_better for part in value.split(",") if part.strip()]
    unknown = [n for n in lower if n not in scores and n != args.baseline]
    if unknown:
        raise ValueError(f"--lower-is-better {unknown[0]}: not a --scores name nor the baseline")
    metadata = release_or_given(args.metadata, "metadata.csv", args.data_dir)
    baseline = None if args.baseline.lower() == "none" else args.baseline
    cards = build_cards(scores, metadata=metadata, baseline=baseline, ratings=ratings,
                        sets=[s.strip() for s in args.sets.split(",") if s.strip()], data_dir=args.data_dir,
                        segs=args.segs, n_bootstrap=args.n_bootstrap, confidence=args.confidence, seed=args.seed,
                        offline=True if args.offline else None, command=command_line(args.argv),
                        clean_quotes=args.clean_quotes, lower_is_better=lower, preferences=preferences,
                        reward=reward, reward_dir=args.out)
    written = {name: write_card(card, args.out) for name, card in cards.items()}
    if args.json:
        from ..report.card import _json_default

        print(json.dumps(cards, default=_json_default))
    else:
        for name, card in cards.items():
            print(f"{name}: {card['verdict']}")
            if card.get("parts_verdict"):
                print(f"  against its parts: {card['parts_verdict']}")
            for set_name, reason in card["not_evaluated"].items():
                print(f"  {set_name}: not evaluated: {reason}")
            print(f"  wrote {', '.join(str(p) for p in written[name].values())}")
    return 0
