from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.errors import InputError
from g6.ledger import AllowlistDecision, Hop, Receipt, SigningKey, VerifyKey

KEY = SigningKey.generate()
KEYS = {KEY.key_id: KEY.public}

urls = st.from_regex(r"https?://[a-z]{1,10}\.(org|com)/[a-z0-9/]{0,20}", fullmatch=True)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53) + 1, 2**53 - 1), st.text(max_size=30))
small_dicts = st.dictionaries(st.text(min_size=1, max_size=10), json_scalars, max_size=4)

hex64 = st.binary(min_size=32, max_size=32).map(bytes.hex)
blob_refs = st.builds(lambda b, h, n: {"blake3": "blake3:" + b, "sha256": "sha256:" + h, "size": n},
                      hex64, hex64, st.integers(0, 5000))
tls_blocks = st.fixed_dictionaries(
    {"protocol": st.sampled_from(["TLSv1.2", "TLSv1.3", None]), "cipher": st.one_of(st.none(), st.text(max_size=30)),
     "cipher_bits": st.one_of(st.none(), st.integers(0, 256)), "alpn": st.sampled_from([None, "http/1.1", "h2"]),
     "server_name": st.one_of(st.none(), st.text(max_size=20)), "address": st.sampled_from(["203.0.113.9", None]),
     "port": st.one_of(st.none(), st.integers(0, 65535)), "session_reused": st.booleans(), "certificate": blob_refs},
    optional={"chain": st.lists(blob_refs, max_size=3), "verified_chain": st.lists(blob_refs, max_size=3)})

receipts = st.builds(
    Receipt,
    kind=st.sampled_from(["fetch", "search", "es", "recheck"]),
    source=st.sampled_from(["web", "arxiv", "openalex"]),
    request=st.fixed_dictionaries({"url": urls}),
    outcome=st.sampled_from(["ok", "empty", "blocked", "not_found"]),
    outcome_code=st.from_regex(r"G6_(OK|E)_KNOWLEDGE_[A-Z]{3,8}", fullmatch=True),
    final_url=st.one_of(st.none(), urls),
    hops=st.lists(st.builds(Hop, url=urls, status=st.sampled_from([200, 301, 404, None]),
                            connected_address=st.sampled_from(["203.0.113.9", "2001:4860::1", None]),
                            tls=st.one_of(st.none(), tls_blocks)),
                  max_size=3).map(tuple),
    http_status=st.one_of(st.none(), st.integers(100, 599)),
    byte_count=st.integers(0, 2**40),
    truncated=st.booleans(),
    allowlist=st.builds(AllowlistDecision, decision=st.sampled_from(["allowed", "denied", "not_configured"]),
                        host=st.one_of(st.none(), st.text(max_size=20)),
                        patterns=st.lists(st.text(max_size=10), max_size=3).map(tuple)),
    detail=small_dicts,
)


def test_sign_and_verify() -> None:
    r = Receipt(kind="fetch", source="web", request={"url": "https://example.org/"}, outcome="ok",
                outcome_code="G6_E_KNOWLEDGE_FETCHED").signed(KEY)
    assert r.verify_signature(KEYS) == (True, "ok")
    assert r.signature is not None and r.signature.key_id == KEY.key_id


