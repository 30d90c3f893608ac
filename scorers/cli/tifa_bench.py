"""``ts2 tifa-bench``: the TIFA v1.0 benchmark (stats, export, generate, score, report) for text-to-image models."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scorers.cli._options import add_command
from scorers.cli._validate import bootstrap_count, count, output_dir


def _data_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TIFA v1.0 files (default: the pinned release files, downloaded once)")
    group.add_argument("--text-inputs", metavar="JSON", help="local tifa_v1.0_text_inputs.json")
    group.add_argument("--questions", metavar="JSON", help="local tifa_v1.0_question_answers.json")
    group.add_argument("--offline", action="store_true", help="never download; use the HF cache or local files")
    group.add_argument("--source", action="append", metavar="NAME",
                       help="only texts of this source (coco, drawbench, partiprompt, paintskill; repeatable)")
    group.add_argument("--limit", type=int, metavar="N", help="only the first N texts (after --source)")


def _bench(args: argparse.Namespace, *, require_questions: bool = True):
    from scorers.tifa_bench.tifa_v1_files import load_tifa_v1

    bench = load_tifa_v1(args.text_inputs, args.questions, offline=True if args.offline else None,
                         require_questions=require_questions)
    ids = bench.text_ids
    if args.source:
        sources = set(bench.texts["source"])
        unknown = sorted(set(args.source) - sources)
        if unknown:
            raise ValueError(f"--source {unknown}: not a source of these text inputs ({sorted(sources)})")
        ids = list(bench.texts.loc[bench.texts["source"].isin(args.source), "text_id"])
    if args.limit is not None:
        if args.limit < 1:
            raise ValueError(f"--limit must be >= 1, got {args.limit}")
        ids = ids[:args.limit]
    return bench if len(ids) == len(bench.texts) else bench.subset(ids)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tifa-bench", help="TIFA v1.0 benchmark of text-to-image models: generate, score, report, stats",
        description="Benchmark text-to-image models on TIFA v1.0 (4,081 prompts, 25,829 questions): generate images "
                    "with a diffusers pipeline, score them with a VQA model through the crash-safe runner, and write "
                    "TIFA's Table 4 (per category, per source, overall) with bootstrap intervals.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    stats = actions.add_parser("stats", help="prompts per source, questions, per-category question/element counts")
    _data_options(stats)
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.add_argument("--texts-only", action="store_true", help="count the text inputs only (no question file)")
    stats.set_defaults(handler=_stats)

    export = actions.add_parser("export", help="write the texts and questions as Parquet + a dataset card")
    _data_options(export)
    export.add_argument("--out", required=True, help="output folder (empty or new, unless --overwrite)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing export in --out")
    export.set_defaults(handler=_export)

    generate = add_command(actions, "generate", _generate,
                           help="generate images for the prompts with a diffusers pipeline (resumable, seeded)")
    _data_options(generate)
    generate.add_argument("--pipeline", required=True, help="diffusers pipeline: Hub name or local folder")
    generate.add_argument("--out", dest="out_dir", required=True, help="image folder")
    generate.add_argument("--seed", type=int, default=0,
                          help="base seed; each (text, k) image gets its own generator seeded from it")
    generate.add_argument("--images-per-prompt", type=int, default=1, metavar="K", help="images per text input")
    generate.add_argument("--batch-size", type=int, default=4, help="prompts per pipeline call")
    generate.add_argument("--steps", type=int, help="num_inference_steps (default: the pipeline's)")
    generate.add_argument("--guidance-scale", type=float, help="classifier-free guidance (default: the pipeline's)")
    generate.add_argument("--height", type=int, help="image height in pixels (default: the pipeline's)")
    generate.add_argument("--width", type=int, help="image width in pixels (default: the pipeline's)")
    generate.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="pipeline dtype (default fp32)")
    generate.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                          help="extra pipeline call argument (repeatable; JSON values), e.g. negative_prompt=...")
    generate.add_argument("--no-progress", action="store_true", help="no progress bar")

    score = add_command(actions, "score", _score,
                        help="TIFA-score a folder of generated images (per question, resumable, accelerate)")
    _data_options(score)
    score.add_argument("--images", required=True, help="folder of <text_id>.png or <text_id>/<k>.png")
    score.add_argument("--out", required=True, type=output_dir, help="output folder")
    score.add_argument("--name", help="model name in reports (default: the --out folder's name)")
    score.add_argument("--model", help="VQA checkpoint (default Salesforce/blip-vqa-base) or openai:MODEL (served), "
                                       "as `ts2 score tifa`")
    score.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                       help="scorer option as in `ts2 score` (vqa_backend=..., matcher options...)")
    score.add_argument("--batch-size", type=count(1), default=8, help="images per batch (all their questions go along)")
    score.add_argument("--num-workers", type=count(0, 256), default=2,
                       help="DataLoader worker processes decoding images")
    score.add_argument("--precision", choices=["fp32", "bf16", "fp16"], help="model precision (default: the scorer's)")
    score.add_argument("--cache-dir", help="crash-safe cache folder (default OUT/cache)")
    score.add_argument("--on-error", choices=["raise", "skip"], default="raise",
                       help="an unreadable image stops the run (raise) or is recorded and skipped (skip)")
    score.add_argument("--no-progress", action="store_true", help="no progress bar")
    from scorers.cli._options import add_model_options

    add_model_options(score)  # --sbert, --yes-rule and the served-model options: the same as `ts2 score`

    report = actions.add_parser(
        "report", help="TIFA Table 4 (md/tex/csv), per-category chart and paired comparisons of several models")
    report.add_argument("results", nargs="+", help="output folders of `ts2 tifa-bench score` (one per model)")
    report.add_argument("--out", required=True, type=output_dir, help="report folder")
    report.add_argument("--n-bootstrap", type=bootstrap_count, default=1000,
                        help="bootstrap resamples over texts (0: no CIs)")
    report.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap and the paired test")
    report.add_argument("--digits", type=count(0, 12), default=1, help="decimals in the tables")
    report.set_defaults(handler=_report)


def _stats(args: argparse.Namespace) -> int:
    bench = _bench(args, require_questions=not args.texts_only)
    stats = bench.stats()
    if args.texts_only:
        stats = {k: stats[k] for k in ("prompts", "prompts_per_source")}
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    from scorers.tifa_bench.tifa_v1_files import SOURCES

    print(f"prompts: {stats['prompts']:,}")
    for source, n in stats["prompts_per_source"].items():
        print(f"  {SOURCES.get(source, source):12s} {n:6,}")
    if not args.texts_only:
        print(f"questions: {stats['questions']:,}")
        print(f"  {'category':14s} {'questions':>9s} {'elements':>9s}")
        for category, n in stats["questions_per_category"].items():
            print(f"  {category:14s} {n:9,} {stats['elements_per_category'].get(category, 0):9,}")
        if stats["texts_without_questions"]:
            print(f"texts without questions: {len(stats['texts_without_questions'])} "
                  f"(e.g. {', '.join(stats['texts_without_questions'][:5])})")
    return 0


def _export(args: argparse.Namespace) -> int:
    paths = _bench(args).export_parquet(args.out, overwrite=args.overwrite)
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    """Images OUT/<text_id>.png (or OUT/<text_id>/<k>.png with --images-per-prompt K > 1). Existing images are
    skipped; each image has its own seed, so batching and processes never change it. Multi-GPU: accelerate launch
    $(which ts2) tifa-bench generate ...
    """
    from scorers.scoring.runner import finish, process_state
    from scorers.models.diffusion import load_pipeline
    from scorers.tifa_bench.generate import generate_images
    from scorers.cli.score import parse_options

    bench = _bench(args, require_questions=False)
    state = process_state()
    call = {"num_inference_steps": args.steps, "guidance_scale": args.guidance_scale, "height": args.height,
            "width": args.width}
    call = {k: v for k, v in call.items() if v is not None}
    call.update(parse_options(args.option))
    pipeline = load_pipeline(args.pipeline, device=state.device, precision=args.precision)
    counts = generate_images(pipeline, bench.text_ids, list(bench.texts["caption"]), args.out_dir, seed=args.seed,
                             images_per_prompt=args.images_per_prompt, batch_size=args.batch_size,
                             model_name=args.pipeline, call_kwargs=call, progress=not args.no_progress)
    finish()
    if state.is_main_process:
        print(f"{args.out_dir}: {counts['total']} images wanted, {counts['existing']} existed, "
              f"{counts['generated']} generated now by {counts['processes']} process(es)", file=sys.stderr)
    return 0


def _score(args: argparse.Namespace) -> int:
    """Asks every TIFA v1.0 question of each image with a VQA model through the runner (batching, crash-safe cache
    in OUT/cache, resume, accelerate launch). Writes OUT/questions.csv (one row per image x question),
    OUT/images.csv, OUT/missing.csv (texts without an image) and OUT/run.json.
    """
    from scorers.scoring.runner import finish, process_state
    from scorers.tifa_bench.image_scoring import score_images
    from scorers.cli._options import model_options, print_usage
    from scorers.cli.score import parse_options

    options = {**model_options(args, "tifa"), **parse_options(args.option)}
    run = score_images(_bench(args), args.images, args.out, name=args.name, model=args.model,
                       precision=args.precision, scorer_options=options, cache_dir=args.cache_dir,
                       batch_size=args.batch_size, num_workers=args.num_workers, on_error=args.on_error,
                       progress=not args.no_progress)
    if process_state().is_main_process:
        info = run.info
        print(f"wrote {args.out}: {info['images']} images of {info['texts_scored']}/{info['texts']} texts "
              f"({info['computed_now']} scored now), {len(run.questions)} question rows", file=sys.stderr)
        if info["texts_missing_image"]:
            first = ", ".join(run.missing.loc[run.missing["reason"] == "no image", "text_id"].head(5))
            print(f"missing: {info['texts_missing_image']} texts have no image (e.g. {first}); listed in "
                  f"{Path(args.out) / 'missing.csv'}; the run is marked incomplete", file=sys.stderr)
        print_usage(run.records, args, from_cache=run.from_cache)
        if info["unknown_files"]:
            print(f"ignored {len(info['unknown_files'])} files that name no text id (e.g. "
                  f"{', '.join(info['unknown_files'][:3])})", file=sys.stderr)
        from scorers.tifa_bench.results import BenchResult, summarize

        table = summarize(BenchResult(info["name"], run.questions, info), n_bootstrap=0)
        overall = table.loc[table["group"] == "overall", "value"].iloc[0]
        print(f"TIFA overall: {100 * overall:.1f}" + ("" if info["complete"] else " (incomplete run)"))
    finish()
    return 0


def _report(args: argparse.Namespace) -> int:
    try:
        import matplotlib  # noqa: F401  (the chart)

        from scorers.tifa_bench.model_leaderboard import build_leaderboard, write_leaderboard
    except ImportError as error:
        from scorers.errors import install_hint

        raise ValueError(f"{error}; " + install_hint("report")) from None
    from scorers.tifa_bench.results import read_results

    board = build_leaderboard([read_results(p) for p in args.results], n_bootstrap=args.n_bootstrap, seed=args.seed)
    paths = write_leaderboard(board, args.out, digits=args.digits)
    from scorers.cli._saved import command_line
    from scorers.ts2.result_file import save_result

    table = Path(paths["markdown"]).read_text(encoding="utf-8")
    inputs = {}
    for i, folder in enumerate(args.results):
        path = Path(folder) / "questions.csv" if Path(folder).is_dir() else Path(folder)
        inputs[f"results[{i}]"] = path
    paths["result"] = save_result(  # the numbers + how they were made (ts2 meta --from re-prints it)
        Path(args.out) / "result.json", command=command_line(getattr(args, "argv", None)),
        results={"unit": "fraction",
                 "summaries": {m: json.loads(f.to_json(orient="records")) for m, f in board.summaries.items()},
                 "comparisons": json.loads(board.comparisons.to_json(orient="records"))}, table=table, segs=None,
        seed=args.seed, n_bootstrap=args.n_bootstrap, variant=None, inputs=inputs)
    print(table)
    for kind, path in paths.items():
        print(f"  {kind:12s} {path}")
    return 0
