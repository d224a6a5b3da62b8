"""``g6.core.http``: G6's checked HTTP client as the knowledge fetcher's document names it.

    from g6.core import http

    def answers(request):                       # the network, in a test
        return http.Response(200, {"content-type": "text/html"}, b"<p>hi</p>", request.url)

    client = http.Client(transport=answers, resolver=lambda host, port: ["93.184.216.34"])

``Client`` *is* ``g6.adapters.net.checked_client.CheckedClient``: every hop's address, allowlist,
robots.txt, size cap and pause are checked the same way. The only addition is the transport: a
plain function from a ``Request`` (``.method``, ``.url``, ``.headers``) to a ``Response``. The
request's ``url`` names the host as asked for (the checked client connects to the checked IP and
sends the name in ``Host``), so a double can answer by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse, Resolver, system_resolver

__all__ = ["Client", "FetchPolicy", "FetchResponse", "Request", "Response", "Transport"]


@dataclass(frozen=True, slots=True)
class Request:
    """What the checked client sends: always a GET with the client's few headers."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Response:
    """What a transport answers: ``Response(status, headers, body, url)``."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    url: str | None = None


Transport = Callable[[Request], Response]


class _FunctionTransport(httpx.BaseTransport):
    """Runs a plain function as an httpx transport, so the checked client's loop is unchanged."""

    def __init__(self, fn: Transport) -> None:
        self._fn = fn

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        named = request.url
        host = request.headers.get("host")
        if host:
            named = request.url.copy_with(netloc=host.encode("ascii"))
        answer = self._fn(Request(request.method, str(named), dict(request.headers)))
        if not isinstance(answer, Response):
            raise httpx.ProtocolError(f"the transport returned {type(answer).__name__}, not http.Response")
        return httpx.Response(answer.status, headers=list(answer.headers.items()), content=answer.body,
                              request=request)


class Client(CheckedClient):
    """The checked client. ``transport`` may be an httpx transport or a plain function;
    ``obey_robots`` sets whether robots.txt is read for the pages it fetches."""

    def __init__(self, policy: FetchPolicy | None = None, *, transport: Transport | httpx.BaseTransport | None = None,
                 resolver: Resolver = system_resolver, obey_robots: bool | None = None, **kw: Any) -> None:
        pol = policy or FetchPolicy()
        if obey_robots is not None:
            pol = replace(pol, respect_robots=obey_robots)
        if transport is not None and not isinstance(transport, httpx.BaseTransport):
            transport = _FunctionTransport(transport)
        super().__init__(pol, transport=transport, resolver=resolver, **kw)

    @property
    def obey_robots(self) -> bool:
        return self.policy.respect_robots
