"""The add-checkpoint client against answers a real witness may give but litewitness will not on demand
(an injected httpx transport): each refusal a typed error naming the witness, its URL and the status; the
request body byte for byte; a reply past the bound; a 200 whose cosignature does not hold."""

from __future__ import annotations

import base64
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from g6.errors import (
    WitnessBadRequest,
    WitnessConflict,
    WitnessError,
    WitnessInconsistent,
    WitnessRefusedSignature,
    WitnessUnknownLog,
    WitnessUnreachable,
)
from g6.home import EvidenceHome
from g6.ledger.keys import SigningKey
from g6.ledger.note import Checkpoint, parse_note
from g6.ledger.receipts import Receipt
from g6.ledger.transparency.cosignature import CosignerKey, sign_cosignature
from g6.ledger.transparency.policy import PolicyWitness, parse_policy
from g6.prove.proofs import checkpoint
from g6.prove.witness import (
    COSIGNATURE,
    MAX_REPLY,
    add_checkpoint_body,
    new_client,
    submit,
    witness_checkpoint,
    witness_checks,
)

URL = "http://witness.test/prefix"
Handler = Callable[[httpx.Request], httpx.Response]


class FakeWitness:
    """Answers as a tlog witness would, or as told; records what it was sent."""

    def __init__(self) -> None:
        self.key = SigningKey.generate()
        self.cosigner = CosignerKey("w.example", self.key.public)
        self.sent: list[bytes] = []
        self.answers: list[Handler] = []

    def witness(self) -> PolicyWitness:
        return PolicyWitness("w", self.cosigner, URL)

    def cosign(self, request: httpx.Request) -> httpx.Response:
        note = request.content.decode().split("\n\n", 1)[1]
        line = sign_cosignature(parse_note(note)[0], "w.example", self.key, int(time.time()))
        return httpx.Response(200, text="— other.example AAAAAAAAAAAA\n" + line + "\n")

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert str(request.url) == URL + "/add-checkpoint" and request.method == "POST"
        self.sent.append(request.content)
        return (self.answers.pop(0) if self.answers else self.cosign)(request)


@pytest.fixture
def ev(tmp_path: Path) -> Iterator[EvidenceHome]:
    h = EvidenceHome(tmp_path / "home", fsync=False)
    h.keys.init()
    for i in range(5):
        h.ledger.append(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED"), h.signing_key())
    yield h
    h.close()


def _submit(ev: EvidenceHome, fake: FakeWitness, **kw: object) -> object:
    cp, note = checkpoint(ev)
    with new_client(httpx.MockTransport(fake)) as client:
        return submit(ev.ledger, cp, note, fake.witness(), client, **kw)


def _with(handler: Handler) -> FakeWitness:
    fake = FakeWitness()
    fake.answers = [handler]
    return fake


def status(code: int, body: bytes = b"", ctype: str = "text/plain") -> Handler:
    return lambda _r: httpx.Response(code, content=body, headers={"Content-Type": ctype})


# -- refusals ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("answer, cls, code, words", [
    (status(404), WitnessUnknownLog, 404, "does not know this log's origin"),
    (status(403, b"unknown log\n"), WitnessUnknownLog, 403, "does not know this log's origin"),
    (status(403, b"invalid signature\n"), WitnessRefusedSignature, 403, "refused the checkpoint's signature"),
    (status(422), WitnessInconsistent, 422, "a fork"),
    (status(400, b"bad \x1b[31m body"), WitnessBadRequest, 400, "refused the request (400: 'bad  [31m body')"),
    (status(500), WitnessBadRequest, 500, "refused the request (500)"),
    (status(409, b"5\n", "text/plain"), WitnessBadRequest, 409, "answered 409 without its size"),
    (status(409, b"five\n", "text/x.tlog.size"), WitnessBadRequest, 409, "a size that is not one"),
    (status(409, b"9\n", "text/x.tlog.size"), WitnessConflict, 409, "past this checkpoint's 5"),
    (status(200, b"no lines\n"), WitnessBadRequest, 200, "no cosignature lines"),
    (status(200, b""), WitnessBadRequest, 200, "no cosignature by its key"),
    (status(200, b"\xff\n"), WitnessBadRequest, 200, "no cosignature lines"),
    (status(200, b"\xe2\x80\x94 other.example AAAAAAAAAAAA\n"), WitnessBadRequest, 200, "no cosignature by its key"),
    (status(200, b"x" * (MAX_REPLY + 1)), WitnessUnreachable, 200, f"more than {MAX_REPLY} bytes"),
])
def test_each_refusal_is_typed_and_names_the_witness(ev: EvidenceHome, answer: Handler, cls: type, code: int,
                                                     words: str) -> None:
    fake = FakeWitness()
    fake.answers = [answer]
    with pytest.raises(cls) as e:
        _submit(ev, fake)
    assert isinstance(e.value, WitnessError) and e.value.status == code and e.value.witness == "w"
    assert str(e.value).startswith(f"witness w ({URL}) ") and words in str(e.value)
    assert ev.ledger.all_kept_beside(COSIGNATURE) == []


