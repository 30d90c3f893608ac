"""One input check (scorers.checks) shared by the runner and every scorer."""
import re

import pytest


def test_one_images_texts_check():
    """scorers.checks.check_pairs is the one length/blank check of the runner, the embedding and QA scorers."""
    import inspect

    import scorers.metrics.embedding
    import scorers.metrics.qga.question_scorers
    import scorers.metrics.qga.vqascore
    import scorers.scoring.runner
    from scorers.checks import check_pairs

    with pytest.raises(ValueError, match="got 2 images but 1 prompts; expected one prompt per image"):
        check_pairs([1, 2], ["a"])
    with pytest.raises(ValueError, match=r"item 1 \(b.jpg\): empty question ' '"):
        check_pairs([1, 2], ["a", " "], what="questions", keys=["a.jpg", "b.jpg"], nonempty=True)
    for module in (scorers.metrics.embedding, scorers.metrics.qga.question_scorers, scorers.metrics.qga.vqascore, scorers.scoring.runner):
        assert "images but" not in inspect.getsource(module), module.__name__


def test_resolve_inside_keeps_a_users_path_in_its_folder(tmp_path):
    """The one rule for a path a user names under a folder: spellings of one file are one string, nothing outside
    (absolute, ``..``, a symlink leading out, the folder itself, a NUL byte) is returned. Expected: os.path.realpath
    by hand."""
    import os

    from scorers.checks import resolve_inside

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "0.png").write_bytes(b"x")
    (tmp_path / "secret.png").write_bytes(b"s")
    (root / "in.png").symlink_to(root / "0.png")
    (root / "out.png").symlink_to(tmp_path / "secret.png")
    (tmp_path / "alias").symlink_to(root)  # the folder given through a symlink
    expected = os.path.join(os.path.realpath(root), "0.png")
    folders: dict = {}  # one pass over many names: each folder resolved once, the same answers
    for name in ("0.png", "sub/../0.png", ".//0.png", str(root / "0.png"), "in.png", "sub/./../in.png"):
        assert resolve_inside(root, name) == expected, name
        assert resolve_inside(root, name, folders=folders) == expected, name
        assert resolve_inside(tmp_path / "alias", name) == expected, name
    assert resolve_inside(root, "not/yet/there.png") == os.path.join(os.path.realpath(root), "not/yet/there.png")
    for name in ("../secret.png", "sub/../../secret.png", str(tmp_path / "secret.png"), "out.png", "/etc/passwd",
                 str(tmp_path / "rootx" / "a.png")):
        with pytest.raises(ValueError, match=f"^{re.escape(repr(name))} lies outside the images folder$"):
            resolve_inside(root, name, what="the images folder")
        with pytest.raises(ValueError, match="lies outside"):
            resolve_inside(root, name, folders=folders)
    for name in (".", "sub/..", ""):
        with pytest.raises(ValueError, match="names the folder itself, not a file in it"):
            resolve_inside(root, name)
    with pytest.raises(ValueError, match="is not a path"):
        resolve_inside(root, "a\x00.png")
