"""``ts2 score SCORER --out scores.csv [--data-dir DIR] [--meta]``: per-image scores of TS2 (runs under accelerate).

Images come from ``--data-dir`` (``metadata.csv`` + ``images/``) or, without it, from the official Hub dataset through
``scorers.ts2.dataset.hub_segs`` (downloaded once into the Hugging Face cache). ``--meta`` then prints the TS2 meta-metrics
of the new scores, and the new metric among the published leaderboard rows (the release's 19 metrics) when it was
computed on the release's metadata and SEGs (a built data dir's scores: one line says why they are left out).
``--set NAME`` scores another set's images through the same runner (``scorers.sets.scoring.score_set``).
``--parquet EXPORT`` streams the rows of a Parquet export in bounded chunks (``scorers.ts2.parquet_scoring``).
"""
from __future__ import annotations

import argparse
import json
import sys

from scorers.cli._options import add_model_options, model_options, print_usage
from scorers.cli._validate import count, input_dir, input_file, output_file
from scorers.cli.answers import DSG_GATING_HELP, GATING


def register(subparsers: argparse._SubParsersAction) -> None:
    from scorers.sets.registry import set_names

    parser = subparsers.add_parser(
        "score",
        help="score every TS2 image with a scorer (clip_score, align_score, siglip_score, tifa, dsg...)",
        description="Per-image scores of TS2: the official Hub dataset (downloaded once into the Hugging Face cache) "
                    "or a local data_dir (metadata.csv + images/). Data-parallel under "
                    "`accelerate launch $(which ts2) score ...`; resumable: finished batches are cached in "
                    "<out>.cache/ and skipped by a rerun.",
    )
    parser.add_argument("--list", action=_ListScorers, help="list the scorers (default model, extra to install, "
                                                             "output columns) and exit")
    parser.add_argument("scorer", help="registered scorer name (ts2 score --list)")
    parser.add_argument("--data-dir", type=input_dir,
                        help="local folder with metadata.csv and images/ (default: the official Hub "
                             "dataset saxon/T2IScoreScore at the pinned revision, through load_ts2, "
                             "downloaded once into the Hugging Face cache)")
    parser.add_argument("--parquet", metavar="EXPORT",
                        help="stream the SEG rows of a Parquet export (ts2 dataset export / ts2 seg push folder, a "
                             "folder of .parquet files, or one file): read, scored and written in chunks of "
                             "--chunk-rows rows, never all in memory; a killed run resumes at its next row")
    parser.add_argument("--chunk-rows", type=count(1), metavar="N",
                        help="--parquet: rows read, scored and checkpointed per step (default 10000; memory holds "
                             "one chunk; a kill loses at most one chunk's work)")
    parser.add_argument("--set", dest="set_name", metavar="NAME",
                        help=f"the set whose images to score (default ts2): {', '.join(set_names())}; rating sets "
                             "give one score per rating row beside the set's columns, preference sets one per image "
                             "(+ <out stem>.pairs.csv)")
    parser.add_argument("--images-dir", metavar="DIR", type=input_dir,
                        help="--set: folder holding the set's image files (sets that do not embed their images; "
                             "tifa_v1: your generated <text_id>.png)")
    parser.add_argument("--set-file", metavar="FILE", type=input_file,
                        help="--set: a local copy of the set's ratings/pairs file (default: its pinned download, "
                             "cache only with HF_HUB_OFFLINE=1)")
    parser.add_argument("--out", required=True, type=output_file,
                        help="output CSV: seg_id,file_name,node,<score column>[,...]")
    parser.add_argument("--model", help="checkpoint / model name (default: the scorer's own)")
    parser.add_argument("--pretrained", help="open_clip pretrained tag or file (CLIPScore on open_clip)")
    parser.add_argument("--allow-random-weights", action="store_true",
                        help="clip_score on open_clip: accept an architecture name without --pretrained (random "
                             "weights: for timing only, the scores mean nothing)")
    parser.add_argument("--form", choices=["paper", "cosine", "hessel", "x100"],
                        help="embedding score form (default paper: max(cos, 0))")
    parser.add_argument("--dsg-gating", choices=GATING, help=DSG_GATING_HELP)
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="extra scorer argument (repeatable; VALUE parsed as JSON when it can be)")
    parser.add_argument("--batch-size", type=count(1), default=32,
                        help="images per model call (TIFA/DSG: all questions of these images go through batched "
                             "forwards); lower it when memory runs out")
    parser.add_argument("--num-workers", type=count(0, 256), default=2, help="DataLoader worker processes for decoding")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"],
                        help="model weights' dtype (default: the scorer's; fp32 for embedding scorers)")
    parser.add_argument("--jpeg-draft", type=int, metavar="PX",
                        help="decode JPEGs at reduced scale (>= PX per side, e.g. the model's 224): faster, "
                             "scores change slightly")
    parser.add_argument("--decode", choices=["pil", "device"],
                        help="clip_score on open_clip: 'device' decodes JPEGs in batches on the GPU (nvJPEG) instead "
                             "of with PIL in the workers: faster when the CPU is the limit, scores change slightly "
                             "(~1e-3); default pil")
    parser.add_argument("--engine", choices=["accelerate", "ray"], default="accelerate",
                        help="accelerate (default: this process, or the ranks of `accelerate launch`) or ray: a Ray "
                             "Data pipeline, one scorer per actor (same output, cache and resume; the ray extra)")
    parser.add_argument("--ray-address", metavar="auto|ADDR",
                        help="--engine ray: the cluster to join (auto: the one `ray start` made on this machine; "
                             "ray://HOST:10001); default: start a local Ray that listens on 127.0.0.1 only")
    parser.add_argument("--num-gpus-per-worker", type=float, default=0, metavar="G",
                        help="--engine ray: GPUs per scorer actor (0: CPU actors; 0.5: two actors share a GPU)")
    parser.add_argument("--ray-workers", dest="workers", type=count(1), metavar="N",
                        help="--engine ray: scorer actors (default: the cluster's GPUs / G, or its CPUs)")
    parser.add_argument("--cache-dir", help="crash-safe cache folder (default: <out>.cache)")
    parser.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                        help="unreadable image: stop with its name, or record it (<out stem>.errors.csv) and go on")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--meta", action="store_true",
                        help="then print the TS2 meta-metrics of the new scores, and the new metric among the "
                             "published leaderboard rows (the release's 19 metrics; release tables from $TS2_DATA, "
                             "else the cache, else one download) when scored on the release's metadata and SEGs")
    add_model_options(parser)  # --sbert, --yes-rule and the served-model group, shared with tifa-bench score
    parser.set_defaults(handler=run_score)


