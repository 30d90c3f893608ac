"""SBERT (sentence-transformers) encoders for answer matching: loading only; the matching rule is
:mod:`scorers.metrics.qga.matching`."""
from __future__ import annotations

__all__ = ["load_sbert"]


def load_sbert(model: str, *, device: str | None = None):
    """A ``SentenceTransformer`` for ``model`` (a Hub id or a local folder; offline rules of
    :func:`scorers.models.loading.model_source`, errors naming ``sbert``)."""
    from sentence_transformers import SentenceTransformer

    from scorers.models.loading import model_source

    with model_source(str(model), option="sbert", files=("modules.json", "config.json")) as source:
        return SentenceTransformer(source, device=device)
