"""The report card: one metric judged every way it can be from scores alone -- TS2 meta-metrics, agreement with each
human rating set, paired tests against a baseline metric, one verdict line per set -- written as Markdown,
self-contained HTML and JSON with provenance.

The card never scores images: it reads score files. TS2 numbers come from :func:`scorers.ts2.meta_from_tables.meta_from_tables`
(exactly what ``ts2 meta`` computes), rating-set numbers from :func:`scorers.stats.correlation.correlate_frame` (exactly what
``ts2 correlate`` computes), preference-set numbers from
:func:`scorers.stats.preference_accuracy.pairwise_preference_accuracy` (both tie conventions, bootstrap over prompts), paired
tests from :func:`scorers.stats.meta.compare` (TS2, over SEGs),
:func:`scorers.stats.agreement.compare_agreement` (rating sets) and
:func:`scorers.stats.preference_accuracy.compare_preference_accuracy` (preference sets, same pairs). A set that was asked
for but cannot be evaluated (no file, offline without a cache, no column for the metric) is kept in the card as
``"not evaluated"`` with its reason. Each set's headline convention is its record in :mod:`scorers.sets.registry`.

A weighted reward (:class:`RewardSpec`, ``ts2 card --reward pickscore=1,hpsv2=0.5``) is one more metric: its
per-image score is the weighted sum of its parts' scores after the normalisation :func:`scorers.rewards.api.load` applies
(:func:`scorers.rewards.normalisation.weighted_reward`, the same code), and its card also compares it with each part.

Four parts, one direction: :mod:`~scorers.report.card.inputs` (read every file once) -> :mod:`~scorers.report.card.
sections` and :mod:`~scorers.report.card.build` (the numbers, a :class:`Card` per metric; :mod:`~scorers.report.card.
schema`) -> :mod:`~scorers.report.card.render` (Markdown, HTML, JSON, PNG).
"""
from scorers.report.card.build import build_cards
from scorers.report.card.inputs import (PreferenceSet, RatingSet, RewardSpec, parse_reward_normalize, read_pair_table,
                                        read_set_scores)
from scorers.report.card.render import (FIGURE_CAPTION, card_figure, card_html, card_markdown, draw_card_figure,
                                        figure_dots, figure_title, write_card)
from scorers.report.card.schema import CARD_FIELDS, Card, SetHeadline, display_unit, section_kind, set_headline
from scorers.rewards.normalisation import weighted_reward  # the reward API's normalisation, on score arrays

__all__ = ["CARD_FIELDS", "FIGURE_CAPTION", "Card", "PreferenceSet", "RatingSet", "RewardSpec", "SetHeadline",
           "build_cards", "card_figure", "card_html", "card_markdown", "display_unit", "draw_card_figure", "figure_dots",
           "figure_title", "parse_reward_normalize",
           "read_pair_table", "read_set_scores", "section_kind", "set_headline", "weighted_reward", "write_card"]
