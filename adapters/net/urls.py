"""URL normalisation before any address check.

A URL is reduced to one canonical form so that the address check sees what the network stack
would connect to: scheme http/https only; userinfo removed (credentials are never sent);
host lowercased, IDNA (UTS #46) encoded, trailing dots removed; every IPv4 literal form that
``inet_aton`` would accept — decimal ``2130706433``, octal ``0177.0.0.1``, hex ``0x7f.1``, short
``127.1`` — rewritten as a dotted quad (WHATWG URL host parsing); IPv6 literals compressed; zone
ids refused; the fragment dropped (it is never sent).
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

import idna

# the redaction path lives in g6.adapters.net.redact; these names stay importable from here
from g6.adapters.net.redact import SECRET_PARAMS, redact_text, redact_url, secrets_in_url  # noqa: F401

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_OK = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$")
_IPV4_PART = re.compile(r"^(0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$")

# The longest URL g6 sends (the caller's, every redirect's Location, every request a rendered page makes) and the
# longest a report may cite (g6.report.sources.MAX_URL): RFC 9110 §4.1 recommends that senders and recipients
# support request lines of at least 8,000 octets, so a URL this long is one servers are asked to take. It also
# keeps a receipt under a published log's entry size (65,535 bytes), though a receipt holds a URL several times.
MAX_URL_LENGTH = 8192
# how much of a URL over the limit a receipt or a message keeps (then "…"); its length and sha256 say the rest
SHOWN_LENGTH = 1024
# characters sent as themselves; any other is sent percent-encoded, as its UTF-8 bytes (three characters each)
_SENT_AS_IS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=%")


class URLError(ValueError):
    """A URL that cannot be fetched; ``reason`` is a stable short word."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class NormalizedURL:
    url: str
    scheme: str
    host: str  # ASCII; an IPv6 literal without brackets
    port: int
    ip: str | None  # the host as an IP address when it is a literal
    userinfo_removed: bool

    @property
    def host_for_url(self) -> str:
        return f"[{self.host}]" if self.ip and ":" in self.ip else self.host

    @property
    def default_port(self) -> bool:
        return DEFAULT_PORTS[self.scheme] == self.port

    @property
    def host_header(self) -> str:
        return self.host_for_url if self.default_port else f"{self.host_for_url}:{self.port}"

    @property
    def origin(self) -> str:
        return f"{self.scheme}://{self.host_header}"


def _parse_ipv4_number(part: str) -> int | None:
    if not _IPV4_PART.match(part):
        return None
    if part[:2].lower() == "0x":
        return int(part[2:] or "0", 16)
    if len(part) > 1 and part[0] == "0":
        return int(part, 8)
    return int(part)


def parse_ipv4_literal(host: str) -> str | None:
    """WHATWG IPv4 parser: the dotted quad ``host`` denotes, or None if it is a name."""
    parts = host.split(".")
    if parts and parts[-1] == "":
        parts = parts[:-1]
    if not parts or not _IPV4_PART.match(parts[-1]):
        return None  # the last label is not numeric: a domain name
    if len(parts) > 4:
        raise URLError("bad_host", f"host {host!r} ends in a number but is not an IPv4 address")
    nums = []
    for p in parts:
        n = _parse_ipv4_number(p)
        if n is None:
            raise URLError("bad_host", f"host {host!r} looks like an IPv4 address but is not one")
        nums.append(n)
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        raise URLError("bad_host", f"IPv4 address {host!r} is out of range")
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(value))


