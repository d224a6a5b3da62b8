"""Attacks on the per-host connection pools and the one shared TLS context (2d309d5): a connection verified for one
name never serves another on the same address and port (the shared context, the per-key pools, TLS session
resumption); the shared context still refuses an untrusted, a wrong-name and an expired certificate after other
transports used it; a CA bundle gets pools of its own; eviction never closes a pool under a request still reading its
body, and bounds the connections left open; every way a fetch ends gives its lease back; a forked child never uses
the parent's connections. Loopback servers only: public-looking names go to 127.0.0.1 through an injected resolver."""

from __future__ import annotations

import datetime
import os
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net import deadline as deadline_mod
from g6.adapters.net.pools import HostPools
from g6.demo.site import LocalSite, Reply
from g6.store import BlobStore
from tests.tls_pki import Issued, TestPKI

NAMES = {"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "third.test": ["127.0.0.1"]}
PAGE = {"/": Reply(body=b"<p>the page</p>"), "/robots.txt": Reply(404, b"")}
WAIT = 30.0  # the most any event here is waited for (a hung test fails instead of hanging)


def resolver(host: str, port: int) -> list[str]:
    return NAMES.get(host) or (["127.0.0.1"] if host.startswith("h") and host.endswith(".test") else [])


def named(s: LocalSite, i: int, path: str = "/") -> str:
    """``s``'s URL under a name of its own (h<i>.test): the per-host gate and pools are by name, and every LocalSite
    is 127.0.0.1, so without names all of them would be one host read one request at a time."""
    return f"http://h{i}.test:{s.port}{path}"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPKI:
    return TestPKI.make(tmp_path_factory.mktemp("pki"))


def _policy(pki: TestPKI | None, **kw: object) -> FetchPolicy:
    base: dict[str, object] = dict(allow_loopback=True, host_pause=0, total_timeout=30, respect_robots=False)
    if pki is not None:
        base["ca_bundle"] = str(pki.ca_bundle)
    return FetchPolicy(**{**base, **kw})  # type: ignore[arg-type]


def _expired_leaf(pki: TestPKI, name: str) -> Issued:
    """A leaf for ``name`` from the test intermediate, valid for an hour that ended a day ago."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(pki.intermediate.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=2)).not_valid_after(now - datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(pki.intermediate.key, hashes.SHA256()))
    return Issued(cert, key)


@pytest.fixture
def shared_default_trusts(pki: TestPKI, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """The process's one default TLS context, made as ``default_tls_context`` makes it (httpx's default: certifi's
    roots, names checked) with the test root added, so loopback servers can be verified through the very shared
    context every transport without ``verify=`` uses (the real one trusts no test CA)."""
    ctx = httpx.create_ssl_context(verify=True, trust_env=False)
    ctx.load_verify_locations(cafile=str(pki.ca_bundle))
    monkeypatch.setattr(deadline_mod, "_DEFAULT_TLS", [ctx])
    return ctx


def _lent(pools: HostPools) -> dict[object, int]:
    return {k: h.lent for k, h in pools._held.items()}


def _until(cond: Callable[[], bool], seconds: float = WAIT) -> bool:
    tick = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if cond():
            return True
        tick.wait(0.05)
    return cond()


# -- one name's verified connection never serves another name ------------------------------------------------------
@pytest.mark.parametrize("through", ["ca_bundle", "shared_default"])
@pytest.mark.parametrize("tls12", [False, True], ids=["tls13_tickets", "tls12_sessions"])
def test_a_name_the_certificate_does_not_cover_fails_after_a_covered_name_read_that_address(
        request: pytest.FixtureRequest, pki: TestPKI, tmp_path: Path, through: str, tls12: bool) -> None:
    """The server's certificate covers secure.test only and it hands out session tickets (TLS 1.3) or session ids and
    tickets (TLS 1.2). After a read of secure.test, other.test on the same address and port must fail TLS: not ride
    the idle connection, not resume secure.test's session (a resumed handshake checks no certificate) through the
    shared context."""
    if through == "shared_default":
        request.getfixturevalue("shared_default_trusts")
    handshakes: list[str | None] = []
    ctx = pki.server_context(pki.leaf("secure.test"),
                             **({"tls12_cipher": "ECDHE-ECDSA-AES128-GCM-SHA256"} if tls12 else {}))
    ctx.sni_callback = lambda sock, name, c: handshakes.append(name)  # type: ignore[assignment]
    s = LocalSite(dict(PAGE), ssl_context=ctx).start()
    store = BlobStore(tmp_path / "blobs")
    pol = _policy(pki if through == "ca_bundle" else None)
    port = s.port
    try:
        with CheckedClient(pol, resolver=resolver) as c:
            ok = c.fetch(f"https://secure.test:{s.port}/", store)
            again = c.fetch(f"https://secure.test:{s.port}/", store)
            wrong = c.fetch(f"https://other.test:{s.port}/", store)
        with CheckedClient(pol, resolver=resolver) as c2:  # another client: the shared context is the process's
            wrong2 = c2.fetch(f"https://other.test:{s.port}/", store)
    finally:
        s.stop()
    assert ok.outcome is Outcome.OK and again.outcome is Outcome.OK, (ok, again)
    for w in (wrong, wrong2):
        assert (w.outcome, w.reason) == (Outcome.UNREACHABLE, "tls"), w
        assert "other.test" in str(w.detail.get("message")), w.detail
    assert all(q.headers["host"] != f"other.test:{port}" for q in s.requests)
    assert handshakes.count("other.test") == 2  # each wrong-name read made its own handshake, with its own SNI


@pytest.mark.parametrize("through", ["ca_bundle", "shared_default"])
def test_two_names_one_certificate_each_read_makes_its_own_full_handshake(
        request: pytest.FixtureRequest, pki: TestPKI, tmp_path: Path, through: str) -> None:
    """A certificate covering both names: the second name's read is a new connection with its own SNI and a full
    handshake (no session of the first name resumed), and its hop names its own server name."""
    if through == "shared_default":
        request.getfixturevalue("shared_default_trusts")
    handshakes: list[str | None] = []
    ctx = pki.server_context(pki.leaf("secure.test", "other.test"))
    ctx.sni_callback = lambda sock, name, c: handshakes.append(name)  # type: ignore[assignment]
    s = LocalSite(dict(PAGE), ssl_context=ctx).start()
    store = BlobStore(tmp_path / "blobs")
    port = s.port
    try:
        with CheckedClient(_policy(pki if through == "ca_bundle" else None), resolver=resolver) as c:
            a = c.fetch(f"https://secure.test:{s.port}/", store)
            b = c.fetch(f"https://other.test:{s.port}/", store)
            a2 = c.fetch(f"https://secure.test:{s.port}/", store)
    finally:
        s.stop()
    assert [r.outcome for r in (a, b, a2)] == [Outcome.OK] * 3, (a, b, a2)
    assert handshakes == ["secure.test", "other.test"]  # a2 rode a's connection, b had one of its own
    ta, tb, ta2 = (r.hops[-1].tls for r in (a, b, a2))
    assert ta is not None and tb is not None and ta2 is not None
    assert (ta["server_name"], tb["server_name"], ta2["server_name"]) == ("secure.test", "other.test", "secure.test")
    assert tb["session_reused"] is False
    assert [q.headers["host"] for q in s.requests] == [f"{n}:{port}" for n in ("secure.test", "other.test",
                                                                                 "secure.test")]


# -- the shared default context still refuses ----------------------------------------------------------------------
def test_the_shared_default_context_refuses_after_other_transports_used_it(
        shared_default_trusts: ssl.SSLContext, pki: TestPKI, tmp_path: Path) -> None:
    """Through the one shared context: a good read, then an untrusted root, a wrong name, an expired certificate, each
    refused (tls), from this client and from another one; the context is still the one made, still verifying."""
    stranger = TestPKI.make(tmp_path / "stranger", "stranger")
    good = pki.site(dict(PAGE), pki.leaf("secure.test"))
    untrusted = stranger.site(dict(PAGE), stranger.leaf("secure.test"))
    expired = pki.site(dict(PAGE), _expired_leaf(pki, "secure.test"))
    store = BlobStore(tmp_path / "blobs")
    try:
        with CheckedClient(_policy(None), resolver=resolver) as c, \
                CheckedClient(_policy(None), resolver=resolver) as c2:
            assert c.fetch(f"https://secure.test:{good.port}/", store).outcome is Outcome.OK
            for client in (c, c2):
                refused = {
                    "untrusted": client.fetch(f"https://secure.test:{untrusted.port}/", store),
                    "wrong_name": client.fetch(f"https://third.test:{good.port}/", store),
                    "expired": client.fetch(f"https://secure.test:{expired.port}/", store),
                }
                for why, r in refused.items():
                    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "tls"), (why, r)
                assert "expired" in str(refused["expired"].detail["message"])
                assert "third.test" in str(refused["wrong_name"].detail["message"])
                assert "unable to get local issuer" in str(refused["untrusted"].detail["message"])
            assert c2.fetch(f"https://secure.test:{good.port}/", store).outcome is Outcome.OK
    finally:
        for s in (good, untrusted, expired):
            s.stop()
    assert deadline_mod.default_tls_context() is shared_default_trusts
    assert shared_default_trusts.verify_mode == ssl.CERT_REQUIRED and shared_default_trusts.check_hostname


def test_the_real_shared_default_context_refuses_a_test_ca_after_a_bundle_read_the_same_server(
        pki: TestPKI, tmp_path: Path) -> None:
    """The process's real default context (certifi's roots) is not touched by a CA bundle's reads: a host read with
    the bundle, then without it, is refused; and a bundle's pool is its own (the read without the bundle never rides
    the bundle's verified idle connection)."""
    handshakes: list[str | None] = []
    ctx = pki.server_context(pki.leaf("secure.test"))
    ctx.sni_callback = lambda sock, name, c: handshakes.append(name)  # type: ignore[assignment]
    s = LocalSite(dict(PAGE), ssl_context=ctx).start()
    store = BlobStore(tmp_path / "blobs")
    stranger = TestPKI.make(tmp_path / "stranger", "stranger")
    url = f"https://secure.test:{s.port}/"
    try:
        with CheckedClient(_policy(pki), resolver=resolver) as c:
            assert c.fetch(url, store).outcome is Outcome.OK  # its connection now idle in the bundle's pool
            plain = c.fetch(url, store, policy=_policy(None))
            other_bundle = c.fetch(url, store, policy=_policy(stranger))
            back = c.fetch(url, store)
    finally:
        s.stop()
    for r in (plain, other_bundle):
        assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "tls"), r
        assert "certificate verify failed" in str(r.detail["message"])
    assert back.outcome is Outcome.OK
    assert len(s.requests) == 2  # the refused reads sent nothing: no request rode the bundle's connection
    assert len(handshakes) == 3  # the bundle's read, then one handshake each for the two refused reads
    real = deadline_mod.default_tls_context()
    assert real.verify_mode == ssl.CERT_REQUIRED and real.check_hostname


