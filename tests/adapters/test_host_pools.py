"""Connection pools, one per host, at most ``keep`` held (``g6.adapters.net.pools``): a batch over many hosts keeps
a bounded number of idle connections open, a pool lent to a request is never closed under it, a host's next
request reuses its connection, and every transport shares one TLS context that still verifies."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator

import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.adapters.net.deadline import deadline_transport, default_tls_context
from g6.adapters.net.pools import HostPools
from g6.demo.site import LocalSite, Reply
from g6.store import BlobStore


class Recorded(httpx.MockTransport):
    """A transport that notes when it is closed (the pools' own bookkeeping is what these tests read)."""

    def __init__(self, name: str, closed: list[str]) -> None:
        super().__init__(lambda r: httpx.Response(200))
        self.name, self._closed = name, closed

    def close(self) -> None:
        self._closed.append(self.name)


def test_pools_past_keep_are_closed_least_recently_lent_first() -> None:
    closed: list[str] = []
    pools = HostPools(keep=2)
    for name in ("a", "b", "c", "a", "d"):
        with pools.lease(name, lambda n=name: Recorded(n, closed)) as t:
            assert t.name == name  # type: ignore[attr-defined]
    # c pushed out a (then the least recent), a came back and pushed out b, d pushed out c
    assert closed == ["a", "b", "c"]
    assert len(pools) == 2
    pools.close()
    assert sorted(closed[3:]) == ["a", "d"]


def test_a_pool_lent_to_a_request_is_never_closed_under_it() -> None:
    closed: list[str] = []
    pools = HostPools(keep=1)
    with pools.lease("held", lambda: Recorded("held", closed)):
        for name in ("x", "y", "z"):
            with pools.lease(name, lambda n=name: Recorded(n, closed)):
                pass
        # the lent one fills the one place: each other is closed once given back, the lent one never
        assert closed == ["x", "y", "z"]
    assert closed == ["x", "y", "z"] and len(pools) == 1  # given back, it is the one kept


def test_the_same_key_is_one_pool_even_when_made_by_two_threads_at_once() -> None:
    closed: list[str] = []
    pools = HostPools(keep=4)
    gate = threading.Barrier(2)
    got: list[object] = []

    def make() -> Recorded:
        gate.wait(10)  # both threads are inside make() before either is held: one of the two is dropped
        return Recorded("k", closed)

    def lend() -> None:
        with pools.lease("k", make) as t:
            got.append(t)

    threads = [threading.Thread(target=lend) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(20)
    assert len(got) == 2 and got[0] is got[1]
    assert closed == ["k"] and len(pools) == 1  # the second made was closed at once, never lent


def test_keep_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        HostPools(keep=0)


@pytest.fixture
def sites() -> Iterator[list[LocalSite]]:
    made = [LocalSite({"/": Reply(body=f"<p>host {i}</p>".encode()), "/robots.txt": Reply(404, b"")}).start()
            for i in range(5)]
    yield made
    for s in made:
        s.stop()


def _open_connections(sites: list[LocalSite]) -> list[int]:
    return [len(s._open) for s in sites]


def _until(cond: object, seconds: float = 20.0) -> bool:
    """``cond()`` true within ``seconds`` (a server notices a closed connection when its thread next reads)."""
    done = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if cond():  # type: ignore[operator]
            return True
        done.wait(0.05)
    return bool(cond())  # type: ignore[operator]


def test_a_batch_over_more_hosts_than_keep_leaves_at_most_keep_connections_open(tmp_path: object,
                                                                              sites: list[LocalSite]) -> None:
    """Over real sockets: five hosts read once each with two pools kept, then two reads of the last host. At most
    two connections stay open (the two hosts read last), and the last host's second read came on its first
    connection."""
    store = BlobStore(tmp_path)  # type: ignore[arg-type]
    pools = HostPools(keep=2)
    policy = FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=10)
    with CheckedClient(policy, pools=pools) as c:
        for s in sites:
            assert c.fetch(s.url("/"), store, robots=False).outcome is Outcome.OK
        assert _until(lambda: sum(_open_connections(sites)) <= 2), _open_connections(sites)
        assert _until(lambda: _open_connections(sites) == [0, 0, 0, 1, 1]), _open_connections(sites)
        before = len(sites[-1].requests)
        assert c.fetch(sites[-1].url("/"), store, robots=False).outcome is Outcome.OK
        assert len(sites[-1].requests) == before + 1 and _open_connections(sites)[-1] == 1
        assert pools.closed_idle == 3
    assert _until(lambda: sum(_open_connections(sites)) == 0), _open_connections(sites)  # closed with the client


def test_every_transport_shares_one_tls_context_that_still_verifies() -> None:
    """Each transport reading certifi's roots again cost ~13 ms of CPU per host a batch met; one context is made
    per process. It is httpx's default: certificates required, host names checked."""
    a, b = deadline_transport(), deadline_transport()
    try:
        ctx = default_tls_context()
        assert a._pool._ssl_context is ctx and b._pool._ssl_context is ctx
        assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
        assert ctx.cert_store_stats()["x509_ca"] > 50  # certifi's roots, not an empty store
    finally:
        a.close()
        b.close()
    own = ssl.create_default_context()
    t = deadline_transport(verify=own)
    try:
        assert t._pool._ssl_context is own  # a CA bundle's context (FetchPolicy.ca_bundle) is used as given
    finally:
        t.close()
