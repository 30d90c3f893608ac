"""Number formatting for every printed table (terminal, Markdown, LaTeX, the demo): one missing-value glyph and one
NaN-safe formatter, so a missing number looks the same everywhere; and the escaping of user text for tables and the
terminal (:func:`latex_escape`, :func:`escape_controls`).

>>> format_number(0.1234, 3), format_number(float("nan")), format_number(None), format_number(0.5, 1, scale=100)
('0.123', '-', '-', '50.0')
>>> format_number(0.25, 2, signed=True), format_number(1234.5, 3, spec="g")
('+0.25', '1.23e+03')
"""
from __future__ import annotations

import numbers

__all__ = ["MISSING", "escape_controls", "format_number", "is_missing", "latex_escape"]

#: what a missing (None / NaN) number prints as, in every table
MISSING = "-"


def is_missing(value: object) -> bool:
    """None or NaN (Python, NumPy or any real number type)."""
    return value is None or (isinstance(value, numbers.Real) and value != value)


def format_number(value: object, digits: int = 1, *, scale: float = 1.0, signed: bool = False, spec: str = "f") -> str:
    """``value * scale`` with ``digits`` (``spec`` ``"f"``: decimals, ``"g"``: significant digits), a leading sign
    when ``signed``; :data:`MISSING` for None / NaN."""
    if is_missing(value):
        return MISSING
    return f"{value * scale:{'+' if signed else ''}.{digits}{spec}}"


def latex_escape(text: object) -> str:
    """Escape LaTeX's special characters in user text (metric names, families)."""
    specials = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(specials.get(char, char) for char in str(text))


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with control and other non-printing characters written as escapes (``\\x1b``, ``\\n``,
    ``\\u202e``), so that a saved file cannot move the cursor, recolour or reorder the terminal's text; spaces and
    (``keep_newlines``) line breaks stay."""
    def one(ch: str) -> str:
        if ch.isprintable() or ch == " " or (keep_newlines and ch == "\n"):
            return ch
        return ch.encode("unicode_escape").decode("ascii")

    return "".join(one(ch) for ch in text)
