"""Secrets out of messages, once: every error text that may hold an API key, a bearer token or a URL with credentials
goes through :func:`redact` (or :func:`redact_cut`, which redacts **before** it cuts a long body, so a key that
straddles the cut cannot leave a fragment behind). Standard library only.

What is hidden (replaced by ``***``):

* each of the given ``secrets`` (the API keys this process holds), wherever it appears, as written and in the forms
  a reply may echo it: URL-encoded (``%2F``, ``+`` for a space, either case of hex digit) and JSON-escaped (``\\"``,
  ``\\u00e9``, ``\\/``). A secret shorter than :data:`MIN_FRAGMENT` characters is hidden only where it stands in a
  URL (replacing every ``pw`` of a text would mangle it and hide nothing);
* a cut beginning of a secret, at least :data:`MIN_FRAGMENT` characters long, where the text ends or the cut shows:
  before ``...``, ``…``, a line break, a quote or a backslash (a body already cut by its sender, a cut log line);
* ``Bearer <token>`` and ``Basic <base64>`` (an ``Authorization`` header echoed back);
* the credentials of a URL, read as URL parsers read them (the user information ends at the **last** ``@`` before
  the host): ``scheme://user:SECRET@host`` -> ``scheme://user:***@host``, and a lone user part
  ``scheme://TOKEN@host`` -> ``scheme://***@host`` (a token written as the user name);
* the value of a query parameter named like a secret: ``key``, ``api_key``, ``apikey``, ``token``, ``auth``,
  ``password``, ``passwd``, ``pwd``, ``secret``, ``sig``, ``signature``, ``credential``, alone or ending a longer
  name after ``_``, ``-`` or ``.`` (``hf_token``, ``access_token``, ``X-Amz-Signature``, ``X-Amz-Security-Token``,
  ``subscription-key``, ``client_secret``...).
"""
from __future__ import annotations

import json
import re
from typing import Iterable
from urllib.parse import quote, quote_plus

__all__ = ["MIN_FRAGMENT", "redact", "redact_cut", "redact_url", "url_secrets"]

#: the shortest secret, or cut beginning of one, hidden in free text (shorter ones are too common to tell)
MIN_FRAGMENT = 4
MASK = "***"

_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)[^\s\"',;}\]]+")
#: ``Basic <base64 of user:password>``: padded base64, so its length is a multiple of 4 (``Basic usage`` stays)
_BASIC = re.compile(r"(?i)\b(basic)(\s+|%20)([A-Za-z0-9+/]+={0,2})(?![A-Za-z0-9+/=])")
#: scheme://userinfo@host -- the authority ends at the first "/", "?", "#", space or quote, and its user information
#: at the LAST "@" inside it (the greedy run backs off to it), as ``urllib.parse.urlsplit`` reads a URL
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#\"'<>\\]*)@")
_SECRET_NAME = r"(?:api[_-]?key|apikey|key|token|auth|password|passwd|pwd|secret|sig|signature|credential)"
_QUERY_KEY = re.compile(r"(?i)([?&;](?:[\w.\-]*[_.\-])?" + _SECRET_NAME + r"=)[^&;#\s\"'<>\\]+")
#: what shows that a text was cut: "...", "…", a line break, a quote, a backslash (a JSON escape), or the end
_CUT = r"(?=\.\.\.|…|[\r\n\"'\\]|\Z)"


def _userinfo(match: re.Match) -> str:
    scheme, info = match.group(1), match.group(2)
    user, colon, _ = info.partition(":")
    return f"{scheme}{user}:{MASK}@" if colon else f"{scheme}{MASK}@"


def _basic(match: re.Match) -> str:
    token = match.group(3)
    return match.group(0) if len(token) % 4 else match.group(1) + match.group(2) + MASK


def _forms(secret: str) -> set[str]:
    """``secret`` as written and as a reply may echo it: URL-encoded (either hex case) and JSON-escaped."""
    forms = {secret}
    for encoded in (quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret, safe="/")):
        forms |= {encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)}
    for escaped in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        forms |= {escaped, escaped.replace("/", "\\/")}
    return forms


def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """``str(text)`` with the secrets, bearer and basic credentials, URL credentials and secret-like query values
    hidden (see the module docstring)."""
    text = str(text)
    secrets = {s for s in secrets if s and len(s) >= MIN_FRAGMENT}
    forms = sorted(set().union(*map(_forms, secrets)) if secrets else (), key=len, reverse=True)
    for form in forms:  # longest first: one key inside another
        text = text.replace(form, MASK)
    for secret in sorted(secrets, key=len, reverse=True):  # a secret's beginning where the text shows a cut
        prefixes = "|".join(re.escape(secret[:size]) for size in range(len(secret) - 1, MIN_FRAGMENT - 1, -1))
        if prefixes:
            text = re.sub(f"(?:{prefixes}){_CUT}", MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _BASIC.sub(_basic, text)
    text = _USERINFO.sub(_userinfo, text)
    return _QUERY_KEY.sub(lambda m: m.group(1) + MASK, text)


def redact_url(url: object) -> str:
    """A URL fit to print: its credentials and secret-like query values hidden (:func:`redact` without secrets)."""
    return redact(url)


def url_secrets(url: object) -> tuple[str, ...]:
    """The credentials written into ``url`` (``scheme://user:SECRET@host`` -> ``("SECRET",)``; a lone user part
    ``scheme://TOKEN@host`` -> ``("TOKEN",)``), as written and %-decoded, to pass as ``secrets`` wherever they may be
    echoed without their URL."""
    from urllib.parse import unquote

    found = _USERINFO.search(str(url))
    if not found:
        return ()
    user, colon, password = found.group(2).partition(":")
    return tuple(s for s in {password if colon else user, unquote(password if colon else user)} if s)


def redact_cut(text: object, limit: int, secrets: Iterable[str | None] = (), *, marker: str = "...") -> str:
    """``text`` redacted (:func:`redact`), **then** cut to at most ``limit`` characters (``marker`` ending a cut
    text). Cutting first could leave the start of a key that straddles the cut, which redaction no longer sees
    whole."""
    shown = redact(text, secrets)
    if len(shown) <= limit:
        return shown
    return shown[:max(0, limit - len(marker))] + marker
