"""A small HTTP server on loopback with scripted replies: the demo's site and the tests' peer.

It binds 127.0.0.1 (or another loopback address) on a free port, serves each path from a table of
``Reply`` values or callables, records every request it gets, and can misbehave on purpose
(raw bytes, slow drips, endless bodies) so that clients are tested against a real socket.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    content_type: str | None = "text/html; charset=utf-8"
    chunks: Callable[[], Iterable[bytes]] | None = None  # streamed without Content-Length
    chunk_delay: float = 0.0
    raw: bytes | None = None  # written as-is, then the connection closes


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    server: str
    body: bytes = b""


Route = Reply | Callable[["SeenRequest"], Reply]


@dataclass
class LocalSite:
    routes: Mapping[str, Route] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port_wanted: int = 0
    requests: list[SeenRequest] = field(default_factory=list)
    ssl_context: ssl.SSLContext | None = None  # serve HTTPS (tests of SNI and certificate checks)

    def __post_init__(self) -> None:
        if not ipaddress.ip_address(self.host).is_loopback:
            raise ValueError("LocalSite only binds loopback addresses")
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._open: set[socket.socket] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl_context else 'http'}://{h}:{self.port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def start(self) -> LocalSite:
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in one segment: without this, Nagle and delayed ACKs add ~40 ms
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def setup(self) -> None:
                super().setup()
                site._open.add(self.connection)

            def handle(self) -> None:
                # a client that hangs up before the reply is flushed (a refused or cut-off read) is
                # not the server's error: no traceback on stderr
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def finish(self) -> None:
                site._open.discard(self.connection)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().finish()  # flushes what is still buffered

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                self.do_GET()

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 1 << 20)) if length else b""
                seen = SeenRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                   site.host, body)
                site.requests.append(seen)
                route = site.routes.get(self.path.split("?", 1)[0]) or site.routes.get(self.path)
                if route is None:
                    reply = site.routes.get("*") or Reply(404, b"not here")
                else:
                    reply = route
                if callable(reply) and not isinstance(reply, Reply):
                    reply = reply(seen)
                assert isinstance(reply, Reply)
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _send(self, reply: Reply) -> None:
                if reply.raw is not None:
                    self.wfile.write(reply.raw)
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                if reply.content_type:
                    self.send_header("Content-Type", reply.content_type)
                for k, v in reply.headers:
                    self.send_header(k, v)
                if reply.chunks is None:
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for chunk in reply.chunks():
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                    self.wfile.write(chunk)
                    self.wfile.flush()

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            address_family = socket.AF_INET6 if ":" in self.host else socket.AF_INET

        self._server = Server((self.host, self.port_wanted), Handler)
        if self.ssl_context is not None:
            self._server.socket = self.ssl_context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut kept-alive connections, so a stopped site really stops answering."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for conn in list(self._open):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> LocalSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
