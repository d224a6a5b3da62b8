"""Which IP addresses a fetch may connect to: a pure function, tested as one.

Non-public ranges come from the IANA IPv4 and IPv6 Special-Purpose Address Registries, kept as
data in ``adapters/net/registry/`` with the registry's date and provenance (``PROVENANCE.md``), not
from this Python version's ``ipaddress.is_global``. A row whose *Globally Reachable* column is not
``True`` makes its block non-public, and wins over a reachable row inside it.

On top of the data, rules the registries leave to others: IPv6 forms that embed an IPv4 address
(IPv4-mapped ``::ffff:a.b.c.d``, 6to4 ``2002::/16``, NAT64 ``64:ff9b::/96``) are judged by the
address they embed; Teredo tunnel clients (``2001::/32``) and the deprecated IPv4-compatible
``::a.b.c.d`` are refused outright; multicast (IPv4 ``224.0.0.0/4``, IPv6 ``ff00::/8``), deprecated
site-local ``fec0::/10`` and every IPv6 address outside global unicast ``2000::/3`` are non-public.
Loopback passes only when the operator allows it, and then only plain loopback (127.0.0.0/8, ::1),
never an embedding of it.
"""

from __future__ import annotations

import csv
import io
import ipaddress
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
REGISTRY_DATE = "2026-07-18"  # when IANA's CSV files were downloaded (newest row: 2025-04)
REGISTRY_FILES = {4: "iana-ipv4-special-registry-1.csv", 6: "iana-ipv6-special-registry-1.csv"}

# The registry's names, as categories a receipt can carry. A name not listed is "reserved".
_CATEGORY = {
    '"This network"': "unspecified", '"This host on this network"': "unspecified",
    "Unspecified Address": "unspecified", "Private-Use": "private", "Shared Address Space": "cgnat",
    "Loopback": "loopback", "Loopback Address": "loopback", "Link Local": "link_local",
    "Link-Local Unicast": "link_local", "Documentation": "documentation", "Documentation (TEST-NET-1)":
    "documentation", "Documentation (TEST-NET-2)": "documentation", "Documentation (TEST-NET-3)": "documentation",
    "Benchmarking": "benchmarking", "Limited Broadcast": "broadcast", "Unique-Local": "unique_local",
    "Discard-Only Address Block": "discard", "Dummy IPv6 Prefix": "dummy", "Segment Routing (SRv6) SIDs": "srv6_sid",
}
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIXTOFOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_V4_COMPAT = ipaddress.IPv6Network("::/96")
_V4_MULTICAST = ipaddress.IPv4Network("224.0.0.0/4")
_V6_MULTICAST = ipaddress.IPv6Network("ff00::/8")
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


@dataclass(frozen=True, slots=True)
class RegistryRow:
    block: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    reachable: bool  # the "Globally Reachable" column is exactly True (footnotes stripped)
    raw_block: str  # the Address Block cell as IANA wrote it

    @property
    def category(self) -> str:
        if self.name == "IPv4-IPv6 Translat." and self.block.prefixlen == 48:
            return "nat64_local"
        return _CATEGORY.get(self.name, "reserved")


def _cell(text: str) -> str:
    return text.split("[", 1)[0].strip()  # "False [1]" -> "False", "2002::/16 [3]" -> "2002::/16"


@cache
def registry(version: int) -> tuple[RegistryRow, ...]:
    """Every row of the IANA special-purpose registry for IP ``version`` (a cell naming two blocks
    gives two rows)."""
    text = (files("g6.adapters.net") / "registry" / REGISTRY_FILES[version]).read_text(encoding="utf-8")
    rows: list[RegistryRow] = []
    for rec in csv.DictReader(io.StringIO(text)):
        reachable = _cell(rec["Globally Reachable"] or "") == "True"
        for block in rec["Address Block"].split(","):
            rows.append(RegistryRow(ipaddress.ip_network(_cell(block)), rec["Name"].strip(), reachable,
                                    rec["Address Block"]))
    return tuple(rows)


def _from_registry(ip: IPAddress) -> str | None:
    """The category of the most specific non-reachable row holding ``ip``, or None."""
    hits = [r for r in registry(ip.version) if ip in r.block and not r.reachable]
    if not hits:
        return None
    return max(hits, key=lambda r: r.block.prefixlen).category


@dataclass(frozen=True, slots=True)
class AddressVerdict:
    address: str
    allowed: bool
    category: str  # "public", or why not: "loopback", "private", "ipv4_mapped:loopback"…

    @property
    def reason(self) -> str:
        return f"{self.address} is {self.category}"


def _embedded(prefix: str, inner: ipaddress.IPv4Address) -> str:
    category = classify(inner)
    return "public" if category == "public" else f"{prefix}:{category}"


def classify(address: str | IPAddress) -> str:
    """``"public"`` or the category that makes ``address`` non-public."""
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv4Address):
        found = _from_registry(ip)
        if found is not None:
            return found
        return "multicast" if ip in _V4_MULTICAST else "public"
    if ip.scope_id:
        return "scoped"
    if ip in _MAPPED:
        return _embedded("ipv4_mapped", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _NAT64:
        return _embedded("nat64", ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _SIXTOFOUR:
        return _embedded("6to4", ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF))
    if ip in _TEREDO and ip.teredo is not None:
        for part in ip.teredo:
            inner = classify(part)
            if inner != "public":
                return f"teredo:{inner}"
        return "teredo"  # a tunnel client, not a server address: refused even with public parts
    found = _from_registry(ip)
    if found is not None:
        return found
    if ip in _V4_COMPAT:
        return "ipv4_compatible"
    if ip in _V6_MULTICAST:
        return "multicast"
    if ip in _SITE_LOCAL:
        return "site_local"
    if ip not in _GLOBAL_UNICAST:
        return "not_global_unicast"
    return "public"


def check_address(address: str | IPAddress, *, allow_loopback: bool = False) -> AddressVerdict:
    """Decide whether a connection to ``address`` may be made."""
    text = str(address)
    try:
        category = classify(address)
    except ValueError:
        return AddressVerdict(text, False, "not_an_ip_address")
    allowed = category == "public" or (allow_loopback and category == "loopback")
    return AddressVerdict(text, allowed, category)
