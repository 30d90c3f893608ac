"""TS2 meta-metric (rank / sep / delta) as an `evaluate` metric: a thin wrapper over ``scorers.stats.meta.ts2_meta``."""
import os

import datasets
import evaluate
from scorers.stats.graph import file_partitions
from scorers.stats.meta import ts2_meta

_CITATION = """\
@inproceedings{saxon2024ts2,
  title     = {Who Evaluates the Evaluations? Objectively Scoring Text-to-Image Prompt Coherence Metrics with
               T2IScoreScore (TS2)},
  author    = {Saxon, Michael and Jahara, Fatima and Khoshnoodi, Mahsa and Lu, Yujie and Sharma, Aditya and
               Wang, William Yang},
  booktitle = {Advances in Neural Information Processing Systems},
  year      = {2024}
}
"""

_DESCRIPTION = """\
Judges a text-to-image faithfulness metric with TS2's semantic error graphs (SEGs). Given one score per image and
each image's SEG id and node label (`0`, `1a`, `2`...; the digits are the node's error count), it returns:
rank (Spearman correlation between error count and score over walks of increasing error, sign-flipped so higher is
better), sep (mean Kolmogorov-Smirnov statistic between the score populations of nodes with different error counts)
and delta (mean score gap between nodes one error apart over the metric's spread; config "official": the official
TS2 evaluator, all node pairs, unnormalised, raw scores; config "published": the algorithm behind the paper's Table 2). Values are fractions averaged over SEGs, overall and per partition (synth / nat / real by SEG id, as the
release, or each image's `partitions` value, as a data dir built by `ts2 seg build` has them). Walks follow TS2's
level rule by default; `walks="edges"` follows each SEG's own edges (a built dir's segs.json).
"""

