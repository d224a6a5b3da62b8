"""A batch's settler (``g6.fetch.batch._Settler``) on its own, for tests of where a stop lands in it: URLs whose
receipts are durable in a real ledger, as the ledger writer hands them over, and a settler with its run file."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import g6.fetch.batch as batch_mod
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.runs import RunState


def durable(home: EvidenceHome, urls: list[str]) -> list[tuple[str, tuple[batch_mod._Fetched, Future]]]:
    """Each URL's result as ``arrived`` holds it: read ``ok``, its receipt appended (its future done)."""
    key = home.signing_key()
    out = []
    for u in urls:
        r = Receipt(kind="fetch", source="web", request={"url": u}, outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED")
        done: Future = Future()
        done.set_result(home.ledger.append(r, key))
        out.append((u, (batch_mod._Fetched((r,), "ok", "G6_E_KNOWLEDGE_FETCHED", 200, 1), done)))
    return out


def settler(home: EvidenceHome, urls: list[str], path: Path) -> batch_mod._Settler:
    """A settler of ``urls`` whose run file is ``path``."""
    state = RunState(path, decode=batch_mod.UrlResult.from_json, key=batch_mod.UrlResult.line_key)
    return batch_mod._Settler(state, {}, batch_mod._Names(home, urls, ()), (), 0, len(urls), None, None)
