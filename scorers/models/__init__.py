"""Model families: one module per family, each doing loading + a batched forward and nothing else.

Nothing is imported here on purpose: ``import scorers.models.hf_embed`` (or ``open_clip_embed``, ``blip_vqa``...)
pulls in only the heavy libraries that family needs. Scoring rules live in ``scorers.metrics.embedding`` / ``scorers.metrics.qga``.
"""
