"""The prefix-cache checks shared by the VQA families' tests: the plain path's answers, one question per forward, and
a cached backend compared with them."""
from __future__ import annotations

import numpy as np

# yes-probabilities: relative tolerance 1e-5, the bound for fp32. Both paths compute the same sums; only the
# order of floating-point reductions differs (padded vs unpadded attention rows, cached vs recomputed keys), which
# moves fp32 results by a few units of float32 eps = 1.2e-7 (np.finfo(np.float32).eps) per operation. Relative, not
# absolute: the tiny random models give P("yes") near 1e-5, where an absolute 1e-5 would accept anything.
RTOL = 1e-5


def items(images, questions, order_seed=None) -> tuple[list, list]:
    """Every question on every image; optionally shuffled so an image's questions are interleaved with others'."""
    pairs = [(im, q) for im in images for q in questions]
    if order_seed is not None:
        pairs = [pairs[i] for i in np.random.default_rng(order_seed).permutation(len(pairs))]
    return [im for im, _ in pairs], [q for _, q in pairs]


def plain_answers(plain, images, questions) -> dict:
    """``{(image index, question): (answer, P(yes))}`` from ``plain`` (a backend with ``prefix_cache=False``), one
    question per forward: no padding and no cache."""
    assert not plain.prefix_cache
    return {(i, q): (plain.answer([im], [q])[0], plain.yes_probability([im], [q])[0])
            for i, im in enumerate(images) for q in questions}


def assert_equals_plain(backend, reference: dict, images: list, all_images: list, questions: list) -> None:
    """``backend`` (prefix cache on) answers the (image, question) pairs as the plain path did (``reference``, keyed by
    the index in ``all_images``): the same answers, and P(yes) within RTOL."""
    expected = [reference[(all_images.index(im), q)] for im, q in zip(images, questions)]
    answers = backend.answer(images, questions)
    assert answers == [a for a, _ in expected]
    assert len(set(answers)) > 1  # the tiny models do react to their input
    np.testing.assert_allclose(backend.yes_probability(images, questions), [p for _, p in expected], rtol=RTOL, atol=0)
