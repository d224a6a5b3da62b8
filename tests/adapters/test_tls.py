"""HTTPS through the checked client: it connects to the checked IP, while SNI, the certificate check
and the Host header carry the name. A loopback TLS server with a certificate made here."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import Callable
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome


def make_cert(tmp: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_https_keeps_sni_and_host_while_connecting_to_the_checked_ip(home: EvidenceHome, tmp_path: Path,
                                                                      site: Callable[..., LocalSite]) -> None:
    cert, key = make_cert(tmp_path, "secure.test")
    seen_sni: list[str | None] = []
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.sni_callback = lambda sock, name, ctx: seen_sni.append(name)  # type: ignore[assignment]
    s = LocalSite({"/": Reply(body=b"<p>over TLS, to the checked address</p>"), "/robots.txt": Reply(404, b"")},
                  ssl_context=server_ctx).start()
    try:
        client_ctx = ssl.create_default_context(cafile=str(cert))
        resolver = {"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0),
                           transport_factory=lambda: httpx.HTTPTransport(verify=client_ctx, trust_env=False),
                           resolver=lambda h, p: resolver[h]) as c:
            ok = fetch(home, c, f"https://secure.test:{s.port}/")
            wrong_name = fetch(home, c, f"https://other.test:{s.port}/")
        assert ok.outcome is Outcome.OK and "over TLS" in ok.documents[0].text
        assert seen_sni[0] == "secure.test"
        assert s.requests[-1].headers["host"] == f"secure.test:{s.port}"
        assert home.ledger.get(ok.receipt_id).hops[-1].connected_address == "127.0.0.1"
        # the certificate is for secure.test: asking for other.test at the same address must fail TLS,
        # and must not ride on the connection already verified for secure.test
        assert wrong_name.outcome is Outcome.UNREACHABLE and wrong_name.reason == "tls"
        assert all(q.headers["host"] != f"other.test:{s.port}" for q in s.requests)
    finally:
        s.stop()