def _normalise_host(raw: str) -> tuple[str, str | None]:
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise URLError("bad_host", f"unclosed IPv6 literal {raw!r}")
        inner = raw[1:-1]
        if "%" in inner:
            raise URLError("bad_host", "IPv6 zone identifiers are not fetchable")
        try:
            ip6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise URLError("bad_host", f"bad IPv6 literal {raw!r}") from None
        return str(ip6), str(ip6)
    host = raw.rstrip(".")
    if not host:
        raise URLError("bad_host", "the URL has no host")
    v4 = parse_ipv4_literal(host.lower())
    if v4 is not None:
        return v4, v4
    if host.isascii():
        ascii_host = host.lower()  # idna would reject the underscores some real hosts carry
    else:
        try:
            ascii_host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError) as e:
            raise URLError("bad_host", f"host {raw!r} is not a valid domain name: {e}") from None
        v4 = parse_ipv4_literal(ascii_host)  # full-width digits map to an IPv4 literal
        if v4 is not None:
            return v4, v4
    if not _HOST_OK.match(ascii_host) or len(ascii_host) > 253:
        raise URLError("bad_host", f"host {raw!r} is not a valid domain name")
    return ascii_host, None


def _split(url: str) -> SplitResult:
    if not isinstance(url, str) or not url.strip():
        raise URLError("bad_url", "empty URL")
    if any(c in url for c in "\x00\r\n\t") or any(ord(c) < 0x20 for c in url):
        raise URLError("bad_url", "control characters in URL")
    try:
        return urlsplit(url.strip())
    except ValueError as e:
        raise URLError("bad_url", f"unparseable URL: {e}") from None


def sent_length(url: str) -> int:
    """The length of ``url`` as a request sends it: a character outside printable ASCII (or one of ``"<>\\^`{|}``
    and the space) goes percent-encoded, three characters per UTF-8 byte. For a URL of plain ASCII, its length.
    This bounds what a receipt holds of it too: no character takes more bytes of canonical JSON than it counts here
    (but a control character, which no URL that is sent holds)."""
    n = len(url)
    if url.isascii() and all(c in _SENT_AS_IS for c in url):
        return n
    for c in url:
        if c not in _SENT_AS_IS:
            n += 3 * len(c.encode("utf-8", "surrogatepass")) - 1
    return n


def counted_length(url: str) -> int:
    """The length the limit counts: ``url`` as sent (``sent_length``), or as a receipt records it when that is
    longer (its secret values redacted: ``key=a`` is recorded ``key=REDACTED``)."""
    n = sent_length(url)
    if "=" in url or "@" in url:
        n = max(n, sent_length(redact_text(url, secrets_in_url(url))))
    return n


def too_long(url: str) -> str | None:
    """The one-line message for a URL over ``MAX_URL_LENGTH`` (it never quotes the URL), or None."""
    n = counted_length(url) if isinstance(url, str) else 0
    if n <= MAX_URL_LENGTH:
        return None
    return f"a URL of {n:,} characters is over the {MAX_URL_LENGTH:,}-character limit"


def shortened(text: str, keep: int = SHOWN_LENGTH) -> str:
    """``text`` cut to ``keep`` characters and "…" when longer: a URL in a message or a receipt that must stay small."""
    return text if len(text) <= keep else text[:keep] + "…"


def recorded_url(url: str) -> tuple[str, dict[str, object]]:
    """How a receipt records the URL it was asked for: whole, when it is within ``MAX_URL_LENGTH``; else its first
    ``SHOWN_LENGTH`` characters and "…", with the whole URL's length and sha256 (of its UTF-8 bytes) as a detail
    (``url_length``, ``url_sha256``), so the receipt names the URL refused without holding it. ``url``: as the
    receipt may show it (secrets redacted)."""
    if too_long(url) is None:
        return url, {}
    digest = hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()
    return shortened(url), {"url_length": len(url), "url_sha256": digest}


def normalise_url(url: str) -> NormalizedURL:
    """``url`` checked and normalised (scheme and host lowered, IDNA, default port, userinfo dropped, no fragment), or
    ``URLError``. A fetch normalises its URL several times (the request, its hops, the receipt): a string's answer is
    kept (it depends on nothing else; a refusal is not kept; only a string, and one of a URL's usual length, so the
    cache stays small whatever a report holds). A URL over ``MAX_URL_LENGTH`` (as given, or once normalised: an
    IDNA host grows) is refused, ``url_too_long``, before anything is parsed."""
    if type(url) is str and len(url) <= _KEPT_LENGTH:
        return _normalise_str(url)
    return _normalise(url)


