"""A small world for browser tests, all on loopback: listeners that count what reaches them, and a checked client
whose resolver gives public-looking names public-looking addresses that its transport sends to loopback servers.

The production policy runs unchanged (``allow_loopback`` off): the pages are "public" to the client, while
every address a page's script names on loopback, in a private range or at 169.254.169.254 is refused by the
classifier before any connection. The transport refuses to connect anywhere it was not told to map, and logs
every address it was asked for, so a test can show that a refused address was never even tried.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import httpx

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.net.deadline import deadline_transport

# Public addresses (not in any IANA special-purpose block) the resolver hands out: never connected to, the
# transport maps each to a loopback port.
PUBLIC = ("93.184.215.14", "93.184.215.15", "93.184.215.16", "93.184.215.17")


class Listener:
    """A TCP (or UDP) socket on 127.0.0.1 that counts connections accepted (datagrams received) and answers
    a TCP connection with a small HTTP page, so a browser that reaches it sees success."""

    def __init__(self, udp: bool = False) -> None:
        self.udp = udp
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        if not udp:
            self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.count = 0
        self._lock = threading.Lock()
        self._closed = False
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._closed:
            try:
                if self.udp:
                    self.sock.recvfrom(65536)
                    conn = None
                else:
                    conn, _ = self.sock.accept()
            except OSError:
                return
            with self._lock:
                self.count += 1
            if conn is not None:
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def _answer(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(5)
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 7\r\n"
                         b"Access-Control-Allow-Origin: *\r\nConnection: close\r\n\r\nreached")

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


@dataclass
class MappedTransport(httpx.BaseTransport):
    """Connects (address, port) pairs it was given to loopback ports, refuses every other address, and logs
    every address it was asked to connect to."""

    routes: Mapping[tuple[str, int], int]
    inner: httpx.BaseTransport = field(default_factory=deadline_transport)
    asked: list[str] = field(default_factory=list)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        self.asked.append(host)
        port = self.routes.get((host, request.url.port or 80))
        if port is None:
            raise httpx.ConnectError(f"the test transport connects nowhere but mapped addresses, not {host}")
        return self.inner.handle_request(
            httpx.Request(request.method, request.url.copy_with(host="127.0.0.1", port=port),
                          headers=request.headers, extensions=request.extensions))

    def close(self) -> None:
        self.inner.close()


def mapped_client(names: Mapping[str, int], *, extra_names: Mapping[str, list[str]] | None = None,
                  policy: FetchPolicy | None = None) -> tuple[CheckedClient, MappedTransport]:
    """A checked client under the production policy (no loopback) in which ``names`` (host -> the loopback port
    serving it on port 80) resolve to public addresses; ``extra_names`` resolve as given (a name to loopback,
    to a private address…)."""
    table: dict[str, list[str]] = {}
    routes: dict[tuple[str, int], int] = {}
    for (name, port), addr in zip(names.items(), PUBLIC, strict=False):
        table[name] = [addr]
        routes[(addr, 80)] = port
    table.update(extra_names or {})

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"no such host {host}")
        return table[host]

    transport = MappedTransport(routes)
    pol = policy or FetchPolicy(host_pause=0.0, connect_timeout=5, read_timeout=5, total_timeout=20)
    return CheckedClient(pol, transport=transport, resolver=resolve), transport


@contextlib.contextmanager
def listeners(names: list[str], udp: tuple[str, ...] = ()) -> Iterator[dict[str, Listener]]:
    made = {n: Listener(udp=n in udp) for n in names}
    try:
        yield made
    finally:
        for x in made.values():
            x.close()


def need_chromium() -> str:
    """The installed Chromium; without one the test is skipped, or fails under ``G6_REQUIRE_TOOLS`` (CI)."""
    import os

    import pytest

    from g6.adapters.browser import BrowserUnavailable, find_chromium

    try:
        return find_chromium()
    except BrowserUnavailable as e:
        if os.environ.get("G6_REQUIRE_TOOLS"):
            pytest.fail(str(e))
        pytest.skip(str(e))


def browser_processes(pgid: int, kind: str | None = None) -> list[int]:
    """Every process in the process group ``pgid`` (a browser's, which its children share), of ``--type=kind``
    when given."""
    from pathlib import Path

    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            group = int((d / "stat").read_text().rsplit(")", 1)[1].split()[2])
            cmd = (d / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if group == pgid and (kind is None or f"--type={kind}".encode() in cmd):
            pids.append(int(d.name))
    return pids


def marked_processes(owner_prefix: str) -> list[int]:
    """Every process whose environment carries a ``G6_BROWSER_OWNER`` starting with ``owner_prefix`` (a browser
    and the crash handlers it starts in sessions of their own)."""
    from pathlib import Path

    from g6.adapters.browser.launch import OWNER_ENV

    mark = f"{OWNER_ENV}={owner_prefix}".encode()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(e.startswith(mark) for e in env):
            pids.append(int(d.name))
    return pids


def wait_until(done: Callable[[], bool], limit: float = 30.0) -> bool:
    """Poll ``done`` until it holds (a guard against a browser that never acts, not a timing assertion)."""
    import time

    end = time.monotonic() + limit
    while time.monotonic() < end:
        if done():
            return True
        time.sleep(0.05)
    return done()
