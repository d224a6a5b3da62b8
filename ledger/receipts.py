"""The receipt: a signed, ``runx.receipt.v1``-style record of one read.

A receipt says what was asked, where the answer came from (final URL, every redirect hop and the
address actually connected to), what came back (status, byte count, truncation, content digests),
what policy decided, and the typed outcome. It never holds header values, cookies, credentials or
body text: the body lives in the blob store under ``content``'s digests.

The signature is Ed25519 over RFC 8785 canonical JSON of the whole receipt minus ``signature``.
The JSON shape is published in ``schemas/receipt.v1.schema.json``.

A receipt appended by this version is bound to its place in the log: ``log`` holds the log's origin
and the row's sequence number, and is signed with the rest, so the same receipt cannot stand at
another place (a replay) or in another log. Receipts signed before binding existed have no ``log``
and verify under the old rule (see ``g6.ledger.row_rules``).
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import orjson
import rfc8785

from g6 import TOOL_NAME, __version__
from g6.errors import InputError
from g6.ledger.keys import SigningKey, VerifyKey

SCHEMA = "runx.receipt.v1"
KINDS = ("fetch", "search", "es", "recheck", "convert", "key", "wacz-key", "redaction", "hold")
# "key": a writer key added or retired; "wacz-key": the P-384 key that signs WACZ exports, added or retired
# (g6.ledger.wacz_keys); "redaction", "hold": bytes removed, or held (``g6.ledger.redactions``)
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_receipt_id() -> str:
    """``rcpt_`` + a ULID (48-bit milliseconds + 80 random bits): unique and time-ordered."""
    n = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[n & 31])
        n >>= 5
    return "rcpt_" + "".join(reversed(chars))


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# Crockford's base 32 as the digits int() reads in base 32 (verify reads an id's time once a row)
_TO_BASE32 = str.maketrans(_CROCKFORD, "0123456789abcdefghijklmnopqrstuv")
_ID_SHAPE = re.compile(r"rcpt_[0-9A-HJKMNP-TV-Z]{26}")


def receipt_id_millis(receipt_id: str) -> int | None:
    """The milliseconds since the epoch a ``new_receipt_id`` carries (its ULID's first 10 characters),
    or None for an id not of that shape."""
    if type(receipt_id) is not str or not _ID_SHAPE.fullmatch(receipt_id):
        return None
    return int(receipt_id[5:15].translate(_TO_BASE32), 32)


def log_position(origin: str, seq: int) -> dict[str, Any]:
    """What a bound receipt signs about its place: the log's origin and the row's sequence number."""
    return {"origin": origin, "seq": seq}


_SAFE_INT = 2**53 - 1  # RFC 8785 numbers are IEEE 754 doubles: integers beyond this are refused


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON of the kind a receipt is: objects whose keys hold no character past
    U+FFFF, arrays, strings, booleans, null and integers a double holds exactly. A walk with a stack of its
    own (no recursion): it runs over every receipt signed and every citation of a check's result."""
    todo = [value]
    pop, more = todo.pop, todo.extend
    while todo:
        v = pop()
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is dict:
            for k in v:
                # keys without characters past U+FFFF: their UTF-16 code units are their code points
                if type(k) is not str or not (k.isascii() or max(k, default="") < "\U00010000"):
                    return False
            more(v.values())
        elif t is list:
            more(v)
        elif t is int:
            if not -_SAFE_INT <= v <= _SAFE_INT:
                return False
        else:
            return False
    return True


def _plain_dumps(value: Any) -> bytes:
    """Plain JSON (``_plain_json``) as ``json.dumps`` writes it with sorted keys and no spaces, UTF-8: orjson
    writes the very same bytes (same escapes, same key order for such keys; tested over every code point) several
    times faster; what orjson refuses (a lone surrogate, nesting past its limit) goes to ``json.dumps``."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


class RepeatedKey(ValueError):
    """A key an object of signed JSON holds twice (its message: the key)."""


def refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` for JSON that was signed: an object that repeats a key is refused.
    ``json.loads`` would keep the last one and the signature be checked over it, while a reader that keeps the first
    sees another object, one the signer never signed (RFC 8785 signs I-JSON, which has no repeated key)."""
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise RepeatedKey(k)
        d[k] = v
    return d


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical JSON of ``value``. For plain JSON (``_plain_json``) that is exactly
    ``json.dumps`` with sorted keys and no spaces: such keys sort the same by UTF-16 code unit
    and by code point, strings are escaped alike (quote, backslash, the five short escapes, other
    control characters as lowercase u00xx escapes, nothing else) and integers print alike. Anything
    else (a float, a key past U+FFFF, a lone surrogate) goes through ``rfc8785``, which also says
    what is wrong with what it refuses. A property test holds the two equal."""
    if _plain_json(value):
        try:
            return _plain_dumps(value)
        except UnicodeEncodeError:  # a lone surrogate: refused below, in rfc8785's words
            pass
    return rfc8785.dumps(value)


@dataclass(frozen=True, slots=True)
class Hop:
    """One request in a redirect chain: its URL, the status it got, the address connected to, and for
    a hop over TLS what the server presented on that very connection (``tls``: protocol, cipher, the
    peer's address and port, the name asked for, and the certificates as blob references; see
    ``g6.adapters.net.tls``). ``tls`` is absent from the JSON when None, so hops signed before it existed
    (and plain-http hops) are unchanged."""

    url: str
    status: int | None
    connected_address: str | None
    tls: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d = {"url": self.url, "status": self.status, "connected_address": self.connected_address}
        if self.tls is not None:
            d["tls"] = dict(self.tls)
        return d


@dataclass(frozen=True, slots=True)
class AllowlistDecision:
    decision: str  # "allowed" | "denied" | "not_configured"
    host: str | None
    patterns: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "host": self.host, "patterns": list(self.patterns)}


@dataclass(frozen=True, slots=True)
class Signature:
    alg: str
    key_id: str
    value: str  # base64 of the 64-byte signature

    def to_json(self) -> dict[str, str]:
        return {"alg": self.alg, "key_id": self.key_id, "value": self.value}


@dataclass(frozen=True, slots=True)
class Receipt:
    kind: str
    source: str
    request: Mapping[str, Any]
    outcome: str
    outcome_code: str
    final_url: str | None = None
    hops: tuple[Hop, ...] = ()
    http_status: int | None = None
    byte_count: int = 0
    truncated: bool = False
    allowlist: AllowlistDecision = AllowlistDecision("not_configured", None)
    content: Mapping[str, Any] | None = None  # {"blake3", "sha256", "size"} or None
    detail: Mapping[str, Any] = field(default_factory=dict)  # outcome specifics: reason, retry_after…
    links: Mapping[str, Any] = field(default_factory=dict)  # e.g. {"rechecks": "rcpt_…"}
    receipt_id: str = field(default_factory=new_receipt_id)
    fetched_at: str = field(default_factory=utc_now)
    tool: Mapping[str, str] = field(default_factory=lambda: {"name": TOOL_NAME, "version": __version__})
    log: Mapping[str, Any] | None = None  # {"origin", "seq"}: where in which log it was appended (signed)
    # {"kind": login|challenge|consent, "evidence": …}: a 2xx page that was a wall, not the page. Absent
    # when not flagged, so receipts signed before it existed (and their signatures) are unchanged.
    interstitial: Mapping[str, Any] | None = None
    # a page rendered in a browser: the sub-resource receipts, the DOM, text and screenshot blobs, the
    # browser and viewport (``g6.fetch.render``). Absent on every other receipt, so none signed before it
    # existed changes.
    capture: Mapping[str, Any] | None = None
    signature: Signature | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InputError(f"receipt kind must be one of {KINDS}, got {self.kind!r}")

    # -- JSON ------------------------------------------------------------------------------
    def to_json(self, *, with_signature: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema": SCHEMA,
            "receipt_id": self.receipt_id,
            "kind": self.kind,
            "source": self.source,
            "request": dict(self.request),
            "final_url": self.final_url,
            "hops": [h.to_json() for h in self.hops],
            "http_status": self.http_status,
            "byte_count": self.byte_count,
            "truncated": self.truncated,
            "allowlist": self.allowlist.to_json(),
            "outcome": self.outcome,
            "outcome_code": self.outcome_code,
            "content": dict(self.content) if self.content is not None else None,
            "detail": dict(self.detail),
            "links": dict(self.links),
            "fetched_at": self.fetched_at,
            "tool": dict(self.tool),
        }
        if self.log is not None:
            d["log"] = dict(self.log)
        if self.interstitial is not None:
            d["interstitial"] = dict(self.interstitial)
        if self.capture is not None:
            d["capture"] = dict(self.capture)
        if with_signature and self.signature is not None:
            d["signature"] = self.signature.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Receipt:
        try:
            if d.get("schema") != SCHEMA:
                raise InputError(f"not a {SCHEMA} receipt (schema={d.get('schema')!r})")
            _check_types(d)
            sig = d.get("signature")
            al = d["allowlist"]
            return cls(
                receipt_id=d["receipt_id"],
                kind=d["kind"],
                source=d["source"],
                request=d["request"],
                final_url=d["final_url"],
                hops=tuple(Hop(h["url"], h["status"], h["connected_address"], h.get("tls")) for h in d["hops"]),
                http_status=d["http_status"],
                byte_count=d["byte_count"],
                truncated=d["truncated"],
                allowlist=AllowlistDecision(al["decision"], al["host"], tuple(al["patterns"])),
                outcome=d["outcome"],
                outcome_code=d["outcome_code"],
                content=d["content"],
                detail=d.get("detail", {}),
                links=d.get("links", {}),
                fetched_at=d["fetched_at"],
                tool=d["tool"],
                log=d.get("log"),
                interstitial=d.get("interstitial"),
                capture=d.get("capture"),
                signature=Signature(sig["alg"], sig["key_id"], sig["value"]) if sig else None,
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise InputError(f"malformed receipt: missing or bad field {e}") from None

    def blobs(self) -> list[tuple[str, Any]]:
        """Every blob this receipt names, with what it is (``named_blobs``): its body, a capture's blobs, its
        certificates."""
        return named_blobs({"content": self.content, "capture": self.capture,
                            "hops": [h.to_json() for h in self.hops]})

    def canonical_bytes(self, *, with_signature: bool = False) -> bytes:
        return canonical_json(self.to_json(with_signature=with_signature))

    def shown(self) -> str:
        """The receipt as people and tools are shown it, ``g6 receipt show`` and ``g6 serve``'s
        ``/receipt/{id}`` alike: indented JSON in the members' own order, not ASCII-escaped, one newline at
        the end. One place, so the two print the same bytes (the signature is over ``canonical_bytes``)."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    # -- signing ---------------------------------------------------------------------------
    def signed(self, key: SigningKey) -> Receipt:
        return self.sign_canonical(key)[0]

    def sign_canonical(self, key: SigningKey) -> tuple[Receipt, bytes]:
        """Sign, and return the signed receipt with its canonical JSON (signature included).

        The canonical form is computed once: in RFC 8785 order ``"signature"`` directly follows
        ``"schema"``, so the signature member is spliced in rather than canonicalising again.
        """
        unsigned = self.canonical_bytes()
        sig = Signature("ed25519", key.key_id, base64.b64encode(key.sign(unsigned)).decode())
        anchor = f'"schema":"{SCHEMA}"'.encode()
        # Only "source", "tool" and "truncated" follow the top-level "schema", and their values
        # cannot hold that text unescaped, so the last occurrence is the top-level one. The splice
        # is still checked, and canonicalising again is the fallback.
        i = unsigned.rfind(anchor)
        member = b"," + _signature_member(sig.to_json())
        signed = replace(self, signature=sig)
        if i >= 0:
            body = unsigned[: i + len(anchor)] + member + unsigned[i + len(anchor):]
            if json.loads(body) == signed.to_json():
                return signed, body
        return signed, signed.canonical_bytes(with_signature=True)

    def verify_signature(self, keys: Mapping[str, VerifyKey], *, message: bytes | None = None) -> tuple[bool, str]:
        """(ok, why). Unknown key, bad encoding and a wrong signature are told apart."""
        return check_signature(self.signature, keys, message if message is not None else self.canonical_bytes(),
                               "receipt")


CAPTURE_BLOBS = ("dom", "text", "screenshot")


def named_blobs(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """Every blob a receipt (as JSON) names, each with what it is: its body (``content``), a rendered capture's DOM,
    reader text and screenshot (``capture.dom``…), then for each hop over TLS the certificates the server
    presented (``hop N certificate``, ``hop N chain[i]``, ``hop N verified_chain[i]``), each blob once. The
    references are as signed and may be malformed: the caller checks each (``ledger verify`` fails a malformed
    one). A ``tls`` block that names no certificate, or a chain that is no list, is named with the value
    ``None``, so it fails rather than being skipped. (Called on every row ``ledger verify`` reads: a receipt
    without TLS costs a loop.)"""
    content = data.get("content")
    out: list[tuple[str, Any]] = [("content", content)] if content else []
    cap = data.get("capture")
    if isinstance(cap, Mapping):
        out.extend((f"capture.{name}", cap[name]) for name in CAPTURE_BLOBS if cap.get(name))
    hops = data.get("hops")
    if type(hops) is not list:
        return out
    for h in hops:
        if type(h) is dict and h.get("tls") is not None:
            break
    else:
        return out  # no hop over TLS: the common row costs this loop
    seen: set[Any] = set()

    def add(what: str, ref: Any) -> None:
        key = ref.get("blake3") if type(ref) is dict else None
        if type(key) is str:
            if key in seen:
                return  # a chain names the leaf again, and a redirect's hops often one certificate
            seen.add(key)
        out.append((what, ref))

    for i, h in enumerate(hops):
        tls = h.get("tls") if type(h) is dict else None
        if tls is None:
            continue
        if type(tls) is not dict or not tls.get("certificate"):
            add(f"hop {i} certificate", None)
            continue
        add(f"hop {i} certificate", tls["certificate"])
        for member in ("chain", "verified_chain"):
            refs = tls.get(member)
            if refs is None:
                continue  # the TLS stack that read it did not give it
            if type(refs) is not list:
                add(f"hop {i} {member}", None)
                continue
            for k, ref in enumerate(refs):
                add(f"hop {i} {member}[{k}]", ref)
    return out


_TEXT_FIELDS = ("receipt_id", "kind", "source", "outcome", "outcome_code", "fetched_at")
_OBJECT_FIELDS = ("request", "allowlist", "tool")
_OPTIONAL_OBJECTS = ("content", "detail", "links", "log", "interstitial", "capture", "signature")



def _check_types(d: Mapping[str, Any]) -> None:
    """A stored receipt is untrusted input: a field of the wrong JSON type is an InputError here,
    not a crash later when the receipt is printed or re-serialised."""
    bad = [k for k in _TEXT_FIELDS if not isinstance(d.get(k), str)]
    bad += [k for k in _OBJECT_FIELDS if not isinstance(d.get(k), dict)]
    bad += [k for k in _OPTIONAL_OBJECTS if d.get(k) is not None and not isinstance(d.get(k), dict)]
    if not isinstance(d.get("hops"), list) or not all(
            isinstance(h, dict) and (h.get("tls") is None or isinstance(h["tls"], dict)) for h in d["hops"]):
        bad.append("hops")
    if bad:
        raise InputError(f"malformed receipt: wrong JSON type for {', '.join(bad)}")


def check_signature(sig: Signature | None, keys: Mapping[str, VerifyKey], message: bytes,
                    what: str) -> tuple[bool, str]:
    """Verify an Ed25519 signature block over ``message``; say why not in words a person can act on."""
    if sig is None:
        return False, "unsigned"
    if sig.alg != "ed25519":
        return False, f"unsupported algorithm {sig.alg!r}"
    key = keys.get(sig.key_id)
    if key is None:
        return False, f"signed by unknown key {sig.key_id}"
    try:
        raw = base64.b64decode(sig.value, validate=True)
    except ValueError:
        return False, "signature is not base64"
    if not key.verify(raw, message):
        return False, f"signature does not match the {what}"
    return True, "ok"


_PLAIN = re.compile(r"[A-Za-z0-9+/=:._-]*")


def _signature_member(sig: Mapping[str, Any]) -> bytes:
    """``"signature":{…}`` in RFC 8785 form. Its values are ids and base64, which need no escaping,
    so it is written directly; anything else goes through rfc8785."""
    if set(sig) == {"alg", "key_id", "value"} and all(isinstance(v, str) and _PLAIN.fullmatch(v) for v in sig.values()):
        return f'"signature":{{"alg":"{sig["alg"]}","key_id":"{sig["key_id"]}","value":"{sig["value"]}"}}'.encode()
    return rfc8785.dumps({"signature": dict(sig)})[1:-1]


def _cut_signature_member(text: str, sig: Mapping[str, Any]) -> str | None:
    """``text`` with its ``,"signature":{…}`` member cut out from right after the top-level
    ``"schema"`` member (where RFC 8785 order puts it), or None if it is not found there."""
    member = "," + _signature_member(sig).decode()
    anchor = f'"schema":"{SCHEMA}"'
    i = text.rfind(anchor + member)
    if i < 0:
        return None
    start = i + len(anchor)
    return text[:start] + text[start + len(member):]


def signed_message_fast(text: str, data: Mapping[str, Any]) -> bytes | None:
    """The signed message of a stored receipt by the cut alone, without parsing the result again
    (what ``unsigned_bytes_of_stored`` does), or None where the cut could be misread.

    Taken only when ``"signature"`` occurs once in the text and no ``\\u`` escape does. Then the
    top-level ``signature`` key of ``data`` (every key is written literally, since no escape can
    spell one of its letters) is that one occurrence, and the cut member begins with it, so the
    cut removes exactly that top-level member (the comma before it, the key and its whole value):
    the remainder parses to ``data`` minus its signature, as the checked slow path would find.
    If it is not in canonical form its signature simply fails, and the caller then takes the slow
    path, so every verdict is the slow path's.
    """
    sig = data.get("signature")
    if not isinstance(sig, dict) or text.count('"signature"') != 1 or "\\u" in text:
        return None
    cut = _cut_signature_member(text, sig)
    return None if cut is None else cut.encode()


_ANCHOR = f'"schema":"{SCHEMA}"'
_ANCHOR_COMMA = _ANCHOR + ","


def plain_signature_member(alg: str, key_id: str, value: str) -> str | None:
    """``"signature":{…}`` as ``_signature_member`` writes it, for three plain values (the only
    ones written as they are), else None."""
    if not (_PLAIN.fullmatch(alg) and _PLAIN.fullmatch(key_id) and _PLAIN.fullmatch(value)):
        return None
    return f'"signature":{{"alg":"{alg}","key_id":"{key_id}","value":"{value}"}}'


def cut_plain_signature(text: str, member: str) -> str | None:
    """``signed_message_fast`` (decoded) for a receipt whose top-level signature object has the
    canonical text ``member`` (see ``plain_signature_member``), found without building it from the
    parsed receipt: the cut is taken where ``"signature"`` occurs once and no ``\\u`` escape does,
    and that one occurrence begins ``member`` right after ``,`` and the top-level ``"schema"``
    member. With one occurrence, ``signed_message_fast``'s ``rfind`` of anchor + member can only
    find that spot, so both cut the same characters or both refuse."""
    j = text.find('"signature"')
    # ("\\" in text first: one memchr, where a search for the two characters costs a microsecond)
    if j < 0 or text.find('"signature"', j + 11) >= 0 or ("\\" in text and "\\u" in text):
        return None
    i = j - len(_ANCHOR_COMMA)
    if i < 0 or not text.startswith(_ANCHOR_COMMA, i) or not text.startswith(member, j):
        return None
    return text[:j - 1] + text[j + len(member):]


def unsigned_bytes_of_stored(text: str, data: Mapping[str, Any]) -> bytes | None:
    """The signed message of a receipt stored as canonical JSON, without re-canonicalising it.

    In RFC 8785 form the top-level members are sorted, so ``"signature"`` directly follows
    ``"schema"``; cutting that one member out of canonical text leaves the canonical text of the
    rest. The cut is accepted only if the remainder parses to exactly the receipt minus its
    signature, so a stored text that is not canonical (or was edited) falls back to the slow path
    (and then fails its signature check) rather than being misread.
    """
    sig = data.get("signature")
    if not isinstance(sig, dict):
        return None
    derived = _cut_signature_member(text, sig)
    if derived is None:
        return None
    try:
        rest = json.loads(derived)
    except ValueError:
        return None
    expected = {k: v for k, v in data.items() if k != "signature"}
    return derived.encode() if rest == expected else None
