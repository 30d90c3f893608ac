"""The SEG wing of the ts2 layer: user-built semantic error graphs, in the order a user runs the steps.

:mod:`~scorers.ts2.seg.plan` (a prompt's elements, one prompt per ablation, TIFA / DSG questions),
:mod:`~scorers.ts2.seg.generate` (images per node with diffusers), :mod:`~scorers.ts2.seg.check` (a VQA judge's review
list), :mod:`~scorers.ts2.seg.build` (ANNOTATIONS -> a data dir in the release's layout) and
:mod:`~scorers.ts2.seg.push` (Parquet export, a generated card, ``push_to_hub``). Import the step you need; this
package imports nothing.
"""
