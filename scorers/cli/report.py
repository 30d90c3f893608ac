"""``ts2 report``: the Table-2 leaderboard (Markdown/LaTeX/CSV) and four PNG figures for every score column, beside
the 19 published metrics by default (``--no-published``: the user's columns alone)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from scorers.cli._options import add_command, add_n_bootstrap_argument, add_orientation_arguments
from scorers.cli._validate import count, input_dir, input_file, output_dir, seg_spec
from scorers.cli._options import DATA_DIR_HELP, SEGS_HELP, add_walks_argument, release_or_given, walks_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "report", run_report,
                         help="leaderboard tables (md/tex/csv) and figures (png/pdf/svg) from per-image scores")
    parser.add_argument("scores", nargs="+", type=input_file,
                        help="per-image scores CSV(s); columns of several files are combined")
    parser.add_argument("--metadata", type=input_file,
                        help="TS2 metadata.csv (id, target_prompt, file_name, rank...); default: the "
                             "release's, from --data-dir / $TS2_DATA, else the cache (downloaded once)")
    parser.add_argument("--data-dir", type=input_dir, help=DATA_DIR_HELP)
    parser.add_argument("--paper", type=input_file,
                        help="paper_table2.csv: metric names, families, orientation and FLOPs per image")
    parser.add_argument("--out", required=True, type=output_dir, help="output directory (created if missing)")
    parser.add_argument("--no-published", dest="published", action="store_false",
                        help="your metrics alone; by default the 19 published metrics of the TS2 release (its "
                             "released_scores.csv and Table 2 FLOPs, from --data-dir / $TS2_DATA, else the cache or "
                             "one download) are put beside them, as `ts2 score --meta` does")
    parser.add_argument("--column", action="append", dest="columns",
                        help="score column (repeatable; default: every non-key column)")
    parser.add_argument("--segs", dest="seg_subset", type=seg_spec, default="default", help=SEGS_HELP)
    parser.add_argument("--on", nargs="+", metavar="KEY", help="join on these key columns, e.g. --on seg_id file_name")
    parser.add_argument("--clean-quotes", action="store_true", help="strip stray quote characters (llmscore_over)")
    add_orientation_arguments(parser)
    parser.add_argument("--flops", action="append", default=[], metavar="COLUMN=VALUE",
                        help="FLOPs per image of a column for the cost figure, e.g. mymetric=1.2T (repeatable)")
    parser.add_argument("--variant", choices=["paper", "official"], default="paper", help="delta definition")
    add_walks_argument(parser)
    add_n_bootstrap_argument(parser)
    parser.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    parser.add_argument("--seg", type=int, help="SEG id drawn in the error-graph figure (default: a mid-sized SEG)")
    parser.add_argument("--graph-column", action="append", metavar="COLUMN",
                        help="metric drawn in the error-graph figure (repeatable; default: 2 best + 2 worst)")
    parser.add_argument("--digits", type=count(0, 12), default=1, help="decimals in the Markdown/LaTeX tables")
    parser.add_argument("--format", default="png", metavar="FORMATS",
                        help="figure file formats, comma-separated from png,pdf,svg (pdf/svg: vector, for papers)")
    parser.add_argument("--highlight", action="append", metavar="COLUMN",
                        help="your own metric, drawn apart and marked 'yours' in every figure (repeatable; default: "
                             "with --paper, the columns it does not list)")
    parser.add_argument("--family", action="append", default=[], metavar="COLUMN=FAMILY",
                        help="family of a column not in --paper, e.g. my_metric=embedding (repeatable)")
    human = parser.add_argument_group("human agreement (optional; see ts2 correlate)")
    human.add_argument("--ratings", metavar="RATINGS",
                       help="human ratings of the same metrics (CSV/Parquet/TIFA JSON/'tifa160'): adds "
                            "human_agreement.md/.csv beside the leaderboard, matched by metric column name")
    human.add_argument("--human", action="append", default=[], metavar="COL",
                       help="human rating column(s) of --ratings (repeatable: raters are averaged)")
    human.add_argument("--human-group-by", choices=["none", "item", "system"], default="none",
                       help="grouping of the human-agreement coefficients (default none)")
    human.add_argument("--offline", action="store_true", help="--ratings tifa160: Hugging Face cache only")
    found = parser.add_argument_group("which error did the metric see? (optional; see ts2 elements)")
    found.add_argument("--elements", action="append", default=[], type=input_file, metavar="FILE",
                       help="a ts2 elements --json file, or per-question records (built SEGs: with --metadata "
                            "OUT/metadata.csv): adds elements.md/.csv and elements_wrong_rate.png, the wrong-answer "
                            "rate against the error count, one line per metric (repeatable)")
    found.add_argument("--elements-released", action="store_true",
                       help="add the release's six per-question variants (mplug|llava|blip1 x tifa|dsg), as ts2 "
                            "elements --released")


def run_report(args: argparse.Namespace) -> int:
    """Write a Table-2-style leaderboard (rank/sep/delta x Avg/Synth/Nat/Real, best in bold, bootstrap intervals)
    as Markdown, LaTeX and CSV, and four figures: rank vs FLOPs with the Pareto front, per-SEG histograms,
    metric-by-metric correlation heatmap and one SEG's error graph.

    By default the release's 19 published metrics (with their Table 2 FLOPs) join the user's columns
    (:func:`scorers.report.published.published_inputs`); ``--no-published``, or a release that cannot be had (one
    note line says how to get it), gives the user's columns alone.
    """
    try:
        from scorers.report import write_report
        from scorers.report.costs import parse_flops_overrides
    except ImportError as error:  # matplotlib is the [report] extra
        from scorers.errors import install_hint

        raise ValueError(f"{error}; " + install_hint("report")) from None
    if bool(args.ratings) != bool(args.human):
        raise ValueError("--ratings and --human go together: the ratings file and its human rating column(s)")
    from scorers.tables.pandas_tables import read_metadata, read_paper_table, read_score_table
    from scorers.ts2.options import MetaOptions

    missing = [p for p in args.scores if not Path(p).is_file()]
    if missing:
        raise ValueError(f"scores {missing[0]}: no such file")
    metadata_path = release_or_given(args.metadata, "metadata.csv", args.data_dir)
    walks = walks_options(args.walks, metadata_path)
    metadata = read_metadata(metadata_path)
    tables = [(path, read_score_table(path)) for path in args.scores]
    paper = read_paper_table(args.paper) if args.paper else None
    columns, highlight, published = args.columns, args.highlight, None
    if args.published:
        from scorers.report.published import published_inputs
        from scorers.tables.pandas_tables import score_columns

        present = [c for _, frame in tables for c in score_columns(frame)]  # every column of the user's tables
        mine = list(args.columns or present)
        published = published_inputs(metadata, present, data_dir=args.data_dir, paper=paper,
                                     metadata_file=metadata_path)
        if published.added:
            tables.append((str(published.source), published.table))
            paper = published.paper
            columns = [*args.columns, *published.columns] if args.columns else None
            if highlight is None:
                highlight = [c for c in mine if paper is None or c not in set(paper["column"])]
    report = write_report(
        tables,
        metadata,
        Path(args.out),
        paper=paper,
        columns=columns,
        options=MetaOptions(seg_subset=args.seg_subset, clean_quotes=args.clean_quotes,
                            lower_is_better=args.lower_is_better, higher_is_better=args.higher_is_better,
                            variant=args.variant, n_bootstrap=args.n_bootstrap, seed=args.seed, on=args.on, **walks),
        flops=parse_flops_overrides(args.flops),
        seg_id=args.seg,
        graph_columns=args.graph_column,
        digits=args.digits,
        formats=args.format,
        highlight=highlight,
        families=_families(args.family),
    )
    if published is not None:
        report.notes[:0] = ([published.note] if published.note else []) + published.notes
    if args.ratings:
        from scorers.sets.ratings import read_ratings
        from scorers.report.human import write_human_agreement

        paths, notes = write_human_agreement(
            report.board, read_ratings(args.ratings, offline=True if args.offline else None), Path(args.out),
            human=[c.strip() for h in args.human for c in h.split(",") if c.strip()], grouping=args.human_group_by,
            n_bootstrap=args.n_bootstrap, seed=args.seed,
        )
        report.paths.update(paths)
        report.notes.extend(notes)
    elements = _elements(args, metadata_path, report)
    from scorers.cli._saved import command_line
    from scorers.ts2.result_file import save_result

    board = report.board
    report.paths["result"] = save_result(  # the numbers + how they were made (ts2 meta --from re-prints it)
        Path(args.out) / "result.json", command=command_line(getattr(args, "argv", None)),
        results={"leaderboard": json.loads(board.to_json(orient="records")),  # in %, as the tables show it
                 # every number at full precision, as ts2 meta --json gives it (fractions)
                 "meta": {column: report.reproduction.results[column].to_dict()
                          for column in report.reproduction.columns},
                 **({"by_error_type": {c: {t: r.to_dict() for t, r in types.items()}
                                       for c, types in report.reproduction.by_error_type.items()}}
                    if report.reproduction.by_error_type is not None else {}),
                 **({"elements": elements} if elements else {})},
        table=Path(report.paths["markdown"]).read_text(encoding="utf-8") if "markdown" in report.paths else "",
        segs=report.reproduction.segs, seed=args.seed, n_bootstrap=args.n_bootstrap, variant=args.variant,
        inputs={**{f"scores[{i}]": p for i, p in enumerate(args.scores)}, "metadata": metadata_path,
                **({"paper": args.paper} if args.paper else {}), **({"ratings": args.ratings} if args.ratings else {}),
                **{f"elements[{i}]": p for i, p in enumerate(args.elements)},
                **({"published": str(published.source)} if published is not None and published.added else {})})
    added = f" ({len(published.columns)} published + yours)" if published is not None and published.added else ""
    print(f"{len(report.board)} metric(s){added}, SEGs {report.reproduction.segs} -> {args.out}")
    width = max(len(kind) for kind in report.paths)  # one column for every row, "(pdf)"/"(svg)" ones included
    for kind, path in report.paths.items():
        print(f"  {kind:{width}s}  {path}")
    for note in report.notes:
        print(note)
    return 0


def _elements(args: argparse.Namespace, metadata_path, report) -> dict:
    """``--elements`` / ``--elements-released``: write the elements table and figure into the report; returns
    ``{metric: entry}`` for ``result.json`` ({} when neither was given)."""
    if not (args.elements or args.elements_released):
        return {}
    from scorers.report.elements import elements_by_metric, write_element_report
    from scorers.ts2.elements import load_element_summary, released_elements

    summaries = [load_element_summary(path, metadata=metadata_path) for path in args.elements]
    if args.elements_released:
        summaries.append(released_elements(data_dir=args.data_dir, n_bootstrap=args.n_bootstrap, seed=args.seed))
    formats = [f.strip().lower().lstrip(".") for f in args.format.split(",") if f.strip()]
    paths, notes = write_element_report(summaries, Path(args.out), digits=args.digits, formats=formats,
                                        highlight=args.highlight or ())
    report.paths.update(paths)
    report.notes.extend(notes)
    return elements_by_metric(summaries)


def _families(specs: list[str]) -> dict[str, str]:
    """``["my_metric=embedding"]`` -> ``{"my_metric": "embedding"}``."""
    out = {}
    for spec in specs:
        column, sep, family = spec.partition("=")
        if not sep or not column.strip() or not family.strip():
            raise ValueError(f"--family {spec!r}: expected COLUMN=FAMILY, e.g. my_metric=embedding")
        out[column.strip()] = family.strip()
    return out
