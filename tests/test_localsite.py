"""The loopback site (tests and ``g6 demo``): a client that hangs up mid-reply is not a server error."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from g6.demo.site import LocalSite, Reply, SeenRequest

LIMIT = 60.0  # seconds: only a hung handler gets near it


def _handlers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if "process_request_thread" in t.name}


def test_a_client_hanging_up_before_the_reply_prints_no_traceback(capfd: pytest.CaptureFixture[str]) -> None:
    closed = threading.Event()

    def reply(seen: SeenRequest) -> Reply:
        # the reply is made only once the client has reset the connection, so writing it fails
        # every time (not only when a reset happens to land mid-write)
        assert closed.wait(LIMIT)
        return Reply(body=b"x" * 1000)

    site = LocalSite({"/gone": reply}).start()
    try:
        before = _handlers()
        s = socket.create_connection((site.host, site.port))
        s.sendall(f"GET /gone HTTP/1.1\r\nHost: {site.host}\r\n\r\n".encode())
        end = time.monotonic() + LIMIT
        while not site.requests:  # the server has read the request
            assert time.monotonic() < end, "the request never arrived"
            time.sleep(0.005)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()  # linger 0: a reset, not an orderly close
        closed.set()
        while any(t.is_alive() for t in _handlers() - before):  # the handler has ended (it prints before)
            assert time.monotonic() < end, "the handler never ended"
            time.sleep(0.005)
    finally:
        site.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err
