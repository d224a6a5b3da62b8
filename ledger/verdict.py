"""One verdict on one check: which check, whether it held, and why (or why not).

The verdict of a proof file (``g6 verify-proof``), of an RFC 3161 token and of a signed report result
(``g6 report verify``): each verification returns a list of these, never a bare bool. The ledger's own
row checks (``g6.ledger.chain.Check``) also name the row and may warn, so they are a type of their own.
No I/O, no imports of the ledger: the bottom of the import order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CheckVerdict:
    check: str
    ok: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail}
