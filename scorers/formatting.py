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

__all__ = ["FORMULA_PREFIXES", "MISSING", "csv_safe", "csv_text", "escape_controls", "format_number", "is_missing",
           "latex_escape"]

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


#: what a spreadsheet reads as the start of a formula (OWASP's CSV injection rule): a text cell starting with one of
#: these is written with a leading single quote
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value):
    """``value`` safe to write as a CSV cell that a spreadsheet opens: text starting with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return gets a leading ``'`` (OWASP's rule against formula injection), unless the text
    is a number (``-0.12`` stays ``-0.12``); anything else (numbers, None) is returned as it is.

    Examples:
        >>> csv_text("=cmd|' /C calc'!A0"), csv_text("-0.12"), csv_text("@SUM(A1)"), csv_text(-0.5), csv_text("ok")
        ("'=cmd|' /C calc'!A0", '-0.12', "'@SUM(A1)", -0.5, 'ok')
    """
    if not isinstance(value, str) or not value.startswith(FORMULA_PREFIXES):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value if value.strip() == value else "'" + value


def csv_safe(frame):
    """A copy of the DataFrame ``frame`` whose text cells pass through :func:`csv_text` (number columns are left
    as they are): what every CSV this package writes from user text goes through before ``to_csv``."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype.kind in "OSUT" or str(out[column].dtype) in ("string", "str"):
            out[column] = out[column].map(csv_text)
    out.columns = [csv_text(c) if isinstance(c, str) else c for c in out.columns]
    return out