def test_unknown_key_and_unsigned_are_told_apart() -> None:
    r = Receipt(kind="fetch", source="web", request={}, outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED")
    assert r.verify_signature(KEYS) == (False, "unsigned")
    other = SigningKey.generate()
    ok, why = r.signed(other).verify_signature(KEYS)
    assert not ok and "unknown key" in why


def test_retired_key_still_verifies_when_trusted() -> None:
    old, new = SigningKey.generate(), SigningKey.generate()
    r = Receipt(kind="fetch", source="web", request={}, outcome="ok", outcome_code="X").signed(old)
    assert r.verify_signature({new.key_id: new.public, old.key_id: old.public})[0]


def test_bad_kind_is_an_input_error() -> None:
    with pytest.raises(InputError):
        Receipt(kind="write", source="web", request={}, outcome="ok", outcome_code="X")


def test_from_json_rejects_other_shapes() -> None:
    with pytest.raises(InputError):
        Receipt.from_json({"schema": "something.else"})
    with pytest.raises(InputError):
        Receipt.from_json({"schema": "runx.receipt.v1"})


def test_public_key_text_round_trip() -> None:
    assert VerifyKey.from_text(KEY.public.to_text()) == KEY.public


@settings(max_examples=150, deadline=None)
@given(receipts)
def test_property_any_receipt_round_trips_and_verifies(r: Receipt) -> None:
    signed = r.signed(KEY)
    back = Receipt.from_json(json.loads(json.dumps(signed.to_json())))
    assert back == signed
    assert back.verify_signature(KEYS) == (True, "ok")
    # every blob it names: its body, then each hop's certificates, each once
    named = [ref for _, ref in back.blobs()]
    assert [ref["blake3"] for ref in named] == list(dict.fromkeys(ref["blake3"] for ref in named))
    wanted = ([back.content] if back.content else []) + [ref for h in back.hops if h.tls for ref in (
        h.tls["certificate"], *h.tls.get("chain", ()), *h.tls.get("verified_chain", ()))]
    assert {ref["blake3"] for ref in named} == {ref["blake3"] for ref in wanted}


def test_a_hop_without_tls_is_written_as_before() -> None:
    """Receipts signed before ``tls`` existed, and plain-http hops, keep their canonical bytes."""
    assert Hop("http://a.org/", 200, "203.0.113.1").to_json() == {"url": "http://a.org/", "status": 200,
                                                                  "connected_address": "203.0.113.1"}
    old = {"schema": "runx.receipt.v1", "receipt_id": "rcpt_01J0000000000000000000000A", "kind": "fetch",
           "source": "web", "request": {"url": "http://a.org/"}, "final_url": "http://a.org/",
           "hops": [{"url": "http://a.org/", "status": 200, "connected_address": "203.0.113.1"}],
           "http_status": 200, "byte_count": 0, "truncated": False,
           "allowlist": {"decision": "not_configured", "host": None, "patterns": []}, "outcome": "ok",
           "outcome_code": "G6_OK_KNOWLEDGE_FETCHED", "content": None, "detail": {}, "links": {},
           "fetched_at": "2024-01-01T00:00:00.000000Z", "tool": {"name": "g6", "version": "0"}}
    assert Receipt.from_json(old).to_json(with_signature=False) == old


def test_a_tls_block_that_is_no_object_is_a_malformed_receipt() -> None:
    r = Receipt(kind="fetch", source="web", request={}, outcome="ok", outcome_code="X",
                hops=(Hop("https://a.org/", 200, "203.0.113.1", {"protocol": "TLSv1.3"}),)).to_json()
    r["hops"][0]["tls"] = ["not", "an", "object"]
    with pytest.raises(InputError, match="hops"):
        Receipt.from_json(r)


FIELD_CHANGES = {
    "kind": lambda r: "search" if r.kind != "search" else "fetch",
    "source": lambda r: r.source + "x",
    "request": lambda r: {**r.request, "url": r.request["url"] + "x"},
    "outcome": lambda r: r.outcome + "x",
    "outcome_code": lambda r: r.outcome_code + "X",
    "final_url": lambda r: (r.final_url or "") + "x",
    "hops": lambda r: (*r.hops, Hop("http://a.org/", 200, "203.0.113.1")),
    "tls": lambda r: (*r.hops, Hop("https://a.org/", 200, "203.0.113.1", {"protocol": "TLSv1.3"})),
    "http_status": lambda r: (r.http_status or 100) + 1,
    "byte_count": lambda r: r.byte_count + 1,
    "truncated": lambda r: not r.truncated,
    "allowlist": lambda r: AllowlistDecision("denied" if r.allowlist.decision != "denied" else "allowed",
                                             r.allowlist.host, r.allowlist.patterns),
    "content": lambda r: {"blake3": "blake3:" + "1" * 64, "sha256": "sha256:" + "2" * 64, "size": 1},
    "detail": lambda r: {**r.detail, "extra": 1},
    "links": lambda r: {"rechecks": "rcpt_x"},
    "receipt_id": lambda r: r.receipt_id + "0",
    "fetched_at": lambda r: r.fetched_at + "0",
    "tool": lambda r: {**r.tool, "version": "9"},
}


@settings(max_examples=60, deadline=None)
@given(receipts, st.sampled_from(sorted(FIELD_CHANGES)))
def test_property_any_single_field_change_breaks_the_signature(r: Receipt, name: str) -> None:
    signed = r.signed(KEY)
    tampered = replace(signed, **{"hops" if name == "tls" else name: FIELD_CHANGES[name](signed)})
    assert tampered.to_json() != signed.to_json()
    ok, why = tampered.verify_signature(KEYS)
    assert not ok and why == "signature does not match the receipt"


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({"alg": st.text(max_size=10), "key_id": st.text(max_size=40),
                              "value": st.text(max_size=90)}))
