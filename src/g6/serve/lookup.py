"""The few questions the pages ask of the ledger, over :class:`g6.serve.captures.Captures` (the query layer
every serve module shares, with its one index of the ledger): captures of a URL or a digest, one capture by id,
the counts, and the re-check receipts of a capture or a manifest."""

from __future__ import annotations

from g6.errors import BadDigest, G6Error
from g6.ledger.receipts import Receipt
from g6.serve.captures import Captures
from g6.serve.tlog import RECEIPT_ID


class NotFound(G6Error):
    """Nothing of that id, URL or digest in this home (a 404, with the reason); ``see``: a path of this server
    that answers instead, if there is one."""

    def __init__(self, message: str, see: str | None = None) -> None:
        super().__init__(message)
        self.see = see


def by_id(caps: Captures, receipt_id: str) -> Receipt:
    c = caps.get(receipt_id)
    if c is not None:
        return c.receipt
    kind = caps.kind_of(receipt_id)
    if kind is None or not RECEIPT_ID.fullmatch(receipt_id):  # suggested only where /receipt/ serves it
        raise NotFound(f"no receipt {receipt_id} in this home")
    # a receipt the home holds that is not a web read (a search, a key entry…): served as itself
    raise NotFound(f"{receipt_id} is a {kind} receipt, not a web read: no capture page, only the signed "
                   f"receipt at /receipt/{receipt_id}", see=f"/receipt/{receipt_id}")


def of_url(caps: Captures, url: str) -> list[Receipt]:
    """Every page read that began at ``url``, was redirected through or to it (normalised as g6 stores URLs)."""
    return [c.receipt for c in caps.of_url(url)]


def of_digest(caps: Captures, hex_digest: str) -> list[Receipt]:
    """Every page read whose body has this blake3 or sha256 (64 hex digits: either algorithm)."""
    found: dict[str, Receipt] = {}
    for alg in ("blake3", "sha256"):
        try:
            found.update((c.receipt_id, c.receipt) for c in caps.by_digest(f"{alg}:{hex_digest}"))
        except BadDigest:
            continue
    return list(found.values())


def rechecks_of(caps: Captures, receipt_id: str) -> list[Receipt]:
    """The re-checks that re-read ``receipt_id``, in ledger order."""
    return [c.receipt for c in caps.rechecks_of(receipt_id)]


def rechecks_of_manifest(caps: Captures, manifest_id: str) -> list[Receipt]:
    """The re-checks of ``manifest_id``'s citations, in ledger order."""
    return [c.receipt for c in caps.rechecks_of_manifest(manifest_id)]


def counts(caps: Captures) -> dict[str, object]:
    return caps.counts().to_json()