_KEPT_LENGTH = 2048  # characters of a URL whose normal form is kept; 4,096 of them at most


@functools.lru_cache(maxsize=4096)
def _normalise_str(url: str) -> NormalizedURL:
    return _normalise(url)


def _normalise(url: str) -> NormalizedURL:
    over = too_long(url)
    if over is not None:
        raise URLError("url_too_long", over)
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise URLError("scheme", f"only http and https are fetched, not {scheme or 'a relative URL'!r}")
    netloc = parts.netloc
    userinfo_removed = "@" in netloc
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        close = hostport.find("]")
        raw_host, rest = hostport[: close + 1], hostport[close + 1 :]
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
        if port_text is None:
            raise URLError("bad_url", f"junk after IPv6 literal in {netloc!r}")
    else:
        raw_host, _, port_text = hostport.partition(":")
    if port_text:
        # ASCII digits only: str.isdigit() accepts "①" and int() then fails; and at most 5 digits,
        # so a port thousands of digits long never reaches int()
        if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5) or not 0 < int(port_text) < 65536:
            raise URLError("bad_port", f"bad port {port_text[:20]!r}")
        port = int(port_text)
    else:
        port = DEFAULT_PORTS[scheme]
    host, ip = _normalise_host(raw_host)
    path = parts.path or "/"
    n = NormalizedURL("", scheme, host, port, ip, userinfo_removed)
    full = urlunsplit((scheme, n.host_header, path, parts.query, ""))
    over = too_long(full)
    if over is not None:
        raise URLError("url_too_long", over)
    return NormalizedURL(full, scheme, host, port, ip, userinfo_removed)


def resolve_location(base: str, location: str) -> str:
    """The absolute URL a ``Location`` header points to."""
    return urljoin(base, location.strip())


def host_matches(host: str, pattern: str) -> bool:
    """Allowlist match: ``example.org`` is that host only; ``*.example.org`` is any subdomain."""
    pattern = pattern.strip().lower().rstrip(".")
    if pattern.startswith("*."):
        suffix = pattern[1:]
        return host.endswith(suffix) and len(host) > len(suffix)
    return host == pattern


def normalise_pattern(pattern: str) -> str:
    p = pattern.strip().lower().rstrip(".")
    star = p.startswith("*.")
    body = p[2:] if star else p
    if not body:
        raise URLError("bad_pattern", f"empty allowlist pattern {pattern!r}")
    host, _ = _normalise_host(body)
    return ("*." + host) if star else host



_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):(.*)$", re.S)
_HOSTISH = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[^\s/?#:@]+)(:\d*)?([/?#].*)?$", re.S)


def not_a_url(text: str) -> str | None:
    """Why ``text`` is not an absolute URL at all (then it is an input error, not a fetch), with a
    hint; None when it has the shape of one (its scheme and host are judged by the fetch itself).

    ``127.0.0.1:8421/article`` and ``localhost:8421`` are a host and port without a scheme
    (``urlsplit`` would read ``localhost`` as a scheme); ``not a url`` is prose."""
    t = text.strip() if isinstance(text, str) else ""
    if not t:
        return "an empty text is not a URL"
    m = _SCHEME.match(t)
    hostport = m is not None and (m.group(2)[:1].isdigit() or m.group(2) == "")
    if m is not None and not hostport and not any(c.isspace() for c in m.group(1)):
        return None
    if not any(c.isspace() for c in t) and _HOSTISH.match(t) and ("." in t.split("/")[0] or hostport):
        return f"{t[:80]!r} has no scheme; did you mean http://{t[:80]} ?"
    return f"{t[:80]!r} is not a URL; give an absolute URL such as https://example.org/page"
