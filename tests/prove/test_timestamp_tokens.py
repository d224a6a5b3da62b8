"""RFC 3161 tokens from two real TSAs on loopback, checked offline by ``g6.ledger.transparency.timestamp`` and, for
every token, by rfc3161-client and ``openssl ts -verify -attime <genTime>`` as well. Failures first."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from pathlib import Path

import httpx
import pytest
from asn1crypto import algos, cms, core, tsp
from asn1crypto import x509 as ax509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from rfc3161_client import VerificationError

from g6.ledger.transparency.timestamp import (
    REQUIRED,
    TimestampTokenError,
    TokenReport,
    load_roots,
    make_request,
    read_token,
    token_from_reply,
    verify_token,
)
from tests.prove._tsa import Tsa, openssl_verify, rfc3161_client_verify

BODY = b"example.com/g6\n5\nfKo0Xb2JKmZFTWxlEuo8PqPw0+whvj/C4jdXBf049nI=\n"
OTHER = b"example.com/g6\n6\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"


def ask(url: str, body: bytes = BODY, headers: dict[str, str] | None = None) -> tuple[bytes, int]:
    """POST a fresh query over ``body`` to a loopback TSA: (its reply, the query's nonce)."""
    query, nonce = make_request(body)
    r = httpx.post(url, content=query, headers={"Content-Type": "application/timestamp-query", **(headers or {})},
                   timeout=30)
    assert r.status_code == 200, r.text[:200]
    assert r.headers["content-type"] == "application/timestamp-reply"
    return r.content, nonce


def roots(tsa: Tsa) -> list:
    return load_roots(tsa.root_pem.read_bytes())


def failed(report: TokenReport) -> set[str]:
    return {c.check for c in report.failed()}


def outside(token: bytes, body: bytes, root: Path, gen_time: dt.datetime, tmp_path: Path,
            nonce: int | None = None) -> tuple[bool, bool]:
    """(rfc3161-client holds it, openssl ts -verify -attime holds it)."""
    try:
        rfc3161_client_verify(token, body, root, nonce)
        by_lib = True
    except VerificationError:
        by_lib = False
    return by_lib, openssl_verify(token, body, root, gen_time, tmp_path)[0]


def reissue(token: bytes, key_path: Path, *, ess: str) -> bytes:
    """The token's TSTInfo signed again by the TSA's own key, its ESS attribute left out ("none") or
    naming other bytes ("wrong"): what a TSA that breaks RFC 3161 s2.4.1 would send."""
    sd = cms.ContentInfo.load(token)["content"]
    cert = sd["certificates"][0].chosen
    tst = sd["encap_content_info"]["content"].contents

    def attr(t: str, v: object) -> cms.CMSAttribute:
        return cms.CMSAttribute({"type": cms.CMSAttributeType(t), "values": (v,)})

    attrs = [attr("content_type", "tst_info"), attr("message_digest", hashlib.sha256(tst).digest())]
    if ess == "wrong":
        attrs.append(attr("signing_certificate_v2", tsp.SigningCertificateV2({"certs": [tsp.ESSCertIDv2({
            "hash_algorithm": {"algorithm": "sha256"}, "cert_hash": hashlib.sha256(b"not the cert").digest()})]})))
    signed = cms.CMSAttributes(attrs)
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    si = cms.SignerInfo({
        "version": "v1",
        "sid": cms.SignerIdentifier({"issuer_and_serial_number": cms.IssuerAndSerialNumber(
            {"issuer": cert.issuer, "serial_number": cert.serial_number})}),
        "digest_algorithm": algos.DigestAlgorithm({"algorithm": "sha256"}),
        "signed_attrs": signed,
        "signature_algorithm": algos.SignedDigestAlgorithm({"algorithm": "sha256_ecdsa"}),
        "signature": key.sign(signed.dump(), ec.ECDSA(hashes.SHA256())),
    })
    out = cms.SignedData({
        "version": "v3", "digest_algorithms": [algos.DigestAlgorithm({"algorithm": "sha256"})],
        "encap_content_info": {"content_type": "tst_info", "content": core.ParsableOctetString(tst)},
        "certificates": [cert], "signer_infos": [si]})
    return cms.ContentInfo({"content_type": "signed_data", "content": out}).dump()


# -- failures ---------------------------------------------------------------------------------------------
def test_no_token_fails_every_check_not_an_empty_success() -> None:
    for junk in (b"", b"\x30\x03\x02\x01\x00", b"not a token at all", b"\x30" * 50):
        r = verify_token(junk, BODY, [])
        assert not r.ok and r.existed_before is None
        assert {c.check for c in r.checks} >= set(REQUIRED)  # each check listed, none passed by default
        assert not any(c.ok for c in r.checks)


def test_no_root_pinned_fails_the_chain(openssl_server: Tsa) -> None:
    reply, nonce = ask(openssl_server.url("tsa"))
    r = verify_token(reply, BODY, [], nonce=nonce)
    assert not r.ok and failed(r) == {"chain"} and "no TSA root pinned" in r.summary()


def test_rejection_status_is_a_failure(openssl_server: Tsa) -> None:
    reply, _ = ask(openssl_server.url("reject"))  # that section accepts only SHA-384/512: it rejects our query
    with pytest.raises(TimestampTokenError, match=r"status rejection \(bad_alg\)"):
        token_from_reply(reply)
    r = verify_token(reply, BODY, roots(openssl_server))
    assert not r.ok and "status" in failed(r) and r.summary().startswith("status: status rejection")


@pytest.mark.parametrize("server", ["openssl_server", "certomancer_server"])
def test_altered_note_and_another_notes_token_fail_the_imprint(server: str, request: pytest.FixtureRequest,
                                                                 tmp_path: Path) -> None:
    tsa: Tsa = request.getfixturevalue(server)
    reply, nonce = ask(tsa.url("tsa"))
    token = token_from_reply(reply)
    altered = BODY.replace(b"\n5\n", b"\n4\n")
    for body in (altered, BODY + b"extension line\n"):
        r = verify_token(token, body, roots(tsa), nonce=nonce)
        assert failed(r) == {"imprint"} and not r.ok
        assert r.gen_time is not None and outside(token, body, tsa.root_pem, r.gen_time, tmp_path) == (False, False)
    other, _ = ask(tsa.url("tsa"), OTHER)  # a good token, for another checkpoint
    r = verify_token(other, BODY, roots(tsa))
    assert failed(r) == {"imprint"} and "other bytes" in r.summary()


def test_wrong_root_fails_the_chain(openssl_server: Tsa, certomancer_server: Tsa, tmp_path: Path) -> None:
    for tsa, wrong in ((openssl_server, certomancer_server), (certomancer_server, openssl_server)):
        reply, nonce = ask(tsa.url("tsa"))
        token = token_from_reply(reply)
        r = verify_token(token, BODY, roots(wrong), nonce=nonce)
        assert failed(r) == {"chain"}
        assert r.gen_time is not None and outside(token, BODY, wrong.root_pem, r.gen_time, tmp_path) == (False, False)


def test_a_certificate_without_timestamping_usage_fails(certomancer_server: Tsa, tmp_path: Path) -> None:
    reply, nonce = ask(certomancer_server.url("tsa-noeku"))
    token = token_from_reply(reply)
    r = verify_token(token, BODY, roots(certomancer_server), nonce=nonce)
    assert failed(r) == {"timestamping_eku"} and "no extendedKeyUsage" in r.summary()
    assert r.gen_time is not None
    assert outside(token, BODY, certomancer_server.root_pem, r.gen_time, tmp_path) == (False, False)


@pytest.mark.parametrize("ess", ["none", "wrong"])
def test_missing_or_wrong_ess_attribute_fails(openssl_server: Tsa, ess: str, tmp_path: Path) -> None:
    reply, nonce = ask(openssl_server.url("tsa"))
    token = reissue(token_from_reply(reply), openssl_server.root_pem.parent / "tsa.key", ess=ess)
    r = verify_token(token, BODY, roots(openssl_server), nonce=nonce)
    assert failed(r) == {"ess_signing_certificate"}
    assert ("no ESS" if ess == "none" else "another certificate") in r.summary()
    # rfc3161-client does not check the attribute (so g6 does); openssl does
    assert r.gen_time is not None
    assert outside(token, BODY, openssl_server.root_pem, r.gen_time, tmp_path) == (True, False)


def test_gentime_outside_the_certificates_validity_fails(certomancer_server: Tsa, tmp_path: Path) -> None:
    # the TSA certificate is valid from 2020; certomancer dates this token 2019
    reply, nonce = ask(certomancer_server.url("tsa"), headers={"X-Certomancer-Fake-Time": "2019-06-01T00:00:00+0000"})
    token = token_from_reply(reply)
    r = verify_token(token, BODY, roots(certomancer_server), nonce=nonce)
    assert failed(r) == {"gentime_in_validity", "chain"}
    assert r.gen_time == dt.datetime(2019, 6, 1, tzinfo=dt.UTC) and r.existed_before is None
    assert outside(token, BODY, certomancer_server.root_pem, r.gen_time, tmp_path) == (False, False)


def test_another_nonce_and_a_broken_signature_fail(openssl_server: Tsa) -> None:
    reply, nonce = ask(openssl_server.url("tsa"))
    token = token_from_reply(reply)
    assert failed(verify_token(token, BODY, roots(openssl_server), nonce=nonce + 2)) == {"nonce"}
    sd = cms.ContentInfo.load(token)
    sig = bytearray(sd["content"]["signer_infos"][0]["signature"].native)
    i = len(sig) // 2
    sig[i] ^= 0x01
    broken = token.replace(bytes(sd["content"]["signer_infos"][0]["signature"].native), bytes(sig))
    assert broken != token
    r = verify_token(broken, BODY, roots(openssl_server), nonce=nonce)
    assert failed(r) == {"cms_signature"}


def test_der_ending_in_whitespace_bytes_is_read_as_it_is(openssl_server: Tsa) -> None:
    """A DER reply or token may end in 0x0a or 0x20 (a signature byte): it must not be stripped like text.
    The TSA's own signed attributes are signed again with its key until the signature ends in one."""
    reply, nonce = ask(openssl_server.url("tsa"))
    ci = cms.ContentInfo.load(token_from_reply(reply))
    si = ci["content"]["signer_infos"][0]
    key = serialization.load_pem_private_key((openssl_server.root_pem.parent / "tsa.key").read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    signed = bytearray(si["signed_attrs"].dump())
    signed[0] = 0x31
    for _ in range(5000):  # a byte in 256/6: the chance of never is about 1e-52
        si["signature"] = key.sign(bytes(signed), ec.ECDSA(hashes.SHA256()))
        token = ci.dump(force=True)
        if token[-1:].isspace():
            break
    assert token[-1:].isspace()
    reply = tsp.TimeStampResp({"status": {"status": "granted"}, "time_stamp_token": cms.ContentInfo.load(token)}
                              ).dump()
    for der in (token, reply):
        r = verify_token(der, BODY, roots(openssl_server), nonce=nonce)
        assert r.ok, r.summary()


# -- what holds ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("server", ["openssl_server", "certomancer_server"])
def test_a_good_token_holds_for_g6_rfc3161_client_and_openssl(server: str, request: pytest.FixtureRequest,
                                                               tmp_path: Path) -> None:
    tsa: Tsa = request.getfixturevalue(server)
    reply, nonce = ask(tsa.url("tsa"))
    token = token_from_reply(reply)
    for given in (reply, token):  # a reply or the bare token
        r = verify_token(given, BODY, roots(tsa), nonce=nonce)
        assert r.ok, r.summary()
        assert {c.check for c in r.checks} == {*REQUIRED, "nonce"}
    assert r.gen_time is not None and r.existed_before == r.gen_time
    assert abs(dt.datetime.now(dt.UTC) - r.gen_time) < dt.timedelta(hours=1)
    assert r.summary().startswith("existed before ") and r.nonce == nonce
    assert outside(token, BODY, tsa.root_pem, r.gen_time, tmp_path, nonce) == (True, True)
    assert read_token(token) == token and read_token(base64.b64encode(token)) == token


def test_openssl_tokens_carry_only_the_signer_certificate(openssl_server: Tsa) -> None:
    token = token_from_reply(ask(openssl_server.url("tsa"))[0])
    certs = cms.ContentInfo.load(token)["content"]["certificates"]
    assert len(certs) == 1 and isinstance(certs[0].chosen, ax509.Certificate)
    assert certs[0].chosen.subject.native["common_name"] == "g6 test openssl TSA"
