"""``ts2 elements``: which error did the metric see? Element-level verdicts against the release (``--released``),
built SEGs (records + ``--metadata``) or EvalMuse-40K's per-element labels (``--set evalmuse``)."""
from __future__ import annotations

import argparse
import json
import sys

from scorers.cli._options import add_command, add_n_bootstrap_argument
from scorers.cli._validate import confidence, count, input_file, output_file

#: the released variants (kept here as text so that ``ts2 --help`` imports no library module)
VARIANTS = ("mplug_tifa", "llava_tifa", "blip1_tifa", "mplug_dsg", "llava_dsg", "blip1_dsg")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(subparsers, "elements", run_elements,
                         help="which error did the metric see? per-question verdicts against the release, your built "
                              "SEGs or EvalMuse's element labels")
    parser.add_argument("records", nargs="*", metavar="RECORDS",
                        help="per-question records, one file per metric: ts2 score tifa|dsg's <out>.records.jsonl, "
                             "ts2 answers-to-scores' records CSV, ts2 seg check's review CSV (with --metadata); or "
                             "element scores in EvalMuse's eval.py layout (with --set evalmuse)")
    parser.add_argument("--released", nargs="*", metavar="VARIANT", choices=VARIANTS,
                        help=f"the release's per-question answers (default: all six: {', '.join(VARIANTS)})")
    parser.add_argument("--metadata", type=input_file, metavar="METADATA_CSV",
                        help="a built metadata.csv (ts2 seg build): each image's error set is the truth")
    parser.add_argument("--questions", type=input_file, metavar="QUESTIONS_CSV", action="append",
                        help="the question table with its element column (ts2 seg plan writes it); with --released, "
                             "tables of the release's questions with an element_type column (one per family, "
                             "repeatable): the rates per type too")
    parser.add_argument("--set", dest="set_name", choices=("evalmuse",),
                        help="evalmuse: EvalMuse-40K's per-element human labels are the truth")
    parser.add_argument("--evalmuse-file", type=input_file, metavar="TRAIN_LIST_JSON",
                        help="a local EvalMuse train_list.json (default: the pinned Hub file)")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="a paired test of two metrics answered on the same questions (two variants or two "
                             "RECORDS files)")
    parser.add_argument("--test", choices=("mcnemar", "bootstrap"), default="mcnemar",
                        help="the paired test of --compare: McNemar (exact binomial below 25 discordant answers, "
                             "else chi-square with continuity correction) or a paired bootstrap over SEGs")
    parser.add_argument("--data-dir", metavar="DIR", help="a local copy of the release (default: $TS2_DATA)")
    add_n_bootstrap_argument(parser, over="SEGs (prompts for evalmuse)")
    parser.add_argument("--confidence", type=confidence, default=0.95, help="CI level")
    parser.add_argument("--seed", type=count(0), default=0, help="random seed of the bootstrap resampling")
    parser.add_argument("--offline", action="store_true", help="use the Hugging Face cache only (evalmuse)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.add_argument("--out", type=output_file, metavar="JSON", help="also write the summary JSON here")


def run_elements(args: argparse.Namespace) -> int:
    """Element-level verdicts: with ``--released``, the wrong-answer rate per node error count of the release's
    per-question answers; with RECORDS and ``--metadata``, precision / recall / F1 / balanced accuracy / AUROC of "the
    metric says this element is wrong" per error type; with ``--set evalmuse``, EvalMuse's element accuracy and the
    same figures per element category. Intervals: bootstrap over SEGs (prompts)."""
    kw = dict(n_bootstrap=args.n_bootstrap, confidence=args.confidence, seed=args.seed)
    questions = args.questions or []
    if args.released is None and len(questions) > 1:
        raise ValueError(f"--questions: one table with built SEGs' records, got {len(questions)}")
    args.questions = questions[0] if args.released is None and questions else args.questions
    sources = [args.released is not None, args.metadata is not None, args.set_name is not None]
    if sum(sources) != 1:
        raise ValueError("choose one truth: --released, --metadata (built SEGs with RECORDS) or --set evalmuse")
    if args.released is not None:
        from scorers.ts2.elements import released_elements

        if args.records:
            raise ValueError(f"--released reads the release's answers; RECORDS ({args.records[0]}) go with --metadata")
        summary = released_elements(args.released or None, data_dir=args.data_dir, questions=args.questions, **kw)
    elif args.metadata is not None:
        from scorers.ts2.elements import built_elements

        if not args.records:
            raise ValueError("--metadata needs RECORDS: the per-question records of at least one metric")
        summary = built_elements(args.records, metadata=args.metadata, questions=args.questions, **kw)
    else:
        from scorers.sets.element_labels import evalmuse_elements, read_evalmuse_elements

        if not args.records:
            raise ValueError("--set evalmuse needs RECORDS: a metric's element scores (EvalMuse's eval.py layout)")
        labels = read_evalmuse_elements(args.evalmuse_file) if args.evalmuse_file else None
        summary = {}
        for path in args.records:
            one = evalmuse_elements(path, evalmuse=labels if labels is not None else None, offline=args.offline or None,
                                    **kw)
            summary.update(one)
    if args.compare:
        from scorers.ts2.elements import compare_elements

        if args.set_name is not None:
            raise ValueError("--compare works with --released or --metadata")
        summary["paired"] = compare_elements(*args.compare, metadata=args.metadata,
                                             questions=None if args.released is not None else args.questions,
                                             data_dir=args.data_dir, method=args.test, **kw)
    if args.out:
        from scorers.atomic import write_text_atomic

        write_text_atomic(args.out, json.dumps(summary, indent=2) + "\n")
        print(f"wrote {args.out}", file=sys.stderr)
    print(json.dumps(summary) if args.json else format_elements(summary))
    return 0


def _cell(entry: dict | None, key: str) -> str:
    from scorers.ts2.result_text import pct

    if not entry:
        return ""
    text = pct(entry.get(key))
    if entry.get("low") is not None:
        text += f" [{pct(entry['low'])}, {pct(entry['high'])}]"
    return f"{text} (n={entry.get('n', 0)})"


def _rate_table(summary: dict, metrics: list[str], block: str, label: str, order=None) -> str:
    """One row per (metric, key of its ``block``): the wrong-answer rate (%), its interval, the number of answers."""
    from scorers.ts2.result_text import pct, text_grid

    rows = [["metric", label, "wrong %", "interval", "answers"]]
    for m in metrics:
        entries = summary[m].get(block, {})
        for k, key in enumerate(sorted(entries, key=order) if order else entries):
            entry = entries[key]
            span = f"[{pct(entry['low'])}, {pct(entry['high'])}]" if entry.get("low") is not None else "-"
            rows.append([m if k == 0 else "", key, pct(entry.get("wrong_rate")), span, f"{entry.get('n', 0):,}"])
    return text_grid(rows)


def format_elements(summary: dict) -> str:
    """The summary as tables for people (percentages, 95% intervals, counts)."""
    from scorers.ts2.result_text import pct, text_grid

    metrics = [k for k in summary if k not in ("unit", "truth", "interval", "paired")]
    interval = summary.get("interval", {})
    lines = [f"truth: {summary['truth']}; intervals: {interval.get('confidence', 0.95):.0%} bootstrap over "
             f"{interval.get('over', 'SEGs')} ({interval.get('n_bootstrap')} resamples)"]
    counts = sorted({c for m in metrics for c in summary[m].get("by_error_count", {})}, key=int)
    if counts:
        lines += ["", "wrong-answer rate (%) by node error count (at 0: the false-alarm rate)",
                  _rate_table(summary, metrics, "by_error_count", "errors", order=lambda c: int(c))]
    typed = [m for m in metrics if summary[m].get("by_type")]
    if typed:
        lines += ["", "wrong-answer rate (%) by question type", _rate_table(summary, typed, "by_type", "type")]
    for m in metrics:
        block = summary[m]
        if block.get("element_accuracy"):
            acc = block["element_accuracy"]
            lines += ["", f"{m}: EvalMuse element accuracy {pct(acc['accuracy'])} "
                          f"[{pct(acc['low'])}, {pct(acc['high'])}] (n={acc['n']})"]
        detection = block.get("detection") or {}
        if detection.get("overall"):
            lines += ["", f"{m}: does it say the wrong element is wrong?"]
            rows = [["type", "precision", "recall", "F1", "bal. acc.", "accuracy", "AUROC", "n", "wrong"]]
            for name, fig in [("overall", detection["overall"]), *detection.get("by_type", {}).items()]:
                rows.append([name, *(pct(fig[k]) for k in ("precision", "recall", "f1", "balanced_accuracy",
                                                           "accuracy", "auroc")), str(fig["n"]), str(fig["n_wrong"])])
            lines.append(text_grid(rows))
        if block.get("false_alarm_rate_node0"):
            found = block.get("detection_by_error_count", {})
            lines.append(f"false alarms on node 0: {_cell(block['false_alarm_rate_node0'], 'wrong_rate')}; "
                         "detection rate by error count: "
                         + (", ".join(f"{c}: {_cell(e, 'detection_rate')}" for c, e in found.items()) or "none"))
    paired = summary.get("paired")
    if paired:
        lines += ["", f"paired: {paired['a']} vs {paired['b']} on {paired['on']}: {paired['test']}: statistic "
                      f"{paired['statistic']:.4g}, p = {paired['p_value']:.4g}; {paired['n_a_only']} right only by "
                      f"{paired['a']}, {paired['n_b_only']} only by {paired['b']}; accuracy difference "
                      f"{pct(paired['difference'])} [{pct(paired['low'])}, {pct(paired['high'])}] (n={paired['n']})"]
    return "\n".join(lines)
