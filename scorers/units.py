"""Numbers with an SI suffix, the one parser behind ``--flops 1.2T`` (report costs) and ``--max-shard-size 500MB``
(Parquet export): ``<number><prefix K|M|G|T|P|E>[i]<unit>``, ``i`` marking a binary (1024-based) prefix."""
from __future__ import annotations

import math
import re

__all__ = ["SI_PREFIXES", "parse_quantity"]

#: SI prefix -> power of the base (``K`` and ``k`` both mean thousand).
SI_PREFIXES = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]?)(i?)\s*([A-Za-z]*)\s*$")


def parse_quantity(text: object, *, units: tuple[str, ...] = (), binary: bool = False, what: str = "value",
                   example: str = "1.2T") -> float:
    """``"604M" -> 6.04e8``, ``"64KiB" -> 65536`` (with ``binary``), ``"2.5e9" -> 2.5e9``, numbers pass through.

    ``units``: unit names allowed after the prefix (case-insensitive; none is always allowed). Only ``k`` may be
    written in lower case. Refuses anything else, and values that are not positive and finite, with ``ValueError``.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _QUANTITY.match(str(text))
        prefix = match.group(2) if match else ""
        unit = match.group(4) if match else ""
        if match and prefix and prefix.upper() not in SI_PREFIXES:  # "12B": no prefix, the letter is the unit
            prefix, unit = "", prefix + match.group(3) + unit
        ok = (match is not None and (prefix in ("", "k") or prefix.isupper())
              and (not match.group(3) or (binary and prefix))
              and (not unit or unit.lower() in {u.lower() for u in units}))
        if not ok:
            raise ValueError(f"cannot parse {what} {text!r} (expected a number with an optional SI suffix, "
                             f"e.g. {example})")
        base = 1024.0 if match.group(3) else 1000.0
        value = float(match.group(1)) * base ** SI_PREFIXES[prefix.upper()]
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} {text!r} must be a positive finite number")
    return value
