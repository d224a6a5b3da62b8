"""``g6.core.outside``: a request to a program the person runs on this machine (Elasticsearch).

    from g6.core import outside

    reply = outside.call_service("elasticsearch", "GET", "/handbook/_mapping")
    reply.status, reply.headers, reply.body

Only loopback addresses are reached (``G6_ELASTIC_URL``, default ``http://127.0.0.1:9200``);
redirects are never followed; nothing from the environment (proxies, netrc) is used. When nothing
answers, ``ProgramMissing`` (``G6_E_OUTSIDE_PROGRAM_MISSING``) says how to run the program. The
Elasticsearch reader takes any function with ``call_service``'s signature as its ``caller``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from g6.errors import InputError, ProgramMissing, ProgramTimeout

__all__ = ["Caller", "ProgramMissing", "ProgramTimeout", "ServiceReply", "call_service", "program_url"]

PROGRAMS = {"elasticsearch": ("G6_ELASTIC_URL", "http://127.0.0.1:9200", "G6_ELASTIC_API_KEY")}
HOW_TO_RUN = {"elasticsearch": "start one on loopback, e.g. `pip install noida-db && noida-db start --only "
                               "elasticsearch`, or set G6_ELASTIC_URL to the local address it listens on"}


@dataclass(frozen=True, slots=True)
class ServiceReply:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""


Caller = Callable[..., ServiceReply]


def program_url(program: str, values: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """The loopback base URL of ``program`` and its API key (from the settings), checked."""
    from g6.adapters.sources.elasticsearch import check_loopback_url

    if program not in PROGRAMS:
        raise InputError(f"unknown outside program {program!r}; known: {', '.join(PROGRAMS)}")
    if values is None:
        from g6.config import load_settings

        values = load_settings().values
    url_key, default, key_name = PROGRAMS[program]
    return check_loopback_url(values.get(url_key) or default), (values.get(key_name) or None)


def call_service(program: str, method: str, path: str, *, body: bytes | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = 10.0,
                 values: Mapping[str, str] | None = None, **_: Any) -> ServiceReply:
    """One request to ``program`` on this machine. Never follows a redirect."""
    base, key = program_url(program, values)
    sent = {"Accept": "application/json", "User-Agent": "g6-evidence (read-only)", **dict(headers or {})}
    if key:
        sent["Authorization"] = f"ApiKey {key}"
    try:
        with httpx.Client(transport=httpx.HTTPTransport(trust_env=False, retries=0), timeout=timeout,
                          follow_redirects=False, trust_env=False) as c:
            r = c.request(method, f"{base}{path}", content=body, headers=sent)
            return ServiceReply(r.status_code, dict(r.headers), r.content)
    except httpx.TimeoutException:
        raise ProgramTimeout(f"{program} at {base} did not answer in time") from None
    except (httpx.ConnectError, httpx.NetworkError):
        raise ProgramMissing(f"no {program} answers at {base}; {HOW_TO_RUN[program]}") from None


class CallerTransport(httpx.BaseTransport):
    """Sends the reader's requests through a ``caller`` (``call_service`` or a test's stand-in)."""

    def __init__(self, caller: Caller, program: str = "elasticsearch") -> None:
        self._caller = caller
        self._program = program

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode("ascii")
        body = request.read() or None
        try:
            reply = self._caller(self._program, request.method, path, body=body,
                                 headers={"Content-Type": request.headers["content-type"]}
                                 if "content-type" in request.headers else {})
        except ProgramTimeout as e:
            raise httpx.ReadTimeout(str(e), request=request) from None
        except ProgramMissing as e:
            raise httpx.ConnectError(str(e), request=request) from None
        if not isinstance(reply, ServiceReply):
            raise httpx.ProtocolError(f"the caller returned {type(reply).__name__}, not outside.ServiceReply")
        return httpx.Response(reply.status, headers=list(dict(reply.headers).items()), content=reply.body,
                              request=request)
