"""``scorers.tables.comparable``: when numbers may be ranked among the published rows (the same metadata bytes and
the same SEGs). Expected digests come from hashlib; the release's pinned digest is the one docs/judge-a-metric.md
lists."""
from __future__ import annotations

import hashlib

from scorers.tables.comparable import RELEASE_METADATA, Basis, metadata_basis, published_mismatch, release_basis

PINNED = "cab9a658cbac13331ed6b8b3fc826ace54b47dc26d68a1be6c63068ca59758cf"


def test_metadata_basis_is_the_sha256_of_the_bytes(tmp_path):
    path = tmp_path / "metadata.csv"
    path.write_bytes(b"id,target_prompt,file_name,rank\n0,a cat,a.png,0\n")
    basis = metadata_basis(path, [2, 0, 1, 1])
    assert basis == Basis(hashlib.sha256(path.read_bytes()).hexdigest(), str(path), (0, 1, 2))


def test_release_basis_is_the_local_copy_else_the_pinned_digest(tmp_path, shared_ts2, monkeypatch):
    monkeypatch.delenv("TS2_DATA", raising=False)
    local = release_basis(shared_ts2)
    assert local.sha256 == hashlib.sha256((shared_ts2 / "metadata.csv").read_bytes()).hexdigest()
    assert local.source == RELEASE_METADATA
    assert release_basis(tmp_path).sha256 == PINNED  # a folder without metadata.csv: nothing read, nothing fetched


def test_only_the_same_bytes_and_segs_are_comparable():
    release = Basis("a" * 64, RELEASE_METADATA, tuple(range(164)))
    assert published_mismatch(Basis("a" * 64, "m.csv", tuple(range(164))), release) is None
    assert published_mismatch(Basis("a" * 64, "m.csv"), release) is None  # SEGs not given: not compared
    other = published_mismatch(Basis("b" * 64, "OUT/metadata.csv", (0, 1)), release, what="your scores")
    assert other == ("published rows left out: they were computed on the TS2 release metadata (sha256 "
                     "aaaaaaaaaaaa…), your scores on OUT/metadata.csv (sha256 bbbbbbbbbbbb…)")
    assert published_mismatch(Basis(None, "a frame"), release).endswith("these scores on a frame (sha256 unknown)")
    assert published_mismatch(Basis("a" * 64, "m.csv", (0, 1, 5)), release) == (
        "published rows left out: they were computed on SEGs 0-163, these scores on SEGs 0-1,5")
