"""The demo's Build a SEG tab: :mod:`~scorers.demo.seg_builder.tab` (the tab), :mod:`~scorers.demo.seg_builder.annotations`
(the ANNOTATIONS file being edited), :mod:`~scorers.demo.seg_builder.side_files` (a plan's elements, a review list) and
:mod:`~scorers.demo.seg_builder.upload` (an uploaded ANNOTATIONS file and its images). The SEG graph drawing is
:mod:`scorers.demo.seg_figure`, shared with the explorer. This package imports nothing.
"""
