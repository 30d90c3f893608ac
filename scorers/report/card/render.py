"""A card written out: Markdown, self-contained HTML (the figure inlined), JSON and a PNG dot plot per set. Every
number comes from the card; nothing is computed here but its layout."""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from scorers.json_safe import json_default
from scorers.report.card.schema import Card, display_unit, section_kind

__all__ = ["ELEMENT_TRUTHS", "FIGURE_CAPTION", "UNIT_LINES", "card_figure", "card_html", "card_markdown", "draw_card_figure", "figure_dots",
           "figure_title", "write_card"]


def _fmt(value, digits: int = 3) -> str:
    from scorers.formatting import format_number

    return format_number(value, digits)


def _interval(low, high) -> str:
    return "" if low is None or high is None else f"[{_fmt(low)}, {_fmt(high)}]"


def _pct(value) -> str:
    """A fraction in % with one decimal, as ``ts2 meta`` prints it (67.8)."""
    from scorers.formatting import format_number

    return format_number(value, 1, scale=100.0)


def _pct_interval(low, high) -> str:
    return "" if low is None or high is None else f"[{_pct(low)}, {_pct(high)}]"


#: the unit line of a section's table (the JSON keeps fractions)
UNIT_LINES = {"ts2": "values in % (the JSON holds fractions); paired differences in percentage points (pp)",
              "pairs": "accuracies in % (the JSON holds fractions); paired differences in percentage points (pp)",
              "ratings": "coefficients from -1 to 1, as ts2 correlate prints them (not %)"}


