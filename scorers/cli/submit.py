"""``ts2 submit``: a leaderboard submission (write it, verify it, push it as a pull request on a Hub dataset)."""
from __future__ import annotations

import argparse
import sys

from scorers.cli._options import (DATA_DIR_HELP, N_BOOTSTRAP, SEGS_HELP, VARIANT_HELP, add_command,
                                  add_n_bootstrap_argument, add_walks_argument, walks_options)
from scorers.cli._validate import count, input_dir, number, seg_spec

#: ``ts2 submit --verify``'s exit status for a rejected submission (as for any refused input)
REJECTED_STATUS = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    submit = add_command(subparsers, "submit", run_submit, help="write, verify or push a leaderboard submission")
    submit.add_argument("path", metavar="SCORES_OR_DIR",
                        help="the per-image scores CSV (keyed by seg_id,file_name) to submit; with --verify or "
                             "--push: the submission folder")
    write = submit.add_argument_group("writing a submission (ts2 submit SCORES --column C --name NAME --out DIR)")
    write.add_argument("--column", help="the score column to submit")
    write.add_argument("--name", help="the submission's name: letters, digits, '.', '_', '-' (its folder on the Hub: "
                                      "submissions/NAME/)")
    write.add_argument("--out", metavar="DIR", help="the submission folder to write (new or empty)")
    write.add_argument("--metric", help="the metric's name as the leaderboard shows it (default: --column)")
    write.add_argument("--paper-url", help="the metric's paper")
    write.add_argument("--code-url", help="the metric's code")
    write.add_argument("--license", help="the licence of the metric (and of the scores), e.g. MIT")
    write.add_argument("--flops-per-image", type=number(0, float("inf")), help="FLOPs to score one image, if known")
    write.add_argument("--lower-is-better", action="store_true", help="lower scores mean a better image "
                                                                      "(e.g. an error count)")
    write.add_argument("--variant", choices=["paper", "official", "published"], default="paper", help=VARIANT_HELP)
    write.add_argument("--segs", dest="seg_subset", type=seg_spec, default="default", help=SEGS_HELP)
    add_walks_argument(write)
    add_n_bootstrap_argument(write)
    write.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    check = submit.add_argument_group("verifying (ts2 submit --verify DIR) and pushing (ts2 submit DIR --push "
                                      "--repo OWNER/NAME)")
    check.add_argument("--verify", action="store_true",
                       help="recompute every number of the submission folder from its scores and the pinned release "
                            "metadata, check every sha256; exit 2 naming the first mismatch")
    check.add_argument("--rescore", type=count(0), default=0, metavar="N",
                       help="with --verify: rescore N images (drawn with --rescore-seed, listed) with the registered "
                            "scorer metric.json names and compare within its tolerance")
    check.add_argument("--rescore-seed", type=count(0), default=0, help="the seed drawing the --rescore images")
    check.add_argument("--push", action="store_true",
                       help="verify the folder, then open a pull request adding it under submissions/NAME/ of the Hub "
                            "dataset --repo (token: HF_TOKEN or `hf auth login`; HF_ENDPOINT for another Hub)")
    check.add_argument("--repo", metavar="OWNER/NAME", help="the leaderboard's Hub dataset repository (--push)")
    submit.add_argument("--data-dir", type=input_dir,
                        help=DATA_DIR_HELP + "; --rescore reads the images from its images/ too (else the Hub dataset)")


#: options that only writing takes (dest, flag, default)
_WRITE_ONLY = (("column", "--column", None), ("name", "--name", None), ("out", "--out", None),
               ("metric", "--metric", None), ("paper_url", "--paper-url", None), ("code_url", "--code-url", None),
               ("license", "--license", None), ("flops_per_image", "--flops-per-image", None),
               ("lower_is_better", "--lower-is-better", False), ("variant", "--variant", "paper"),
               ("seg_subset", "--segs", "default"), ("seed", "--seed", 0),
               ("n_bootstrap", "--n-bootstrap", N_BOOTSTRAP), ("walks", "--walks", "levels"))


