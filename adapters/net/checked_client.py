"""The checked HTTP client: every request goes to a checked public address, or not at all.

For each hop (the first URL and every redirect) the client normalises the URL, checks the
allowlist, resolves the host once, refuses if *any* resolved address is not public, checks
robots.txt, waits out the per-host pause, and then connects to the very address it checked: the
URL handed to the transport carries the IP, while ``Host`` and TLS SNI carry the name. So a DNS
answer that changes between check and connect (rebinding) cannot redirect the connection.

Redirects are followed here, not by httpx (at most ``max_redirects``, http/https only). Requests
go straight to the transport, so no cookie jar, no auth, no proxy from the environment, and no
header from the caller: only ``User-Agent``, ``Accept`` and ``Accept-Encoding``.

Bodies stream into a blob store writer while they are read: ``max_bytes`` cuts the read
(``truncated``), ``hard_cap`` turns a larger body into ``too_large``; sizes count decoded bytes,
and decoding itself is bounded (``g6.adapters.net.decoding``), so a compression bomb stops at the cap
without ever being inflated in memory. ``total_timeout`` is one deadline for DNS, connect, TLS,
headers and body (``g6.adapters.net.deadline``). Every URL the client cannot parse, the caller's or a
server's ``Location``, ends as a typed outcome; every URL and message in the response passes the
one redaction path (``g6.adapters.net.redact``) before it leaves the client.
"""

from __future__ import annotations

import contextlib
import copy
import math
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from g6 import TOOL_NAME, __version__
from g6.adapters.net.addresses import check_address
from g6.adapters.net.deadline import (
    Deadline,
    ResolveTimeout,
    current_deadline,
    deadline_transport,
    resolve_within,
    running_until,
)
from g6.adapters.net.decoding import DECODABLE, BoundedInflater, ContentDecodingError, codings
from g6.adapters.net.pacing import HostGate, HostPacer, SharedHostGate, SharedHostPacer
from g6.adapters.net.pools import HostPools
from g6.adapters.net.redact import redact_json, redact_text, secrets_in_url
from g6.adapters.net.robots import ROBOTS_MAX_BYTES, RobotsCache, RobotsRules, rules_from_answer
from g6.adapters.net.tls import TrustedRoots, presented, tls_block
from g6.adapters.net.transport_errors import classify_transport_error, safe_message
from g6.adapters.net.urls import (
    MAX_URL_LENGTH,
    NormalizedURL,
    URLError,
    host_matches,
    normalise_pattern,
    normalise_url,
    resolve_location,
    sent_length,
    shortened,
)
from g6.adapters.outcomes import Outcome, outcome_for_status
from g6.ledger.receipts import AllowlistDecision, Hop
from g6.store import BlobBackend, BlobRef

Resolver = Callable[[str, int], Sequence[str]]
USER_AGENT = f"{TOOL_NAME}/{__version__} (+evidence fetcher; honours robots.txt)"
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# RFC 8785 (the receipts' canonical JSON) holds integers up to 2^53 exactly: a byte cap past that
# could not be written into a receipt
MAX_RECEIPT_INT = 2**53
# The URLs of one read's redirect chain together (each at most MAX_URL_LENGTH): its receipt lists every hop, and must
# stay under a published log's entry size (65,535 bytes) beside the URL asked for, the final URL and a detail's URL
MAX_CHAIN_URLS = 3 * MAX_URL_LENGTH
# A header value a server sends that a receipt keeps (Content-Type, Retry-After): httpx takes header blocks of up to
# 100 KB, and a receipt over 65,535 bytes is not appended (the read, made, would have no receipt). Kept to this many
# characters (then "…"), after redaction, so a cut never leaves part of a secret; the value every later reader of
# the body uses (its charset) is the one kept, so a fetch and a later check read the bytes alike.
MAX_HEADER_SHOWN = 1024


