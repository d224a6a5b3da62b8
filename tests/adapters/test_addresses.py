"""The address classifier as a pure function: no traffic is sent by these tests."""

from __future__ import annotations

import pytest

from g6.adapters.addresses import check_address, classify

CASES = [
    # IPv4
    ("8.8.8.8", "public"),
    ("93.184.216.34", "public"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("172.32.0.1", "public"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link_local"),
    ("100.64.0.1", "cgnat"),
    ("100.127.255.255", "cgnat"),
    ("100.128.0.1", "public"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("192.0.0.8", "reserved"),
    # IPv6
    ("2001:4860:4860::8888", "public"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link_local"),
    ("fc00::1", "unique_local"),
    ("fd12:3456::1", "unique_local"),
    ("fec0::1", "site_local"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("::ffff:127.0.0.1", "ipv4_mapped:loopback"),
    ("::ffff:10.0.0.1", "ipv4_mapped:private"),
    ("::ffff:169.254.169.254", "ipv4_mapped:link_local"),
    ("::ffff:8.8.8.8", "public"),
    ("::127.0.0.1", "ipv4_compatible"),
    ("::8.8.8.8", "ipv4_compatible"),
    ("2002:7f00:1::", "6to4:loopback"),
    ("2002:0a00:0001::1", "6to4:private"),
    ("2002:a9fe:a9fe::1", "6to4:link_local"),
    ("2002:0808:0808::1", "public"),
    ("64:ff9b::7f00:1", "nat64:loopback"),
    ("64:ff9b::a9fe:a9fe", "nat64:link_local"),
    ("64:ff9b::808:808", "public"),
    ("64:ff9b:1::1", "nat64_local"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo:documentation"),  # RFC 4380 example, client 192.0.2.45
    ("2001:0:808:808:8000:63bf:f7f7:f7f7", "teredo"),  # public server and client: still a tunnel
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "teredo:loopback"),  # client 127.0.0.1 (inverted)
    ("100::1", "discard"),
]


@pytest.mark.parametrize(("address", "category"), CASES)
def test_classify(address: str, category: str) -> None:
    assert classify(address) == category


@pytest.mark.parametrize(("address", "category"), CASES)
def test_only_public_is_allowed_by_default(address: str, category: str) -> None:
    v = check_address(address)
    assert v.allowed is (category == "public")
    assert v.category == category


def test_loopback_setting_allows_plain_loopback_only() -> None:
    assert check_address("127.0.0.1", allow_loopback=True).allowed
    assert check_address("127.8.9.10", allow_loopback=True).allowed
    assert check_address("::1", allow_loopback=True).allowed
    for embedded in ("::ffff:127.0.0.1", "2002:7f00:1::", "64:ff9b::7f00:1", "::127.0.0.1"):
        assert not check_address(embedded, allow_loopback=True).allowed
    for other in ("10.0.0.1", "169.254.169.254", "0.0.0.0", "fe80::1"):
        assert not check_address(other, allow_loopback=True).allowed


def test_scoped_and_garbage() -> None:
    assert not check_address("fe80::1%eth0").allowed
    v = check_address("not-an-ip")
    assert not v.allowed and v.category == "not_an_ip_address"