def _set_lines(card: Card) -> list[tuple[str, list[list[str]], list[str]]]:
    """``(title, table rows, text lines)`` per set: the shared content of Markdown and HTML."""
    out = []
    base = card.baseline
    for set_name, section in card.sets.items():
        if section["status"] != "evaluated":
            out.append((set_name, [], [f"not evaluated: {section['reason']}"]))
            continue
        text = [f"headline: {section['headline']}"]
        rows = []
        kind = section_kind(set_name, section)
        if kind == "ts2":
            rows.append(["meta-metric", "partition", f"{card.metric} (%)", "CI (%)", f"{base} (%)" if base else "",
                         "CI (%)" if base else ""]
                        + [x for name in (section.get("parts") or {}) for x in (f"{name} (%)", "CI (%)")])
            meta = section["meta"]
            bm = section.get("baseline_meta")
            for m in ("rank", "sep", "delta"):
                for part, value in meta[m]["summary"].items():
                    ci = (meta[m].get("ci") or {}).get(part) or (None, None)
                    bv = bci = ""
                    if bm is not None:
                        bv = _pct(bm["summary"][m].get(part))
                        bc = (bm["ci"].get(m) or {}).get(part) if bm["ci"].get(m) else None
                        bci = _pct_interval(*bc) if bc else ""
                    row = [m, part, _pct(value), _pct_interval(*ci), bv, bci]
                    for name, p in (section.get("parts") or {}).items():
                        pc = (p["ci"].get(m) or {}).get(part) if p["ci"].get(m) else None
                        row += [_pct(p["summary"][m].get(part)), _pct_interval(*pc) if pc else ""]
                    rows.append(row)
            pub = section.get("published")
            if pub:
                text.append(f"place among the published rows (rank avg): {pub['place']} of {pub['of']}")
            text.append(f"SEGs {meta['segs']} ({meta['n_segs']})")
        elif kind == "pairs":
            rows.append(["metric", "ties", "accuracy (%)", "CI (%)", "epsilon", "pairs", "human ties", "prompts"])
            others = [(card.metric, section["rows"])]
            if section.get("baseline_rows"):
                others.append((base, section["baseline_rows"]))
            others += [(part, p["rows"]) for part, p in (section.get("parts") or {}).items()]
            for who, acc_rows in others:
                for r in acc_rows:
                    ties = r["ties"] + ("" if r["ties"] == "calibrated" else f" (metric tie {r['metric_ties']})")
                    rows.append([who, ties + (" *" if r["ties"] == section["headline_ties"] else ""),
                                 _pct(r["statistic"]), _pct_interval(r["ci_low"], r["ci_high"]),
                                 "" if r["epsilon"] is None else _fmt(r["epsilon"], 4), str(r["n_pairs"]),
                                 str(r["n_human_ties"]), str(r["n_items"])])
            text.append(f"* = the headline convention; pairs scored {section['n_scored']} of {section['n_pairs']}, "
                        f"skipped {section['n_skipped']} (an image without a score); {section['n_prompts']} prompts; "
                        f"CIs: bootstrap over prompts; column {section['column']}")
        else:
            rows.append(["coefficient", "value", "CI", "items", "NaN dropped"])
            for r in section["rows"]:
                if r["metric"] == section["column"]:
                    rows.append([r["coefficient"], _fmt(r["value"]), _interval(r["ci_low"], r["ci_high"]),
                                 str(r["n_items"]), str(r["n_nan_dropped"])])
            text.append(f"items scored {section['n_scored']}, skipped {section['n_skipped']}; "
                        f"column {section['column']}, human = mean of {', '.join(section['human'])}")
        text.insert(1, UNIT_LINES[kind])
        scale, _unit, diff_unit = display_unit(kind)

        def difference(comparison) -> str:
            low, high = comparison["ci_low"], comparison["ci_high"]
            if scale == 1.0:
                return f"{_fmt(comparison['statistic'])} {_interval(low, high)}"
            return f"{_pct(comparison['statistic'])} {diff_unit} {_pct_interval(low, high)}".rstrip()

        against = [(base, section.get("comparison", []), section.get("verdict"))]
        against += [(part, p["comparison"], p["verdict"]) for part, p in (section.get("parts") or {}).items()]
        for who, comparisons, verdict in against:
            for comparison in comparisons:
                what = comparison.get("meta_metric") or comparison.get("coefficient") or \
                    f"accuracy, ties {comparison.get('ties')}"
                text.append(f"paired vs {who} ({what}): difference {difference(comparison)}, "
                            f"p = {_fmt(comparison['pvalue'])}, {comparison['n_units']} {comparison['unit']}s, "
                            f"{comparison['method']}")
            if verdict and who != base:
                text.append(f"verdict vs {who}: {verdict}")
        if "verdict" in section:
            text.append(f"verdict: {section['verdict']}")
        text += [f"note: {n}" for n in section.get("notes", [])]
        out.append((set_name, rows, text))
        if kind == "ts2" and section["meta"].get("by_error_type"):
            out.append(_error_type_lines(card.metric, section["meta"]["by_error_type"]))
    return out


def _error_type_lines(metric: str, by_type: dict) -> tuple[str, list[list[str]], list[str]]:
    """The TS2 set's per-error-type block (``ts2 meta --by-error-type``'s numbers): one row per error type, meta-metric
    and partition, in %, with the bootstrap interval."""
    rows = [["error type", "meta-metric", "partition", f"{metric} (%)", "CI (%)", "SEGs / walks / edges"]]
    for kind, result in by_type.items():
        for m in ("rank", "sep", "delta"):
            for part, value in result["summary"][m].items():
                ci = ((result.get("ci") or {}).get(m) or {}).get(part) or (None, None)
                rows.append([kind, m, part, _pct(value), _pct_interval(*ci),
                             f"{result['n_segs']} / {result['n_walks']} / {result['n_edges']}"])
    text = [UNIT_LINES["ts2"].split(";")[0],
            "walks from node 0 along edges of one error type (each step adds one error of that type), as ts2 meta "
            "--by-error-type; CIs: bootstrap over SEGs"]
    return "ts2 per error type", rows, text


#: what each truth source of an elements file knows, in words (the card's "finds the error" section)
ELEMENT_TRUTHS = {"released": "the release: a node-0 image shows every element, so a wrong answer on a head is a false "
                              "alarm; images with errors: only their count is known",
                  "built": "built SEGs: each image's error set (metadata.csv), each question's element",
                  "evalmuse": "EvalMuse-40K: each element's mean human label, binarised as EvalMuse binarises it"}

