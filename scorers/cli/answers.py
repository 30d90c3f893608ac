"""``ts2 answers-to-scores RAW.csv --questions tifa|dsg --out scores.csv``: free-form VQA answers -> TIFA/DSG scores."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "answers-to-scores",
        help="turn free-form VQA answers (id,image,question_id,vqa_answer) into per-question records and "
             "per-image TIFA/DSG scores",
        description="Match each free-form answer to its question's choices (yes/no: 'yes' in the answer; multiple "
                    "choice: SBERT nearest choice), then score each image (TIFA: fraction correct; DSG: answered "
                    "yes with all parents passing). Rows of one image are consecutive, starting at question 0, "
                    "images in metadata order.",
    )
    parser.add_argument("answers", help="answers CSV: id,image,question_id,vqa_answer (header optional)")
    parser.add_argument("--questions", choices=["tifa", "dsg"], required=True, help="question set and rule")
    parser.add_argument("--questions-csv", help="question table (default: <data-dir>/<questions>_questions.csv)")
    parser.add_argument("--data-dir", default=".", help="TS2 data dir with metadata.csv and the question tables")
    parser.add_argument("--metadata", help="metadata.csv (default: <data-dir>/metadata.csv if present)")
    parser.add_argument("--out", required=True, help="per-image scores CSV (seg_id,file_name,node,<name>)")
    parser.add_argument("--records", help="per-question records CSV (default: <out stem>.records.csv)")
    parser.add_argument("--name", help="score column name (default: the --questions value)")
    parser.add_argument("--sbert", default=None, help="sentence-transformers model or path for multiple choice "
                                                      "(default sentence-transformers/all-mpnet-base-v2)")
    parser.add_argument("--accumulate", choices=["dsg", "tifa"], default="dsg",
                        help="DSG only: dsg = parents must pass (default); tifa = plain fraction answered yes")
    parser.add_argument("--keep-end-tokens", action="store_true",
                        help="embed multiple-choice answers with their </s> tails, as the TS2 release did")
    parser.set_defaults(handler=run_answers)


def run_answers(args: argparse.Namespace) -> int:
    from ..qga.answers import answers_to_scores
    from ..qga.matching import DEFAULT_SBERT, AnswerMatcher
    from ..qga.questions import read_question_set
    from ..tables import read_metadata

    data_dir = Path(args.data_dir)
    questions = read_question_set(args.questions_csv or data_dir / f"{args.questions}_questions.csv", args.questions)
    metadata_path = Path(args.metadata) if args.metadata else data_dir / "metadata.csv"
    if args.metadata and not metadata_path.is_file():
        raise FileNotFoundError(f"metadata {metadata_path} does not exist")
    metadata = read_metadata(metadata_path) if metadata_path.is_file() else None
    matcher = AnswerMatcher(args.sbert or DEFAULT_SBERT, strip_end_tokens=not args.keep_end_tokens)
    result = answers_to_scores(args.answers, questions, metadata=metadata, matcher=matcher,
                               accumulate=args.accumulate, score_name=args.name)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result.scores.to_csv(out, index=False)
    records = Path(args.records) if args.records else out.with_name(out.stem + ".records.csv")
    result.records.to_csv(records, index=False)
    n_correct = int(result.records["correct"].sum())
    print(f"wrote {out}: {len(result.scores)} images; {records}: {len(result.records)} answers "
          f"({n_correct} correct)", file=sys.stderr)
    return 0