# -- eviction under load -------------------------------------------------------------------------------------------
@pytest.fixture
def sites() -> Iterator[list[LocalSite]]:
    made = [LocalSite({"/": Reply(body=f"<p>host {i}</p>".encode() * 50)}).start() for i in range(5)]
    yield made
    for s in made:
        s.stop()


def test_a_pool_reading_a_slow_body_is_never_closed_by_eviction(sites: list[LocalSite], tmp_path: Path) -> None:
    """Two pools kept. One host streams a chunked body and stops half way until the test lets it go on; meanwhile
    other threads read four other hosts twice each (evicting all they can). The slow read ends whole."""
    started, go_on = threading.Event(), threading.Event()

    def body() -> Iterator[bytes]:
        yield b"a" * 4000
        started.set()
        go_on.wait(WAIT)
        yield b"b" * 4000

    slow = LocalSite({"/slow": Reply(chunks=body)}).start()
    pools = HostPools(2)
    store = BlobStore(tmp_path / "blobs")
    got: dict[str, object] = {}
    try:
        with CheckedClient(_policy(None, total_timeout=60), pools=pools, resolver=resolver) as c:
            t = threading.Thread(target=lambda: got.setdefault("slow", c.fetch(named(slow, 9, "/slow"), store)))
            t.start()
            assert started.wait(WAIT)
            others: list[object] = []
            threads = [threading.Thread(target=lambda i=i: others.append(c.fetch(named(sites[i], i), store)))
                       for i in [0, 1, 2, 3, 4, 4, 3, 2, 1, 0]]
            for th in threads:
                th.start()
            for th in threads:
                th.join(WAIT)
            assert not go_on.is_set() and t.is_alive()  # the slow read is still in its body
            assert pools.closed_idle >= 3  # eviction did run while the slow read held its pool
            assert ("http", "h9.test", slow.port) in pools._held  # and the slow read's pool is still held
            go_on.set()
            t.join(WAIT)
            r = got["slow"]
            assert r.outcome is Outcome.OK and r.byte_count == 8000, r  # type: ignore[attr-defined]
            assert [o.outcome for o in others] == [Outcome.OK] * 10  # type: ignore[attr-defined]
            assert set(_lent(pools).values()) <= {0} and len(pools) <= 2
    finally:
        go_on.set()
        slow.stop()


