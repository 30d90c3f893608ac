"""SEG structure: labels, error counts, partitions, walks, pairs."""
import pytest

from scorers.stats.graph import build_segs, default_partition, error_count, node_pairs, partition_of, walks


@pytest.mark.parametrize("label, expected", [("0", 0), ("0b", 0), ("1a", 1), ("2", 2), ("12c", 12), (3, 3), (2.0, 2)])
def test_error_count_is_the_labels_digits(label, expected):
    assert error_count(label) == expected


@pytest.mark.parametrize("label", ["a1", "", "x", "1-a", None, 1.5])
def test_unparsable_label_names_the_label(label):
    with pytest.raises(ValueError, match="not a TS2 node label"):
        error_count(label, position=7)


def test_partitions_follow_ts2_id_ranges():
    assert [default_partition(s) for s in (0, 110, 111, 135, 136, 164)] == ["synth", "synth", "nat", "nat", "real", "real"]
    assert partition_of(5, {5: "mine"}) == "mine"
    assert partition_of(5, lambda s: "odd" if s % 2 else "even") == "odd"
    with pytest.raises(ValueError, match="SEG id 6"):
        partition_of(6, {5: "mine"})


def test_walks_are_the_cartesian_product_over_levels():
    # errors of nodes 0a, 0b, 1a, 1b, 2
    assert walks([0, 0, 1, 1, 2]) == [(0, 2, 4), (0, 3, 4), (1, 2, 4), (1, 3, 4)]
    assert walks([0, 2]) == [(0, 1)]  # a level gap is just skipped over
    assert walks([0]) == [(0,)]


def test_pairs_differ_in_error_count_lower_first():
    assert node_pairs([0, 0, 1, 2]) == [(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert node_pairs([0, 0, 1, 2], adjacent_only=True) == [(0, 2), (1, 2), (2, 3)]
    assert node_pairs([1, 0]) == [(1, 0)]


def test_build_segs_groups_and_sorts():
    segs = build_segs([3, 3, 3, 1, 1], ["1a", "0", "1a", "1", "0"])
    assert [s.seg_id for s in segs] == [1, 3]
    assert segs[1].nodes == ("0", "1a") and segs[1].errors == (0, 1)
    assert [m.tolist() for m in segs[1].members] == [[1], [0, 2]]
    assert segs[1].walks() == [("0", "1a")]
    assert segs[0].heads == ("0",)


def test_build_segs_validates_with_positions():
    with pytest.raises(ValueError, match="seg_ids has 2 entries but nodes has 1"):
        build_segs([0, 0], ["0"])
    with pytest.raises(ValueError, match="position 1: node label 'zz'"):
        build_segs([0, 0], ["0", "zz"])
    with pytest.raises(ValueError, match="SEG 4 has no error-0 node"):
        build_segs([4, 4], ["1a", "2"])
    with pytest.raises(ValueError, match="position 0: SEG id 'x'"):
        build_segs(["x"], ["0"])


def test_release_metadata_structure(shared_ts2):
    import pandas as pd

    md = pd.read_csv(shared_ts2 / "metadata.csv")
    segs = build_segs(md["id"], md["rank"])
    assert len(segs) == 165
    assert sum(len(s.image_positions) for s in segs) == 2840
    counts = pd.Series([s.partition for s in segs]).value_counts().to_dict()
    assert counts == {"synth": 111, "nat": 25, "real": 29}
    assert sum(len(s.walks()) for s in segs) == 1499


def test_edge_walks_and_pairs_follow_the_edges_only():
    from scorers.stats.graph import edge_pairs, edge_walks

    # error sets {}, {a}, {b}, {a, c}, {b, d}, and {x, y, z} (no edge into it: on no walk, in no pair)
    errors = [0, 1, 1, 2, 2, 3]
    edges = [(0, 1), (0, 2), (1, 3), (2, 4)]
    assert edge_walks(errors, edges) == [(0, 1, 3), (0, 2, 4)]
    assert edge_pairs(errors, edges) == [(0, 1), (0, 2), (0, 3), (0, 4), (1, 3), (2, 4)]
    assert edge_walks([0, 1], []) == [(0,)]  # a head without an edge out is a walk of one node
    with pytest.raises(ValueError, match="edge 1 -> 0 does not add errors"):
        edge_walks(errors, [(1, 0)])


def test_seg_with_edges_walks_and_pairs_by_label():
    from scorers.stats.graph import attach_edges

    seg = attach_edges(build_segs([0] * 5, ["0", "1a", "1b", "2a", "2b"]),
                       {0: [("0", "1a"), ("0", "1b"), ("1a", "2a"), ("1b", "2b")]})[0]
    assert seg.walk_rule == "edges"
    assert seg.walks() == [("0", "1a", "2a"), ("0", "1b", "2b")]
    assert seg.pairs(adjacent_only=True) == [("0", "1a"), ("0", "1b"), ("1a", "2a"), ("1b", "2b")]
