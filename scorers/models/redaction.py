"""Secrets out of messages, once: every error text that may hold an API key, a bearer token or a URL with credentials
goes through :func:`redact` (or :func:`redact_cut`, which redacts **before** it cuts a long body, so a key that
straddles the cut cannot leave a fragment behind). Standard library only.

What is hidden (replaced by ``***``):

* each of the given ``secrets`` (the API keys this process holds), wherever it appears, and -- at the very end of
  the text -- any prefix of at least :data:`MIN_FRAGMENT` characters of one (a body already cut by its sender);
* ``Bearer <token>`` (an ``Authorization`` header echoed back);
* the password of a URL with credentials, ``scheme://user:SECRET@host`` -> ``scheme://user:***@host``, and a lone
  user part ``scheme://TOKEN@host`` -> ``scheme://***@host`` (a token written as the user name);
* the value of a query parameter named like a key (``api_key=``, ``apikey=``, ``key=``, ``token=``,
  ``access_token=``, ``sig=``...).
"""
from __future__ import annotations

import re
from typing import Iterable

__all__ = ["MIN_FRAGMENT", "redact", "redact_cut", "redact_url", "url_secrets"]

#: the shortest tail fragment of a secret that is hidden at the end of a text (shorter ones are too common to tell)
MIN_FRAGMENT = 4
MASK = "***"

_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)[^\s\"',;}\]]+")
#: scheme://userinfo@ -- the userinfo is everything up to the first "@" before the host, without "/", space or quotes
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/@\"'<>]+)@")
_QUERY_KEY = re.compile(r"(?i)([?&;](?:api[_-]?key|apikey|key|token|access[_-]?token|auth|password|secret|sig|"
                        r"signature)=)[^&#\s\"'<>]+")


def _userinfo(match: re.Match) -> str:
    scheme, info = match.group(1), match.group(2)
    user, colon, _ = info.partition(":")
    return f"{scheme}{user}:{MASK}@" if colon else f"{scheme}{MASK}@"


def redact(text: object, secrets: Iterable[str | None] = ()) -> str:
    """``str(text)`` with the secrets, bearer tokens, URL credentials and key-like query values hidden (see the
    module docstring)."""
    text = str(text)
    secrets = sorted({s for s in secrets if s}, key=len, reverse=True)  # longest first: one key inside another
    for secret in secrets:
        text = text.replace(secret, MASK)
    for secret in secrets:  # a secret's beginning at the very end: the sender cut the text inside it
        for size in range(min(len(secret) - 1, len(text)), MIN_FRAGMENT - 1, -1):
            if text.endswith(secret[:size]):
                text = text[:-size] + MASK
                break
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    text = _USERINFO.sub(_userinfo, text)
    return _QUERY_KEY.sub(lambda m: m.group(1) + MASK, text)


def redact_url(url: object) -> str:
    """A URL fit to print: its credentials and key-like query values hidden (:func:`redact` without secrets)."""
    return redact(url)


def url_secrets(url: object) -> tuple[str, ...]:
    """The credentials written into ``url`` (``scheme://user:SECRET@host`` -> ``("SECRET",)``; a lone user part
    ``scheme://TOKEN@host`` -> ``("TOKEN",)``), to pass as ``secrets`` wherever they may be echoed without their
    URL."""
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