#: a detection figure's rows in the card: (key, heading)
_DETECTION = (("precision", "precision"), ("recall", "recall"), ("f1", "F1"),
              ("balanced_accuracy", "balanced accuracy"), ("accuracy", "accuracy"), ("auroc", "AUROC"))


def _rate_cells(entry: dict | None, key: str = "wrong_rate") -> list[str]:
    if not entry:
        return ["", "", ""]
    return [_pct(entry.get(key)), _pct_interval(entry.get("low"), entry.get("high")), str(entry.get("n", ""))]


def _element_lines(card: Card) -> list[tuple[str, list[list[str]], list[str]]]:
    """The "finds the error" blocks (``card.elements``; none without it): the wrong-answer rate by node error count
    (with the detection rate of built SEGs beside it), the rates per question type, and the detection figures
    (precision, recall, F1, balanced accuracy, accuracy, AUROC) overall and per element type, each with its
    interval."""
    section = card.elements
    if section is None:
        return []
    title = "finds the error"
    if section["status"] != "evaluated":
        return [(title, [], [f"not evaluated: {section['reason']}"])]
    interval = section.get("interval") or {}
    truth = section.get("truth")
    text = [f"truth: {ELEMENT_TRUTHS.get(truth, truth)}"]
    head = section.get("false_alarm_rate_node0") or (section.get("by_error_count") or {}).get("0")
    if head:
        text.append(f"false alarms on heads (node 0, every element shown): {_pct(head.get('wrong_rate'))}% "
                    f"{_pct_interval(head.get('low'), head.get('high'))} of {head.get('n')} answers".rstrip())
    text.append("values in % (the JSON holds fractions); a wrong answer disagrees with the expected answer (before "
                "DSG's parent gating)")
    from scorers.formatting import format_number

    text.append(f"CIs: {format_number(interval.get('confidence'), 0, scale=100.0)}% bootstrap over {interval.get('over', 'SEGs')} "
                f"({interval.get('n_bootstrap')} resamples); {section['source']}, entry {section['entry']}")
    out = []
    by_count = section.get("by_error_count") or {}
    detected = section.get("detection_by_error_count") or {}
    rows = []
    if by_count or detected:
        rows.append(["error count", "wrong answers (%)", "CI (%)", "answers"]
                    + (["wrong elements found (%)", "CI (%)", "wrong elements"] if detected else []))
        for count in sorted(set(by_count) | set(detected), key=int):
            row = [count] + _rate_cells(by_count.get(count))
            if detected:
                row += _rate_cells(detected.get(count), "detection_rate")
            rows.append(row)
    accuracy = section.get("element_accuracy")
    if accuracy:
        text.append(f"element accuracy (as EvalMuse reports it): {_pct(accuracy.get('accuracy'))}% "
                    f"{_pct_interval(accuracy.get('low'), accuracy.get('high'))} of {accuracy.get('n')} "
                    "elements".replace("  ", " "))
    paired = section.get("paired")
    if paired:
        text.append(f"paired test {paired.get('a')} vs {paired.get('b')} ({paired.get('test')}): statistic "
                    f"{_fmt(paired.get('statistic'))}, p = {_fmt(paired.get('p_value'))}; accuracy difference "
                    f"{_pct(paired.get('difference'))} pp {_pct_interval(paired.get('low'), paired.get('high'))}"
                    .rstrip())
    out.append((title, rows, text))
    by_type = section.get("by_type") or {}
    if by_type:
        type_rows = [["question type", "wrong answers (%)", "CI (%)", "answers"]]
        type_rows += [[kind] + _rate_cells(entry) for kind, entry in by_type.items()]
        out.append((f"{title}: per question type", type_rows, ["values in %; CIs as above"]))
    detection = section.get("detection")
    if detection:
        figures = [("all", detection.get("overall"))] + list((detection.get("by_type") or {}).items())
        det_rows = [["element type"] + [h for _k, h in _DETECTION] + ["elements", "wrong"]]
        for kind, fig in figures:
            if not fig:
                continue
            cells = [kind]
            for key, _heading in _DETECTION:
                low, high = (fig.get("intervals") or {}).get(key) or (None, None)
                cells.append(f"{_pct(fig.get(key))} {_pct_interval(low, high)}".rstrip())
            det_rows.append(cells + [str(fig.get("n", "")), str(fig.get("n_wrong", ""))])
        out.append((f"{title}: detection", det_rows,
                    ["'the metric says this element is wrong' against the truth; values in % with their CIs; "
                     "AUROC of the probability of the expected answer (- without one)"]))
    return out


