"""The address classifier as a pure function: no traffic is sent by these tests."""

from __future__ import annotations

import pytest

from g6.adapters.net.addresses import check_address, classify

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


# One case per row of the IANA special-purpose registries (adapters/net/registry/*.csv): the block as the
# registry writes it -> (an address in it, its category). A non-public row wins over a reachable row
# inside it, so the anycast rows inside 192.0.0.0/24 and 2001::/23 are refused too.
ROW_CASES = {
    4: {
        "0.0.0.0/8": ("0.200.0.1", "unspecified"), "0.0.0.0/32": ("0.0.0.0", "unspecified"),
        "10.0.0.0/8": ("10.255.0.1", "private"), "100.64.0.0/10": ("100.100.1.1", "cgnat"),
        "127.0.0.0/8": ("127.3.2.1", "loopback"), "169.254.0.0/16": ("169.254.0.1", "link_local"),
        "172.16.0.0/12": ("172.20.1.1", "private"), "192.0.0.0/24": ("192.0.0.200", "reserved"),
        "192.0.0.0/29": ("192.0.0.1", "reserved"), "192.0.0.8/32": ("192.0.0.8", "reserved"),
        "192.0.0.9/32": ("192.0.0.9", "reserved"), "192.0.0.10/32": ("192.0.0.10", "reserved"),
        "192.0.0.170/32": ("192.0.0.170", "reserved"), "192.0.0.171/32": ("192.0.0.171", "reserved"),
        "192.0.2.0/24": ("192.0.2.77", "documentation"), "192.31.196.0/24": ("192.31.196.1", "public"),
        "192.52.193.0/24": ("192.52.193.1", "public"), "192.88.99.0/24": ("192.88.99.1", "reserved"),
        "192.88.99.2/32": ("192.88.99.2", "reserved"), "192.168.0.0/16": ("192.168.77.1", "private"),
        "192.175.48.0/24": ("192.175.48.1", "public"), "198.18.0.0/15": ("198.19.255.1", "benchmarking"),
        "198.51.100.0/24": ("198.51.100.1", "documentation"), "203.0.113.0/24": ("203.0.113.250", "documentation"),
        "240.0.0.0/4": ("250.1.2.3", "reserved"), "255.255.255.255/32": ("255.255.255.255", "broadcast"),
    },
    6: {
        "::1/128": ("::1", "loopback"), "::/128": ("::", "unspecified"),
        "::ffff:0:0/96": ("::ffff:192.168.0.1", "ipv4_mapped:private"),
        "64:ff9b::/96": ("64:ff9b::c000:201", "nat64:documentation"), "64:ff9b:1::/48": ("64:ff9b:1::5", "nat64_local"),
        "100::/64": ("100::9", "discard"), "100:0:0:1::/64": ("100:0:0:1::1", "dummy"),
        "2001::/23": ("2001:100::1", "reserved"), "2001::/32": ("2001:0:4136:e378:8000:63bf:3fff:fdd2",
                                                                "teredo:documentation"),
        "2001:1::1/128": ("2001:1::1", "reserved"), "2001:1::2/128": ("2001:1::2", "reserved"),
        "2001:1::3/128": ("2001:1::3", "reserved"), "2001:2::/48": ("2001:2::1", "benchmarking"),
        "2001:3::/32": ("2001:3::1", "reserved"), "2001:4:112::/48": ("2001:4:112::1", "reserved"),
        "2001:10::/28": ("2001:10::1", "reserved"), "2001:20::/28": ("2001:20::1", "reserved"),
        "2001:30::/28": ("2001:30::1", "reserved"), "2001:db8::/32": ("2001:db8:ffff::1", "documentation"),
        "2002::/16": ("2002:c0a8:101::1", "6to4:private"), "2620:4f:8000::/48": ("2620:4f:8000::1", "public"),
        "3fff::/20": ("3fff:fff::1", "documentation"), "5f00::/16": ("5f00:1:2::3", "srv6_sid"),
        "fc00::/7": ("fdff::1", "unique_local"), "fe80::/10": ("febf::1", "link_local"),
    },
}


def _registry_blocks(version: int) -> set[str]:
    """The blocks as written in the data file itself (read with csv here, not through the classifier)."""
    import csv
    import io
    from importlib.resources import files

    from g6.adapters.net.addresses import REGISTRY_FILES

    text = (files("g6.adapters.net") / "registry" / REGISTRY_FILES[version]).read_text(encoding="utf-8")
    rows = csv.DictReader(io.StringIO(text))
    return {b.split("[")[0].strip() for rec in rows for b in rec["Address Block"].split(",")}


@pytest.mark.parametrize("version", [4, 6])
def test_every_registry_row_has_a_case(version: int) -> None:
    blocks = _registry_blocks(version)
    assert len(blocks) >= 24
    assert blocks == set(ROW_CASES[version]), (blocks ^ set(ROW_CASES[version]))
    import ipaddress

    for block, (address, category) in ROW_CASES[version].items():
        assert ipaddress.ip_address(address) in ipaddress.ip_network(block), (block, address)
        assert classify(address) == category, (block, address, classify(address))


def test_registry_rows_not_reachable_are_never_public() -> None:
    from g6.adapters.net.addresses import registry

    for version in (4, 6):
        for row in registry(version):
            if not row.reachable and row.block.num_addresses > 1:
                for ip in (row.block.network_address + 1, row.block.broadcast_address - 1):
                    assert not check_address(ip).allowed, (row.raw_block, ip)


@pytest.mark.parametrize(("address", "category"), [
    ("3fff::1", "documentation"), ("3fff:0fff:ffff::1", "documentation"), ("5f00::1", "srv6_sid"),
    ("100:0:0:1::1", "dummy"), ("4000::1", "not_global_unicast"), ("2620:4f:8000::53", "public"),
    ("3fff:1000::1", "public"),  # just past 3fff::/20
])
def test_recent_registry_rows_and_space_outside_global_unicast(address: str, category: str) -> None:
    # Python 3.11's ipaddress calls 3fff::/20 and 5f00::/16 global: the registry data decides here
    assert classify(address) == category
