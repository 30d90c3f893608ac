"""SEG explorer tab logic: a SEG's prompt, its error graph (matplotlib), its images by node with every metric's score.

The SEG structure is ``scorers.stats.graph.build_segs``, with a built dir's own edges when its ``segs.json`` lies beside
the metadata or in the image folder (``data_dir``); per-image scores are the release's columns read with
``scorers.tables.pandas_tables``; per-SEG rank/sep/delta are the published results' ``per_seg`` values. For a chosen
image, each question with a metric's answer, marked right or wrong against the truth, is
:func:`scorers.ts2.elements.element_rows` (the release's per-question answers, or records of built SEGs). Nothing is
computed here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from scorers.stats.graph import SEG, attach_edges, build_segs, file_partitions
from scorers.stats.meta import META_METRICS
from scorers.ts2.reproduce import Reproduction
from scorers.tables.join import join_scores
from scorers.tables.pandas_tables import column_scores
from scorers.tables.segs_file import SEGS_FILE, read_seg_edges, segs_file_beside

from scorers.formatting import format_number
from scorers.ts2.elements import RELEASED_VARIANTS
from scorers.demo.seg_figure import seg_graph_figure
from scorers.demo.sources import ImageSource, Tables, placeholder_image

__all__ = ["ANSWER_MARKS", "SegExplorer", "answer_mark"]

#: how a question's row is marked: (the metric says the element is wrong, the truth) -> mark
ANSWER_MARKS = {(False, False): "right", (True, False): "wrong: false alarm",
                (True, True): "right: error found", (False, True): "wrong: error missed"}


def answer_mark(said_wrong: bool, truly_wrong: bool | None) -> str:
    """A question's mark: the metric's verdict (``said_wrong``: its answer disagrees with the expected one) against
    the truth (``truly_wrong``: the element is wrong in the image; None: unknown, e.g. a released image with errors,
    whose error set the release does not hold)."""
    if truly_wrong is None or truly_wrong != truly_wrong:  # None or NaN
        return "truth unknown: " + ("says wrong" if said_wrong else "says right")
    return ANSWER_MARKS[(bool(said_wrong), bool(truly_wrong))]


class SegExplorer:
    """Everything the explorer shows, indexed once: SEGs by id, per-image scores, per-SEG meta-metric values."""

    def __init__(self, tables: Tables, published: Reproduction | None, images: ImageSource, *,
                 answers: Mapping[str, object] | Sequence[str] = RELEASED_VARIANTS, questions=None,
                 data_dir=None):
        """``answers``: the per-question answers offered for a chosen image: names of the release's variants
        (:data:`scorers.ts2.elements.RELEASED_VARIANTS`, read from ``data_dir``, default ``$TS2_DATA`` / the
        cache), or ``{name: records}`` (records files of built SEGs, read against this metadata, their elements from
        the question table ``questions``)."""
        if tables.metadata is None:
            raise ValueError("the release metadata is not available")
        self.metadata = tables.metadata.reset_index(drop=True)
        partitions = (file_partitions(self.metadata["seg_id"].to_numpy(), self.metadata["partition"].to_numpy(dtype=str))
                      if "partition" in self.metadata.columns else None)  # a built data dir's own partitions
        self.segs: dict[int, SEG] = {s.seg_id: s for s in build_segs(self.metadata["seg_id"], self.metadata["node"],
                                                                     partitions=partitions)}
        segs_file = self._segs_file(tables, images)
        if segs_file is not None:  # a built dir: its graphs are its own edges, not every pair of adjacent levels
            self.segs = {s.seg_id: s for s in attach_edges(self.segs.values(), read_seg_edges(segs_file))}
        self.images = images
        self.metadata_path = tables.paths.get("metadata")
        self.questions, self.answers_dir = questions, data_dir
        self.answers: dict[str, object] = (dict(answers) if isinstance(answers, Mapping)
                                           else {name: name for name in answers})
        self.published = published
        self.columns: list[str] = list(published.columns) if published is not None else []
        self.values: dict[str, np.ndarray] = {}
        if published is not None and tables.scores is not None:
            aligned = join_scores(tables.scores, self.metadata).frame
            self.values = {c: column_scores(aligned, c, clean_quotes=True) for c in self.columns}

    @staticmethod
    def _segs_file(tables: Tables, images: ImageSource):
        """The ``segs.json`` of a built dir: beside the metadata file, else in the image folder; None for the
        release."""
        places = [segs_file_beside(tables.paths["metadata"])] if tables.paths.get("metadata") else []
        if getattr(images, "data_dir", None) is not None:
            places.append(Path(images.data_dir) / SEGS_FILE)
        return next((p for p in places if p.is_file()), None)

    def choices(self) -> list[tuple[str, int]]:
        """Dropdown entries ``("SEG 12 (synth): a prompt…", 12)``."""
        out = []
        for seg_id, seg in self.segs.items():
            prompt = self.prompt(seg_id)
            short = prompt if len(prompt) <= 60 else prompt[:57] + "..."
            out.append((f"SEG {seg_id} ({seg.partition}): {short}", seg_id))
        return out

    def seg(self, seg_id: int) -> SEG:
        try:
            return self.segs[int(seg_id)]
        except (KeyError, TypeError, ValueError):
            known = f"{min(self.segs)}-{max(self.segs)}"
            raise ValueError(f"unknown SEG id {seg_id!r}; this release has SEG ids {known}") from None

    def prompt(self, seg_id: int) -> str:
        rows = self.seg(seg_id).image_positions
        return str(self.metadata["prompt"].iloc[int(rows[0])]) if len(rows) else ""

    def summary_markdown(self, seg_id: int, metric: str | None) -> str:
        """Prompt, partition, nodes/walks, and the chosen metric's rank/sep/delta on this SEG (in %)."""
        seg = self.seg(seg_id)
        lines = [
            f"### SEG {seg.seg_id} · {seg.partition}",
            f"**Prompt:** {self.prompt(seg_id)}",
            f"{len(seg.nodes)} nodes, {len(seg.image_positions)} images, {len(seg.walks())} walk(s)"
            f"{' along its edges' if seg.edges is not None else ''}; "
            f"error levels {sorted(set(seg.errors))}.",
        ]
        if metric and self.published is not None and metric in self.published.results:
            result = self.published.results[metric]
            cells = []
            for meta in META_METRICS:
                part = result[meta]
                hit = np.flatnonzero(part.seg_ids == seg.seg_id)
                value = part.per_seg[hit[0]] if hit.size else float("nan")
                cells.append(f"{meta} **{format_number(value, 1, scale=100)}**")
            note = "" if np.any(result.rank.seg_ids == seg.seg_id) else " (SEG outside the leaderboard's subset)"
            lines.append(f"`{metric}` on this SEG: " + " · ".join(cells) + note)
        return "\n\n".join(lines)

    def figure(self, seg_id: int) -> Figure:
        """The error graph: nodes by error level left to right, the built edges (``segs.json``) when the SEG has them,
        else edges between consecutive levels (TS2's walks)."""
        seg = self.seg(seg_id)
        levels = sorted(set(seg.errors))
        nodes = [(label, int(seg.errors[k]), len(seg.members[k])) for k, label in enumerate(seg.nodes)]
        if seg.edges is not None:
            steps = [(seg.nodes[i], seg.nodes[j], None) for i, j in seg.edges]
        else:
            steps = [(seg.nodes[i], seg.nodes[j], None) for a, b in zip(levels, levels[1:])
                     for i in range(len(seg.nodes)) if seg.errors[i] == a
                     for j in range(len(seg.nodes)) if seg.errors[j] == b]
        return seg_graph_figure(nodes, steps, title=f"SEG {seg.seg_id}: semantic error graph")

    def _format(self, column: str, position: int) -> str:
        value = self.values[column][position]
        return format_number(value, 3, spec="g")

    def image_table(self, seg_id: int) -> pd.DataFrame:
        """One row per image (node order): node, error count, file, source, then every released metric's score."""
        seg = self.seg(seg_id)
        records = []
        for k, members in enumerate(seg.members):
            for position in members:
                row = self.metadata.iloc[int(position)]
                record = {"node": seg.nodes[k], "errors": seg.errors[k], "file_name": row["file_name"],
                          "source": row.get("image_source", "")}
                record.update({c: self._format(c, int(position)) for c in self.columns})
                records.append(record)
        return pd.DataFrame(records)

    def gallery_label(self, metric: str | None) -> str:
        """The gallery's label: what each caption holds."""
        score = f" · {metric} score" if metric in self.values else ""
        return f"Images by node (caption: node · image source{score})"

    def gallery(self, seg_id: int, metric: str | None) -> list[tuple[object, str]]:
        """``(image, caption)`` per image in node order; a placeholder tile where the image file is unavailable.

        Captions are short enough for a tile (``1a · SD2.1 · 0.812``: node, image source, the metric's score); the
        metric's name is in the gallery's label (:meth:`gallery_label`)."""
        seg = self.seg(seg_id)
        items = []
        for k, members in enumerate(seg.members):
            for position in members:
                row = self.metadata.iloc[int(position)]
                caption = f"{seg.nodes[k]} · {row.get('image_source', '')}"
                if metric in self.values:
                    caption += f" · {self._format(metric, int(position))}"
                image = self.images.get(row["file_name"]) if "file_name" in row else None
                items.append((image if image is not None else placeholder_image(f"node {seg.nodes[k]}"), caption))
        return items

    def image_choices(self, seg_id: int) -> list[tuple[str, str]]:
        """Image dropdown entries ``("node 1a · images/000-01.jpg", "images/000-01.jpg")`` in node order."""
        seg = self.seg(seg_id)
        return [(f"node {seg.nodes[k]} · {self.metadata['file_name'].iloc[int(p)]}",
                 str(self.metadata["file_name"].iloc[int(p)]))
                for k, members in enumerate(seg.members) for p in members]

    def question_table(self, file_name: str, source: str) -> pd.DataFrame:
        """One row per question of image ``file_name`` under the answers ``source`` (a name of :attr:`answers`):
        the question, the metric's answer, the expected answer, the element it checks, and its mark
        (:func:`answer_mark`): right or wrong against the truth, or the truth unknown. A ``ValueError`` names an
        unknown source or image."""
        if source not in self.answers:
            raise ValueError(f"unknown answers {source!r}; this explorer has {', '.join(self.answers) or 'none'}")
        from scorers.ts2.elements import element_rows

        given = self.answers[source]
        released = isinstance(given, str) and given == source
        metadata = None if released else (self.metadata_path or self.metadata)
        frame = element_rows(given, metadata=metadata, data_dir=self.answers_dir, image=file_name,
                             questions=None if released else self.questions)
        columns = {"question": "question", "answer": "answer", "expected": "expected", "element": "element"}
        out = pd.DataFrame({label: frame[column] if column in frame.columns else None
                            for label, column in columns.items()})
        out["mark"] = [answer_mark(s, t) for s, t in zip(frame["said_wrong"], frame["truly_wrong"])]
        return out

    def question_summary(self, file_name: str, source: str, table: pd.DataFrame) -> str:
        """One line over :meth:`question_table`: how many answers are marked right, wrong and unknown."""
        marks = table["mark"].astype(str)
        right = int(marks.str.startswith("right").sum())
        wrong = int(marks.str.startswith("wrong").sum())
        unknown = int(marks.str.startswith("truth unknown").sum())
        if table.empty:
            return f"`{source}` has no answers for `{file_name}`."
        line = f"`{source}` on `{file_name}`: {len(table)} question(s), {right} right, {wrong} wrong"
        if unknown:
            line += (f", {unknown} with the truth unknown (the release holds an image's error count, not which "
                     "elements are wrong; on a node-0 image every wrong answer is a false alarm)")
        return line
