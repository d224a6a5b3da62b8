"""k of N bodies redacted at random: `ledger verify` reports exactly k redacted, with the chain, the tree and every
signature green; one more body deleted without an entry fails, and names that body."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.takedown import plan, redact


@st.composite
def cases(draw: st.DrawFn) -> tuple[int, list[int], int, bool]:
    n = draw(st.integers(min_value=2, max_value=14))
    k = draw(st.integers(min_value=0, max_value=n - 1))
    chosen = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
    extra = draw(st.sampled_from([i for i in range(n) if i not in chosen]))
    return n, chosen, extra, draw(st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_k_redacted_of_n_then_one_more_deleted(case: tuple[int, list[int], int, bool]) -> None:
    n, chosen, extra, one_entry = case
    with tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(Path(d) / "home", fsync=False)
        home.keys.init()
        refs = []
        for i in range(n):
            ref = home.store.put(f"body {i} of {n}".encode())
            refs.append(ref)
            home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", content=ref.to_json(),
                                byte_count=ref.size))
        roots = home.trust().roots()
        groups = [chosen] if one_entry and chosen else [[i] for i in chosen]  # asked at once, or one by one
        for g in groups:
            redact(home.ledger, home.store, home.signing_key(), roots,
                   plan(home.ledger, digests=[refs[i].blake3 for i in g]), "court-order")
        report = home.verify()
        assert report.ok, report.failures()
        data = report.to_json()
        assert data.get("redactions", {}).get("redacted", 0) == len(chosen)
        assert data.get("redactions", {}).get("pending", 0) == 0
        for name in ("chain", "tree", "signature", "blob"):
            assert data["checks"][name]["ok"] and data["checks"][name]["failed"] == 0, name
        assert data["checks"]["signature"]["checked"] == n + len(chosen)  # one signed entry a body
        assert data.get("redactions", {}).get("entries", 0) == len(chosen)
        redacted_checks = [c for c in report.checks if c.check == "blob" and "redacted at seq" in c.detail]
        assert sorted(c.seq for c in redacted_checks) == sorted(i + 1 for i in chosen)

        home.store.remove(refs[extra])  # one more body gone, without an entry
        after = home.verify()
        assert not after.ok
        assert [(c.check, c.seq) for c in after.failures()] == [("blob", extra + 1)]
        assert after.failures()[0].detail == f"{refs[extra].blake3}: missing"
        assert after.to_json().get("redactions", {}).get("redacted", 0) == len(chosen)
        home.close()
