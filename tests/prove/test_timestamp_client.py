"""Asking a TSA (``g6.prove.timestamp_client``) and keeping its token beside a checkpoint; the ledger's
tokens checked by ``g6.ledger.transparency.timestamped``. Failures first: a TSA that answers wrong is a typed error
naming it, and nothing is kept."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from pathlib import Path

import httpx
import pytest
from asn1crypto import tsp

from g6.errors import TimestampAuthorityError
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.transparency.timestamp import KIND, TokenReport, load_roots, make_request
from g6.ledger.transparency.timestamped import backdated, timestamp_checks
from g6.prove.proofs import checkpoint
from g6.prove.timestamp_client import MAX_REPLY, ask_tsa, note_body, stamp_checkpoint
from tests.prove._tsa import Tsa, openssl_verify, rfc3161_client_verify

BODY = b"example.com/g6\n5\nfKo0Xb2JKmZFTWxlEuo8PqPw0+whvj/C4jdXBf049nI=\n"
URL = "http://tsa.test/"


def answering(status: int = 200, body: bytes = b"", ctype: str = "application/timestamp-reply",
              seen: list[httpx.Request] | None = None) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, content=body, headers={"Content-Type": ctype})
    return httpx.MockTransport(handle)


def forwarding(to: str, swap: bytes | None = None) -> httpx.MockTransport:
    """Pass the query on to a real loopback TSA; with ``swap``, ask it about those bytes instead."""
    def handle(request: httpx.Request) -> httpx.Response:
        query = request.content
        if swap is not None:
            q = tsp.TimeStampReq.load(query)
            q["message_imprint"]["hashed_message"] = hashlib.sha256(swap).digest()
            query = q.dump()
        r = httpx.post(to, content=query, headers={"Content-Type": "application/timestamp-query"}, timeout=30)
        return httpx.Response(r.status_code, content=r.content, headers={"Content-Type": r.headers["content-type"]})
    return httpx.MockTransport(handle)


# -- failures -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("transport", "words"), [
    (answering(500, b"oops", "text/plain"), "answered HTTP 500, not 200"),
    (answering(404, b"", "text/html"), "answered HTTP 404"),
    (answering(200, b"<html>", "text/html"), "Content-Type 'text/html', not application/timestamp-reply"),
    (answering(200, b"\x30\x03\x02\x01\x00"), "no token: not an RFC 3161 TimeStampResp"),
    (answering(200, b"x" * (MAX_REPLY + 1)), "bytes (at most"),
])
def test_a_tsa_that_answers_wrong_is_a_typed_error_naming_it(transport: httpx.MockTransport, words: str) -> None:
    with pytest.raises(TimestampAuthorityError, match="^TSA my-tsa: ") as e:
        ask_tsa(URL, BODY, name="my-tsa", transport=transport)
    assert words in str(e.value) and e.value.tsa == "my-tsa" and e.value.code == "G6_E_TSA"


def test_a_reply_too_long_without_a_length_is_cut_off() -> None:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "application/timestamp-reply"},
                              content=iter([b"\x30" * 65536] * 40))  # streamed, no Content-Length
    with pytest.raises(TimestampAuthorityError, match="a reply of more than"):
        ask_tsa(URL, BODY, transport=httpx.MockTransport(handle))


def test_unreachable_and_not_http_are_typed_errors() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)
    with pytest.raises(TimestampAuthorityError, match=r"^TSA http://tsa.test/: could not be asked \(ConnectError"):
        ask_tsa(URL, BODY, transport=httpx.MockTransport(refuse))
    with pytest.raises(TimestampAuthorityError, match="not an http"):
        ask_tsa("ftp://tsa.test/", BODY)


def test_a_rejection_is_a_typed_error(openssl_server: Tsa) -> None:
    with pytest.raises(TimestampAuthorityError, match=r"no token: status rejection \(bad_alg\)"):
        ask_tsa(openssl_server.url("reject"), BODY)


def test_a_token_for_other_bytes_or_a_replayed_one_is_refused(openssl_server: Tsa) -> None:
    with pytest.raises(TimestampAuthorityError, match="imprint: the token is over other bytes"):
        ask_tsa(URL, BODY, transport=forwarding(openssl_server.url("tsa"), swap=b"another note\n"))
    old = httpx.post(openssl_server.url("tsa"), content=make_request(BODY)[0],
                     headers={"Content-Type": "application/timestamp-query"}).content
    with pytest.raises(TimestampAuthorityError, match="nonce: the token carries"):  # an old answer, replayed
        ask_tsa(URL, BODY, transport=answering(200, old))


def test_a_certificate_without_timestamping_usage_is_refused(certomancer_server: Tsa) -> None:
    with pytest.raises(TimestampAuthorityError, match="timestamping_eku"):
        ask_tsa(certomancer_server.url("tsa-noeku"), BODY)


def test_nothing_is_kept_when_the_tsa_fails(home: EvidenceHome) -> None:
    cp, note = checkpoint(home)
    with pytest.raises(TimestampAuthorityError):
        stamp_checkpoint(home, cp, note, URL, transport=answering(503, b"", "text/plain"))
    assert home.ledger.kept_beside(cp) == []


# -- the request ----------------------------------------------------------------------------------------------
def test_the_query_is_sha256_of_the_note_body_with_a_nonce_and_cert_req() -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(TimestampAuthorityError):
        ask_tsa(URL, BODY, transport=answering(500, seen=seen))
    (req,) = seen
    assert req.method == "POST" and req.headers["content-type"] == "application/timestamp-query"
    q = tsp.TimeStampReq.load(req.content).native
    assert q["message_imprint"] == {"hash_algorithm": {"algorithm": "sha256", "parameters": None},
                                    "hashed_message": hashlib.sha256(BODY).digest()}
    assert q["cert_req"] is True and q["nonce"] and q["nonce"].bit_length() <= 64
    sig = base64.b64encode(bytes(68)).decode()
    note = "o\n1\n" + base64.b64encode(bytes(32)).decode() + f"\n\n— o {sig}\n— witness {sig}\n"
    assert note_body(note) == b"o\n1\n" + base64.b64encode(bytes(32)) + b"\n"  # signature lines are not stamped


# -- what holds --------------------------------------------------------------------------------------------------
def test_stamp_and_check_a_ledgers_checkpoint_with_two_tsas(home: EvidenceHome, openssl_server: Tsa,
                                                            certomancer_server: Tsa, tmp_path: Path) -> None:
    home.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/1"}, outcome="ok",
                        outcome_code="G6_E_KNOWLEDGE_FETCHED"))
    cp, note = checkpoint(home)
    a = stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")
    b = stamp_checkpoint(home, cp, note, certomancer_server.url("tsa"))
    kept = home.ledger.kept_beside(cp, KIND)
    assert [(k, n) for k, n, _ in kept] == [(KIND, "openssl"), (KIND, certomancer_server.url("tsa"))]
    assert [base64.b64decode(v) for _, _, v in kept] == [a.token, b.token]
    for stamp, tsa in ((a, openssl_server), (b, certomancer_server)):  # the outside verifiers agree
        rfc3161_client_verify(stamp.token, note_body(note), tsa.root_pem)
        assert stamp.report.gen_time is not None
        assert openssl_verify(stamp.token, note_body(note), tsa.root_pem, stamp.report.gen_time, tmp_path)[0]
    roots = load_roots(openssl_server.root_pem.read_bytes()) + load_roots(certomancer_server.root_pem.read_bytes())
    checks, passed, records = timestamp_checks(home.ledger, roots)
    assert all(c.ok for c in checks) and passed == {"fetched_at": 1}
    assert [c.detail.split(" (TSA ")[1] for c in checks] == ["openssl)", f"{certomancer_server.url('tsa')})"]
    assert all(r["ok"] and r["checkpoint_size"] == 1 for r in records)
    # one root only: the other TSA's token fails its chain
    checks, _, _ = timestamp_checks(home.ledger, load_roots(openssl_server.root_pem.read_bytes()))
    assert [c.ok for c in checks if c.check == "timestamp"] == [True, False]


def test_a_receipt_fetched_after_the_covering_gentime_is_flagged(home: EvidenceHome, openssl_server: Tsa) -> None:
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ok = home.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/1"}, outcome="ok",
                             outcome_code="G6_E_KNOWLEDGE_FETCHED"))
    bad = home.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/2"}, outcome="ok",
                              outcome_code="G6_E_KNOWLEDGE_FETCHED", fetched_at=later))
    cp, note = checkpoint(home)
    with pytest.raises(TimestampAuthorityError, match=r"^TSA openssl: genTime .* is earlier than fetched_at "
                                                      rf"{later[:19]}.* of receipt seq=2 {bad.receipt_id}"):
        stamp_checkpoint(home, cp, note, openssl_server.url("tsa"), name="openssl")  # refused when stamping
    assert home.ledger.kept_beside(cp) == []
    stamp = ask_tsa(openssl_server.url("tsa"), note_body(note), name="openssl")  # kept anyway, as g6 did before
    home.ledger.keep_beside(cp, KIND, stamp.name, stamp.value)
    uncovered = home.record(Receipt(kind="fetch", source="web", request={"url": "https://example.org/3"},
                                    outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", fetched_at=later))
    checks, passed, _ = timestamp_checks(home.ledger, load_roots(openssl_server.root_pem.read_bytes()))
    late = [c for c in checks if c.check == "fetched_at"]
    assert [(c.ok, c.seq, c.receipt_id) for c in late] == [(False, 2, bad.receipt_id)]
    assert "is later than genTime" in late[0].detail and "(TSA openssl) over checkpoint 2" in late[0].detail
    assert passed == {"fetched_at": 1} and ok.receipt_id != uncovered.receipt_id  # receipt 3: no token covers it


def test_no_token_kept_is_a_failure_not_an_empty_success(home: EvidenceHome, openssl_server: Tsa) -> None:
    checkpoint(home)
    checks, passed, records = timestamp_checks(home.ledger, load_roots(openssl_server.root_pem.read_bytes()))
    assert [(c.check, c.ok) for c in checks] == [("timestamp", False)] and not passed and not records
    assert "no RFC 3161 token" in checks[0].detail


def test_backdated_applies_verify_s_fetched_at_rule_before_a_token_is_kept() -> None:
    """The rule `stamp_checkpoint` refuses a token by is the one `fetched_at` fails at verify: a covered
    receipt dated later than genTime plus the token's accuracy; the latest such receipt is named."""
    gen = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    report = TokenReport((), gen_time=gen, margin=dt.timedelta(seconds=1))

    def at(seconds: float) -> str:
        return (gen + dt.timedelta(seconds=seconds)).isoformat()

    assert backdated(report, [(1, "r1", at(-60)), (2, "r2", at(1)), (3, "r3", "not a time")]) is None
    why = backdated(report, [(1, "r1", at(1.5)), (2, "r2", at(5)), (3, "r3", at(0))])
    assert why == ("genTime 2026-01-01T00:00:00Z (+1 s accuracy) is earlier than fetched_at 2026-01-01T00:00:05Z "
                   "of receipt seq=2 r2, which the checkpoint covers: the TSA's clock is behind, or the receipt is "
                   "dated ahead")
    exact = TokenReport((), gen_time=gen)  # no accuracy: to the microsecond
    assert backdated(exact, [(1, "r1", at(0))]) is None
    assert "of receipt seq=1 r1" in str(backdated(exact, [(1, "r1", at(0.000001))]))
    assert backdated(TokenReport(()), [(1, "r1", at(5))]) is None  # no genTime: nothing to compare
