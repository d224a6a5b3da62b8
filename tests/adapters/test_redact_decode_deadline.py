"""The pieces under the checked client's bounds, as pure functions: the redaction path, the bounded
inflater, and the deadline backend (the private httpcore attribute it relies on)."""

from __future__ import annotations

import gzip
import zlib

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.adapters.net.deadline import DeadlineBackend, deadline_transport
from g6.adapters.net.decoding import PIECE, BoundedInflater, ContentDecodingError, codings
from g6.adapters.net.redact import MARK, redact_json, redact_text, redact_url, secrets_in_url, storable


# -- redaction -----------------------------------------------------------------------------
def test_urls_inside_messages_lose_userinfo_and_secret_values() -> None:
    msg = "Redirect to 'https://bob:pw-123456@api.test/x?token=tok-987654&q=1' failed; GET /y?api_key=k-5555 sent"
    out = redact_text(msg)
    assert "pw-123456" not in out and "bob" not in out and "tok-987654" not in out and "k-5555" not in out
    assert "https://api.test/x?token=REDACTED&q=1" in out and "api_key=REDACTED" in out


def test_configured_secrets_go_in_every_encoding() -> None:
    from urllib.parse import quote, quote_plus

    secret = "a b/c+d&e=f"
    text = f"raw {secret} | {quote(secret, safe='')} | {quote_plus(secret)} | {quote(secret)}"
    out = redact_text(text, [secret])
    assert out == f"raw {MARK} | {MARK} | {MARK} | {MARK}"


def test_redact_json_covers_keys_lists_and_nesting() -> None:
    data = {"url": "http://x.test/?key=SECRETVALUE", "k-SECRETVALUE": ["SECRETVALUE", {"m": "xSECRETVALUEx"}], "n": 3}
    out = redact_json(data, ["SECRETVALUE"])
    assert "SECRETVALUE" not in repr(out) and out["n"] == 3


def test_secrets_in_url_and_surrogates() -> None:
    assert secrets_in_url("http://user1:pass-word@h.test/p?access_token=tok123&x=1") >= {"user1", "pass-word",
                                                                                          "tok123"}
    assert storable("a\ud800b") == "a\\ud800b" and storable("plain") == "plain"
    assert redact_url("https://u:p@api.example/x?q=1&api_key=SECRET&mailto=a@b") == \
        "https://api.example/x?q=1&api_key=REDACTED&mailto=a@b"


@given(st.text(max_size=200), st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=6, max_size=20))
def test_a_configured_secret_never_survives_redaction(prefix: str, secret: str) -> None:
    out = redact_text(prefix + secret + prefix, [secret])
    assert secret not in out or secret in MARK


# -- bounded inflation ---------------------------------------------------------------------
def test_codings_leave_identity_out_and_keep_order() -> None:
    assert codings("gzip, identity, Deflate") == ["gzip", "deflate"] and codings(None) == [] and codings("") == []


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_inflater_yields_bounded_pieces_and_the_whole_body(coding: str) -> None:
    body = bytes(range(256)) * 4000 + b"\0" * (3 * PIECE)
    if coding == "gzip":
        data = gzip.compress(body)
    elif coding == "deflate":
        data = zlib.compress(body)
    else:
        c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        data = c.compress(body) + c.flush()
    inf = BoundedInflater("deflate" if coding != "gzip" else "gzip")
    pieces = [p for i in range(0, len(data), 777) for p in inf.feed(data[i:i + 777])] + list(inf.finish())
    assert b"".join(pieces) == body and max(map(len, pieces)) <= PIECE


def test_inflater_stops_when_the_reader_stops() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))
    gen = BoundedInflater("gzip").feed(bomb)
    first = next(gen)
    assert len(first) <= PIECE  # one step never inflates the whole thing


def test_inflater_rejects_garbage() -> None:
    with pytest.raises(ContentDecodingError):
        list(BoundedInflater("gzip").feed(b"not gzip at all" * 10))


# -- the deadline backend ------------------------------------------------------------------
def test_default_transport_holds_sockets_to_the_deadline() -> None:
    t = deadline_transport()
    try:
        assert isinstance(t._pool._network_backend, DeadlineBackend)  # httpcore renamed it: fix deadline.py
        assert isinstance(t, httpx.HTTPTransport)
    finally:
        t.close()


def test_redaction_is_linear_on_hostile_lengths() -> None:
    """A 200,000-character URL or word: a pattern scanning from every position would take hours
    (quadratic); the guard only fires when that is what happens."""
    import threading

    texts = ["http://h.test/" + "x" * 200_000, "x" * 200_000, "a=" * 100_000, "http://" + "u" * 200_000]
    done: list[str] = []
    worker = threading.Thread(target=lambda: done.extend(redact_text(t, ["secret-value"]) for t in texts),
                              daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive() and len(done) == len(texts)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="@="), max_size=80)
       | st.from_regex(r"[a-z]{1,8}://[a-z.:/?&#;_\-%0-9 ]{0,40}", fullmatch=True))
def test_text_without_an_at_or_an_equals_sign_has_nothing_the_patterns_redact(text: str) -> None:
    """Why redact_text may skip its three patterns for such text: none of them matches it."""
    from g6.adapters.net.redact import _PARAM, _URL, _USERINFO, _redact_params

    assert _USERINFO.search(text) is None and _PARAM.search(text) is None
    assert _URL.sub(lambda m: _redact_params(m.group(0)), text) == text
