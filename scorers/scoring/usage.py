"""Token usage of served models in per-item records, and its totals (tokens, requests, cost) for ``ts2 score``.

:class:`MeteredScorer` wraps any runner scorer whose backends are served (``scorers.models.openai_compat``): around
each batch it collects every request the backends made and adds to item ``i``'s record ``requests`` (request text,
answer, usage, cached or not) and ``usage`` (token sums). A request is attributed to the item whose image (or ``refs``
object) it was made for; one tied to no item (e.g. question generation) is counted on the batch's first item, so the
totals stay exact. Nested fields only: they go to ``<out stem>.records.jsonl``, never into score columns.
"""
from __future__ import annotations

import contextlib
import math
from typing import Iterable, Sequence

import numpy as np

__all__ = ["MeteredScorer", "format_usage", "served_backends", "usage_summary"]

_TOKENS = ("prompt_tokens", "completion_tokens")


def served_backends(scorer) -> list:
    """The served backends a scorer uses: its ``backends`` (judges) or ``backend``, those with ``record()``."""
    candidates = getattr(scorer, "backends", None) or (getattr(scorer, "backend", None),)
    out = []
    for backend in candidates:
        if backend is not None and hasattr(backend, "record") and all(backend is not b for b in out):
            out.append(backend)
    return out


class MeteredScorer:
    """``scorer`` with per-item ``requests``/``usage`` records from its served ``backends`` (see module docstring).
    Everything else (``name``, ``config``, ``higher_is_better``...) is the wrapped scorer's."""

    def __init__(self, scorer, backends: Sequence | None = None):
        self.scorer = scorer
        self.backends = list(backends) if backends is not None else served_backends(scorer)

    def __getattr__(self, name):
        if name == "scorer":
            raise AttributeError(name)
        return getattr(self.scorer, name)

    def use_request_cache(self, cache) -> None:
        if hasattr(self.scorer, "use_request_cache"):
            self.scorer.use_request_cache(cache)
        for backend in self.backends:
            backend.use_request_cache(cache)

    def score(self, images, prompts, **kwargs) -> np.ndarray:
        return self.score_with_records(images, prompts, **kwargs)[0]

    def score_with_records(self, images, prompts, **kwargs):
        """The wrapped scorer's ``score_with_records`` (or ``score``) with every keyword it takes (e.g. ``seg_ids``
        of the question scorers), plus the per-item ``requests``/``usage`` records."""
        with contextlib.ExitStack() as stack:
            logs = [stack.enter_context(backend.record()) for backend in self.backends]
            if hasattr(self.scorer, "score_with_records"):
                scores, records = self.scorer.score_with_records(images, prompts, **kwargs)
            else:
                scores, records = self.scorer.score(images, prompts, **kwargs), [None] * len(prompts)
        records = [dict(r) if r else {} for r in records]
        position = {id(image): i for i, image in reversed(list(enumerate(images)))}
        for record in records:
            record.setdefault("requests", [])
        for log in logs:
            for entry in log:
                item = position.get(entry.pop("ref"), 0)
                records[item]["requests"].append(entry)
        for record in records:
            record["usage"] = _sum_usage(record["requests"])
        return scores, records


def _sum_usage(requests: Iterable[dict]) -> dict:
    """Token sums of the requests sent for one item; requests answered from the request cache (or repeats of a
    request in the same call) are counted in ``cached_requests`` but their tokens are not counted again."""
    total = {k: 0 for k in _TOKENS}
    total.update(requests=0, cached_requests=0)
    for request in requests:
        total["requests"] += 1
        total["cached_requests"] += bool(request.get("cached"))
        if request.get("cached"):
            continue
        for k in _TOKENS:
            total[k] += int((request.get("usage") or {}).get(k) or 0)
    return total


def usage_summary(records: Sequence[dict | None], price_per_1k: float | None = None,
                  price_per_1k_output: float | None = None, from_cache: Sequence[bool] | None = None) -> dict | None:
    """Totals over per-item records with ``usage`` (None when no record has any), with the work done now and the
    work the caches answered always apart:

    * ``sent_requests``, ``prompt_tokens``, ``completion_tokens``, ``total_tokens``: requests sent to the server in
      this run and their tokens; ``cost`` = prompt tokens/1000 x ``price_per_1k`` + completion tokens/1000 x
      ``price_per_1k_output`` (default: the same price) when a price is given: what this run paid, nothing else;
    * ``cached_requests``, ``cached_prompt_tokens``, ``cached_completion_tokens``: requests answered without sending:
      by the request cache, as repeats of a request in the same call, or inside items whose score came from the score
      cache (``from_cache[i]`` true: the runner's ``RunResult.from_cache``; their records were written by an earlier
      run, so none of their requests was sent now);
    * ``requests``: both together.
    """
    if from_cache is not None and len(from_cache) != len(records):
        raise ValueError(f"from_cache has {len(from_cache)} flags for {len(records)} records")
    total = {k: 0 for k in ("requests", "sent_requests", "cached_requests", *_TOKENS,
                            *(f"cached_{k}" for k in _TOKENS))}
    seen = False
    for i, record in enumerate(records):
        if not record or not isinstance(record.get("usage"), dict):
            continue
        seen = True
        old = bool(from_cache[i]) if from_cache is not None else False
        requests = record.get("requests")
        if not isinstance(requests, list):  # a usage dict without its requests: take its sums
            usage = record["usage"]
            n, cached = int(usage.get("requests") or 0), int(usage.get("cached_requests") or 0)
            total["requests"] += n
            if old:
                total["cached_requests"] += n
                for k in _TOKENS:
                    total[f"cached_{k}"] += int(usage.get(k) or 0)
            else:
                total["cached_requests"] += cached
                total["sent_requests"] += n - cached
                for k in _TOKENS:
                    total[k] += int(usage.get(k) or 0)
            continue
        for request in requests:
            tokens = request.get("usage") or {}
            total["requests"] += 1
            if old or request.get("cached"):
                total["cached_requests"] += 1
                for k in _TOKENS:
                    total[f"cached_{k}"] += int(tokens.get(k) or 0)
            else:
                total["sent_requests"] += 1
                for k in _TOKENS:
                    total[k] += int(tokens.get(k) or 0)
    if not seen:
        return None
    total["total_tokens"] = total["prompt_tokens"] + total["completion_tokens"]
    total["cost"] = None
    if price_per_1k is not None:
        output_price = price_per_1k if price_per_1k_output is None else price_per_1k_output
        for price in (price_per_1k, output_price):
            if not math.isfinite(float(price)) or float(price) < 0:
                raise ValueError(f"price per 1k tokens must be a finite number >= 0, got {price}")
        total["cost"] = total["prompt_tokens"] / 1000 * float(price_per_1k) + \
            total["completion_tokens"] / 1000 * float(output_price)
    return total


def format_usage(usage: dict) -> str:
    """One line for :func:`usage_summary`'s totals: sent now (tokens, cost) and answered from the cache, apart."""
    cost = "" if usage["cost"] is None else f", cost {usage['cost']:.4f} at the given price per 1k tokens"
    cached_tokens = usage["cached_prompt_tokens"] + usage["cached_completion_tokens"]
    return (f"served requests: {usage['sent_requests']} sent now, {usage['cached_requests']} answered from the cache "
            f"(not sent, not charged again; {cached_tokens} tokens when first sent); tokens sent now: "
            f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion = {usage['total_tokens']}{cost}")
