"""What a failed HTTP exchange was, in g6's words: an httpx transport error as a typed outcome and a short
reason (``connect_timeout``, ``tls``, ``protocol_error``…), and its message as a receipt may keep it.

Used by :class:`g6.adapters.net.checked_client.CheckedClient` for every request it sends; a pure function of the
exception, so it is tested on its own without a socket.
"""

from __future__ import annotations

import httpx

from g6.adapters.outcomes import Outcome


def classify_transport_error(e: httpx.HTTPError) -> tuple[Outcome, str]:
    """The outcome and reason a receipt records for ``e`` (the most specific httpx class first)."""
    msg = str(e).lower()
    if isinstance(e, httpx.ConnectTimeout):
        return Outcome.UNREACHABLE, "connect_timeout"
    if isinstance(e, httpx.ReadTimeout):
        return Outcome.UNREACHABLE, "read_timeout"
    if isinstance(e, httpx.TimeoutException):
        return Outcome.UNREACHABLE, "timeout"
    if isinstance(e, httpx.ConnectError):
        return Outcome.UNREACHABLE, "tls" if ("ssl" in msg or "certificate" in msg) else "connect"
    if isinstance(e, httpx.DecodingError):
        return Outcome.PARSE_FAILED, "content_decoding"
    if isinstance(e, httpx.ProtocolError):
        return Outcome.HTTP_ERROR, "protocol_error"
    if isinstance(e, httpx.NetworkError):
        return Outcome.UNREACHABLE, "network"
    return Outcome.HTTP_ERROR, type(e).__name__


def safe_message(e: Exception) -> str:
    """``e``'s message as a receipt's ``detail.message`` keeps it."""
    # httpx messages name URLs and errors, never header values; keep them short all the same.
    return str(e)[:300]
