"""JSON values, once: floats that JSON can hold, NumPy values as plain Python, and the content key of a request.

Ground floor (stdlib + NumPy duck typing): every layer that writes JSON (results, records, caches, cards) uses these.
"""
from __future__ import annotations

import hashlib
import json
import math

__all__ = ["content_key", "json_default", "json_float", "jsonable"]


def json_float(value) -> float | None:
    """``value`` as a JSON number: ``None`` for ``None``, NaN and ±inf (JSON has none of them), else ``float(value)``.

    >>> json_float(float("nan")) is None, json_float(2), json_float(float("inf")) is None
    (True, 2.0, True)
    """
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def json_default(value):
    """``json.dumps(default=...)``: NumPy scalars and arrays as plain Python; anything else is a ``TypeError`` naming
    its type."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"a value of type {type(value).__name__} is not JSON-serialisable")


def jsonable(value):
    """``value`` as it reads back from JSON (NumPy -> Python, tuples -> lists), so fresh and stored records are
    identical."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=json_default))


def content_key(*parts) -> str:
    """SHA-256 of the JSON of ``parts`` (keys sorted): the cache key of one request or one judge call."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