class _ListScorers(argparse.Action):
    """``ts2 score --list``: print :func:`scorers.scoring.registry.format_scorer_list` and exit (like ``--help``)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from scorers.scoring.registry import format_scorer_list

        print(format_scorer_list())
        parser.exit()


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


def check_score_arguments(args: argparse.Namespace) -> None:
    """What can be checked before torch loads: the scorer's name (did-you-mean from the registry) and the model
    paths (``--model``, ``--sbert``: an existing path, or a Hub id; cached when ``HF_HUB_OFFLINE=1``); one line."""
    from scorers.models.loading import check_model_source
    from scorers.scoring.registry import check_scorer_name

    check_scorer_name(args.scorer)
    check_model_source(args.model, flag="--model")
    check_model_source(args.sbert, flag="--sbert")


def run_score(args: argparse.Namespace) -> int:
    check_score_arguments(args)
    from scorers.scoring.runner import finish, process_state
    from scorers.ts2.scoring import score_data_dir

    options = {"pretrained": args.pretrained, "form": args.form, "decode": args.decode,
               **model_options(args, args.scorer), **parse_options(args.option)}
    if args.allow_random_weights:
        options["allow_random_weights"] = True
    if args.dsg_gating is not None:
        from scorers.scoring.registry import get_factory

        if getattr(get_factory(args.scorer), "rule", None) != "dsg":
            raise ValueError(f"--dsg-gating: scorer {args.scorer!r} has no parent questions (dsg has)")
        options["dsg_gating"] = args.dsg_gating
    engine_options = None
    if args.engine == "ray":
        engine_options = {"address": args.ray_address, "num_gpus_per_worker": args.num_gpus_per_worker,
                          "workers": args.workers}
    elif args.ray_address or args.num_gpus_per_worker or args.workers:
        raise ValueError("--ray-address, --num-gpus-per-worker and --ray-workers apply to --engine ray only")
    run_options = dict(model=args.model, precision=args.precision, cache_dir=args.cache_dir, scorer_options=options,
                       batch_size=args.batch_size, num_workers=args.num_workers, on_error=args.on_error,
                       progress=not args.no_progress, jpeg_draft=args.jpeg_draft, engine=args.engine,
                       engine_options=engine_options)
    if args.parquet is not None:
        return run_score_parquet(args, run_options)
    if args.chunk_rows is not None:
        raise ValueError("--chunk-rows applies to --parquet")
    if args.set_name is None:
        if args.images_dir or args.set_file:
            raise ValueError("--images-dir and --set-file apply to --set NAME (TS2 reads --data-dir)")
        frame, result = score_data_dir(args.scorer, args.data_dir, args.out, **run_options)
    else:
        from scorers.sets.registry import check_set_name
        from scorers.sets.scoring import score_set

        if check_set_name(args.set_name) != "ts2" and args.meta:
            raise ValueError("--meta prints TS2's meta-metrics; it applies to --set ts2 only")
        frame, result = score_set(args.scorer, args.set_name, args.out, data_dir=args.data_dir,
                                  images_dir=args.images_dir,
                                  set_file=args.set_file, **run_options)
    if process_state().is_main_process:
        skipped = sum(1 for e in result.errors if e)
        print(f"wrote {args.out}: {len(frame)} rows ({result.computed} scored now, "
              f"{len(frame) - result.computed - skipped} from cache, {skipped} skipped)", file=sys.stderr)
        column = result.extra["score_columns"][0]
        if result.extra.get("set", {}).get("kind") == "pairs":
            from pathlib import Path

            print(f"wrote {Path(args.out).with_name(Path(args.out).stem + '.pairs.csv')}: "
                  f"{result.extra['set']['rows']} pairs with {column}_a / {column}_b", file=sys.stderr)
        empty = int(frame[column].isna().sum()) - skipped
        if empty:
            print(f"{empty} of {len(frame)} {column} scores are NaN (e.g. a judge reply without a readable rating; "
                  "the per-item records say why)", file=sys.stderr)
        print_usage(result.records, args, from_cache=result.from_cache)
        if args.meta:
            print_meta(frame, result, data_dir=args.data_dir)  # --set ts2 reads --data-dir as ts2 score does
    finish()
    return 0


def run_score_parquet(args: argparse.Namespace, run_options: dict) -> int:
    """``ts2 score --parquet``: :func:`scorers.ts2.parquet_scoring.score_parquet` (a stream), then one summary line."""
    from scorers.ts2.parquet_scoring import score_parquet

    used = [flag for flag, value in (("--data-dir", args.data_dir), ("--set", args.set_name),
                                     ("--images-dir", args.images_dir), ("--set-file", args.set_file),
                                     ("--meta", args.meta)) if value]
    if used:
        raise ValueError(f"--parquet reads its rows from the export; drop {', '.join(used)} (for the meta-metrics, "
                         "run ts2 meta on the CSV it writes)")
    result = score_parquet(args.scorer, args.parquet, args.out, chunk_rows=args.chunk_rows or 10_000,
                           **run_options)
    print(f"wrote {args.out}: {result.rows} rows ({result.computed} scored now, {result.resumed} by an earlier run, "
          f"{result.skipped} skipped)", file=sys.stderr)
    return 0


def print_meta(frame, result, data_dir=None) -> None:
    """``--meta``: rank/sep/delta of the new score columns, then beside the published leaderboard rows.

    The scored images are the metadata (joined on ``seg_id`` + ``file_name`` by :func:`scorers.ts2.meta_from_tables.meta_from_tables`),
    the default SEG set (0-163) is stated, and orientation comes from the scorer's own facts
    (``higher_is_better``) through :func:`scorers.stats.orientation.resolve_orientation`."""
    from pathlib import Path

    from scorers.ts2.meta_from_tables import meta_from_tables
    from scorers.ts2.options import MetaOptions
    from scorers.ts2.result_text import format_meta_table

    columns = list(result.extra["score_columns"])
    metadata = frame[["seg_id", "file_name", "node"]]
    if data_dir is not None:  # a built data dir's partition column (ts2 seg build) decides its partitions
        from scorers.tables.pandas_tables import read_metadata

        metadata = read_metadata(Path(data_dir) / "metadata.csv")
    evaluated = meta_from_tables(frame[["seg_id", "file_name", *columns]], metadata,
                                 columns=columns,
                                 options=MetaOptions(higher_is_better=result.extra.get("higher_is_better", {})))
    results = {(c if evaluated.orientation[c] else f"{c} (lower is better)"): evaluated.results[c] for c in columns}
    print(format_meta_table(results))
    print("values in %")
    from scorers.tables.comparable import metadata_basis, release_basis

    segs = next(iter(evaluated.results.values())).rank.seg_ids
    if data_dir is not None:
        ours = metadata_basis(Path(data_dir) / "metadata.csv", segs)
    else:  # the Hub dataset at the pinned revision: the release's metadata.csv (pinned by its sha256)
        ours = release_basis(segs=segs)
    print_beside_leaderboard(results, ours)


def print_beside_leaderboard(results, ours) -> None:
    """The new metric(s) among the release's published metrics (rank Avg order), only when computed on the same
    metadata (``ours``: a :class:`scorers.tables.comparable.Basis`); the published rows are then recomputed from the
    release's per-image scores on the SEGs that were scored. Else one line saying why they are left out. A note instead when the release tables are not available (offline with nothing cached),
    never a failure of the finished run."""
    from scorers.tables.comparable import published_mismatch, release_basis
    from scorers.tables.release import ReleaseFileUnavailable
    from scorers.ts2.reproduce import released_reproduction
    from scorers.cli._format import format_beside_leaderboard

    release = release_basis()
    left_out = published_mismatch(ours.with_segs(None), release)  # other metadata: nothing to compute
    if left_out is None:
        try:  # on the release's metadata: the published rows recomputed on the very SEGs that were scored
            published = released_reproduction(progress=False,
                                              seg_subset="default" if ours.segs is None else list(ours.segs))
        except (ReleaseFileUnavailable, OSError, ValueError) as error:
            first = str(error).splitlines()[0]
            print(f"\n(published leaderboard rows not shown: {first})", file=sys.stderr)
            return
        theirs = next(iter(published.results.values())).rank.seg_ids if published.results else None
        left_out = published_mismatch(ours, release.with_segs(theirs))
    if left_out is not None:
        print(f"\n({left_out})", file=sys.stderr)
        return
    print("\nBeside the published leaderboard (metrics of the TS2 release, recomputed from its per-image scores):")
    print(format_beside_leaderboard(results, published.results))
