"""A scorer wrapper that counts what it is asked to score."""
from __future__ import annotations


class Counting:
    """Wraps a scorer and counts its calls and the items it scored."""

    def __init__(self, inner):
        self.inner, self.calls, self.items = inner, 0, 0
        self.name, self.image_transform, self.config = inner.name, inner.image_transform, inner.config

    def score(self, images, prompts):
        self.calls += 1
        self.items += len(prompts)
        return self.inner.score(images, prompts)
