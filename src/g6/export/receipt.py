"""One receipt in the field's formats (``g6 receipt export``): ``json`` (the receipt as g6 signs and shows it),
``dsse`` (an in-toto Statement in a DSSE envelope, :mod:`g6.export.attest`) or ``vc`` (a W3C Verifiable
Credential 2.0 with an ``eddsa-jcs-2022`` proof, :mod:`g6.export.vc`).

The ``dsse`` and ``vc`` forms carry a new signature, by the home's signing key. So that it never vouches for a
receipt the ledger's own check would refuse, the receipt's signature is checked first against the keys the home
trusts; a receipt that fails is not exported (``ReceiptUnverified``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from g6.errors import InputError, ReceiptUnverified
from g6.export import attest, vc
from g6.home import EvidenceHome
from g6.ledger.receipts import utc_now

FORMATS = ("json", "dsse", "vc")
MEDIA_TYPES = {"json": "application/json", "dsse": attest.MEDIA_TYPE, "vc": vc.MEDIA_TYPE}


@dataclass(frozen=True)
class ReceiptExport:
    """What ``g6 receipt export`` writes: ``text``, the document in ``format``; ``key_id``, the key whose new
    signature it carries (None for ``json``: the receipt's own signature is the only one)."""

    receipt_id: str
    format: str
    text: str
    key_id: str | None
    issuer: str | None = None  # the did:key of a credential

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

    def summary(self, path: str | None) -> dict[str, Any]:
        """``--json``'s object (schemas/receipt-export.v1): the document itself when it was not written to a file."""
        return {"receipt_id": self.receipt_id, "format": self.format, "media_type": self.media_type,
                "key_id": self.key_id, "issuer": self.issuer, "path": path,
                "document": None if path is not None else json.loads(self.text)}


def export_receipt(home: EvidenceHome, receipt_id: str, fmt: str) -> ReceiptExport:
    """The receipt ``receipt_id`` of ``home`` in format ``fmt``. Raises ReceiptNotFound for an id the ledger does
    not hold, ReceiptUnverified for a receipt whose signature fails (``dsse``, ``vc``), SigningKeyError when the
    home has no signing key to sign with, InputError for an unknown format."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    receipt = home.ledger.get(receipt_id)
    if fmt == "json":
        return ReceiptExport(receipt.receipt_id, fmt, receipt.shown(), None)
    ok, why = receipt.verify_signature(home.trusted())
    if not ok:
        raise ReceiptUnverified(f"receipt {receipt.receipt_id}: {why}; not exported as {fmt} "
                                "(run `g6 ledger verify`; trust its key with `g6 keys trust` if it is yours)")
    key = home.signing_key()
    if fmt == "dsse":
        return ReceiptExport(receipt.receipt_id, fmt, attest.envelope_text(receipt, key), key.key_id)
    secured = vc.secured_credential(receipt, key, utc_now())
    return ReceiptExport(receipt.receipt_id, fmt, json.dumps(secured, indent=2, ensure_ascii=False) + "\n",
                         key.key_id, key.public.did_key)
