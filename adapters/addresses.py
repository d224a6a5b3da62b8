"""Which IP addresses a fetch may connect to: a pure function, tested as one.

Only globally routable unicast addresses pass. IPv6 forms that embed an IPv4 address
(IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002::/16``, NAT64 ``64:ff9b::/96``) are judged by the
address they embed; the deprecated or local-use ones (IPv4-compatible ``::a.b.c.d``, local NAT64
``64:ff9b:1::/48``, Teredo tunnel clients) are refused outright. Loopback passes only when the
operator allows it, and then only plain loopback (127.0.0.0/8, ::1), never an embedding of it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4_RULES: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "cgnat"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link_local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_V6_RULES: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "nat64_local"),
    ("100::/64", "discard"),
    ("2001:db8::/32", "documentation"),
    ("2001:10::/28", "reserved"),
    ("2001:20::/28", "reserved"),
    ("fc00::/7", "unique_local"),
    ("fe80::/10", "link_local"),
    ("fec0::/10", "site_local"),
    ("ff00::/8", "multicast"),
)
_V4_NETS = tuple((ipaddress.IPv4Network(n), why) for n, why in _V4_RULES)
_V6_NETS = tuple((ipaddress.IPv6Network(n), why) for n, why in _V6_RULES)
_V4_COMPAT = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


@dataclass(frozen=True, slots=True)
class AddressVerdict:
    address: str
    allowed: bool
    category: str  # "public", or why not: "loopback", "private", "ipv4_mapped:loopback"…

    @property
    def reason(self) -> str:
        return f"{self.address} is {self.category}"


def classify(address: str | IPAddress) -> str:
    """``"public"`` or the category that makes ``address`` non-public."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv4Address):
        for net, why in _V4_NETS:
            if ip in net:
                return why
        return "public" if ip.is_global else "reserved"
    if ip.scope_id:
        return "scoped"
    if ip.ipv4_mapped is not None:
        inner = classify(ip.ipv4_mapped)
        return "public" if inner == "public" else f"ipv4_mapped:{inner}"
    for net, why in _V6_NETS:
        if ip in net:
            return why
    if ip in _V4_COMPAT:
        return "ipv4_compatible"
    if ip in _NAT64:
        inner = classify(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return "public" if inner == "public" else f"nat64:{inner}"
    if ip.sixtofour is not None:
        inner = classify(ip.sixtofour)
        return "public" if inner == "public" else f"6to4:{inner}"
    if ip.teredo is not None:
        server, client = ip.teredo
        for part in (server, client):
            inner = classify(part)
            if inner != "public":
                return f"teredo:{inner}"
        return "teredo"  # a tunnel client, not a server address: refused even with public parts
    return "public" if ip.is_global else "reserved"


def check_address(address: str | IPAddress, *, allow_loopback: bool = False) -> AddressVerdict:
    """Decide whether a connection to ``address`` may be made."""
    text = str(address)
    try:
        category = classify(address)
    except ValueError:
        return AddressVerdict(text, False, "not_an_ip_address")
    allowed = category == "public" or (allow_loopback and category == "loopback")
    return AddressVerdict(text, allowed, category)