def system_resolver(host: str, port: int) -> list[str]:
    """All addresses the system resolver gives for ``host``, in its order, without duplicates."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        addr = str(info[4][0])
        if addr not in seen:
            seen.append(addr)
    return seen


def host_transport(**kwargs: Any) -> httpx.BaseTransport:
    """A host's pool (``HostPools``): one idle connection kept, not httpx's 20. One request at a time per host (the
    gate) needs no more; a host whose first address changes between reads (round-robin DNS, a CDN) would otherwise
    keep an idle connection open to each address it ever had."""
    return deadline_transport(limits=httpx.Limits(max_connections=100, max_keepalive_connections=1), **kwargs)


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """What a fetch may do. ``allow_loopback`` is the operator setting for local test servers."""

    allowlist: tuple[str, ...] = ()
    allow_loopback: bool = False
    max_bytes: int | None = None
    hard_cap: int = 64 * 1024 * 1024
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    total_timeout: float = 120.0
    max_redirects: int = 10
    respect_robots: bool = True
    host_pause: float = 1.0
    user_agent: str = USER_AGENT
    accept: str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    # a PEM file of the root certificates https trusts instead of the default (certifi's): a private CA
    # (an intranet, a test CA). ``G6_CA_BUNDLE`` sets it; read when a connection needs it (``tls.trust_context``)
    ca_bundle: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowlist", tuple(normalise_pattern(p) for p in self.allowlist))
        if self.max_bytes is not None and not 0 <= self.max_bytes <= MAX_RECEIPT_INT:
            raise ValueError(f"max_bytes must be between 0 and 2^53 ({MAX_RECEIPT_INT}), got {self.max_bytes}")
        if not 0 < self.hard_cap <= MAX_RECEIPT_INT:
            raise ValueError(f"hard_cap must be between 1 and 2^53 ({MAX_RECEIPT_INT}), got {self.hard_cap}")
        for name in ("connect_timeout", "read_timeout", "total_timeout"):
            v = getattr(self, name)
            if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number of seconds > 0, got {v}")
        if not (math.isfinite(self.host_pause) and self.host_pause >= 0):
            raise ValueError(f"host_pause must be a finite number of seconds >= 0, got {self.host_pause}")
        if self.max_redirects < 0:
            raise ValueError(f"max_redirects must be >= 0, got {self.max_redirects}")
        if self.ca_bundle is not None and not (isinstance(self.ca_bundle, str) and self.ca_bundle):
            raise ValueError(f"ca_bundle must be the path of a PEM file, got {self.ca_bundle!r}")


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """What one checked fetch saw. No header values except the few that are evidence."""

    requested_url: str
    outcome: Outcome
    final_url: str | None = None
    hops: tuple[Hop, ...] = ()
    status: int | None = None
    body: BlobRef | None = None
    byte_count: int = 0
    truncated: bool = False
    allowlist: AllowlistDecision = AllowlistDecision("not_configured", None)
    content_type: str | None = None
    retry_after: str | None = None
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    # the response headers asked for by name (``pass_headers``), for a browser: never in a receipt
    passed_headers: tuple[tuple[str, str], ...] = ()

    def receipt_detail(self) -> dict[str, Any]:
        d: dict[str, Any] = {"reason": self.reason} if self.reason else {}
        if self.content_type:
            d["content_type"] = self.content_type
        if self.retry_after is not None:
            d["retry_after"] = self.retry_after
        d.update(self.detail)
        return d


class _Stop(Exception):
    """Ends a fetch early with a typed outcome."""

    def __init__(self, outcome: Outcome, reason: str, **detail: Any) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.detail = detail


class CheckedClient:
    """A fetcher that only reaches checked public addresses. Takes its transport and resolver.

    The request URL carries the checked IP, so httpx pools connections by IP. For HTTPS that would
    let a connection verified for one host name serve another name on the same address, so every
    host name gets a transport (a connection pool) of its own from ``transport_factory`` (for HTTPS
    called with ``verify=`` an ``ssl.SSLContext`` when the policy names a ``ca_bundle``, and a pool of
    its own per bundle), at most ``g6.adapters.net.pools.KEEP`` of them held (``HostPools``).
    ``transport``, when given, serves every request instead (for tests with ``MockTransport``).

    Every hop over TLS keeps what the server presented on that hop's connection (``g6.adapters.net.tls``):
    the certificates go into the store the fetch writes to, the hop names them (``Hop.tls``).
    """

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        transport_factory: Callable[..., httpx.BaseTransport] | None = None,
        resolver: Resolver = system_resolver,
        pacer: HostPacer | None = None,
        gate: HostGate | None = None,
        robots: RobotsCache | None = None,
        clock: Callable[[], float] = time.monotonic,
        secrets: Iterable[str] = (),
        pools: HostPools | None = None,
    ) -> None:
        self.policy = policy or FetchPolicy()
        self._factory = transport_factory or host_transport
        # configured secret values (API keys): never in a response this client returns
        self.secrets = tuple(s for s in secrets if s)
        self._fixed = transport
        self._pools = pools if pools is not None else HostPools()  # (an empty one is falsy: it has a length)
        self._trust = TrustedRoots()
        self._resolver = resolver
        self._pacer = pacer or HostPacer()
        self._gate = gate or HostGate()
        self._robots = robots or RobotsCache()
        self._clock = clock

    @contextlib.contextmanager
    def _transport_for(self, n: NormalizedURL, pol: FetchPolicy) -> Iterator[httpx.BaseTransport]:
        """The host's pool, lent for one request (from sending it to closing its answer)."""
        if self._fixed is not None:
            yield self._fixed
            return
        if n.scheme == "https":
            key: tuple[Any, ...] = ("https", n.host, n.port, pol.ca_bundle)
            make = lambda: self._factory(**self._trust.transport_kwargs(pol.ca_bundle))  # noqa: E731
        else:
            key, make = ("http", n.host, n.port), self._factory
        with self._pools.lease(key, make) as t:
            yield t

    @contextlib.contextmanager
    def hosts_shared(self, ctx: Any) -> Iterator[None]:
        """Within the block, the per-host gate and pause hold across the processes forked from
        ``ctx`` (a batch fetching on several cores): one request at a time per host and its pause,
        whichever process asks, redirect hops and robots.txt too."""
        gate, pacer = self._gate, self._pacer
        shared_gate = SharedHostGate()
        shared = SharedHostPacer(ctx, clock=pacer._clock, sleep=pacer._sleep)
        shared.carry_over(pacer)  # a host this client asked just before still waits out its pause
        self._gate, self._pacer = shared_gate, shared
        try:
            yield
        finally:
            self._gate, self._pacer = gate, pacer
            shared_gate.close()
            shared.close()

    def page_load(self, per_host: int) -> CheckedClient:
        """This client for the requests of one page load (a rendered capture's sub-requests): the same policy,
        resolver, connection pools, robots.txt cache and secrets, so every check holds on every request, but a gate
        and a pacer of its own, with no pause and ``per_host`` requests at once per host, as a browser loads a page.
        The host pause and one-at-a-time gate are for g6's own successive reads of a host (a batch's pages): the 20
        to 50 requests a page makes of its host, paced a second apart, would take a minute."""
        view = copy.copy(self)
        view._gate, view._pacer = HostGate(per_host), HostPacer(clock=self._pacer._clock, sleep=self._pacer._sleep)
        return view

    def forget_connections(self) -> None:
        """In a forked child: drop the connection pools inherited from the parent without closing
        them (closing would write on sockets the parent still owns); new ones open as needed. A
        transport given to the client (a test's) is kept."""
        self._pools.forget()

    def close(self) -> None:
        self._pools.close()

    def __enter__(self) -> CheckedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public ----------------------------------------------------------------------------
    def fetch(self, url: str, store: BlobBackend, *, source: str = "web", policy: FetchPolicy | None = None,
              accept: str | None = None, robots: bool | None = None, pause: float | None = None,
              headers: dict[str, str] | None = None, secret_headers_for: str | None = None,
              follow_redirects: bool = True, pass_headers: Iterable[str] = ()) -> FetchResponse:
        """GET ``url`` through every check; stream the body into ``store``.

        ``headers``/``secret_headers_for`` exist for source adapters (an API key header sent only
        to the host named in ``secret_headers_for``); callers of ``g6 fetch`` cannot set them.

        ``follow_redirects=False`` (a browser, which asks again itself): a redirect is the answer, ``ok``, reason
        ``redirect``, ``detail["location"]`` its target. ``pass_headers``: headers handed back, never receipted.
        """
        pol = policy or self.policy
        if accept:
            pol = replace(pol, accept=accept)
        deadline = Deadline(self._clock() + pol.total_timeout, self._clock)
        with running_until(deadline):
            resp = self._run(url, store, source=source, policy=pol,
                             robots=pol.respect_robots if robots is None else robots,
                             pause=pol.host_pause if pause is None else pause,
                             extra_headers=headers or {}, secret_host=secret_headers_for, deadline=deadline.at,
                             follow=follow_redirects, passed=frozenset(h.lower() for h in pass_headers))
        return self._redacted(resp, url, headers or {})

    def _redacted(self, resp: FetchResponse, url: str, headers: dict[str, str]) -> FetchResponse:
        """The response with every URL and message through the one redaction path: the configured
        secrets, the header values sent, and the secrets carried by the URLs of this call."""
        secrets = set(self.secrets) | {v for v in headers.values() if isinstance(v, str)} | secrets_in_url(url)
        for h in resp.hops:
            secrets |= secrets_in_url(h.url)
        for u in (resp.final_url, resp.detail.get("url"), resp.detail.get("location")):
            if isinstance(u, str):
                secrets |= secrets_in_url(u)

        def text(v: str | None) -> str | None:
            return None if v is None else redact_text(v, secrets)

        def header(v: str | None) -> str | None:  # a server's header value: redacted, then capped
            return None if v is None else shortened(redact_text(v, secrets), MAX_HEADER_SHOWN)

        return replace(
            resp, requested_url=redact_text(resp.requested_url, secrets), final_url=text(resp.final_url),
            hops=tuple(replace(h, url=redact_text(h.url, secrets)) for h in resp.hops),
            content_type=header(resp.content_type), retry_after=header(resp.retry_after),
            reason=redact_text(resp.reason, secrets), detail=redact_json(resp.detail, secrets))

    # -- steps -----------------------------------------------------------------------------
    @staticmethod
    def _normalise(url: str, *, first: bool) -> NormalizedURL:
        """The caller's URL (``first``) or a server's redirect target, or a typed stop: ``rejected``
        for the caller's own unparseable input, ``http_error``/``bad_location`` for a server's."""
        try:
            return normalise_url(url)
        except URLError as e:
            if e.reason == "url_too_long":  # its message never quotes the URL: a receipt and a message stay small
                if first:
                    raise _Stop(Outcome.REJECTED, e.reason, message=f"{e}; nothing was sent") from None
                raise _Stop(Outcome.HTTP_ERROR, "bad_location", url_error=e.reason,
                            message=f"the redirect's Location is {e}: not followed") from None
            if e.reason == "scheme":
                raise _Stop(Outcome.REFUSED, "scheme" if first else "redirect_scheme", message=str(e)) from None
            if first:
                raise _Stop(Outcome.REJECTED, e.reason, message=str(e)) from None
            raise _Stop(Outcome.HTTP_ERROR, "bad_location", url_error=e.reason, message=str(e)) from None
        except (ValueError, UnicodeError, TypeError) as e:  # a parser below us gave up in its own words
            raise _Stop(Outcome.REJECTED if first else Outcome.HTTP_ERROR, "bad_url" if first else "bad_location",
                        message=f"unparseable URL: {str(e)[:200]}") from None

    @staticmethod
    def _check_allowlist(n: NormalizedURL, pol: FetchPolicy, hop: int) -> AllowlistDecision:
        if not pol.allowlist:
            return AllowlistDecision("not_configured", n.host)
        if any(host_matches(n.host, p) for p in pol.allowlist):
            return AllowlistDecision("allowed", n.host, pol.allowlist)
        raise _Stop(Outcome.POLICY_DENIED, "host_not_in_allowlist", hop=hop, url=n.url, host=n.host,
                    patterns=list(pol.allowlist))

    def _resolve_checked(self, n: NormalizedURL, pol: FetchPolicy) -> list[str]:
        if n.ip is not None:
            addresses = [n.ip]
        else:
            try:
                addresses = resolve_within(self._resolver, n.host, n.port, current_deadline())
            except ResolveTimeout:
                raise _Stop(Outcome.UNREACHABLE, "total_timeout", stage="dns") from None
            except (OSError, UnicodeError) as e:
                raise _Stop(Outcome.UNREACHABLE, "dns", message=f"cannot resolve {n.host}: {e}") from None
            if not addresses:
                raise _Stop(Outcome.UNREACHABLE, "dns", message=f"{n.host} has no address")
        verdicts = [check_address(a, allow_loopback=pol.allow_loopback) for a in addresses]
        bad = [v for v in verdicts if not v.allowed]
        if bad:
            raise _Stop(Outcome.REFUSED, "address_not_public", host=n.host,
                        addresses=[{"address": v.address, "category": v.category} for v in verdicts],
                        message="; ".join(v.reason for v in bad)
                        + ("" if pol.allow_loopback or not any(v.category == "loopback" for v in bad)
                           else " (loopback needs the operator setting G6_ALLOW_LOOPBACK=1)"))
        return [v.address for v in verdicts]

    def _send(self, n: NormalizedURL, transport: httpx.BaseTransport, address: str, pol: FetchPolicy, accept: str,
              extra_headers: dict[str, str], deadline: float, first: bool) -> httpx.Response:
        try:
            target = httpx.URL(n.url).copy_with(host=address)
        except (httpx.InvalidURL, ValueError, UnicodeError) as e:
            raise _Stop(Outcome.REJECTED if first else Outcome.HTTP_ERROR, "bad_url" if first else "bad_location",
                        message=f"unparseable URL: {str(e)[:200]}") from None
        remaining = max(0.001, deadline - self._clock())
        extensions: dict[str, Any] = {
            "timeout": {"connect": min(pol.connect_timeout, remaining), "read": min(pol.read_timeout, remaining),
                        "write": min(pol.read_timeout, remaining), "pool": min(pol.connect_timeout, remaining)},
        }
        if n.scheme == "https" and n.ip is None:
            extensions["sni_hostname"] = n.host
        headers = {"Host": n.host_header, "User-Agent": pol.user_agent, "Accept": accept,
                   "Accept-Encoding": "gzip, deflate", **extra_headers}
        request = httpx.Request("GET", target, headers=headers, extensions=extensions)
        return transport.handle_request(request)

    @staticmethod
    def _connected(resp: httpx.Response, fallback: str) -> str:
        stream = resp.extensions.get("network_stream")
        if stream is not None:
            with contextlib.suppress(Exception):
                addr = stream.get_extra_info("server_addr")
                if addr:
                    return str(addr[0])
        return fallback

    def _robots_rules(self, n: NormalizedURL, store: BlobBackend | None, source: str,
                      pol: FetchPolicy, deadline: float) -> RobotsRules:
        cached = self._robots.get(n.origin)
        if cached is not None:
            return cached
        robots_pol = replace(pol, max_bytes=ROBOTS_MAX_BYTES, max_redirects=5, respect_robots=False)
        r = self._run(f"{n.origin}/robots.txt", store, source=source, policy=robots_pol, robots=False,
                      pause=pol.host_pause, extra_headers={}, secret_host=None, accept_override="text/plain",
                      keep=False, deadline=deadline)
        if r.outcome is Outcome.UNREACHABLE or _closed_without_reply(r):
            # RFC 9309 reads an unreachable robots.txt as "disallow all", so the page is not asked
            # for; the honest outcome is that the server did not answer (a connection closed before
            # any reply is that too: a reset can reach the client as either). Not cached: it may return.
            rules = rules_from_answer(n.origin, None, b"", r.reason)
            raise _Stop(Outcome.UNREACHABLE, r.reason, robots=rules.to_json())
        if r.outcome in (Outcome.REFUSED, Outcome.POLICY_DENIED) or r.status is None:
            rules = rules_from_answer(n.origin, None, b"", r.reason or r.outcome.value)
        else:
            body = r.detail.pop("_body", b"")
            rules = rules_from_answer(n.origin, r.status, body)
        self._robots.put(rules)
        return rules

    # -- the loop --------------------------------------------------------------------------
    def _run(self, url: str, store: BlobBackend | None, *, source: str, policy: FetchPolicy, robots: bool,
             pause: float, extra_headers: dict[str, str], secret_host: str | None,
             accept_override: str | None = None, keep: bool = True,
             deadline: float | None = None, follow: bool = True,
             passed: frozenset[str] = frozenset()) -> FetchResponse:
        pol = policy
        deadline = deadline if deadline is not None else self._clock() + pol.total_timeout
        accept = accept_override or pol.accept
        hops: list[Hop] = []
        decision = AllowlistDecision("not_configured", None, pol.allowlist)
        current = url
        seen: set[str] = set()
        robots_info: list[dict[str, Any]] = []
        try:
            n = self._normalise(current, first=True)
            current = n.url
            while True:
                hop_index = len(hops)
                decision = self._check_allowlist(n, pol, hop_index)
                addresses = self._resolve_checked(n, pol)
                if robots:
                    rules = self._robots_rules(n, store, source, pol, deadline)
                    robots_info.append(rules.to_json())
                    if not rules.allows(n.url, pol.user_agent):
                        why = "robots_txt_disallows" if rules.state == "parsed" else "robots_txt_unavailable"
                        raise _Stop(Outcome.ROBOTS_DISALLOWED, why, robots=rules.to_json())
                # one request at a time per host, redirect hops too: held from the pause to the body's end
                # and the host's connection pool lent until the answer is closed (``HostPools``)
                with self._gate.hold(n.host, deadline - self._clock()) as held, contextlib.ExitStack() as lent:
                    if not held:
                        raise _Stop(Outcome.UNREACHABLE, "total_timeout", stage="host_busy")
                    self._pacer.wait(source, n.host, pause)
                    if self._clock() > deadline:
                        raise _Stop(Outcome.UNREACHABLE, "total_timeout")
                    headers = extra_headers if (secret_host is None or secret_host == n.host) else {}
                    transport = lent.enter_context(self._transport_for(n, pol))
                    resp = self._send(n, transport, addresses[0], pol, accept, headers, deadline, first=not hops)
                    try:
                        connected = self._connected(resp, addresses[0])
                        # the server's own word, from this hop's connection (robots.txt reads keep nothing)
                        shown = presented(resp) if (keep and store is not None) else None
                        hops.append(Hop(n.url, resp.status_code, connected,
                                        tls_block(shown, store) if shown is not None and store is not None else None))
                        location = resp.headers.get("location")
                        if resp.status_code in REDIRECT_STATUSES and location and not follow:
                            return self._unfollowed(resp, n, hops, decision, pol, store, deadline, keep, url,
                                                    robots_info, location, passed)
                        if resp.status_code in REDIRECT_STATUSES and location:
                            seen.add(n.url)
                            if len(hops) > pol.max_redirects:
                                raise _Stop(Outcome.HTTP_ERROR, "too_many_redirects", max_redirects=pol.max_redirects)
                            try:
                                nxt = resolve_location(n.url, location)
                            except (ValueError, UnicodeError) as e:
                                raise _Stop(Outcome.HTTP_ERROR, "bad_location", location=shortened(location, 2000),
                                            message=f"unparseable Location: {str(e)[:200]}") from None
                            n = self._normalise(nxt, first=False)
                            _check_chain(hops, n)
                            if n.url in seen:
                                raise _Stop(Outcome.HTTP_ERROR, "redirect_loop", url=n.url)
                            current = n.url
                            continue
                        return self._read_body(resp, n, hops, decision, pol, store, deadline, keep,
                                               url, robots_info, passed)
                    finally:
                        resp.close()
        except _Stop as stop:
            detail = dict(stop.detail)
            if robots_info:
                detail.setdefault("robots", robots_info[-1])
            if stop.outcome is Outcome.POLICY_DENIED:
                decision = AllowlistDecision("denied", detail.get("host"), pol.allowlist)
            return FetchResponse(url, stop.outcome, final_url=current if hops else None, hops=tuple(hops),
                                 status=hops[-1].status if hops else None, allowlist=decision,
                                 reason=stop.reason, detail=detail)
        except httpx.HTTPError as e:
            outcome, reason = classify_transport_error(e)
            d = current_deadline()
            if isinstance(e, httpx.TimeoutException) and d is not None and d.cut:
                outcome, reason = Outcome.UNREACHABLE, "total_timeout"
            return FetchResponse(url, outcome, final_url=current if hops else None, hops=tuple(hops),
                                 status=hops[-1].status if hops else None, allowlist=decision, reason=reason,
                                 detail={"message": safe_message(e)})

    def _unfollowed(self, resp: httpx.Response, n: NormalizedURL, hops: list[Hop], decision: AllowlistDecision,
                    pol: FetchPolicy, store: BlobBackend | None, deadline: float, keep: bool, requested: str,
                    robots_info: list[dict[str, Any]], location: str, passed: frozenset[str]) -> FetchResponse:
        """A redirect not followed: the 3xx is the answer, its body kept, its Location given back absolute
        (or the read fails typed when that is not an http(s) URL)."""
        try:
            target = normalise_url(resolve_location(n.url, location)).url
        except (URLError, ValueError, UnicodeError) as e:
            scheme = isinstance(e, URLError) and e.reason == "scheme"
            url_error = {"url_error": e.reason} if isinstance(e, URLError) and not scheme else {}
            raise _Stop(Outcome.REFUSED if scheme else Outcome.HTTP_ERROR,
                        "redirect_scheme" if scheme else "bad_location", location=shortened(location, 2000),
                        message=f"unusable Location: {str(e)[:200]}", **url_error) from None
        read = self._read_body(resp, n, hops, decision, pol, store, deadline, keep, requested, robots_info,
                               passed - {"location"})
        if read.outcome not in (Outcome.HTTP_ERROR, Outcome.EMPTY, Outcome.OK):
            return read  # a body too large, a deadline, a broken encoding: typed as such
        return replace(read, outcome=Outcome.OK, reason="redirect", detail={**read.detail, "location": target},
                       passed_headers=read.passed_headers + ((("location", target),) if "location" in passed else ()))

    def _read_body(self, resp: httpx.Response, n: NormalizedURL, hops: list[Hop], decision: AllowlistDecision,
                   pol: FetchPolicy, store: BlobBackend | None, deadline: float, keep: bool, requested: str,
                   robots_info: list[dict[str, Any]], passed: frozenset[str] = frozenset()) -> FetchResponse:
        status = resp.status_code
        ctype = resp.headers.get("content-type")
        retry_after = resp.headers.get("retry-after") if status in (429, 503) else None
        # Past ``limit`` the read stops. When the caller's max_bytes is what stopped it, the body
        # is "truncated"; when the hard cap did, the whole fetch is "too_large".
        cap_decides = pol.max_bytes is None or pol.max_bytes > pol.hard_cap
        limit = pol.hard_cap if cap_decides else int(pol.max_bytes)  # type: ignore[arg-type]
        declared = resp.headers.get("content-length")
        encodings = codings(resp.headers.get("content-encoding"))
        # one coding the client can inflate is decoded (bounded); anything else, stacked codings
        # included, is kept raw as evidence and is not the page
        undecodable = "stacked_content_encoding" if len(encodings) > 1 else (
            "unsupported_content_encoding" if encodings and encodings[0] not in DECODABLE else "")
        inflater = BoundedInflater(encodings[0]) if encodings and not undecodable else None
        base = dict(requested_url=requested, final_url=n.url, hops=tuple(hops), status=status,
                    allowlist=decision, content_type=ctype, retry_after=retry_after,
                    passed_headers=tuple((k.lower(), v) for k, v in resp.headers.items() if k.lower() in passed))
        extra: dict[str, Any] = {"robots": robots_info[-1]} if robots_info else {}
        if cap_decides and declared and declared.isascii() and declared.isdigit() and len(declared) < 20 \
                and int(declared) > pol.hard_cap:
            return FetchResponse(outcome=Outcome.TOO_LARGE, reason="declared_length_over_cap",
                                 detail={"declared_length": int(declared), "hard_cap": pol.hard_cap, **extra},
                                 **base)
        writer = store.writer() if (store is not None and keep) else None
        chunks: list[bytes] = []
        size, truncated = 0, False

        def pieces() -> Iterator[bytes]:
            if resp.is_stream_consumed:
                # an in-memory response (httpx.MockTransport in parser tests): httpx decoded it when it
                # was built, so there is no raw stream to read; the cap still applies below
                yield resp.content
                return
            for raw in resp.iter_raw():
                if self._clock() > deadline:
                    raise _Stop(Outcome.UNREACHABLE, "total_timeout", bytes_read=size)
                if inflater is None:
                    yield raw
                else:
                    yield from inflater.feed(raw)
            if inflater is not None:
                yield from inflater.finish()

        try:
            for chunk in pieces():
                room = limit - size
                if len(chunk) > room:
                    chunk, truncated = chunk[:room], True
                if chunk:
                    size += len(chunk)
                    if writer is not None:
                        writer.write(chunk)
                    elif not keep:
                        chunks.append(chunk)
                if truncated:
                    break
            ref = writer.commit() if writer is not None else None
        except _Stop as stop:
            if writer is not None:
                writer.abort()
            return FetchResponse(outcome=stop.outcome, reason=stop.reason, byte_count=size,
                                 detail={**stop.detail, **extra}, **base)
        except ContentDecodingError as e:
            if writer is not None:
                writer.abort()
            return FetchResponse(outcome=Outcome.PARSE_FAILED, reason="content_decoding", byte_count=size,
                                 detail={"message": safe_message(e), **extra}, **base)
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        if not keep:
            extra["_body"] = b"".join(chunks)
        if undecodable:
            # kept as evidence (the raw bytes, bounded by the same cap), but they are not the page,
            # so the read is not "ok"; a bomb in a coding never inflated cannot go off
            extra["content_encoding"] = ",".join(encodings)[:200]
            return FetchResponse(outcome=Outcome.PARSE_FAILED, reason=undecodable, body=ref,
                                 byte_count=size, truncated=truncated, detail=extra, **base)
        if truncated and cap_decides:
            outcome, reason = Outcome.TOO_LARGE, "body_over_cap"
            extra["hard_cap"] = pol.hard_cap
        else:
            outcome = outcome_for_status(status)
            reason = "" if outcome is Outcome.OK else f"http_{status}"
            if outcome is Outcome.OK and size == 0 and not truncated:
                outcome, reason = Outcome.EMPTY, "no_body"
        return FetchResponse(outcome=outcome, reason=reason, body=ref, byte_count=size, truncated=truncated,
                             detail=extra, **base)