def test_a_second_409_is_a_conflict_not_a_loop(ev: EvidenceHome) -> None:
    fake = FakeWitness()
    fake.answers = [status(409, b"2\n", "text/x.tlog.size"), status(409, b"3\n", "text/x.tlog.size")]
    with pytest.raises(WitnessConflict, match="409 again after the retry from size 2"):
        _submit(ev, fake)
    assert len(fake.sent) == 2


def test_a_tampered_cosignature_in_the_reply_is_refused(ev: EvidenceHome) -> None:
    fake = FakeWitness()

    def tampered(r: httpx.Request) -> httpx.Response:
        line = fake.cosign(r).text.split("\n")[1]
        name, b64 = line.rsplit(" ", 1)
        raw = bytearray(base64.b64decode(b64))
        raw[-1] ^= 1
        return httpx.Response(200, text=f"{name} {base64.b64encode(bytes(raw)).decode()}\n")

    fake.answers = [tampered]
    with pytest.raises(WitnessRefusedSignature, match="returned a cosignature that does not hold"):
        _submit(ev, fake)


def test_unreachable_is_typed(ev: EvidenceHome) -> None:
    def down(_r: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(WitnessUnreachable, match=r"witness w \(http://witness.test/prefix\) could not be reached"):
        _submit(ev, _with(down))


def test_fail_closed_and_a_tampered_kept_cosignature_fails_verify(ev: EvidenceHome, tmp_path: Path) -> None:
    fake = FakeWitness()
    policy = parse_policy(f"witness w {fake.cosigner.vkey()}\nquorum w\n")
    checks = witness_checks(ev.ledger, policy)
    assert [c.ok for c in checks] == [False] and "no checkpoint to hold to" in checks[0].detail
    cp, note = checkpoint(ev)
    assert not witness_checks(ev.ledger, policy)[0].ok  # a checkpoint with no cosignature kept
    with new_client(httpx.MockTransport(fake)) as client:
        assert submit(ev.ledger, cp, note, fake.witness(), client).ok
    assert [c.ok for c in witness_checks(ev.ledger, policy)] == [True]
    ev.ledger.append(Receipt(kind="fetch", source="web", request={"url": "https://example.org/x"}, outcome="ok",
                             outcome_code="G6_E_KNOWLEDGE_FETCHED"), ev.signing_key())
    checkpoint(ev)  # a newer checkpoint, not cosigned: the latest decides
    checks = witness_checks(ev.ledger, policy)
    assert [c.ok for c in checks] == [True, False] and "(the latest)" in checks[1].detail
    db = sqlite3.connect(ev.ledger.path)
    (value,) = db.execute("SELECT value FROM checkpoint_extras").fetchone()
    db.execute("UPDATE checkpoint_extras SET value = ?", (value[:-6] + ("AAAA==" if value[-6:] != "AAAA==" else
                                                                           "BBBB=="),))
    db.commit()
    db.close()
    checks = witness_checks(ev.ledger, policy)
    assert not checks[0].ok and "does not verify" in checks[0].detail


# -- what holds -----------------------------------------------------------------------------------------------
def test_the_request_body_is_the_spec_s(ev: EvidenceHome) -> None:
    fake = FakeWitness()
    cp, note = checkpoint(ev)
    assert add_checkpoint_body(0, [], note) == b"old 0\n\n" + note.encode()
    fake.answers = [status(409, b"2\n", "text/x.tlog.size; charset=utf-8")]
    with new_client(httpx.MockTransport(fake)) as client:
        sub = submit(ev.ledger, cp, note, fake.witness(), client)
    assert sub.ok and sub.retried and sub.old == 2
    proof = ev.ledger.tree().consistency_proof(2, 5)
    assert fake.sent == [b"old 0\n\n" + note.encode(),
                         b"old 2\n" + b"".join(base64.b64encode(h) + b"\n" for h in proof) + b"\n" + note.encode()]
    assert ev.ledger.kept_beside(Checkpoint.parse(parse_note(note)[0]), COSIGNATURE)[0][1] == "w.example"


def test_the_next_submission_starts_from_the_size_last_cosigned(ev: EvidenceHome) -> None:
    fake = FakeWitness()
    assert _submit(ev, fake).old == 0
    ev.ledger.append(Receipt(kind="fetch", source="web", request={"url": "https://example.org/y"}, outcome="ok",
                             outcome_code="G6_E_KNOWLEDGE_FETCHED"), ev.signing_key())
    sub = _submit(ev, fake)
    assert sub.old == 5 and not sub.retried and fake.sent[-1].startswith(b"old 5\n")


def test_witness_checkpoint_with_a_policy_submits_to_witnesses_with_urls(ev: EvidenceHome) -> None:
    fake, offline = FakeWitness(), FakeWitness()
    policy = parse_policy(f"witness w {fake.cosigner.vkey()} {URL}\nwitness o {offline.cosigner.vkey()}\n"
                          "group g any w o\nquorum g\n")
    cp, note = checkpoint(ev)
    report = witness_checkpoint(ev, cp, note, policy, transport=httpx.MockTransport(fake))
    assert report.ok and [s.witness for s in report.submissions] == ["w"] and report.verdict.signed == ("w",)
    assert report.cosigned_note.startswith(note) and report.cosigned_note.count("\n— ") == 2
