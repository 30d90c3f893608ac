"""``ts2 score SCORER --out scores.csv [--data-dir DIR] [--meta]``: per-image scores of TS2 (runs under accelerate).

Images come from ``--data-dir`` (``metadata.csv`` + ``images/``) or, without it, from the official Hub dataset through
``scorers.data.hub_segs`` (downloaded once into the Hugging Face cache). ``--meta`` then prints the TS2 meta-metrics
of the new scores, and the new metric among the published leaderboard rows (the release's 19 metrics).
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys

from .answers import YES_RULE_HELP, YES_RULES


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score every TS2 image with a scorer (clip_score, align_score, siglip_score, tifa, dsg...)",
        description="Per-image scores of TS2: the official Hub dataset (downloaded once into the Hugging Face cache) "
                    "or a local data_dir (metadata.csv + images/). Data-parallel under "
                    "`accelerate launch $(which ts2) score ...`; resumable: finished batches are cached in "
                    "<out>.cache/ and skipped by a rerun.",
    )
    parser.add_argument("scorer", help="registered scorer name (see scorers.registry.SCORERS)")
    parser.add_argument("--data-dir", help="local folder with metadata.csv and images/ (default: the official Hub "
                                           "dataset saxon/T2IScoreScore at the pinned revision, through load_ts2, "
                                           "downloaded once into the Hugging Face cache)")
    parser.add_argument("--out", required=True, help="output CSV: seg_id,file_name,node,<score column>[,...]")
    parser.add_argument("--model", help="checkpoint / model name (default: the scorer's own)")
    parser.add_argument("--pretrained", help="open_clip pretrained tag or file (CLIPScore on open_clip)")
    parser.add_argument("--form", choices=["paper", "cosine", "hessel", "x100"],
                        help="embedding score form (default paper: max(cos, 0))")
    parser.add_argument("--yes-rule", choices=YES_RULES,
                        help="tifa/dsg: " + YES_RULE_HELP + " (default: word)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra scorer argument (repeatable; VALUE parsed as JSON when it can be)")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="images per model call (TIFA/DSG: all questions of these images go through batched "
                             "forwards); lower it when memory runs out")
    parser.add_argument("--num-workers", type=int, default=2, help="DataLoader worker processes for decoding")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"],
                        help="model weights' dtype (default: the scorer's; fp32 for embedding scorers)")
    parser.add_argument("--jpeg-draft", type=int, metavar="PX",
                        help="decode JPEGs at reduced scale (>= PX per side, e.g. the model's 224): faster, "
                             "scores change slightly")
    parser.add_argument("--decode", choices=["pil", "device"],
                        help="clip_score on open_clip: 'device' decodes JPEGs in batches on the GPU (nvJPEG) instead "
                             "of with PIL in the workers: faster when the CPU is the limit, scores change slightly "
                             "(~1e-3); default pil")
    parser.add_argument("--cache-dir", help="crash-safe cache folder (default: <out>.cache)")
    parser.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                        help="unreadable image: stop with its name, or record it (<out stem>.errors.csv) and go on")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--meta", action="store_true",
                        help="then print the TS2 meta-metrics of the new scores, and the new metric among the "
                             "published leaderboard rows (the release's 19 metrics; release tables from $TS2_DATA, "
                             "else the cache, else one download)")
    served = parser.add_argument_group("served models (--model openai:MODEL: vLLM, SGLang, TGI, Ollama, OpenAI)")
    served.add_argument("--api-base", help="chat-completions base URL, e.g. http://localhost:8000/v1 "
                                           "(default: $OPENAI_BASE_URL, then OpenAI's)")
    served.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key "
                                                             "(default OPENAI_API_KEY; never written anywhere)")
    served.add_argument("--max-concurrency", type=int, help="requests in flight at most (default 8)")
    served.add_argument("--timeout", type=float, help="seconds per request attempt (default 60)")
    served.add_argument("--max-retries", type=int, help="retries on 429/5xx/timeouts/dropped connections (default 5)")
    served.add_argument("--price-per-1k", type=float, metavar="PRICE",
                        help="price per 1,000 prompt tokens: report the cost (completion tokens too, unless "
                             "--price-per-1k-output is given)")
    served.add_argument("--price-per-1k-output", type=float, metavar="PRICE", help="price per 1,000 completion tokens")
    parser.set_defaults(handler=run_score)


def served_options(args: argparse.Namespace) -> dict:
    """The served-model options set on the command line (the key read from its environment variable)."""
    import os

    options = {"api_base": args.api_base, "max_concurrency": args.max_concurrency, "timeout": args.timeout,
               "max_retries": args.max_retries}
    if args.api_key_env:
        if args.api_key_env not in os.environ:
            raise ValueError(f"--api-key-env {args.api_key_env}: that environment variable is not set")
        options["api_key"] = os.environ[args.api_key_env]
    return {k: v for k, v in options.items() if v is not None}


def parse_options(pairs: list[str]) -> dict:
    """``["k=v", ...]`` -> ``{k: v}`` with JSON values where they parse (``3``, ``true``, ``[1, 2]``), else strings."""
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except ValueError:
            options[key] = value
    return options


def run_score(args: argparse.Namespace) -> int:
    from ..registry import get_factory
    from ..runner import finish, process_state, score_data_dir

    for flag, price in (("--price-per-1k", args.price_per_1k), ("--price-per-1k-output", args.price_per_1k_output)):
        if price is not None and not price >= 0:
            raise ValueError(f"{flag} must be a number >= 0, got {price}")
    options = {"pretrained": args.pretrained, "form": args.form, "decode": args.decode, **served_options(args),
               **parse_options(args.option)}
    if args.yes_rule is not None:
        if "yes_rule" not in inspect.signature(get_factory(args.scorer)).parameters:
            raise ValueError(f"--yes-rule: scorer {args.scorer!r} reads no yes/no answers (tifa and dsg do)")
        options["yes_rule"] = args.yes_rule
    frame, result = score_data_dir(
        args.scorer, args.data_dir, args.out, model=args.model, precision=args.precision, cache_dir=args.cache_dir,
        scorer_options=options, batch_size=args.batch_size, num_workers=args.num_workers, on_error=args.on_error,
        progress=not args.no_progress, jpeg_draft=args.jpeg_draft,
    )
    if process_state().is_main_process:
        skipped = sum(1 for e in result.errors if e)
        print(f"wrote {args.out}: {len(frame)} rows ({result.computed} scored now, "
              f"{len(frame) - result.computed - skipped} from cache, {skipped} skipped)", file=sys.stderr)
        column = result.extra["score_columns"][0]
        empty = int(frame[column].isna().sum()) - skipped
        if empty:
            print(f"{empty} of {len(frame)} {column} scores are NaN (e.g. a judge reply without a readable rating; "
                  "the per-item records say why)", file=sys.stderr)
        from ..usage import usage_summary

        usage = usage_summary(result.records, args.price_per_1k, args.price_per_1k_output)
        if usage is not None:
            cost = "" if usage["cost"] is None else f", cost {usage['cost']:.4f} at the given price per 1k tokens"
            print(f"served requests: {usage['requests']} ({usage['cached_requests']} answered from the request cache), "
                  f"tokens sent: {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion = "
                  f"{usage['total_tokens']}{cost}", file=sys.stderr)
        if args.meta:
            print_meta(frame, result)
    finish()
    return 0


def print_meta(frame, result) -> None:
    """``--meta``: rank/sep/delta of the new score columns, then beside the published leaderboard rows.

    The scored images are the metadata (joined on ``seg_id`` + ``file_name`` by :func:`scorers.table_meta.meta_from_tables`),
    the default SEG set (0-163) is stated, and orientation comes from the scorer's own facts
    (``higher_is_better``) through :func:`scorers.orientation.resolve_orientation`."""
    from ..table_meta import meta_from_tables
    from ._format import format_meta_table

    columns = list(result.extra["score_columns"])
    evaluated = meta_from_tables(frame[["seg_id", "file_name", *columns]], frame[["seg_id", "file_name", "node"]],
                                 columns=columns, higher_is_better=result.extra.get("higher_is_better", {}))
    results = {(c if evaluated.orientation[c] else f"{c} (lower is better)"): evaluated.results[c] for c in columns}
    print(format_meta_table(results))
    print("values in %")
    print_beside_leaderboard(frame, results)


def print_beside_leaderboard(frame, results) -> None:
    """The new metric(s) among the release's published metrics (rank Avg order); a note instead when the release
    tables are not available (offline with nothing cached), never a failure of the finished run."""
    from ..release import ReleaseFileUnavailable, path
    from ..reproduce import released_reproduction
    from ..tables import read_metadata
    from ._format import format_beside_leaderboard

    try:
        published = released_reproduction(progress=False)
        release = read_metadata(path("metadata.csv"))
    except (ReleaseFileUnavailable, OSError, ValueError) as error:
        first = str(error).splitlines()[0]
        print(f"\n(published leaderboard rows not shown: {first})", file=sys.stderr)
        return
    print("\nBeside the published leaderboard (metrics of the TS2 release, recomputed from its per-image scores):")
    print(format_beside_leaderboard(results, published.results))
    ours = set(zip(frame["seg_id"].astype(int), frame["file_name"].astype(str)))
    theirs = set(zip(release["seg_id"].astype(int), release["file_name"].astype(str)))
    if ours != theirs:
        print(f"note: your scores cover {len(ours & theirs)} of the release's {len(theirs)} images"
              f"{f' (and {len(ours - theirs)} other images)' if ours - theirs else ''}: the comparison with the "
              "published rows is indicative only", file=sys.stderr)
