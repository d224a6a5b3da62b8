"""``g6 convert DIGEST``: turn a kept PDF into text (pypdf), keep the text as a blob, receipt it.

The receipt (``kind: "convert"``) links the text blob to the PDF it came from (``links.from``) and
says how many pages were read; a body that is not a PDF, an encrypted PDF, or one pypdf cannot
read is ``parse_failed`` with the reason — the PDF itself is untouched.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import Any

import pypdf
from pypdf.errors import PyPdfError

from g6.adapters.outcomes import Outcome
from g6.adapters.untrusted import flag_instructions
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt

MAX_PAGES = 2000


@dataclass(frozen=True, slots=True)
class ConvertResult:
    outcome: Outcome
    reason: str
    receipt_id: str
    source: str
    content: dict[str, Any] | None
    pages: int
    text: str | None

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome.value, "code": self.outcome.code("convert"), "status": self.outcome.status,
                "reason": self.reason,
                "receipt_id": self.receipt_id, "from": self.source, "content": self.content, "pages": self.pages,
                "trust": "untrusted", "text": self.text,
                "instruction_flags": [f.to_json() for f in flag_instructions(self.text or "")]}


def pdf_text(data: bytes) -> tuple[str, int]:
    """(text, pages). Raises ValueError with a reason word for what pypdf cannot read."""
    if not data.lstrip()[:5] == b"%PDF-":
        raise ValueError("not_a_pdf")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns about every quirk of real PDFs
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ValueError("encrypted_pdf")
        pages = reader.pages[:MAX_PAGES]
        text = "\n\n".join((p.extract_text() or "").strip() for p in pages)
    except (PyPdfError, KeyError, TypeError, AttributeError, IndexError, RecursionError, ZeroDivisionError) as e:
        raise ValueError(f"unreadable_pdf: {type(e).__name__}") from None
    return text.strip(), len(pages)


def convert(home: EvidenceHome, digest: str) -> ConvertResult:
    # BlobNotFound / BadDigest are the caller's input errors; bytes that do not hash to the digest
    # asked for (a damaged blob, a lying sha256 index entry) are refused with BlobCorrupt
    home.refuse_redacted(digest)  # a redacted PDF is never read again (its text would be a copy of it)
    src, data = home.store.read_checked(digest)
    try:
        text, pages = pdf_text(data)
        ref = home.store.put(text.encode())
        outcome, reason, content = (Outcome.OK if text else Outcome.EMPTY), ("" if text else "no_text"), ref.to_json()
    except ValueError as e:
        text, pages, outcome, reason, content = None, 0, Outcome.PARSE_FAILED, str(e), None
    receipt = home.record(Receipt(
        kind="convert", source="pypdf", request={"digest": src.blake3, "pypdf": pypdf.__version__},
        outcome=outcome.value, outcome_code=outcome.code("convert"), content=content,
        byte_count=content["size"] if content else 0,
        detail={"pages": pages, "content_type": "text/plain; charset=utf-8", **({"reason": reason} if reason else {})},
        links={"from": src.to_json()}))
    return ConvertResult(outcome, reason, receipt.receipt_id, src.blake3, content, pages, text)