def test_many_threads_over_more_hosts_than_keep_all_succeed_and_leave_keep_connections(
        sites: list[LocalSite], tmp_path: Path) -> None:
    """Eight threads, five hosts, two pools kept, each thread reading every host three times in its own order: every
    read is ok with the whole body, nothing stays lent, and at most two connections stay open on the servers'
    side once the client settles (then none after it closes)."""
    pools = HostPools(2)
    store = BlobStore(tmp_path / "blobs")
    results: list[object] = []
    errors: list[BaseException] = []
    with CheckedClient(_policy(None), pools=pools, resolver=resolver) as c:
        def run(i: int) -> None:
            try:
                order = [(j + i) % 5 for j in range(5)]
                for _ in range(3):
                    for j in order:
                        results.append(c.fetch(named(sites[j], j), store))
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert not errors and len(results) == 8 * 3 * 5
        bad = [r for r in results if r.outcome is not Outcome.OK]  # type: ignore[attr-defined]
        assert not bad, bad[:3]
        assert {r.byte_count for r in results} == {len(b"<p>host 0</p>") * 50}  # type: ignore[attr-defined]
        assert set(_lent(pools).values()) <= {0} and len(pools) <= 2, _lent(pools)
        assert _until(lambda: sum(len(s._open) for s in sites) <= 2), [len(s._open) for s in sites]
    assert _until(lambda: sum(len(s._open) for s in sites) == 0), [len(s._open) for s in sites]


