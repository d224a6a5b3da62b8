"""The hostile-page world of the browser attack tests, all on loopback.

It reuses ``tests/browser/world.py`` (listeners that count connections, a checked client under the production
policy whose resolver gives public-looking names public-looking addresses that its transport sends to loopback
servers) and adds:

* ``Recorder``: a stand-in for the launch's dead proxy. The launch points Chromium at a port g6 holds bound and
  never listens on, so whatever Chromium sends that the DevTools ``Fetch`` domain did not pause dies there,
  unseen. A test that wants to *see* those requests starts the browser with ``--proxy-server`` pointed at a
  ``Recorder`` instead (Chromium takes the last ``--proxy-server`` given): each connection's first line
  (``CONNECT host:443``, ``GET http://…``) is what escaped the interception. The recorder answers 502 and
  closes; it never forwards anything.
* ``secure_world``: the page served as ``https://site.example/`` by a loopback TLS server with a test PKI
  (``tests/tls_pki.py``), read by a checked client that trusts the test root: a secure context, as most real
  pages are, so the features only secure contexts have (FedCM, worklets, the Cache API…) can be tried.
* ``started_pool``: a pool whose browser is started at once, before any listener thread blocks in
  ``accept()`` (finding 15: the launch fails when fd 3 or 4 is not open in the process at fork).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_BROWSER_TESTS = str(Path(__file__).resolve().parent.parent / "browser")
if _BROWSER_TESTS not in sys.path:
    sys.path.insert(0, _BROWSER_TESTS)

from world import (  # noqa: E402
    PUBLIC,
    Listener,
    MappedTransport,
    listeners,
    mapped_client,
    marked_processes,
    need_chromium,
    wait_until,
)

from g6.adapters import CheckedClient, FetchPolicy  # noqa: E402
from g6.adapters.browser import RenderLimits  # noqa: E402
from g6.adapters.browser.pool import BrowserPool  # noqa: E402
from g6.adapters.net.deadline import deadline_transport  # noqa: E402
from g6.adapters.net.tls import trust_context  # noqa: E402
from g6.demo.site import LocalSite, Reply, Route  # noqa: E402
from g6.fetch.capture import FetchResult  # noqa: E402
from g6.fetch.render import fetch_rendered  # noqa: E402
from g6.home import EvidenceHome  # noqa: E402
from g6.ledger.receipts import Receipt  # noqa: E402
from tests.tls_pki import TestPKI  # noqa: E402

__all__ = ["PUBLIC", "ROBOTS", "Capture", "Listener", "Recorder", "capture", "listeners", "mapped_client",
           "marked_processes", "need_chromium", "public_site", "secure_world", "started_pool", "wait_until"]

ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")


@contextlib.contextmanager
def started_pool(size: int = 1, extra_flags: tuple[str, ...] = ()) -> Iterator[BrowserPool]:
    """A locked-down pool whose first browser is already running (started before the test's listener threads)."""
    need_chromium()
    with BrowserPool(size, extra_flags=extra_flags) as p:
        with p.browser():
            pass
        yield p


class Recorder:
    """Listens on 127.0.0.1 in place of the dead proxy and records the first line of every connection."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._run, daemon=True).start()

    @property
    def flag(self) -> str:
        return f"--proxy-server=http://127.0.0.1:{self.port}"

    def seen(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def _run(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(5)
            data = b""
            while b"\r\n" not in data and len(data) < 8192:
                chunk = conn.recv(8192)
                if not chunk:
                    break
                data += chunk
            with self._lock:
                self.lines.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.close()


@dataclass
class Capture:
    """One capture and what it left: the result, the capture receipt, its sub-resource receipts in order."""

    home: EvidenceHome
    result: FetchResult
    receipt: Receipt
    subs: list[Receipt]

    @property
    def cap(self) -> dict[str, Any]:
        assert self.receipt.capture is not None
        return self.receipt.capture

    def blob(self, name: str) -> bytes:
        ref = self.cap.get(name)
        return self.home.store.read_as(ref) if ref else b""

    @property
    def text(self) -> str:
        return self.blob("text").decode("utf-8", "replace")

    def subs_for(self, needle: str) -> list[Receipt]:
        return [s for s in self.subs if needle in str(s.request.get("url"))]


def capture(home: EvidenceHome, client: CheckedClient, pool: BrowserPool, url: str, **limits: Any) -> Capture:
    result = fetch_rendered(home, client, pool, url, limits=RenderLimits(**limits))
    receipt = home.ledger.get(result.receipt_id)
    subs = [e.receipt for e in home.ledger.entries() if e.receipt.links.get("capture") == receipt.receipt_id]
    return Capture(home, result, receipt, subs)


@contextlib.contextmanager
def public_site(routes: Mapping[str, Route],
                **names: Mapping[str, Route]) -> Iterator[tuple[LocalSite, CheckedClient, MappedTransport]]:
    """``routes`` served as ``http://site.example/`` (and each of ``names`` as ``http://NAME.example/``) under the
    production policy (loopback refused); ``loop.example`` resolves to 127.0.0.1. The transport logs every address the
    client asked it to connect to."""
    sites = {"site.example": LocalSite({"/robots.txt": ROBOTS, **routes}).start()}
    for name, rts in names.items():
        sites[f"{name}.example"] = LocalSite({"/robots.txt": ROBOTS, **rts}).start()
    client, transport = mapped_client({n: s.port for n, s in sites.items()},
                                      extra_names={"loop.example": ["127.0.0.1"]})
    try:
        yield sites["site.example"], client, transport
    finally:
        client.close()
        for s in sites.values():
            s.stop()


@contextlib.contextmanager
def secure_world(routes: Mapping[str, Route], tmp: Path, policy: Callable[[str], FetchPolicy] | None = None,
                 ) -> Iterator[tuple[LocalSite, CheckedClient, TestPKI]]:
    """``routes`` served as ``https://site.example/`` by a loopback TLS server (a leaf of a test PKI for
    site.example); the checked client trusts the test root, maps site.example to it, refuses loopback."""
    pki = TestPKI.make(tmp)
    site = pki.site({"/robots.txt": ROBOTS, **routes}, pki.leaf("site.example"))
    transport = MappedTransport({(PUBLIC[0], 80): site.port},
                                inner=deadline_transport(verify=trust_context(str(pki.ca_bundle))))

    def resolve(host: str, port: int) -> list[str]:
        if host == "site.example":
            return [PUBLIC[0]]
        if host == "loop.example":
            return ["127.0.0.1"]
        raise OSError(f"no such host {host}")

    pol = (policy or (lambda ca: FetchPolicy(host_pause=0.0, connect_timeout=5, read_timeout=5, total_timeout=20,
                                             ca_bundle=ca)))(str(pki.ca_bundle))
    client = CheckedClient(pol, transport=transport, resolver=resolve)
    try:
        yield site, client, pki
    finally:
        client.close()
        site.stop()
