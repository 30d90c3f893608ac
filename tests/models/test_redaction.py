"""``scorers.models.redaction``: secrets out of messages. Every expected string is written out by hand."""
from __future__ import annotations

import pytest

from scorers.models.redaction import redact, redact_cut, redact_url, url_secrets

KEY = "sk-TESTMARKER/0123+4567 89ab"  # a "/", a "+" and a space: its URL-encoded and JSON forms differ from it


def test_url_credentials_end_at_the_last_at_sign_before_the_host():
    url = "http://user:p@ss-WORD@host:8000/v1"
    assert redact_url(url) == "http://user:***@host:8000/v1"  # before: "http://user:***@ss-WORD@host:8000/v1"
    assert url_secrets(url) == ("p@ss-WORD",)  # before: ("p",)
    assert redact(f"cannot reach {url}", url_secrets(url)) == "cannot reach http://user:***@host:8000/v1"  # not htt***
    assert redact_url("https://TOK@EN@host/x?q=1#f") == "https://***@host/x?q=1#f"
    assert redact_url("http://host/a@b") == "http://host/a@b"  # an "@" in the path is no credential
    assert redact_url("see http://u:pa@ss@h:1/p and https://t@k@h2/") == "see http://u:***@h:1/p and https://***@h2/"


def test_a_short_password_is_hidden_in_its_url_and_the_rest_of_the_text_is_kept():
    url = "http://user:pw@host/v1"
    assert redact(f"{url}: the password pw is wrong", url_secrets(url)) == \
        "http://user:***@host/v1: the password pw is wrong"


@pytest.mark.parametrize("text, shown", [
    ("url-encoded: sk-TESTMARKER%2F0123%2B4567%2089ab", "url-encoded: ***"),
    ("lower-case hex: sk-TESTMARKER%2f0123%2b4567%2089ab", "lower-case hex: ***"),
    ("form-encoded: sk-TESTMARKER%2F0123%2B4567+89ab", "form-encoded: ***"),
    ('{"key": "sk-TESTMARKER\\/0123+4567 89ab"}', '{"key": "***"}'),  # JSON with "/" escaped as "\/"
])
def test_the_key_is_hidden_in_its_encoded_forms(text, shown):
    assert redact(text, [KEY]) == shown


def test_a_json_escaped_key_with_quotes_and_non_ascii_is_hidden():
    key = 'k3y"with\\odd-é'
    assert redact('{"error": "bad key k3y\\"with\\\\odd-\\u00e9"}', [key]) == '{"error": "bad key ***"}'


@pytest.mark.parametrize("text, shown", [
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==\r\nHost: x", "Authorization: Basic ***\r\nHost: x"),
    ("{'authorization': 'basic dXNlcjpzZWNyZXQ='}", "{'authorization': 'basic ***'}"),
    ("Basic usage: pass a token", "Basic usage: pass a token"),  # a word, not base64 credentials
])
def test_basic_credentials_are_hidden(text, shown):
    assert redact(text) == shown


@pytest.mark.parametrize("url, shown", [
    ("https://hf.co/x?hf_token=hf_abcdef&rev=main", "https://hf.co/x?hf_token=***&rev=main"),
    ("https://b.s3.amazonaws.com/o?X-Amz-Date=20260101&X-Amz-Signature=0a1b2c3d&X-Amz-Expires=60",
     "https://b.s3.amazonaws.com/o?X-Amz-Date=20260101&X-Amz-Signature=***&X-Amz-Expires=60"),
    ("https://api.example/v1?subscription-key=abc123", "https://api.example/v1?subscription-key=***"),
    ("https://api.example/v1?x=1&api_key=abc123#top", "https://api.example/v1?x=1&api_key=***#top"),
    ("https://h/p?token=abc;sig=def", "https://h/p?token=***;sig=***"),
    ("https://h/p?monkey=1&author=me&keyword=x", "https://h/p?monkey=1&author=me&keyword=x"),
])
def test_query_parameters_that_carry_secrets_are_hidden(url, shown):
    assert redact_url(url) == shown


@pytest.mark.parametrize("text, shown", [
    ("invalid key sk-TESTMARK... (truncated)", "invalid key ***... (truncated)"),
    ("invalid key sk-TESTMARK… (truncated)", "invalid key ***… (truncated)"),
    ("key: sk-TESTMA\nnext line", "key: ***\nnext line"),
    ("{'key': 'sk-TESTMARKER/01'}", "{'key': '***'}"),
    ('{"key": "sk-TESTM"}', '{"key": "***"}'),
    ('{"key": "sk-TESTM\\n"}', '{"key": "***\\n"}'),
    ("the body ends inside the key sk-TE", "the body ends inside the key ***"),
    ("three characters sk-... stay", "three characters sk-... stay"),  # shorter than MIN_FRAGMENT
    ("sk-TESTMARKER is a word here, not cut", "sk-TESTMARKER is a word here, not cut"),
])
def test_a_cut_beginning_of_the_key_is_hidden_wherever_the_cut_shows(text, shown):
    assert redact(text, [KEY]) == shown


def test_the_cut_comes_after_the_redaction():
    text = "x" * 20 + " key " + KEY + " end"
    assert redact_cut(text, 31, [KEY]) == "x" * 20 + " key ***..."
