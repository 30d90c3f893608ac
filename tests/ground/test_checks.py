"""One input check (scorers.checks) shared by the runner and every scorer."""
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
