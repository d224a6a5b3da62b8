"""What ``ledger verify`` makes of one blob a receipt names (``g6.ledger.receipts.named_blobs``): its body, a
rendered capture's DOM, text or screenshot, a certificate a server presented over TLS.

A blob holds when it is in the store, re-hashes to both digests and the size, and its sha256 index entry points
at it. A body or capture blob that is gone holds too when a redaction entry that counts covers it
(``g6.ledger.redactions``): worded ``redacted at seq N (reason)``. A certificate never: a redaction never
covers one (``g6.ledger.takedown``), so a missing certificate fails whatever entry names its digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from g6.ledger.chain import Check
from g6.ledger.redactions import Redactions
from g6.store import BlobBackend, BlobRef

CERTIFICATE_PREFIX = "hop "  # how named_blobs names a certificate: "hop 0 certificate", "hop 1 chain[0]"…


def blob_check(store: BlobBackend, seq: int, rid: str, content: Mapping[str, Any] | None,
               cache: dict[tuple[str, str, int], tuple[bool, str]], what: str = "content",
               redactions: Redactions | None = None) -> Check:
    """The blob a receipt names (``what``: its ``content``, a capture's blob, or a certificate of a hop over
    TLS): present, re-hashing to both digests and the size, and the one its sha256 index entry points at (the
    store is asked once per blob, ``cache``); or, unless it is a certificate, gone from the store and covered
    by a redaction that counts (``redactions``): then it holds, worded as redacted. A failure names what
    failed unless it is the body."""
    label = "" if what == "content" else f"{what}: "
    try:
        expect = BlobRef(str(content["blake3"]), str(content["sha256"]), int(content["size"]))  # type: ignore[index]
    except (KeyError, TypeError, ValueError):
        return Check("blob", False, seq, rid, f"receipt's {what} block is malformed")
    key = (expect.blake3, expect.sha256, expect.size)
    if key not in cache:
        c = store.check(expect.blake3, expect)
        if not c.ok:
            cache[key] = (False, f"{expect.blake3}: {c.detail}")
        elif (indexed := store.indexed_as(expect.sha256)) != expect.blake3:
            cache[key] = (False, f"{expect.sha256}: " + (f"the sha256 index points at {indexed}" if indexed
                                                         else "not indexed"))
        else:
            cache[key] = (True, "")
    ok, detail = cache[key]
    if not ok and redactions is not None and not what.startswith(CERTIFICATE_PREFIX):
        gone = redactions.of(expect.blake3)
        if gone is not None and gone.blob.sha256 == expect.sha256 and not store.has(expect.blake3):
            return Check("blob", True, seq, rid, f"{label}{expect.blake3}: {gone.said()}")
    return Check("blob", ok, seq, rid, label + detail if detail else detail)


__all__ = ["blob_check"]
