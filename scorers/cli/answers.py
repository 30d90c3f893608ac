"""``ts2 answers-to-scores RAW.csv --questions tifa|dsg --out scores.csv``: free-form VQA answers -> TIFA/DSG scores."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scorers.metrics.qga.dsg import GATING  # numpy only
from scorers.metrics.qga.matching import YES_RULES  # numpy and the standard library only: --help stays fast
from scorers.cli._validate import input_dir, input_file, output_file

#: ``--yes-rule`` help, shared with ``ts2 score``
YES_RULE_HELP = ("how a yes/no question's answer is read: word = the first standalone yes/no word decides, SBERT "
                 "over the two choices when there is none; release = the TS2 release's rule, 'yes' anywhere in the "
                 "answer (so 'eyes' counts as yes); tifa = the official TIFA code's, the answer if it equals a "
                 "choice exactly, else SBERT")


#: ``--dsg-gating`` help, shared with ``ts2 score``
DSG_GATING_HELP = ("DSG only: which answers gate a question: ancestors (default) = it and every ancestor must be "
                   "answered yes, recursively (TS2's code and release); parents = it and its direct parents only, one "
                   "level (the official DSG code, j-min/DSG)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "answers-to-scores",
        help="turn free-form VQA answers (id,image,question_id,vqa_answer) into per-question records and "
             "per-image TIFA/DSG scores",
        description="Match each free-form answer to its question's choices (yes/no: --yes-rule; multiple "
                    "choice: SBERT nearest choice), then score each image (TIFA: fraction correct; DSG: answered "
                    "yes with all parents passing). Rows of one image are consecutive, starting at question 0, "
                    "images in metadata order.",
    )
    parser.add_argument("answers", type=input_file,
                        help="answers CSV: id,image,question_id,vqa_answer (header optional)")
    parser.add_argument("--questions", choices=["tifa", "dsg"], required=True, help="question set and rule")
    parser.add_argument("--questions-csv", type=input_file,
                        help="question table (default: <data-dir>/<questions>_questions.csv)")
    parser.add_argument("--data-dir", type=input_dir, default=".",
                        help="TS2 data dir with metadata.csv and the question tables")
    parser.add_argument("--metadata", type=input_file,
                        help="metadata.csv (default: <data-dir>/metadata.csv if present)")
    parser.add_argument("--out", required=True, type=output_file,
                        help="per-image scores CSV (seg_id,file_name,node,<name>)")
    parser.add_argument("--records", type=output_file,
                        help="per-question records CSV (default: <out stem>.records.csv)")
    parser.add_argument("--name", help="score column name (default: the --questions value)")
    parser.add_argument("--sbert", default="sentence-transformers/all-mpnet-base-v2",
                        help="sentence-transformers model or local path for multiple choice and the yes/no fallback")
    parser.add_argument("--yes-rule", choices=YES_RULES, default="word", help=YES_RULE_HELP)
    parser.add_argument("--on-blank", choices=["wrong", "error"], default="wrong",
                        help="a blank answer (empty cell or only </s>): count it as wrong (flagged 'blank' in the "
                             "records), or stop with its line")
    parser.add_argument("--allow-partial", action="store_true",
                        help="score a file that lacks some metadata images (e.g. truncated) instead of stopping; "
                             "their score cells stay empty and the summary says how many are missing")
    parser.add_argument("--accumulate", choices=["dsg", "tifa"], default="dsg",
                        help="DSG only: dsg = parents must pass; tifa = plain fraction answered yes")
    parser.add_argument("--dsg-gating", choices=GATING, help=DSG_GATING_HELP)
    parser.add_argument("--keep-end-tokens", action="store_true",
                        help="embed answers for SBERT with their </s> tails, as the TS2 release did")
    parser.set_defaults(handler=run_answers)


def run_answers(args: argparse.Namespace) -> int:
    from scorers.metrics.qga.answers import answers_to_scores
    from scorers.metrics.qga.matching import AnswerMatcher
    from scorers.metrics.qga.questions import read_question_set
    from scorers.tables.pandas_tables import read_metadata

    if args.dsg_gating is not None and args.questions != "dsg":
        raise ValueError(f"--dsg-gating {args.dsg_gating}: only --questions dsg has parent questions")
    data_dir = Path(args.data_dir)
    questions = read_question_set(args.questions_csv or data_dir / f"{args.questions}_questions.csv", args.questions)
    metadata_path = Path(args.metadata) if args.metadata else data_dir / "metadata.csv"
    if args.metadata and not metadata_path.is_file():
        raise FileNotFoundError(f"metadata {metadata_path} does not exist")
    metadata = read_metadata(metadata_path) if metadata_path.is_file() else None
    matcher = AnswerMatcher(args.sbert, strip_end_tokens=not args.keep_end_tokens, yes_rule=args.yes_rule)
    result = answers_to_scores(args.answers, questions, metadata=metadata, matcher=matcher,
                               accumulate=args.accumulate, score_name=args.name, on_blank=args.on_blank,
                               allow_partial=args.allow_partial, dsg_gating=args.dsg_gating or "ancestors")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result.scores.to_csv(out, index=False)
    records = Path(args.records) if args.records else out.with_name(out.stem + ".records.csv")
    from scorers.formatting import csv_safe

    csv_safe(result.records).to_csv(records, index=False)  # answers and questions as text: no formula
    n_correct = int(result.records["correct"].sum())
    print(f"wrote {out}: {len(result.scores)} images; {records}: {len(result.records)} answers "
          f"({n_correct} correct, {result.n_blank} blank counted wrong); yes rule: {args.yes_rule}"
          f"{'; DSG gating: ' + (args.dsg_gating or 'ancestors') if args.questions == 'dsg' else ''}", file=sys.stderr)
    if result.missing:
        print(f"PARTIAL: {len(result.missing)} of {len(result.scores)} metadata images have no answers (first: "
              f"{result.missing[0]}); their scores are empty", file=sys.stderr)
    return 0