def run_submit(args: argparse.Namespace) -> int:
    """A TS2 leaderboard submission: 'ts2 submit SCORES --column C --name NAME --out DIR' writes the folder
    (scores.csv keyed by seg_id,file_name; result.json as ts2 meta --out writes it; metric.json; manifest.json with
    every sha256) after the checks of ts2 meta; 'ts2 submit --verify DIR' recomputes every number from the scores
    and the pinned release metadata and exits 2 naming the first mismatch (field, claimed, recomputed);
    'ts2 submit DIR --push --repo OWNER/NAME' verifies it and opens a pull request on the Hub dataset."""
    if args.push or args.verify:
        given = [flag for dest, flag, default in _WRITE_ONLY if getattr(args, dest) != default]
        if given:
            raise ValueError(f"{', '.join(given)}: options of writing a submission; --verify and --push take the "
                             "submission folder as it is")
        if args.rescore and not args.verify:
            raise ValueError("--rescore: only with --verify")
        if args.push and not args.repo:
            raise ValueError("--push needs --repo OWNER/NAME (the leaderboard's Hub dataset)")
        check = _verify(args)
        if check is None:
            return REJECTED_STATUS
        if args.push:
            return _push(args, check)
        return 0
    if args.repo:
        raise ValueError("--repo: only with --push (ts2 submit DIR --push --repo OWNER/NAME)")
    if args.rescore:
        raise ValueError("--rescore: only with --verify (ts2 submit --verify DIR --rescore N)")
    missing = [flag for flag in ("--column", "--name", "--out") if getattr(args, flag[2:]) is None]
    if missing:
        raise ValueError(f"{', '.join(missing)} required to write a submission (or --verify DIR / DIR --push)")
    return _write(args)


def _write(args: argparse.Namespace) -> int:
    import os

    from scorers.tables.release_download import path as release_path
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.submission.folder import write_submission

    if not os.path.isfile(args.path):
        raise FileNotFoundError(f"SCORES {args.path}: no such file")
    info = {"metric": args.metric, "paper_url": args.paper_url, "code_url": args.code_url, "license": args.license,
            "flops_per_image": args.flops_per_image}
    metadata = release_path("metadata.csv", args.data_dir)
    options = MetaOptions(seg_subset=args.seg_subset, variant=args.variant, n_bootstrap=args.n_bootstrap,
                          seed=args.seed, lower_is_better=[args.column] if args.lower_is_better else (),
                          **walks_options(args.walks, metadata))
    out = write_submission(args.path, column=args.column, name=args.name, out=args.out,
                           metadata=metadata,
                           info={k: v for k, v in info.items() if v is not None}, options=options)
    import json

    from scorers.formatting import escape_controls

    from scorers.stats.coverage import Coverage

    saved = json.loads((out / "result.json").read_text(encoding="utf-8"))
    print(escape_controls(saved["table"], keep_newlines=True))
    coverage = Coverage.from_dict(saved["results"][args.column]["coverage"])
    if not coverage.complete:
        print(f"warning: incomplete submission: {coverage.text()}; the leaderboard lists it apart and does not rank "
              "it (score every image of the SEGs with a finite number to be ranked)", file=sys.stderr)
    print(f"wrote {out}/ (check: ts2 submit --verify {out}; push: ts2 submit {out} --push --repo OWNER/NAME)",
          file=sys.stderr)
    return 0


def _verify(args: argparse.Namespace):
    """The :class:`~scorers.ts2.submission.folder.SubmissionCheck` of an accepted folder (its lines printed), or None (one
    line naming the problem printed)."""
    from scorers.tables.release_download import path as release_path
    from scorers.formatting import escape_controls
    from scorers.ts2.submission.folder import verify_submission

    check = verify_submission(args.path, metadata=release_path("metadata.csv", args.data_dir),
                              rescore=args.rescore, seed=args.rescore_seed, data_dir=args.data_dir)
    name = escape_controls(check.name)
    if not check.ok:  # named by its folder, as the leaderboard lists a rejected submission
        print(f"ts2 submit: rejected {escape_controls(str(args.path))}: {escape_controls(check.reason)}",
              file=sys.stderr)
        return None
    print(escape_controls(check.result["table"], keep_newlines=True))
    if args.rescore:
        if check.rescored:
            print(f"rescored {len(check.rescored)} image(s) (seed {args.rescore_seed}) within the scorer's tolerance: "
                  + ", ".join(escape_controls(k) for k in check.rescored))
        else:
            print("nothing rescored: metric.json names no registered scorer (scorer.registry)")
    print(f"verified {name}: every number recomputed from scores.csv and the release metadata "
          f"(ts2-evaluate {check.verified_by}; variant {check.variant}, SEGs {check.segs})")
    if check.coverage is not None:
        state = "complete" if check.coverage.complete else "incomplete: listed apart on the leaderboard, not ranked"
        print(f"coverage: {check.coverage.text()} ({state})")
    return check


def _push(args: argparse.Namespace, check) -> int:
    from scorers.ts2.submission.folder import SUBMISSION_FILES
    from scorers.ts2.submission.hub import push_submission

    pushed = push_submission(args.path, args.repo, name=check.name, files=list(SUBMISSION_FILES))
    print(f"pull request: {pushed.pr_url} (revision {pushed.pr_revision}; list it: ts2 leaderboard --submissions "
          f"{pushed.repo}@{pushed.pr_revision})")
    return 0
