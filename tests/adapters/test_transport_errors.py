"""The transport-error classification as a pure function: every httpx error class a request can raise, to the
outcome and reason a receipt records (the checked client's tests cover the same over real sockets)."""

from __future__ import annotations

import httpx
import pytest

from g6.adapters.net.transport_errors import classify_transport_error, safe_message
from g6.adapters.outcomes import Outcome

REQ = httpx.Request("GET", "http://example.invalid/")


@pytest.mark.parametrize(("error", "want"), [
    (httpx.ConnectTimeout("timed out", request=REQ), (Outcome.UNREACHABLE, "connect_timeout")),
    (httpx.ReadTimeout("timed out", request=REQ), (Outcome.UNREACHABLE, "read_timeout")),
    (httpx.WriteTimeout("timed out", request=REQ), (Outcome.UNREACHABLE, "timeout")),
    (httpx.PoolTimeout("timed out", request=REQ), (Outcome.UNREACHABLE, "timeout")),
    (httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", request=REQ),
     (Outcome.UNREACHABLE, "tls")),
    (httpx.ConnectError("[Errno 111] Connection refused", request=REQ), (Outcome.UNREACHABLE, "connect")),
    (httpx.DecodingError("bad gzip", request=REQ), (Outcome.PARSE_FAILED, "content_decoding")),
    (httpx.RemoteProtocolError("Server disconnected without sending a response.", request=REQ),
     (Outcome.HTTP_ERROR, "protocol_error")),
    (httpx.ReadError("connection reset", request=REQ), (Outcome.UNREACHABLE, "network")),
    (httpx.TooManyRedirects("too many", request=REQ), (Outcome.HTTP_ERROR, "TooManyRedirects")),
])
def test_each_transport_error_has_its_outcome_and_reason(error: httpx.HTTPError, want: tuple[Outcome, str]) -> None:
    assert classify_transport_error(error) == want


def test_a_message_is_kept_short() -> None:
    assert safe_message(ValueError("x" * 1000)) == "x" * 300
