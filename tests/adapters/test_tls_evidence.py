"""The server's own word (issue 40): every read over https keeps the certificate the server presented on
the connection the answer came on, as a blob named in the receipt's hop with the protocol, the cipher and
the address connected. Loopback TLS servers with a test PKI made here; the client trusts its root through
the policy (``FetchPolicy.ca_bundle``, ``G6_CA_BUNDLE``)."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from cryptography import x509

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net.tls import presented, trust_context
from g6.cli import cli
from g6.config import load_settings
from g6.demo.site import LocalSite, Reply
from g6.errors import ConfigError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.schemas import load
from tests.tls_pki import Issued, TestPKI

NAMES = {"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "second.test": ["127.0.0.1"]}


def resolver(host: str, port: int) -> list[str]:
    return NAMES[host]  # public-looking names, all sent to loopback


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPKI:
    return TestPKI.make(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def leaf(pki: TestPKI) -> Issued:
    return pki.leaf("secure.test")


PAGE = {"/": Reply(body=b"<p>the page, over TLS</p>"), "/robots.txt": Reply(404, b"")}


@pytest.fixture
def secure(pki: TestPKI, leaf: Issued) -> Iterator[LocalSite]:
    s = pki.site(dict(PAGE), leaf)
    yield s
    s.stop()


def policy(pki: TestPKI, **kw: object) -> FetchPolicy:
    return FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=10, ca_bundle=str(pki.ca_bundle), **kw)


def g6(home: EvidenceHome, *args: str) -> object:
    return CliRunner().invoke(cli, ["--home", str(home.root), *args], env={"G6_ALLOW_LOOPBACK": "1"})


def cert_of(home: EvidenceHome, ref: dict[str, object]) -> x509.Certificate:
    return x509.load_der_x509_certificate(home.store.read_as(ref))


def blob_file(home: EvidenceHome, ref: dict[str, object]) -> Path:
    hexd = str(ref["blake3"]).split(":", 1)[1]
    found = [p for p in Path(home.store.root).rglob(f"{hexd}*") if p.parent.parent.parent.name == "blake3"]
    assert len(found) == 1, found
    return found[0]


# -- what a read over https keeps -------------------------------------------------------------------------
def test_a_read_over_https_keeps_the_certificate_the_server_presented(home: EvidenceHome, pki: TestPKI,
                                                                      leaf: Issued, secure: LocalSite) -> None:
    with CheckedClient(policy(pki), resolver=resolver) as c:
        r = fetch(home, c, f"https://secure.test:{secure.port}/")
    assert r.outcome is Outcome.OK, r
    receipt = home.ledger.get(r.receipt_id)
    tls = receipt.hops[-1].tls
    assert tls is not None
    # the leaf, as a blob whose DER parses to the test server's very certificate
    assert tls["certificate"]["sha256"] == "sha256:" + leaf.cert.fingerprint(leaf.cert.signature_hash_algorithm
                                                                            ).hex()  # type: ignore[arg-type]
    assert cert_of(home, tls["certificate"]) == leaf.cert
    # the chain as the server sent it (leaf, intermediate), and as the client verified it (to the root)
    assert [cert_of(home, ref) for ref in tls["chain"]] == [leaf.cert, pki.intermediate.cert]
    assert [cert_of(home, ref) for ref in tls["verified_chain"]] == [leaf.cert, pki.intermediate.cert,
                                                                     pki.root.cert]
    assert tls["protocol"] == "TLSv1.3" and tls["cipher"].startswith("TLS_") and tls["cipher_bits"] >= 128
    assert (tls["address"], tls["port"], tls["server_name"]) == ("127.0.0.1", secure.port, "secure.test")
    assert receipt.hops[-1].connected_address == "127.0.0.1"
    # named in the signed receipt (the signature covers it), shown by `g6 receipt show`
    assert receipt.verify_signature(home.trusted())[0]
    shown = g6(home, "receipt", "show", r.receipt_id)
    assert shown.exit_code == 0, shown.output  # type: ignore[attr-defined]
    assert json.loads(shown.output)["hops"][-1]["tls"] == dict(tls)  # type: ignore[attr-defined]
    # g6 serve's capture page gives the hops as the receipt has them, and its schema takes them
    hops_schema = load("serve-capture.v1")["properties"]["hops"]
    jsonschema.Draft202012Validator(hops_schema).validate([h.to_json() for h in receipt.hops])


def test_the_negotiated_protocol_and_cipher_are_the_connections(home: EvidenceHome, pki: TestPKI,
                                                                leaf: Issued) -> None:
    """A server held to TLS 1.2 and one cipher: the receipt names those, not a constant."""
    s = pki.site(dict(PAGE), leaf, tls12_cipher="ECDHE-ECDSA-AES128-GCM-SHA256")
    try:
        with CheckedClient(policy(pki), resolver=resolver) as c:
            r = fetch(home, c, f"https://secure.test:{s.port}/")
    finally:
        s.stop()
    tls = home.ledger.get(r.receipt_id).hops[-1].tls
    assert tls is not None
    assert (tls["protocol"], tls["cipher"], tls["cipher_bits"]) == ("TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", 128)


def test_each_redirect_hop_keeps_its_own_servers_certificate(home: EvidenceHome, pki: TestPKI, leaf: Issued,
                                                             secure: LocalSite) -> None:
    """secure.test redirects to second.test, another server with another certificate: each hop names the
    certificate of the connection its answer came on."""
    other = pki.leaf("second.test")
    second = pki.site({"/moved": Reply(body=b"<p>moved here</p>"), "/robots.txt": Reply(404, b"")}, other)
    first = pki.site({"/": Reply(302, b"", headers=(("Location", f"https://second.test:{second.port}/moved"),)),
                      "/robots.txt": Reply(404, b"")}, leaf)
    ports = [first.port, second.port]
    try:
        with CheckedClient(policy(pki), resolver=resolver) as c:
            r = fetch(home, c, f"https://secure.test:{first.port}/")
    finally:
        first.stop()
        second.stop()
    assert r.outcome is Outcome.OK
    hops = home.ledger.get(r.receipt_id).hops
    assert [h.status for h in hops] == [302, 200]
    assert [cert_of(home, h.tls["certificate"]) for h in hops] == [leaf.cert, other.cert]  # type: ignore[index]
    assert [h.tls["port"] for h in hops] == ports  # type: ignore[index]


def test_a_pooled_connection_gives_the_certificate_of_its_handshake(home: EvidenceHome, pki: TestPKI,
                                                                    leaf: Issued) -> None:
    handshakes: list[str | None] = []
    ctx = pki.server_context(leaf)
    ctx.sni_callback = lambda sock, name, c: handshakes.append(name)  # type: ignore[assignment]
    s = LocalSite(dict(PAGE), ssl_context=ctx).start()
    try:
        with CheckedClient(policy(pki), resolver=resolver) as c:
            a = fetch(home, c, f"https://secure.test:{s.port}/")
            b = fetch(home, c, f"https://secure.test:{s.port}/")
    finally:
        s.stop()
    assert handshakes == ["secure.test"]  # the second read rode the first read's connection
    ta, tb = (home.ledger.get(x.receipt_id).hops[-1].tls for x in (a, b))
    assert ta is not None and tb is not None
    assert ta["certificate"] == tb["certificate"] and cert_of(home, tb["certificate"]) == leaf.cert
    assert tb["session_reused"] is False  # the same connection, not a resumed session


def test_plain_http_has_no_tls(home: EvidenceHome, site: object) -> None:
    s = site({"/": Reply(body=b"<p>plain</p>"), "/robots.txt": Reply(404, b"")})  # type: ignore[operator]
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/"))
    receipt = home.ledger.get(r.receipt_id)
    assert r.outcome is Outcome.OK and receipt.hops and all(h.tls is None for h in receipt.hops)
    assert all("tls" not in h for h in receipt.to_json()["hops"])


# -- TLS failures: typed, receipted, no certificate -------------------------------------------------------
def test_an_untrusted_root_is_unreachable_and_receipted(home: EvidenceHome, tmp_path: Path,
                                                        secure: LocalSite) -> None:
    stranger = TestPKI.make(tmp_path / "other-ca", "stranger")
    with CheckedClient(policy(stranger), resolver=resolver) as c:
        r = fetch(home, c, f"https://secure.test:{secure.port}/")  # robots.txt is asked first, and fails so
        page = fetch(home, c, f"https://secure.test:{secure.port}/", policy=policy(stranger, respect_robots=False))
    for x in (r, page):
        assert (x.outcome, x.reason) == (Outcome.UNREACHABLE, "tls")
        receipt = home.ledger.get(x.receipt_id)
        assert receipt.outcome == "unreachable" and receipt.detail["reason"] == "tls"
        assert all(h.tls is None for h in receipt.hops)
    assert "certificate verify failed" in home.ledger.get(page.receipt_id).detail["message"]


def test_a_name_the_certificate_does_not_cover_is_unreachable_and_receipted(home: EvidenceHome, pki: TestPKI,
                                                                             secure: LocalSite) -> None:
    with CheckedClient(policy(pki, respect_robots=False), resolver=resolver) as c:
        r = fetch(home, c, f"https://other.test:{secure.port}/")
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "tls")
    receipt = home.ledger.get(r.receipt_id)
    assert "other.test" in receipt.detail["message"] and not receipt.hops


def test_without_the_bundle_the_default_roots_refuse_the_test_ca(home: EvidenceHome, secure: LocalSite) -> None:
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0), resolver=resolver) as c:
        r = fetch(home, c, f"https://secure.test:{secure.port}/")
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "tls")


# -- the certificate blob is evidence like a body ---------------------------------------------------------
def test_ledger_verify_fails_a_deleted_certificate_blob_and_gc_keeps_it(home: EvidenceHome, pki: TestPKI,
                                                                        secure: LocalSite) -> None:
    with CheckedClient(policy(pki), resolver=resolver) as c:
        r = fetch(home, c, f"https://secure.test:{secure.port}/")
    tls = home.ledger.get(r.receipt_id).hops[-1].tls
    assert tls is not None
    ok = g6(home, "ledger", "verify")
    assert ok.exit_code == 0, ok.output  # type: ignore[attr-defined]
    # gc with no grace: the certificates are referenced, so none is collected
    gc = g6(home, "blob", "gc", "--grace", "0")
    assert gc.exit_code == 0, gc.output  # type: ignore[attr-defined]
    for ref in (tls["certificate"], *tls["chain"], *tls["verified_chain"]):
        assert home.store.has(ref["blake3"]), f"gc collected a certificate {ref}"
    blob_file(home, tls["chain"][1]).unlink()  # the intermediate the server sent
    bad = g6(home, "ledger", "verify", "--json")
    assert bad.exit_code == 1, bad.output  # type: ignore[attr-defined]
    checks = json.loads(bad.output)["checks"]  # type: ignore[attr-defined]
    assert [name for name, v in checks.items() if not v["ok"]] == ["blob"]
    failures = checks["blob"]["failures"]
    assert len(failures) == 1 and failures[0]["detail"].startswith(
        "hop 0 chain[1]: " + tls["chain"][1]["blake3"]), failures


def test_a_malformed_tls_block_fails_the_blob_check(tmp_path: Path) -> None:
    """Signed, but naming its certificates in no shape a blob check can follow: failed, not skipped.
    (Not the ``home`` fixture, which holds every receipt to the schema these break.)"""
    from g6.ledger.receipts import Hop, Receipt

    home = EvidenceHome(tmp_path / "h", fsync=False)
    home.keys.init()
    for tls in ({"protocol": "TLSv1.3"}, {"certificate": {"blake3": "x"}}, {"certificate": {}, "chain": "x"}):
        hop = Hop("https://a.test/", 200, "1.2.3.4", tls)
        home.record(Receipt(kind="fetch", source="web", request={"url": "https://a.test/"}, outcome="ok",
                            outcome_code="G6_OK_KNOWLEDGE_FETCHED", hops=(hop,)))
    bad = [c for c in home.verify().checks if c.check == "blob" and not c.ok]
    home.close()
    assert len(bad) == 3 and all("hop 0" in c.detail for c in bad), bad


# -- the trust setting ------------------------------------------------------------------------------------
def test_a_ca_bundle_that_cannot_be_used_is_a_config_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    for path, words in ((junk, "holds no PEM certificate"), (tmp_path / "absent.pem", "is not a file"),
                        (tmp_path, "is not a file")):
        with pytest.raises(ConfigError, match=words):
            trust_context(str(path))
        with pytest.raises(ConfigError, match=words):
            load_settings({"G6_HOME": str(tmp_path / "h"), "G6_CA_BUNDLE": str(path)})
    with pytest.raises(ValueError, match="ca_bundle"):
        FetchPolicy(ca_bundle="")


def test_g6_ca_bundle_reaches_the_policy_and_the_cli_fetch(home: EvidenceHome, pki: TestPKI,
                                                           secure: LocalSite) -> None:
    settings = load_settings({"G6_HOME": str(home.root), "G6_CA_BUNDLE": str(pki.ca_bundle)})
    assert settings.fetch_policy().ca_bundle == str(pki.ca_bundle)
    # the CLI reads it too: 127.0.0.1 asked by address, so the certificate needs that address in its names
    by_ip = pki.leaf("127.0.0.1")
    by_ip_cert = by_ip.cert
    s = LocalSite(dict(PAGE), ssl_context=pki.server_context(by_ip)).start()
    try:
        r = CliRunner().invoke(cli, ["--home", str(home.root), "fetch", s.url("/"), "--json"],
                               env={"G6_ALLOW_LOOPBACK": "1", "G6_CA_BUNDLE": str(pki.ca_bundle),
                                    "G6_HOST_PAUSE": "0"})
    finally:
        s.stop()
    assert r.exit_code == 0, r.output
    receipt = home.ledger.get(json.loads(r.output)["receipt_id"])
    assert cert_of(home, receipt.hops[-1].tls["certificate"]) == by_ip_cert  # type: ignore[index]


# -- what each Python gives ------------------------------------------------------------------------------
def test_the_chain_methods_are_used_as_each_python_gives_them(pki: TestPKI, leaf: Issued,
                                                              secure: LocalSite) -> None:
    """On 3.10 to 3.12 the ``_ssl`` object's chain methods return certificate objects; 3.13's public ones
    return DER bytes; a TLS object without them (the Python-level ``ssl.SSLSocket`` before 3.13) gives
    the leaf alone, and the chains are then unknown (None), not empty."""
    import socket

    ctx = trust_context(str(pki.ca_bundle))
    with socket.create_connection(("127.0.0.1", secure.port)) as raw, \
            ctx.wrap_socket(raw, server_hostname="secure.test") as tls_sock:

        class Stream:
            def __init__(self, obj: object) -> None:
                self.obj = obj

            def get_extra_info(self, what: str) -> object:
                return {"ssl_object": self.obj, "server_addr": tls_sock.getpeername()}.get(what)

        class Response:
            def __init__(self, obj: object) -> None:
                self.extensions = {"network_stream": Stream(obj)}

        c_level = presented(Response(tls_sock._sslobj))  # type: ignore[attr-defined]
        assert c_level is not None and c_level.chain == (leaf.der, pki.intermediate.der)
        assert c_level.verified_chain == (leaf.der, pki.intermediate.der, pki.root.der)

        class Public313:  # the 3.13 public methods: the same calls, DER bytes out
            def __getattr__(self, name: str) -> object:
                return getattr(tls_sock, name)

            def get_unverified_chain(self) -> list[bytes]:
                return [ssl.PEM_cert_to_DER_cert(c.public_bytes()) for c in tls_sock._sslobj.get_unverified_chain()]

        assert presented(Response(Public313())).chain == (leaf.der, pki.intermediate.der)  # type: ignore[union-attr]
        python_level = presented(Response(tls_sock))
        if not hasattr(ssl.SSLSocket, "get_unverified_chain"):  # before 3.13
            assert python_level is not None and python_level.certificate == leaf.der
            assert python_level.chain is None and python_level.verified_chain is None


def test_a_batch_on_several_processes_keeps_each_hosts_certificate(pki: TestPKI, tmp_path: Path) -> None:
    """``g6 fetch --input`` forks workers that write the certificates into the store; the parent signs the
    receipts that name them. Two hosts (two loopback addresses), each with its own certificate."""
    import os
    import subprocess
    import sys

    leaves = [pki.leaf(h) for h in ("127.0.0.1", "127.0.0.2")]
    sites = [LocalSite(dict(PAGE), host=h, ssl_context=pki.server_context(lf)).start()
             for h, lf in zip(("127.0.0.1", "127.0.0.2"), leaves, strict=True)]
    try:
        urls = [s.url(p) for s in sites for p in ("/", "/?again")]
        env = {**os.environ, "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_CA_BUNDLE": str(pki.ca_bundle)}
        p = subprocess.run([sys.executable, "-m", "g6", "--home", str(tmp_path / "h"), "fetch", "--input", "-",
                            "--json", "--processes", "2"], input="\n".join(urls), capture_output=True, text=True,
                           env=env, timeout=300)
    finally:
        for s in sites:
            s.stop()
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    with EvidenceHome(tmp_path / "h") as ev:
        for line in lines:
            hop = ev.ledger.get(line["receipt_id"]).hops[-1]
            assert hop.tls is not None and hop.tls["address"] == hop.connected_address
            want = leaves[0 if hop.connected_address == "127.0.0.1" else 1].cert
            assert x509.load_der_x509_certificate(ev.store.read_as(hop.tls["certificate"])) == want
        assert ev.verify().ok
    assert len(lines) == 4
