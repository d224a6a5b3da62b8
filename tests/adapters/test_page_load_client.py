"""A rendered page's load has a gate and a pacer of its own (``CheckedClient.page_load``): a browser's requests at
once per host and no pause between them, while every check (the same policy, robots.txt cache, pools, secrets) stays
the client's; the client's own reads keep one at a time per host."""

from __future__ import annotations

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.net.pacing import HostGate


def test_a_gate_of_n_lets_n_through_per_host_and_no_more() -> None:
    gate = HostGate(3)
    with gate.hold("a.example", 0) as one, gate.hold("a.example", 0) as two, gate.hold("a.example", 0) as three:
        assert (one, two, three) == (True, True, True)
        with gate.hold("a.example", 0) as four, gate.hold("b.example", 0) as other:
            assert (four, other) == (False, True)
    with gate.hold("a.example", 0) as again:
        assert again  # all given back
    with pytest.raises(ValueError):
        HostGate(0)


def test_the_default_gate_is_one_at_a_time() -> None:
    gate = HostGate()
    with gate.hold("a.example", 0) as one, gate.hold("a.example", 0) as two:
        assert (one, two) == (True, False)


def test_a_page_load_shares_every_check_but_not_the_pacing() -> None:
    client = CheckedClient(FetchPolicy(allow_loopback=True, host_pause=5.0), secrets=["s3cret"])
    with client:
        page = client.page_load(6)
        assert page.policy is client.policy and page.secrets == client.secrets
        assert page._robots is client._robots and page._pools is client._pools and page._resolver is client._resolver
        assert page._gate is not client._gate and page._pacer is not client._pacer
        # the page's requests: six at once per host, no pause; the client's own reads: one at a time
        with page._gate.hold("h", 0) as a, page._gate.hold("h", 0) as b:
            assert a and b
        with client._gate.hold("h", 0) as a, client._gate.hold("h", 0) as b:
            assert a and not b
        assert page._pacer.wait("web", "h", 0.0) == 0.0 and page._pacer.wait("web", "h", 0.0) == 0.0