# -- every way a fetch ends gives the lease back -------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_every_ending_gives_the_pool_back(site: Callable[..., LocalSite], pki: TestPKI, tmp_path: Path) -> None:
    """Redirects between hosts, robots.txt reads, a body cut by the server, a body over the caps, a refused
    connection, a TLS failure, a total_timeout cut mid-body (the clock moved past the deadline by the server between
    two chunks, the body then stalled): after each, every held pool has nothing lent, and the client still reads."""
    clock = Clock()
    half_sent, release = threading.Event(), threading.Event()

    def stalled() -> Iterator[bytes]:
        yield b"x" * 2000
        clock.now += 10_000  # the fetch's deadline has now passed
        half_sent.set()
        yield b"y" * 10  # read by the client after the clock moved: the deadline check after it stops the read
        release.wait(WAIT)
        yield b"z"

    b = site({"/to": Reply(body=b"<p>landed</p>"), "/robots.txt": Reply(200, b"User-agent: *\nAllow: /\n")})
    a = site({"/from": Reply(302, b"", headers=(("Location", b.url("/to")),)),
              "/robots.txt": Reply(200, b"User-agent: *\nDisallow: /private\n"),
              "/private": Reply(body=b"no"),
              "/cut": Reply(raw=b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nonly a part"),
              "/big": Reply(body=b"z" * 5000),
              "/stall": Reply(chunks=stalled)})
    gone = site({})
    gone_url = gone.url("/")
    gone.stop()
    tls_site = pki.site(dict(PAGE), pki.leaf("secure.test"))
    pools = HostPools(8)
    store = BlobStore(tmp_path / "blobs")
    try:
        with CheckedClient(_policy(None, respect_robots=True), pools=pools, resolver=resolver, clock=clock) as c:
            steps: list[tuple[str, object, Outcome, str]] = [
                ("redirect", c.fetch(a.url("/from"), store), Outcome.OK, ""),
                ("robots_disallows", c.fetch(a.url("/private"), store), Outcome.ROBOTS_DISALLOWED,
                 "robots_txt_disallows"),
                ("cut_mid_body", c.fetch(a.url("/cut"), store), Outcome.HTTP_ERROR, None),  # type: ignore[list-item]
                ("over_cap", c.fetch(a.url("/big"), store, policy=_policy(None, hard_cap=100)), Outcome.TOO_LARGE,
                 "declared_length_over_cap"),
                ("truncated", c.fetch(a.url("/big"), store, policy=_policy(None, max_bytes=100)), Outcome.OK, ""),
                ("refused", c.fetch(gone_url, store), Outcome.UNREACHABLE, None),  # type: ignore[list-item]
                ("tls", c.fetch(f"https://other.test:{tls_site.port}/", store, policy=_policy(pki)),
                 Outcome.UNREACHABLE, "tls"),
                ("total_timeout", c.fetch(a.url("/stall"), store), Outcome.UNREACHABLE, "total_timeout"),
            ]
            for name, r, outcome, reason in steps:
                assert r.outcome is outcome, (name, r)  # type: ignore[attr-defined]
                if reason is not None:
                    assert r.reason == reason, (name, r)  # type: ignore[attr-defined]
                assert set(_lent(pools).values()) <= {0}, (name, _lent(pools))
            assert half_sent.is_set()
            assert any(k[1] == "127.0.0.1" and k[0] == "http" for k in pools._held)
            again = c.fetch(a.url("/big"), store)
            assert again.outcome is Outcome.OK and again.byte_count == 5000
            assert set(_lent(pools).values()) <= {0}
    finally:
        release.set()
        tls_site.stop()


def test_a_ca_bundle_that_cannot_be_read_lends_nothing(tmp_path: Path, pki: TestPKI) -> None:
    """Making the pool fails (the CA bundle is not a file): the error is the caller's, nothing is held or lent, and the
    next read with a good bundle works."""
    from g6.errors import ConfigError

    tls_site = pki.site(dict(PAGE), pki.leaf("secure.test"))
    pools = HostPools(4)
    store = BlobStore(tmp_path / "blobs")
    try:
        with CheckedClient(_policy(None), pools=pools, resolver=resolver) as c:
            with pytest.raises(ConfigError):
                c.fetch(f"https://secure.test:{tls_site.port}/", store, policy=_policy(None, ca_bundle=str(tmp_path)))
            assert len(pools) == 0
            assert c.fetch(f"https://secure.test:{tls_site.port}/", store, policy=_policy(pki)).outcome is Outcome.OK
            assert set(_lent(pools).values()) == {0}
    finally:
        tls_site.stop()


# -- after a fork --------------------------------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_never_uses_or_closes_the_parents_connections(pki: TestPKI, tmp_path: Path) -> None:
    """The parent reads a host (its connection idle in the host's pool) and forks. The child forgets the pools and
    reads the same host: over a new connection (a handshake of its own), and the parent's next read rides the
    parent's first connection still (no new handshake): the child neither used nor closed it."""
    handshakes: list[str | None] = []
    ctx = pki.server_context(pki.leaf("secure.test"))
    ctx.sni_callback = lambda sock, name, c: handshakes.append(name)  # type: ignore[assignment]
    s = LocalSite(dict(PAGE), ssl_context=ctx).start()
    store = BlobStore(tmp_path / "blobs")
    url = f"https://secure.test:{s.port}/"
    try:
        with CheckedClient(_policy(pki), resolver=resolver) as c:
            assert c.fetch(url, store).outcome is Outcome.OK
            assert handshakes == ["secure.test"] and len(s._open) == 1
            pid = os.fork()
            if pid == 0:  # the child: exit code 0 only when its read was ok over a connection of its own
                code = 3
                try:
                    c.forget_connections()
                    code = 4 if len(c._pools) else 5
                    if len(c._pools) == 0:
                        r = c.fetch(url, store)
                        code = 0 if r.outcome is Outcome.OK and len(c._pools) == 1 else 6
                        c.close()  # closes only the child's own pool
                finally:
                    os._exit(code)
            waited = 0.0
            status = None
            while waited < WAIT * 2:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                threading.Event().wait(0.05)
                waited += 0.05
            else:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                pytest.fail("the forked child did not end")
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            assert handshakes == ["secure.test", "secure.test"]  # the child's read had its own connection
            assert c.fetch(url, store).outcome is Outcome.OK
            assert handshakes == ["secure.test", "secure.test"]  # the parent's connection, reused intact
            assert len(s.requests) == 3
    finally:
        s.stop()


# -- a host whose address changes between reads --------------------------------------------------------------------
def _sites_on_one_port(n: int) -> list[LocalSite]:
    """``n`` sites on 127.0.0.1, 127.0.0.2, ... all on the port the first one was given (another first port is tried
    when one of the others is taken: no port is assumed free)."""
    for _ in range(20):
        first = LocalSite(dict(PAGE)).start()
        made = [first]
        try:
            for i in range(2, n + 1):
                made.append(LocalSite(dict(PAGE), host=f"127.0.0.{i}", port_wanted=first.port).start())
            return made
        except OSError:
            for s in made:
                s.stop()
    pytest.skip("no port free on three loopback addresses at once")


def test_a_host_whose_dns_answer_rotates_keeps_at_most_one_idle_connection(tmp_path: Path) -> None:
    """One host name whose resolver answers a different first address each read (round-robin DNS, a CDN): the host's
    pool connects to each address in turn. Each pool holds at most one idle connection (pools.py), so with one pool
    kept, at most one connection may stay open after the reads, not one per address the host ever had."""
    sites = _sites_on_one_port(3)
    turn = [0]

    def rotating(host: str, port: int) -> list[str]:
        turn[0] += 1
        return [f"127.0.0.{(turn[0] - 1) % 3 + 1}"]

    store = BlobStore(tmp_path / "blobs")
    pools = HostPools(1)
    try:
        with CheckedClient(_policy(None), pools=pools, resolver=rotating) as c:
            for _ in range(3):
                r = c.fetch(f"http://rotating.test:{sites[0].port}/", store)
                assert r.outcome is Outcome.OK, r
            assert [len(s.requests) for s in sites] == [1, 1, 1]  # each address was read once
            assert len(pools) == 1
            assert _until(lambda: sum(len(s._open) for s in sites) <= 1), [len(s._open) for s in sites]
    finally:
        for s in sites:
            s.stop()
