"""The ECDSA P-384 key that signs g6's WACZ exports, and the ledger entries that bind it to the log.

A signed WACZ (Webrecorder's "WACZ Signing and Verification" 0.1.0, the anonymous signature) carries a
``publicKey`` and a signature by it, and nothing that says whose key that is. g6 says it in its log: a
**WACZ key entry** is a receipt of kind ``wacz-key``, appended and signed like any other receipt (by the
log's Ed25519 writer key, bound to its place in the log), whose request is::

    {"action": "add" | "retire", "key": "<base64 SubjectPublicKeyInfo DER, as signedData.publicKey>",
     "key_id": "ecdsa-p384:<first 32 hex digits of sha256(that DER)>", "use": "wacz-signing"[, "reason"]}

So a grader who trusts the log's key trusts the WACZ key from the row after its ``add`` entry up to its
``retire`` entry (if any): the entry travels inside the WACZ with its inclusion proof. Why P-384 and
not the log's Ed25519 key: ReplayWeb.page (wabac.js) checks an anonymous signature with WebCrypto's
ECDSA on P-384 only (it refuses P-256 and knows no Ed25519 there), the curve ArchiveWeb.page signs with.

What is signed: the UTF-8 bytes of the ``hash`` string (``sha256:<hex of datapackage.json>``), ECDSA with
SHA-256, the signature as WebCrypto gives and takes it (IEEE P1363: r then s, 48 bytes each), base64.

``wacz_key_checks`` is ``ledger verify``'s pass over these entries (``wacz_keys``): each one well formed (a
P-384 key, its own key id, ``use`` ``wacz-signing``), no key added after it was retired (a retirement is
final; a second add of a key still valid changes nothing), no key retired that was never added or twice.
Its signature, chain and place are checked with every other row, by the writer keys.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from g6.errors import InputError, SigningKeyError
from g6.ledger.chain import Check
from g6.ledger.receipts import Receipt

KIND = "wacz-key"
USE = "wacz-signing"
ADD, RETIRE = "add", "retire"
PREFIX = "ecdsa-p384:"
ADDED, RETIRED = "G6_E_LEDGER_WACZ_KEY_ADDED", "G6_E_LEDGER_WACZ_KEY_RETIRED"
COORD = 48  # bytes of r and of s on P-384
MAX_SPKI = 512  # a P-384 SubjectPublicKeyInfo is 120 bytes; anything past this is no such key


@dataclass(frozen=True)
class WaczPublicKey:
    """A P-384 public key as its SubjectPublicKeyInfo DER (what ``signedData.publicKey`` holds in base64)."""

    spki: bytes

    def __post_init__(self) -> None:
        if len(self.spki) > MAX_SPKI:
            raise SigningKeyError("not a P-384 public key (too long)")
        try:
            key = serialization.load_der_public_key(self.spki)
        except (ValueError, TypeError) as e:
            raise SigningKeyError(f"not a public key: {str(e)[:80]}") from None
        if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP384R1):
            raise SigningKeyError("not an ECDSA P-384 public key (ReplayWeb.page checks P-384 only)")
        canonical = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        if canonical != self.spki:  # one key, one text: a compressed point or odd DER is another key id
            raise SigningKeyError("not the DER SubjectPublicKeyInfo of an uncompressed P-384 point")

    @property
    def key_id(self) -> str:
        return PREFIX + hashlib.sha256(self.spki).hexdigest()[:32]

    def to_text(self) -> str:
        return base64.b64encode(self.spki).decode()

    @classmethod
    def from_text(cls, text: str) -> WaczPublicKey:
        try:
            return cls(base64.b64decode(text.strip(), validate=True))
        except (binascii.Error, ValueError):
            raise SigningKeyError("a WACZ public key is base64 of its DER SubjectPublicKeyInfo") from None

    def verify(self, signature: bytes, message: bytes) -> bool:
        """Whether ``signature`` (r then s, 48 bytes each) signs ``message`` (ECDSA, SHA-256)."""
        if len(signature) != 2 * COORD:
            return False
        der = encode_dss_signature(int.from_bytes(signature[:COORD], "big"), int.from_bytes(signature[COORD:], "big"))
        key = serialization.load_der_public_key(self.spki)
        assert isinstance(key, ec.EllipticCurvePublicKey)
        try:
            key.verify(der, message, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            return False
        return True


class WaczSigningKey:
    """The private half: ECDSA P-384, kept as PKCS#8 PEM (``keys/wacz-signing.key``, mode 0600)."""

    def __init__(self, private: ec.EllipticCurvePrivateKey) -> None:
        if not isinstance(private.curve, ec.SECP384R1):
            raise SigningKeyError("the WACZ signing key must be ECDSA P-384")
        self._private = private
        self.public = WaczPublicKey(private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))

    @classmethod
    def generate(cls) -> WaczSigningKey:
        return cls(ec.generate_private_key(ec.SECP384R1()))

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        """ECDSA with SHA-256 over ``message``: r then s, 48 bytes each (what WebCrypto verifies)."""
        r, s = decode_dss_signature(self._private.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(COORD, "big") + s.to_bytes(COORD, "big")

    def to_pem(self) -> bytes:
        return self._private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption())

    @classmethod
    def from_pem(cls, data: bytes) -> WaczSigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise SigningKeyError(f"not a PEM private key: {str(e)[:120]}") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise SigningKeyError("the WACZ signing key must be ECDSA P-384")
        return cls(key)


