"""Hostile peers on loopback for the reliability suite, and bomb bodies built once.

* ``DripServer`` reads a request, then sends its reply one byte at a time and never finishes (or
  sends nothing at all: ``silent``, a TLS handshake that never completes).
* ``resetting_listener`` accepts and resets every connection (SO_LINGER 0): a port that is surely
  "closed" without assuming anything about a fixed port on a shared machine.
* ``bombs()`` builds compression bombs once per process (never per request: compressing 1 GiB when a
  request arrives made a bomb test time out instead of hitting the cap under load).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

BOMB_INFLATED = 1 << 30  # 1 GiB of zeros


class DripServer:
    def __init__(self, reply: bytes = b"HTTP/1.1 200 OK\r\nX-Drip: ", gap: float = 0.05, silent: bool = False) -> None:
        self._reply = reply
        self._gap = gap
        self._silent = silent
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._conns: list[socket.socket] = []
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def url(self, path: str = "/", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            self.connections += 1
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self._silent:
                self._stop.wait()
                return
            conn.settimeout(5)
            seen = b""
            while b"\r\n\r\n" not in seen and len(seen) < 65536:
                data = conn.recv(4096)
                if not data:
                    return
                seen += data
            i = 0
            while not self._stop.is_set():
                byte = self._reply[i:i + 1] or b"a"  # after the prefix: one endless header line
                conn.sendall(byte)
                i += 1
                self._stop.wait(self._gap)
        except OSError:
            return
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._sock.close()
        for c in self._conns:
            with contextlib.suppress(OSError):
                c.close()

    def __enter__(self) -> DripServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def resetting_listener() -> Iterator[int]:
    """A loopback port whose every connection is reset at once. Yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # RST, not FIN

    threading.Thread(target=run, daemon=True).start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        stop.set()
        sock.close()


def _gzip_zeros(total: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = b"\0" * (1 << 20)
    out = [c.compress(block) for _ in range(total >> 20)]
    out.append(c.flush())
    return b"".join(out)


@cache
def bombs() -> dict[str, tuple[str, bytes]]:
    """name -> (Content-Encoding, body). Each inflates to 1 GiB or more of zeros."""
    started = time.monotonic()
    gz = _gzip_zeros(BOMB_INFLATED)  # ~1 MiB
    c = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS)
    block = b"\0" * (1 << 20)
    deflate = b"".join([*(c.compress(block) for _ in range(BOMB_INFLATED >> 20)), c.flush()])
    out = {
        "gzip": ("gzip", gz),
        "deflate": ("deflate", deflate),
        "gzip,gzip": ("gzip, gzip", gzip.compress(gz, 9)),  # ~1.8 KiB on the wire
        "gzip,deflate,gzip": ("gzip, deflate, gzip", gzip.compress(zlib.compress(gz, 9), 9)),
        "gzip,gzip,gzip": ("gzip, gzip, gzip", gzip.compress(gzip.compress(gz, 9), 9)),
    }
    bombs.build_seconds = time.monotonic() - started  # type: ignore[attr-defined]
    return out


RSS_PROBE = textwrap.dedent("""
    import json, resource, sys, tempfile
    from g6.adapters import CheckedClient, FetchPolicy
    from g6.fetch.capture import fetch
    from g6.home import EvidenceHome
    from g6.demo.site import LocalSite, Reply

    names = sys.argv[2:]
    with open(sys.argv[1], "rb") as f:
        bodies = json.load(f)
    para = b"<p>" + b"word " * 40 + b"</p>"
    def page(size):  # streamed, so the server's copy does not count
        return lambda: iter([b"<html><body>", *[para * 100] * (size // (len(para) * 100)), b"</body></html>"])
    routes = {"/warm": Reply(body=b"<p>warm up</p>"),
              "/endless": Reply(chunks=lambda: iter(lambda: b"x" * 65536, None), content_type="text/plain"),
              "/html-under-extract-limit": Reply(chunks=page(2_000_000)),
              "/html-over-extract-limit": Reply(chunks=page(19_000_000))}
    for name in names:
        if "/" + name in routes:
            continue
        enc, path = bodies[name]
        routes["/" + name] = Reply(body=open(path, "rb").read(), content_type="text/plain",
                                   headers=(("Content-Encoding", enc),))
    site = LocalSite(routes).start()
    with tempfile.TemporaryDirectory() as d, EvidenceHome(d, fsync=False) as home:
        home.keys.init()
        # the client's default cap (64 MiB) and default transport: what `g6 fetch` runs with
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, respect_robots=False)) as c:
            fetch(home, c, site.url("/warm"))
            base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            results = {n: fetch(home, c, site.url("/" + n)) for n in names}
            outcomes = {n: r.reason or r.outcome.value for n, r in results.items()}
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    site.stop()
    print(json.dumps({"baseline_kib": base, "peak_kib": peak, "outcomes": outcomes}))
""")


def peak_rss_over_baseline(tmp: Path, names: list[str]) -> dict[str, Any]:
    """Fetch the named bombs in a fresh process; its peak RSS above its own baseline (ru_maxrss)."""
    table = {}
    for name in names:
        if name not in bombs():
            continue  # a plain route the probe serves itself
        enc, body = bombs()[name]
        path = tmp / f"{name}.bin"
        path.write_bytes(body)
        table[name] = (enc, str(path))
    (tmp / "bombs.json").write_text(json.dumps(table))
    out = subprocess.run([sys.executable, "-c", RSS_PROBE, str(tmp / "bombs.json"), *names],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])
