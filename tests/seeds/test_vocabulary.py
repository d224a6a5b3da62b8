"""One vocabulary: the docs' table (docs/concepts.md) is the code's, the documents' codes are all in it with the
status their documents give, and every code string in the source is in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from documents import ELASTIC, FETCHER, codes_named

from g6.adapters.outcomes import BLOCKED, QUALIFIED, Outcome, es_code, status_of, vocabulary

ROOT = Path(__file__).resolve().parents[2]
# what the documents call a result one may read; every other code they name is a failure or refusal
DOCUMENTS_QUALIFIED = {"G6_E_KNOWLEDGE_FETCHED", "G6_E_KNOWLEDGE_FETCH_EMPTY", "G6_E_KNOWLEDGE_ELASTIC_SEARCHED",
                       "G6_E_KNOWLEDGE_ELASTIC_PARTIAL", "G6_E_KNOWLEDGE_ELASTIC_NO_MATCH"}


def readme_table() -> dict[str, str]:
    """The table of "Outcome codes and status" in docs/concepts.md (it was the README's)."""
    text = (ROOT / "docs" / "concepts.md").read_text()
    block = text[text.index("<!-- codes:begin -->"):text.index("<!-- codes:end -->")]
    rows = {}
    for line in block.splitlines():
        m = re.match(r"\| `(G6_E_[A-Z0-9_]+)` \| `([a-z-]+)` \| (.+) \|$", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} twice in the docs' table"
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_readme_table_is_the_vocabulary() -> None:
    assert readme_table() == {code: status for code, (status, _) in vocabulary().items()}


@pytest.mark.parametrize("doc", [FETCHER, ELASTIC], ids=lambda p: p.name)
def test_every_code_a_document_names_is_ours_with_its_status(doc: Path) -> None:
    named = codes_named(doc)
    assert named and named <= set(vocabulary())
    for code in named:
        assert status_of(code) == (QUALIFIED if code in DOCUMENTS_QUALIFIED else BLOCKED), code


def test_every_code_in_the_source_is_in_the_vocabulary() -> None:
    found: set[str] = set()
    for folder in ("src", "adapters", "ledger", "store"):
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(re.findall(r'"(G6_E_[A-Z0-9_]*[A-Z0-9])"', path.read_text()))
    for o in Outcome:
        if o is not Outcome.PARTIAL:
            found.add(o.code("fetch"))
    # every outcome the Elasticsearch reader ends in (adapters/sources/elasticsearch.py), for every op
    reader = [(o, "") for o in (Outcome.OK, Outcome.EMPTY, Outcome.PARTIAL, Outcome.BLOCKED, Outcome.NOT_FOUND,
                                Outcome.REJECTED, Outcome.RATE_LIMITED, Outcome.SERVER_ERROR, Outcome.HTTP_ERROR,
                                Outcome.TOO_LARGE, Outcome.PARSE_FAILED)]
    reader += [(Outcome.UNREACHABLE, "connect"), (Outcome.UNREACHABLE, "timeout"),
               (Outcome.REFUSED, "redirect_not_followed")]
    for op in ("search", "count", "mapping", "get"):
        for o, reason in reader:
            if not (o is Outcome.EMPTY and op != "search"):
                found.add(es_code(op, o, reason))
    missing = found - set(vocabulary())
    assert not missing, f"codes used but not in the vocabulary (nor the docs' table): {sorted(missing)}"
    assert all(re.fullmatch(r"G6_E_[A-Z0-9]+(_[A-Z0-9]+)*", c) for c in vocabulary())
    assert not [c for c in vocabulary() if c.startswith("G6_OK")]