def _check_chain(hops: list[Hop], n: NormalizedURL) -> None:
    """Stop before the hop to ``n`` when the chain's URLs would be longer together than a receipt can list
    (``MAX_CHAIN_URLS``): the redirect's failure, as a bad Location is, and nothing more is sent."""
    urls = [h.url for h in hops] + [n.url]
    # as the receipt will list them: redacted with the secrets any of them carries (``_redacted``)
    secrets = set().union(*(secrets_in_url(u) for u in urls))
    total = sum(sent_length(redact_text(u, secrets)) for u in urls)
    if total > MAX_CHAIN_URLS:
        raise _Stop(Outcome.HTTP_ERROR, "redirect_chain_too_long", chain_length=total, limit=MAX_CHAIN_URLS,
                    message=f"the redirect chain's URLs would be {total:,} characters together, over the "
                            f"{MAX_CHAIN_URLS:,} a receipt lists: not followed")


def _closed_without_reply(r: FetchResponse) -> bool:
    """A connection the server closed before sending a byte (httpcore's words for it): no answer at all,
    unlike a reply that is not HTTP, which is an answer RFC 9309 reads as a server error."""
    return (r.outcome is Outcome.HTTP_ERROR and r.status is None
            and "without sending a response" in str(r.detail.get("message", "")))
