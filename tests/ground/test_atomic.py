"""The one atomic-write helper: the target is whole or untouched, and no temporary file is left."""
import pytest

from scorers.atomic import atomic_path, write_text_atomic


def test_write_replaces_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "run.json"
    target.write_text("old", encoding="utf-8")
    write_text_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_error_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "scores.csv"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".csv"  # same folder (atomic rename), same suffix (formats)
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("crash mid-write")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["scores.csv"]
