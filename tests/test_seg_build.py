"""Issue 35: error sets -> node labels / edges (scorers.stats.error_sets) and ``ts2 seg build``."""
from __future__ import annotations

import doctest

import pytest

from scorers.stats import error_sets as es


# --- scorers.stats.error_sets: expectations written by hand from the API in the issue -----------------------------

def test_error_sets_doctests_run():
    failed, attempted = doctest.testmod(es)
    assert failed == 0 and attempted >= 8


def test_labels_counts_0_to_3_with_letters_only_where_sizes_collide():
    sets = [set(), {"dog"}, {"red"}, {"dog", "red"}, {"dog", "red", "hat"}, set(), {"red"}]
    assert es.node_labels(sets) == ["0", "1a", "1b", "2", "3", "0", "1b"]


def test_letters_follow_sorted_tuples_not_input_order():
    # sorted tuples of size 2: ('a','z') < ('b','c') < ('b','d')
    sets = [{"b", "d"}, {"c", "b"}, {"z", "a"}, set()]
    assert es.node_labels(sets) == ["2c", "2b", "2a", "0"]


def test_letters_past_z():
    sets = [{f"e{i:02d}"} for i in range(28)]
    labels = es.node_labels(sets)
    assert labels[0] == "1a" and labels[25] == "1z" and labels[26] == "1aa" and labels[27] == "1ab"
    assert len(set(labels)) == 28


def test_edges_by_hand():
    sets = [set(), {"dog"}, {"red"}, {"dog", "red"}, {"dog", "red", "hat"}, {"cat", "hat"}]
    # labels: 0; 1a=dog, 1b=red; 2a=(cat,hat), 2b=(dog,red); 3=(dog,hat,red)
    assert es.node_labels(sets) == ["0", "1a", "1b", "2b", "3", "2a"]
    assert es.error_set_edges(sets) == [
        ("0", "1a", "dog"), ("0", "1b", "red"),
        ("1a", "2b", "red"), ("1b", "2b", "dog"),
        ("2b", "3", "hat"),
    ]
    assert es.unreachable(sets) == ["2a"]  # {cat, hat}: neither {cat} nor {hat} is present


def test_unreachable_skip_level_and_empty_inputs():
    assert es.unreachable([set(), {"a", "b"}]) == ["2"]
    assert es.unreachable([]) == [] and es.error_set_edges([]) == [] and es.node_labels([]) == []
    assert es.unreachable([{"a"}]) == ["1"]  # the empty set is absent, so {a} has no set one smaller inside it


def test_bad_inputs_raise():
    with pytest.raises(TypeError, match=r"error_sets\[1\]"):
        es.node_labels([set(), "dog;red"])
    with pytest.raises(ValueError, match=r"error_sets\[0\]"):
        es.node_labels([{""}])