def wacz_key_entry(action: str, key: WaczPublicKey, reason: str = "") -> Receipt:
    """An unsigned WACZ key entry (``add`` or ``retire`` of ``key``), for ``Ledger.append``."""
    if action not in (ADD, RETIRE):
        raise InputError(f"a WACZ key entry adds or retires a key, not {action!r}")
    request: dict[str, Any] = {"action": action, "key": key.to_text(), "key_id": key.key_id, "use": USE}
    if reason:
        request["reason"] = reason
    return Receipt(kind=KIND, source="g6", request=request, outcome="ok",
                   outcome_code=ADDED if action == ADD else RETIRED)


def entry_request(request: Any) -> tuple[str, WaczPublicKey]:
    """(action, key) of a WACZ key entry's request; ``InputError`` or ``SigningKeyError`` saying what is wrong."""
    if not isinstance(request, dict):
        raise InputError("its request is not an object")
    action = request.get("action")
    if action not in (ADD, RETIRE):
        raise InputError(f"unknown action {str(action)[:40]!r}")
    if request.get("use") != USE:
        raise InputError(f"its use is {str(request.get('use'))[:40]!r}, not {USE!r}")
    text = request.get("key")
    if not isinstance(text, str):
        raise InputError("it names no key")
    key = WaczPublicKey.from_text(text)
    if request.get("key_id") != key.key_id:
        raise InputError("its key_id is not its key's")
    return action, key


@dataclass
class WaczKeyLife:
    """One WACZ key in one log: the entry that added it and the one that retired it, if any."""

    key: WaczPublicKey
    added_at: int
    added_by: str  # the receipt id of the add entry
    retired_at: int | None = None
    retired_by: str | None = None


def wacz_key_lives(rows: Iterable[tuple[int, Any, Any]]) -> tuple[dict[str, WaczKeyLife], list[Check]]:
    """The WACZ keys the entries among ``rows`` (seq, receipt id, stored text or its parsed JSON; in seq
    order) add and retire, and a failed ``wacz_keys`` verdict per entry that is not valid (which then
    changes nothing)."""
    lives: dict[str, WaczKeyLife] = {}
    problems: list[Check] = []
    for seq, rid, text in rows:
        rid_s = rid if isinstance(rid, str) else repr(rid)
        try:
            data = json.loads(text) if isinstance(text, str) else text
            if not isinstance(data, dict) or data.get("kind") != KIND:
                raise InputError("not a WACZ key entry")
            action, key = entry_request(data.get("request"))
        except (InputError, SigningKeyError, ValueError) as e:
            problems.append(Check("wacz_keys", False, seq, rid_s, f"WACZ key entry not valid: {e}"))
            continue
        life = lives.get(key.key_id)
        if action == ADD:
            if life is None:
                lives[key.key_id] = WaczKeyLife(key, seq, rid_s)
            elif life.retired_at is not None:  # a retirement is final
                problems.append(Check("wacz_keys", False, seq, rid_s,
                                      f"adds {key.key_id} again after it was retired at seq {life.retired_at}"))
            # a second add of a key still valid changes nothing (two first --sign exports at once write two)
        elif life is None:
            problems.append(Check("wacz_keys", False, seq, rid_s, f"retires {key.key_id}, which no entry added"))
        elif life.retired_at is not None:
            problems.append(Check("wacz_keys", False, seq, rid_s,
                                  f"retires {key.key_id} again (retired at seq {life.retired_at})"))
        else:
            life.retired_at, life.retired_by = seq, rid_s
    return lives, problems


def wacz_key_checks(rows: Iterable[tuple[int, Any, Any]]) -> list[Check]:
    """``ledger verify``'s verdicts on the WACZ key entries (none when the log holds none)."""
    seen = list(rows)
    if not seen:
        return []
    lives, problems = wacz_key_lives(seen)
    if problems:
        return problems
    retired = sum(1 for life in lives.values() if life.retired_at is not None)
    return [Check("wacz_keys", True, None, None, f"{_count(len(seen), 'WACZ key entry', 'WACZ key entries')}: "
                                                 f"{_count(len(lives), 'key')} added, {retired} retired")]


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
