"""A cited body that was redacted, in a bundle: what the publisher packs instead of the bytes, and what the
verifier makes of it (``g6.ledger.redactions``).

A bundle made *before* a redaction carries the body itself and verifies offline as it always did. A bundle made
*after* carries, for each cited body a counting redaction entry covers, ``redactions/<blake3 hex>`` (one line:
the entry's receipt id) instead of ``blobs/<blake3 hex>``, and the entry itself as any cited receipt is carried:
``receipts/<id>.json`` with ``proofs/<id>.tlog-proof`` against the bundle's checkpoint. The verifier checks the
entry like a cited receipt (signature by a pinned key, inclusion in the bundle's history) and that it is a
redaction naming exactly those digests; then the citation is ``redacted``, naming the entry's seq and reason,
and fails: a bundle holds only when every citation it must prove has its body. An entry that does not hold
leaves the body simply missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from g6.errors import BundleMemberError
from g6.ledger.keys import VerifyKey
from g6.ledger.redactions import REDACTION, Redactions
from g6.prove.bundle_report import BundleCheck
from g6.prove.bundle_zip import ID, RECORD_ERRORS, quoted

PREFIX = "redactions/"


def member(content: Mapping[str, Any]) -> str:
    return PREFIX + str(content["blake3"]).removeprefix("blake3:")


def packed(red: Redactions, ref: Any) -> tuple[str, bytes, str] | None:
    """(member name, its bytes, the entry's receipt id) when the blob a receipt names (``ref``: its body, a
    capture's DOM, text or screenshot) is redacted, else None (a malformed reference too: reading it fails)."""
    gone = red.of_content(ref) if isinstance(ref, Mapping) else None
    if gone is None or (ref.get("blake3"), ref.get("sha256")) != (gone.blob.blake3, gone.blob.sha256):
        return None
    return member(ref), (gone.receipt_id + "\n").encode(), gone.receipt_id


class _Checks(Protocol):
    """What is needed of ``g6.prove.bundle_citations.CitationChecks``: its members, its receipt check, and the
    leaf index of every receipt whose inclusion held."""

    members: Any
    leaves: dict[str, int]
    receipt_results: dict[str, Any]

    def _receipt(self, rid: str, roots: Sequence[VerifyKey], origin: str | None) -> Any: ...


def verdict(checks: _Checks, content: Mapping[str, Any], roots: Sequence[VerifyKey],
            origin: str | None) -> tuple[BundleCheck, dict[str, Any] | None] | None:
    """None when the bundle says nothing of a redaction of ``content``'s body; else the ``redaction`` verdict
    (always failing: the body is gone) and, when the entry held, what the citation reports of it."""
    name = member(content)
    if name not in checks.members.declared:
        return None
    try:
        rid = checks.members.read(name).decode("ascii").strip()
        if not ID.fullmatch(rid):
            raise BundleMemberError(f"{name} does not hold a receipt id")
    except (*RECORD_ERRORS, UnicodeDecodeError) as e:
        return BundleCheck("redaction", False, f"the body is not in the bundle, and {name} is unreadable: {e}"), None
    if rid not in checks.receipt_results:  # (a cited receipt named here was read already: read once)
        checks.receipt_results[rid] = checks._receipt(rid, roots, origin)
    result = checks.receipt_results[rid]
    bad = [f"{c.check}: {c.detail}" for c in result.checks if not c.ok]
    t = result.trusted
    request = t.request if t is not None else {}
    blobs = request.get("blobs") if isinstance(request, Mapping) else None
    named = isinstance(blobs, list) and any(
        isinstance(b, Mapping) and (b.get("blake3"), b.get("sha256"), b.get("size")) ==
        (content.get("blake3"), content.get("sha256"), content.get("size")) for b in blobs)
    if t is not None and (t.kind != REDACTION or not named):
        bad.append(f"receipt {rid} is not a redaction entry naming this body")
    if bad or t is None or rid not in checks.leaves:
        why = "; ".join(quoted(b, 200)[1:-1] for b in bad) or "its inclusion was not checked"
        return BundleCheck("redaction", False, f"the body is not in the bundle, and the redaction entry {rid} it "
                                               f"names does not hold ({why})"), None
    seq = checks.leaves[rid] + 1
    reason, note = str(request.get("reason", ""))[:200], str(request.get("note", ""))[:2000]
    said = (f"REDACTED at seq {seq} ({reason}): the publisher took this body out of its home by a signed "
            f"redaction entry ({rid}, included in the bundle's checkpoint); the citation has no evidence left")
    return BundleCheck("redaction", False, said), {"seq": seq, "receipt_id": rid, "reason": reason, "note": note}


__all__ = ["PREFIX", "member", "packed", "verdict"]
