"""A test PKI made at test time with ``cryptography``: a root CA, an intermediate, and leaf certificates
for loopback TLS servers (``g6.demo.site.LocalSite`` with an ``ssl.SSLContext``). The checked client is
told to trust the root through the policy (``FetchPolicy.ca_bundle``), never through the environment."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from g6.demo.site import LocalSite, Route


@dataclass(frozen=True)
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def der(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.DER)

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _issue(subject: str, issuer: Issued | None, *, ca: bool, names: tuple[str, ...] = ()) -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    now = datetime.datetime.now(datetime.UTC)
    b = (x509.CertificateBuilder().subject_name(name)
         .issuer_name(issuer.cert.subject if issuer else name).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if issuer is not None:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
                            critical=False)
    if ca:
        b = b.add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                          data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                          crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
    else:
        b = b.add_extension(x509.SubjectAlternativeName([_san(n) for n in names]), critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    return Issued(b.sign(issuer.key if issuer else key, hashes.SHA256()), key)


@dataclass(frozen=True)
class TestPKI:
    __test__ = False  # not a test class

    root: Issued
    intermediate: Issued
    folder: Path

    @classmethod
    def make(cls, folder: Path, label: str = "g6 test") -> TestPKI:
        folder.mkdir(parents=True, exist_ok=True)
        root = _issue(f"{label} root CA", None, ca=True)
        pki = cls(root, _issue(f"{label} intermediate CA", root, ca=True), folder)
        pki.ca_bundle.write_bytes(root.pem)
        return pki

    @property
    def ca_bundle(self) -> Path:
        """The root, alone, in a PEM file: what the client is told to trust."""
        return self.folder / "root.pem"

    def leaf(self, *names: str) -> Issued:
        return _issue(names[0], self.intermediate, ca=False, names=names)

    def server_context(self, leaf: Issued, *, tls12_cipher: str | None = None) -> ssl.SSLContext:
        """A server context presenting ``leaf`` and the intermediate (the chain a server sends). With
        ``tls12_cipher``, TLS 1.2 and that one cipher only, so a test can tell what was negotiated."""
        tag = leaf.cert.serial_number
        chain, key = self.folder / f"chain-{tag}.pem", self.folder / f"key-{tag}.pem"
        chain.write_bytes(leaf.pem + self.intermediate.pem)
        key.write_bytes(leaf.key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(chain, key)
        if tls12_cipher is not None:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            ctx.set_ciphers(tls12_cipher)
        return ctx

    def site(self, routes: dict[str, Route], leaf: Issued, **kw: str) -> LocalSite:
        return LocalSite(routes, ssl_context=self.server_context(leaf, **kw)).start()
