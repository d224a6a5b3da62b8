"""``g6 serve`` under 50 concurrent clients on loopback, requests/s, against a static file server serving the
same bytes.

Ours: ``g6 serve --port 0 --tiles DIR`` over a home of signed receipts, a checkpoint and its published tiles
(and, when the home holds captures, a memento and a TimeMap), as its own process. The reference: the same
server stack with nothing of ours in it, uvicorn + Starlette ``StaticFiles`` serving each answer's bytes from
a file (``python -m bench.serve --static DIR``), also its own process. Both are single processes with
uvicorn's defaults, so the ratio is what answering from the home costs over answering from a file.

The client is this process: 50 connections at once (asyncio, HTTP/1.1 keep-alive, one request in flight on
each), every answer read whole and compared with the bytes expected, so a server that answers fast but
wrong fails the benchmark instead of winning it. Rounds alternate ours and the reference (best round shown,
every round's ratio printed): the machine is shared, and a slow moment should hit both.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from bench.report import line_by_rounds
from tests.serve.server import started

CLIENTS = 50
SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)/ ")
ROOT = Path(__file__).resolve().parent.parent


# -- the client: 50 keep-alive connections, every answer checked ------------------------------------------------
async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
    if "content-length" in headers:
        return status, await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await reader.readexactly(size + 2))
            if size == 0:
                return status, b"".join(p[:-2] for p in parts)
    raise AssertionError(f"an answer with neither Content-Length nor chunked encoding: {headers}")


async def _client(port: int, path: str, want: bytes, n: int, headers: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}\r\n".encode()
    try:
        for _ in range(n):
            writer.write(request)
            status, body = await _read_answer(reader)
            if status != 200 or body != want:
                raise AssertionError(f"GET {path} on port {port}: HTTP {status}, {len(body)} bytes, not the "
                                     f"{len(want)} expected")
    finally:
        writer.close()


def load(port: int, path: str, want: bytes, total: int, headers: str = "") -> float:
    """Seconds for ``total`` GETs of ``path`` spread over 50 concurrent connections, every answer checked."""
    each = max(1, total // CLIENTS)

    async def run() -> float:
        t = time.perf_counter()
        await asyncio.gather(*(_client(port, path, want, each, headers) for _ in range(CLIENTS)))
        return time.perf_counter() - t

    return asyncio.run(run())


# -- the two servers, each its own process, stopped by PID -----------------------------------------------------
@contextmanager
def _process(cmd: list[str], pattern: re.Pattern[str], env: dict[str, str] | None = None) -> Iterator[int]:
    """``cmd`` running until the block ends (stopped by PID): the port it printed on stderr."""
    with started(cmd, pattern, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}, cwd=ROOT) as m:
        yield int(m.group(1))


def g6_serve(home: Path, tiles: Path) -> AbstractContextManager[int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    return _process([sys.executable, "-m", "g6", "--home", str(home), "serve", "--port", "0", "--tiles", str(tiles)],
                    SERVING, env)


def static_serve(folder: Path) -> AbstractContextManager[int]:
    return _process([sys.executable, "-m", "bench.serve", "--static", str(folder)], re.compile(r"static port (\d+)"))


def _static_main(folder: str) -> None:
    """The reference: uvicorn + Starlette StaticFiles over ``folder``, on a free loopback port (printed)."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"static port {sock.getsockname()[1]}", file=sys.stderr, flush=True)
    app = Starlette(routes=[Mount("/", StaticFiles(directory=folder))])
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])


# -- the home and what is measured --------------------------------------------------------------------------------
def _home(root: Path, receipts: int, captures: int) -> tuple[Path, Path, str, str]:
    """A home holding ``captures`` real fetches of one page of a loopback site (so its TimeMap lists that
    many), then ``receipts`` more signed receipts, a checkpoint of them all, published to a folder: (home,
    tiles, the newest receipt's id, the page's URL)."""
    from g6.adapters import CheckedClient, FetchPolicy
    from g6.demo.site import LocalSite, Reply
    from g6.fetch.capture import fetch
    from g6.home import EvidenceHome
    from g6.ledger import Receipt
    from g6.prove.publish import publish
    from g6.prove.publish_dest import open_destination

    page = ("<html><head><title>A cited page</title></head><body>"
            + "<p>A paragraph of the page that was cited, as it read that day.</p>" * 60 + "</body></html>").encode()
    with EvidenceHome(root / "home", fsync=False) as ev, \
            LocalSite({"/article": Reply(body=page), "/robots.txt": Reply(404, b"")}).start() as site:
        ev.keys.init()
        url = site.url("/article")
        with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
            for _ in range(captures):
                fetch(ev, client, url)
        ev.ledger.append_many([Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                       outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)
                               for i in range(receipts)], ev.signing_key())
        ev.ledger.checkpoint(ev.signing_key())
        publish(ev, open_destination(str(root / "tiles"), {}), latest_only=True)
        rid = [e.receipt.receipt_id for e in ev.ledger.entries(limit=1, newest_first=True)][0]
    return root / "home", root / "tiles", rid, url


def _memento_path(port: int, url: str) -> tuple[str, str]:
    """(the TimeMap's path, the path of the first memento it lists)."""
    import httpx

    timemap = f"/web/timemap/link/{url}"
    r = httpx.get(f"http://127.0.0.1:{port}{timemap}")
    assert r.status_code == 200, (timemap, r.status_code, r.text[:200])
    first = re.search(r'<http://127\.0\.0\.1:\d+(/web/\d+id_/[^>]*)>;\s*rel="(?:first )?memento', r.text)
    assert first is not None, r.text[:400]
    return timemap, first.group(1)


def run(quick: bool = False) -> None:
    total, rounds = (250, 1) if quick else (6000, 3)
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        home, tiles, rid, url = _home(root, 300, 5 if quick else 20)
        static = root / "static"
        static.mkdir()
        with g6_serve(home, tiles) as ours:
            import httpx

            timemap, memento = _memento_path(ours, url)
            paths = {"memento": memento, "timemap": timemap, "receipt": f"/receipt/{rid}",
                     "proof": f"/receipt/{rid}/proof", "tile": "/tile/0/000"}
            wanted = {}
            for name, path in paths.items():
                r = httpx.get(f"http://127.0.0.1:{ours}{path}")
                assert r.status_code == 200, (path, r.status_code, r.text[:200])
                wanted[name] = r.content
                (static / name).write_bytes(r.content)  # the same bytes, as a file
            with static_serve(static) as ref:
                for name, path in paths.items():
                    want = wanted[name]
                    load(ours, path, want, CLIENTS)  # warm both: connections, caches, the home's handles
                    load(ref, f"/{name}", want, CLIENTS)
                    t_ours, t_ref = [], []
                    for _ in range(rounds):
                        t_ours.append(load(ours, path, want, total))
                        t_ref.append(load(ref, f"/{name}", want, total))
                    n = total // CLIENTS * CLIENTS
                    line_by_rounds(f"serve {name}, {CLIENTS} clients ({n})", n, t_ours, t_ref, "req/s",
                                   f"{len(want):,} bytes; reference uvicorn + StaticFiles")
        shutil.rmtree(static)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--static"]:
        _static_main(sys.argv[2])
    else:
        run(quick="--quick" in sys.argv)