def test_property_signature_member_is_rfc8785(sig: dict) -> None:
    import rfc8785

    from g6.ledger.receipts import _signature_member

    assert _signature_member(sig) == rfc8785.dumps({"signature": sig})[1:-1]


# -- canonical JSON: the json.dumps path equals RFC 8785 wherever it is taken -----------------------
any_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), st.text(max_size=12),
              st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["\x00\x1f\x7f\u2028\u2029\\\"\b\f\n\r\t/", "\ud800", "\U0001f600\ue000", "é"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.text(max_size=6),
                                                      st.sampled_from(["\ue000", "\U0001f600", "a", "B", "_", "é"])),
                                            inner, max_size=4)),
    max_leaves=20)


def _rfc8785_or_error(value: object) -> bytes | str:
    import rfc8785

    try:
        return rfc8785.dumps(value)
    except Exception as e:  # noqa: BLE001 - the error's type is what is compared
        return type(e).__name__


@settings(max_examples=2000, deadline=None)
@given(any_json)
def test_canonical_json_is_rfc8785_for_any_json(value: object) -> None:
    from g6.ledger.receipts import canonical_json

    want = _rfc8785_or_error(value)
    try:
        got: bytes | str = canonical_json(value)
    except Exception as e:  # noqa: BLE001
        got = type(e).__name__
    assert got == want


@settings(max_examples=300, deadline=None)
@given(receipts)
def test_a_receipt_takes_the_plain_path_and_signs_the_rfc8785_bytes(r: Receipt) -> None:
    import rfc8785

    from g6.ledger.receipts import _plain_json

    assert _plain_json(r.to_json()) or any(max(k, default="") >= "\U00010000" for k in r.detail)
    assert r.canonical_bytes() == rfc8785.dumps(r.to_json())
    signed = r.signed(KEY)
    assert signed.canonical_bytes(with_signature=True) == rfc8785.dumps(signed.to_json(with_signature=True))


def test_canonical_json_by_orjson_is_json_dumps_for_every_character_and_number() -> None:
    """``canonical_json`` writes plain JSON with orjson: the very bytes ``json.dumps`` (sorted keys, no spaces,
    UTF-8) writes, for every code point as a key and as a value; numbers past a double's integers and floats go to
    rfc8785; a lone surrogate is refused as rfc8785 refuses it."""
    import json

    import rfc8785

    from g6.ledger.receipts import canonical_json

    def dumps(v: object) -> bytes:
        return json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")

    chars = [chr(c) for c in (*range(0xD800), *range(0xE000, 0x110000))]
    for i in range(0, len(chars), 512):
        text = "".join(chars[i:i + 512])
        value = {"k" + text: [text, text[::-1], 2**53 - 1, -(2**53) + 1, True, None],
                 text[::-1][:1000]: {"": text, "n": [[[]]]}}
        if max(text) < "\U00010000":
            assert canonical_json(value) == dumps(value) == rfc8785.dumps(value)
        else:  # a key past U+FFFF: rfc8785 orders it by UTF-16 code units
            assert canonical_json(value) == rfc8785.dumps(value)
    for odd in ({"n": 2**53}, {"n": 2**64}, {"n": -(2**53)}):  # refused as RFC 8785 refuses them
        with pytest.raises(ValueError):
            canonical_json(odd)
    for odd in ({"f": 0.1}, {"f": 1.0, "g": 1e-7}, {"\U0001F600": 1, "\uffff": 2}, {"t": (1, "a")}):
        assert canonical_json(odd) == rfc8785.dumps(odd)
    with pytest.raises(Exception):  # noqa: B017 - rfc8785's own error for a lone surrogate
        canonical_json({"s": "\ud800"})
    deep: list = []
    for _ in range(600):  # past orjson's nesting limit: json.dumps writes it
        deep = [deep]
    assert canonical_json({"d": deep}) == dumps({"d": deep})
