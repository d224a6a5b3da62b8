"""A bundle's rendered captures (``g6 fetch --render``): what a citation of one rests on besides its DOM.

A capture receipt's body (``content``) is the DOM after the scripts ran, hashed like any body; its ``capture``
record names, signed, the text the reader saw (which a ``rendered`` citation's offsets are into), the full-page
screenshot, and every request the page made by receipt id and body sha256. A bundle carries the text and the
screenshot as blobs and each request's receipt with its inclusion proof, not its body (``g6.prove.bundle``).

:class:`CapturedParts` checks them for :class:`g6.prove.bundle_citations.CitationChecks` (whose receipt and
blob checks it uses, so every member is still read once): :meth:`text` is the capture's text once its blob
hashes to the receipt; :meth:`check` is the citation's ``capture`` verdict: the text and the screenshot carried
and hashing to the receipt, and each request's receipt carried, signed, included in the bundle's history, a
request of this capture (``links.capture``) whose body's sha256 is the one the capture lists. It fails closed:
anything the signed capture names that the bundle lacks, or holds other bytes of, fails it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from g6.prove.bundle_report import BundleCheck
from g6.prove.bundle_zip import ID, MAX_PLAIN_BODY, content_ok, quoted

SHOWN = 4  # problems a verdict names before it counts the rest


class CapturedParts:
    """The rendered captures a bundle's citations rest on, each checked once, for ``checks`` (a
    ``CitationChecks``: its ``_receipt``, ``_hashed`` and ``receipts`` are used)."""

    def __init__(self, checks: Any) -> None:
        self.checks = checks
        self.keys: tuple[Sequence[Any], str | None] = ((), None)  # the roots and origin receipts verify with
        self.blobs: dict[str, tuple[str, bytes | None]] = {}  # member -> (why it fails, bytes when kept)
        self.verdicts: dict[str, BundleCheck] = {}  # capture receipt id -> its capture verdict

    def _blob(self, ref: object) -> tuple[str, bytes | None]:
        """A blob the capture names, read once: why it fails ("" when it holds) and, for one small enough to be
        re-read as text, its bytes."""
        if not isinstance(ref, Mapping) or not content_ok(ref):
            return "the receipt names no well-formed digests", None
        name = "blobs/" + str(ref["blake3"]).removeprefix("blake3:")
        if name not in self.blobs:
            self.blobs[name] = self.checks._hashed(name, ref, ref["size"] <= MAX_PLAIN_BODY)
        return self.blobs[name]

    def text(self, t: Any) -> tuple[str | None, str]:
        """The text the reader saw, as capture ``t`` (a verified receipt) kept it, or why it cannot be checked."""
        cap = t.capture
        if cap is None:
            return None, "a rendered citation of a read that is no rendered capture"
        ref = cap.get("text")
        if ref is None:
            return None, "the capture kept no text"
        size = ref.get("size") if isinstance(ref, Mapping) else None
        if type(size) is int and size > MAX_PLAIN_BODY:
            return None, (f"not checked: the capture's text is {size} bytes; bundle verify re-reads at most "
                          f"{MAX_PLAIN_BODY}")
        why, data = self._blob(ref)
        if why:
            return None, f"not checked: the capture's text does not verify: {why}"
        if data is None:
            return None, "not checked: the capture's text was read once already"
        try:
            return data.decode("utf-8"), ""
        except UnicodeDecodeError:
            return None, "the capture's text is not UTF-8"

    def check(self, t: Any) -> BundleCheck:
        """The ``capture`` verdict of a citation of capture ``t`` (once per capture)."""
        if t.receipt_id not in self.verdicts:
            self.verdicts[t.receipt_id] = self._check(t)
        return self.verdicts[t.receipt_id]

    def _check(self, t: Any) -> BundleCheck:
        cap: Mapping[str, Any] = t.capture
        bad: list[str] = []
        for what in ("text", "screenshot"):
            ref = cap.get(what)
            if ref is None:
                continue  # the capture kept none (a page that never loaded): nothing to carry
            why, _ = self._blob(ref)
            if why:
                bad.append(f"the {what}: {why}")
        listed = cap.get("resources")
        if not isinstance(listed, list):
            bad.append("the capture lists no requests")
            listed = []
        for i, entry in enumerate(listed):
            problem = self._request(t.receipt_id, entry)
            if problem:
                bad.append(f"request {i + 1}: {problem}")
        if bad:
            more = f"; {len(bad) - SHOWN} more" if len(bad) > SHOWN else ""
            return BundleCheck("capture", False, "; ".join(bad[:SHOWN]) + more)
        return BundleCheck("capture", True, f"the DOM, the text and the screenshot hash to the capture receipt; "
                                            f"{len(listed)} requests, each receipt carried, signed and included, "
                                            "its body's sha256 the one the capture lists")

    def _request(self, capture_id: str, entry: object) -> str:
        """Why one request the capture lists does not hold ("" when it does)."""
        rid = entry.get("receipt_id") if isinstance(entry, Mapping) else None
        if not isinstance(rid, str) or not ID.fullmatch(rid):
            return "the capture names no receipt id"
        if rid not in self.checks.receipts:
            self.checks.receipts[rid] = self.checks._receipt(rid, *self.keys)
        r = self.checks.receipts[rid]
        failed = [c for c in r.checks if not c.ok]
        if failed or r.trusted is None:
            said = f"{failed[0].check}: {quoted(failed[0].detail, 160)[1:-1]}" if failed else "unverified"
            return f"{rid}: {said}"
        got = r.trusted.content.get("sha256") if isinstance(r.trusted.content, Mapping) else None
        if got != entry.get("sha256"):  # type: ignore[union-attr]
            return f"{rid}: its body's sha256 is not the one the capture lists"
        if r.trusted.part_of != capture_id:
            return f"{rid}: a receipt of another read than this capture's requests"
        return ""