def _reward_text(reward: dict) -> str:
    terms = " + ".join(f"{_fmt(w, 4)} * n({name})" for name, w in reward["weights"].items())
    norm = reward["normalize"]
    if isinstance(norm, dict):
        norm = ", ".join(f"n({k}) = (r - {_fmt(v[0], 4)}) / {_fmt(v[1], 4)}" for k, v in norm.items())
    return f"{reward['name']} = {terms}; normalize: {norm}"


def card_markdown(card: Card, figure: str | None = None) -> str:
    lines = [f"# Report card: {card.metric}", "", f"**{card.verdict}**", ""]
    if card.reward:
        lines += [f"- weighted reward: {_reward_text(card.reward)}",
                  f"- against its parts: {card.parts_verdict}", ""]
    lines += [f"- note: {n}" for n in card.notes] + ([""] if card.notes else [])
    for title, rows, text in _set_lines(card) + _element_lines(card):
        lines += [f"## {title}", ""]
        if rows:
            lines.append("| " + " | ".join(rows[0]) + " |")
            lines.append("|" + "---|" * len(rows[0]))
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            lines.append("")
        lines += [f"- {t}" for t in text] + [""]
    if figure:
        lines += [f"![{card.metric} vs {card.baseline}]({figure})", "", FIGURE_CAPTION, ""]
    prov = card.provenance
    lines += ["## Provenance", "", f"- command: `{prov['command']}`", f"- ts2-evaluate {prov['ts2_evaluate_version']}",
              f"- SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
    if prov.get("walks", "levels") != "levels":
        lines.append(f"- walks: {prov['walks']} (each SEG's own edges, segs.json; not TS2's level rule)")
    lines += [f"- {role}: `{v['path']}` sha256 {v['sha256']}" for role, v in prov["inputs"].items()]
    return "\n".join(lines) + "\n"


def card_html(card: Card, png: bytes | None = None) -> str:
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>Report card: {e(card.metric)}</title>",
             "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.2em .6em;"
             "text-align:right;white-space:nowrap}th{background:#eee}.verdict{font-size:1.2em;font-weight:bold}"
             ".missing{color:#a33}</style></head><body>",
             f"<h1>Report card: {e(card.metric)}</h1>", f"<p class='verdict'>{e(card.verdict)}</p>"]
    if card.reward:
        parts.append(f"<ul><li>weighted reward: {e(_reward_text(card.reward))}</li>"
                     f"<li>against its parts: {e(card.parts_verdict)}</li></ul>")
    if card.notes:
        parts.append("<ul>" + "".join(f"<li>note: {e(n)}</li>" for n in card.notes) + "</ul>")
    for title, rows, text in _set_lines(card) + _element_lines(card):
        parts.append(f"<h2>{e(title)}</h2>")
        if rows:
            parts.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in rows[0]) + "</tr>")
            parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows[1:]]
            parts.append("</table>")
        cls = " class='missing'" if not rows else ""
        parts.append(f"<ul{cls}>" + "".join(f"<li>{e(t)}</li>" for t in text) + "</ul>")
    if png:
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<h2>Figure</h2><img alt='dot plot' src='data:image/png;base64,{data}' style='max-width:100%'>"
                     f"<p>{e(FIGURE_CAPTION)}</p>")
    prov = card.provenance
    parts.append("<h2>Provenance</h2><ul>" + "".join(
        f"<li>{e(t)}</li>" for t in [f"command: {prov['command']}", f"ts2-evaluate {prov['ts2_evaluate_version']}",
                                     f"SEGs: {prov['segs']}, bootstrap {prov['n_bootstrap']}, seed {prov['seed']}"]
        + [f"{role}: {v['path']} sha256 {v['sha256']}" for role, v in prov["inputs"].items()]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def figure_dots(card: Card, set_name: str) -> tuple[str, list[tuple[str, float, float | None, float | None, str]]]:
    """``(axis label, dots)`` of one set's panel: ``(label, value, ci_low, ci_high, kind)`` with kind ``metric``,
    ``baseline``, ``part`` (a weighted reward's parts) or ``other`` (TS2: the published rows of the release, with
    their bootstrap intervals; a human set: the other metric columns of its files, e.g. the metrics TIFA160's file
    scores). Only evaluated sets have dots."""
    section = card.sets[set_name]
    dots = []
    kind = section_kind(set_name, section)
    if kind == "ts2":
        rank = section["meta"]["rank"]
        ci = (rank.get("ci") or {}).get("avg") or (None, None)
        dots.append((card.metric, rank["summary"]["avg"], *ci, "metric"))
        bm = section.get("baseline_meta")
        if bm:
            bci = (bm["ci"].get("rank") or {}).get("avg") if bm["ci"].get("rank") else None
            dots.append((card.baseline, bm["summary"]["rank"]["avg"], *(bci or (None, None)), "baseline"))
        for part, p in (section.get("parts") or {}).items():
            pci = (p["ci"].get("rank") or {}).get("avg") if p["ci"].get("rank") else None
            dots.append((part, p["summary"]["rank"]["avg"], *(pci or (None, None)), "part"))
        pub = section.get("published") or {}
        shown = {d[0] for d in dots}
        for col, value in sorted((pub.get("rank_avg") or {}).items(), key=lambda kv: -kv[1] if kv[1] is not None
                                 else 9):
            if value is not None and col not in shown:
                ci = (pub.get("rank_avg_ci") or {}).get(col) or (None, None)
                dots.append((col, value, *ci, "other"))
        return "rank (avg over SEGs)", dots
    if kind == "pairs":
        head = section["rows"][0]
        dots.append((card.metric, head["statistic"], head["ci_low"], head["ci_high"], "metric"))
        if section.get("baseline_rows"):
            r = section["baseline_rows"][0]
            dots.append((card.baseline, r["statistic"], r["ci_low"], r["ci_high"], "baseline"))
        for part, p in (section.get("parts") or {}).items():
            r = p["rows"][0]
            dots.append((part, r["statistic"], r["ci_low"], r["ci_high"], "part"))
        label = f"pairwise accuracy (ties {section['headline_ties']})"
    else:
        head = next(r for r in section["rows"]
                    if r["metric"] == section["column"] and r["coefficient"] == section["headline_coefficient"])
        dots.append((card.metric, head["value"], head["ci_low"], head["ci_high"], "metric"))
        br = section.get("baseline_row")
        if br:
            dots.append((card.baseline, br["value"], br["ci_low"], br["ci_high"], "baseline"))
        for part, p in (section.get("parts") or {}).items():
            dots.append((part, p["row"]["value"], p["row"]["ci_low"], p["row"]["ci_high"], "part"))
        label = section["headline_coefficient"]
    for col, v in sorted((section.get("other_metrics") or {}).items(),
                         key=lambda kv: -kv[1]["value"] if kv[1]["value"] is not None else 9):
        dots.append((col, v["value"], v["ci_low"], v["ci_high"], "other"))
    return label, dots


_COLOURS = {"metric": "C0", "baseline": "C1", "part": "C2", "other": "0.6"}
#: the figure's legend, written under it in Markdown and HTML
FIGURE_CAPTION = ("Dots with their intervals, per set: blue this metric, orange the baseline, green a weighted "
                  "reward's parts, grey the published rows (TS2: the release's metrics) or the other metrics of a "
                  "human set's files.")


def figure_title(card: Card, width: int) -> str:
    """The figure's title: ``metric vs baseline`` on its own line, then the verdict packed into lines of at most
    ``width`` characters, broken only between its phrases (after a comma), never inside one ("on 0 of 1 sets")."""
    phrases = [p.strip() for p in str(card.verdict).split(", ") if p.strip()]
    lines, line = [f"{card.metric} vs {card.baseline}:"], ""
    for k, phrase in enumerate(phrases):
        piece = phrase + ("," if k < len(phrases) - 1 else "")
        if line and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = piece
        else:
            line = f"{line} {piece}" if line else piece
    if line:
        lines.append(line)
    return "\n".join(lines)


#: characters of the title per inch of figure width at its font size (9 pt: about 0.55 em per character)
_TITLE_CHARS_PER_INCH = 72 / (9 * 0.6)


def draw_card_figure(card: Card):
    """The card's dot plot as a matplotlib figure (None: no evaluated set): one panel per evaluated set
    (:func:`figure_dots`), values as a person reads them (TS2 and preference accuracies in %, coefficients as they
    are), laid out by matplotlib's constrained layout so that the title, panel titles and labels do not overlap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [k for k, s in card.sets.items() if s["status"] == "evaluated"]
    if not panels:
        return None
    drawn = [(k, *figure_dots(card, k)) for k in panels]
    height = max(3.6, 0.22 * max(len(d[2]) for d in drawn) + 1.6)
    width = 4.2 * len(panels)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, height), squeeze=False, layout="constrained")
    fig.suptitle(figure_title(card, int(width * _TITLE_CHARS_PER_INCH)), fontsize=9)
    for ax, (set_name, xlabel, dots) in zip(axes[0], drawn):
        scale, unit, _diff = display_unit(section_kind(set_name, card.sets[set_name]))
        for y, (label, value, low, high, kind) in enumerate(reversed(dots)):
            if value is None:
                continue
            colour = _COLOURS[kind]
            value = value * scale
            if low is not None and high is not None:
                low, high = low * scale, high * scale
                ax.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="o", color=colour, capsize=3,
                            markersize=4 if kind == "other" else 6, elinewidth=0.8 if kind == "other" else 1.5)
            else:
                ax.plot(value, y, "o", color=colour, markersize=4)
        ax.set_ylim(-0.7, len(dots) - 0.3)
        ax.set_yticks(range(len(dots)))
        ax.set_yticklabels([d[0] for d in reversed(dots)], fontsize=7)
        ax.set_title(set_name)
        ax.set_xlabel(f"{xlabel} ({unit})" if unit else xlabel)
        ax.grid(axis="x", alpha=0.3)
    return fig


def card_figure(card: Card, path: Path) -> Path | None:
    """One dot plot per evaluated set (:func:`figure_dots`, drawn by :func:`draw_card_figure`): this metric, the
    baseline, a reward's parts and, in grey, the published rows (TS2) or the other metrics of the set's files, each
    with its interval where it has one. TS2 shows rank (avg, %); a rating set its headline coefficient; a preference
    set its headline accuracy (%)."""
    fig = draw_card_figure(card)
    if fig is None:
        return None
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_card(card: Card, out_dir: str | Path) -> dict[str, Path]:
    """``<metric>.md``, ``<metric>.html`` (figure inlined), ``<metric>.json`` and ``<metric>.png`` in ``out_dir``."""
    from scorers.atomic import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in card.metric)
    paths = {}
    try:
        png_path = card_figure(card, out / f"{stem}.png")
    except ModuleNotFoundError as missing:  # matplotlib is the report extra: the card's numbers stand without it
        if missing.name != "matplotlib":
            raise
        png_path = None
        card.notes = card.notes + ["no figure: matplotlib is not installed (pip install 'ts2-evaluate[report]')"]
    png = png_path.read_bytes() if png_path else None
    if png_path:
        paths["png"] = png_path
    for kind, text in (("md", card_markdown(card, png_path.name if png_path else None)), ("html", card_html(card, png)),
                       ("json", json.dumps(card.to_dict(), indent=1, default=json_default))):
        target = out / f"{stem}.{kind}"
        write_text_atomic(target, text)
        paths[kind] = target
    return paths
