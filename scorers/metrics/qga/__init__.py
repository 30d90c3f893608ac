"""Question-generation/answering scorers (TIFA, DSG, VQAScore): the rules that turn VQA answers into scores.

Rules live here and are tested without models (answers in, scores out); model code (loading + batched generate)
lives in ``scorers.models.<family>``. Nothing heavy is imported eagerly: import the submodule you need, e.g.
``from scorers.metrics.qga.tifa import tifa_score``.
"""
