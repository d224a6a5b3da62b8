"""Loopback servers for the documents' examples: the recorded arXiv/OAI-PMH replies, and a
noida-db Elasticsearch holding the ``handbook`` index the ctx_elastic document searches
(``title``, ``body``, ``team``; document ``leave-1``)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent / "fixtures"))

DOC_HANDBOOK_MAPPING = {"properties": {"title": {"type": "text"}, "body": {"type": "text"},
                                       "team": {"type": "keyword"}}}
DOC_HANDBOOK = {
    "leave-1": {"title": "Parental leave", "body": "Parents take up to twenty weeks of paid parental leave.",
                "team": "hr"},
    "leave-2": {"title": "Sick leave", "body": "Report sick leave to your manager on the first day.", "team": "hr"},
    "exp-1": {"title": "Travel expenses", "body": "Expenses are paid back within a month; leave receipts with "
                                                  "finance.", "team": "finance"},
}


@pytest.fixture(scope="session")
def handbook_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A noida-db of its own (the suite's shared one holds another ``handbook``)."""
    import elastic_setup

    proc, url = elastic_setup.start_noida(tmp_path_factory.mktemp("noida-seeds"))
    try:
        with httpx.Client(base_url=url, timeout=10.0) as c:
            c.put("/handbook", json={"mappings": DOC_HANDBOOK_MAPPING}).raise_for_status()
            for doc_id, doc in DOC_HANDBOOK.items():
                c.put(f"/handbook/_doc/{doc_id}", params={"refresh": "true"}, json=doc).raise_for_status()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except Exception:  # noqa: BLE001
            proc.kill()