_KWARGS_DESCRIPTION = """
Args:
    scores (`list` of `float`): one score per image (NaN allowed: that image is skipped).
    seg_ids (`list` of `int`): the SEG id of each image.
    nodes (`list` of `str`): the node label of each image (`0`, `0b`, `1a`, `2`, ...).
    partitions (`list` of `str`, optional): the partition of each image's SEG (a built dir's metadata.csv
        `partition` column; one value per SEG). Left out: TS2's partitions by SEG id (synth < 111, nat < 136, real).
        Given: every SEG is evaluated by default (as `ts2 meta` on a built dir).
    walks (`str`, defaults to "levels"): "levels" = TS2's rule, one node per error level (the official evaluators';
        numbers comparable with the release's); "edges" = along each SEG's own edges, given as `segs`.
    segs (`str` or `dict`, only with walks="edges"): the path of a built dir's segs.json (written by
        `ts2 seg build`), or {seg_id: [[from label, to label], ...]}.
    higher_is_better (`bool`, defaults to True): False for error-count metrics such as LLMScore.
    variant (`str`, defaults to the config name: "paper", "official" or "published"): which definition.
    seg_subset (`list` of `int` or `str`, defaults to "default"): SEGs to evaluate: "default" = SEGs 0-163 present in
        the input (the paper's Table 2 set, as `ts2 meta` and the Python API), "all" = every SEG given, a range
        string ("0-10,20") or SEG ids.
    n_bootstrap (`int`, defaults to 0): bootstrap resamples over SEGs for 95% confidence intervals.
    seed (`int`, defaults to 0): bootstrap seed.
Returns:
    rank, sep, delta (`float`): averages over all evaluated SEGs (fractions).
    partitions (`dict`): {"synth"|"nat"|"real": {"rank", "sep", "delta"}}.
    segs (`str`): the evaluated SEG ids as a range, e.g. "0-163" (seg_subset's choice among the SEGs given).
    unit (`str`): "fraction" (every value; the paper prints %).
    n_segs_used (`dict`): SEGs with a defined value per meta-metric; n_segs_skipped likewise (a SEG with no
        computable node pair has sep 0, counted as used; its rank/delta are NaN, counted as skipped).
    per_seg (`dict`): {meta-metric: {seg_id: value}}.
    ci (`dict`, only with n_bootstrap): {meta-metric: {"avg"|partition: [low, high]}}.
Examples:
    >>> ts2 = evaluate.load("evaluate_modules/ts2_meta")
    >>> out = ts2.compute(scores=[0.9, 0.5, 0.2, 0.8, 0.3], seg_ids=[0, 0, 0, 1, 1], nodes=["0", "1a", "2", "0", "1"])
    >>> round(out["rank"], 3), round(out["sep"], 3)
    (1.0, 1.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Ts2Meta(evaluate.Metric):
    """rank / sep / delta of a faithfulness metric on TS2's semantic error graphs."""

    def _info(self):
        if self.config_name not in ("default", "paper", "official", "published"):
            raise ValueError(f"unknown config {self.config_name!r}; use 'paper' (default), 'official' or 'published'")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "scores": datasets.Value("float64"),
                    "seg_ids": datasets.Value("int64"),
                    "nodes": datasets.Value("string"),
                    "partitions": datasets.Value("string"),  # optional: "" where not given (see _with_partitions)
                }
            ),
            reference_urls=["https://github.com/michaelsaxon/T2IScoreScore", "https://arxiv.org/abs/2404.04251"],
        )

    # ``partitions`` is optional: evaluate requires every feature, so a call without it stores "" for each image
    def add(self, *, partitions=None, **kwargs):
        """Add one image (``partitions`` optional)."""
        return super().add(partitions="" if partitions is None and kwargs.get("scores") is not None else partitions,
                           **kwargs)

    def add_batch(self, *, partitions=None, **kwargs):
        """Add a batch of images (``partitions`` optional)."""
        return super().add_batch(partitions=_with_partitions(partitions, kwargs.get("scores")), **kwargs)

    def compute(self, *, partitions=None, **kwargs):
        """rank / sep / delta of the images given now and added before (``partitions`` optional)."""
        return super().compute(partitions=_with_partitions(partitions, kwargs.get("scores")), **kwargs)

    def _compute(self, scores, seg_ids, nodes, partitions=None, higher_is_better=True, variant=None,
                 seg_subset="default", n_bootstrap=0, seed=0, walks="levels", segs=None):
        variant = variant or (self.config_name if self.config_name in ("official", "published") else "paper")
        given = [p for p in (partitions or []) if p != ""]
        if given and len(given) != len(scores):
            raise ValueError("partitions: give one for every image, or leave it out (TS2's partitions by SEG id)")
        by_seg = file_partitions(seg_ids, partitions) if given else None
        if by_seg is not None and isinstance(seg_subset, str) and seg_subset == "default":
            seg_subset = "all"  # a built dir's own partitions: every SEG, as ts2 meta evaluates it
        if segs is not None and walks != "edges":
            raise ValueError('segs: only with walks="edges" (walks follow TS2\'s error levels by default)')
        edges = None
        if walks == "edges":
            if segs is None:
                raise ValueError('walks="edges" needs segs: the path of a built dir\'s segs.json or '
                                 "{seg_id: [[from, to], ...]}")
            if isinstance(segs, (str, os.PathLike)):
                from scorers.tables.segs_file import read_seg_edges

                edges = read_seg_edges(segs)
            else:
                edges = {int(k): [tuple(edge) for edge in v] for k, v in dict(segs).items()}
        result = ts2_meta(
            scores, seg_ids, nodes, higher_is_better=higher_is_better, variant=variant, partitions=by_seg,
            seg_subset=seg_subset, n_bootstrap=n_bootstrap, seed=seed, walks=walks, edges=edges,
        )
        names = ("rank", "sep", "delta")
        out = {name: result[name].statistic["avg"] for name in names}
        partitions = [p for p in result.rank.statistic if p != "avg"]
        out["partitions"] = {p: {name: result[name].statistic[p] for name in names} for p in partitions}
        out["segs"] = result.segs
        out["unit"] = "fraction"
        out["walks"] = walks
        out["n_segs_used"] = {name: result[name].n_used for name in names}
        out["n_segs_skipped"] = {name: result[name].n_skipped for name in names}
        out["per_seg"] = {name: result[name].to_dict()["per_seg"] for name in names}
        if n_bootstrap:
            out["ci"] = {name: result[name].to_dict()["ci"] for name in names}
        return out


def _with_partitions(partitions, scores):
    """``partitions`` as given, else ``""`` per image (evaluate stores every feature; "" reads as not given)."""
    if partitions is not None or scores is None:
        return partitions
    return [""] * len(scores)
