"""ReplayWeb.page for the signed-WACZ tests: its app and the WACZ files served on a loopback port by a small static
server started here (starlette's StaticFiles, which answers Range requests, as ReplayWeb.page asks for a WACZ's
parts), and an archive opened in the test's headless Chromium, read back as the app shows it.

``http://127.0.0.1`` is a secure context, so the app's service worker runs. The app loads a WACZ in a web
worker that runs its bundled wabac.js, which checks the signature of ``datapackage-digest.json`` with WebCrypto
and keeps its verdicts in IndexedDB (``db:<archive id>``, store ``verification``); the archive's info panel
shows what wabac.js's ``getVerifyInfo`` makes of them. ``open_archive`` returns both: the panel's text and
wabac.js's own verdicts, since the panel counts a ``signature`` verdict as verified whatever it says
(wabac.js 2.26.4 ``getVerifyInfo``: ``"signature" === id`` counts as valid before ``matched`` is looked at).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

WAIT = 120.0  # seconds the app may take to load and show an archive: a guard against a hang, not a timing


@contextmanager
def serve(app: Path, archives: Path) -> Iterator[str]:
    """``app`` at ``/`` and the files of ``archives`` at ``/wacz/``, on a free loopback port: the base URL.
    The server runs in a thread of this process and is stopped on leaving."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.routing import Mount
    from starlette.staticfiles import StaticFiles

    routes = [Mount("/wacz", StaticFiles(directory=archives)), Mount("/", StaticFiles(directory=app, html=True))]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the static server did not start")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


# the text of a page with every shadow root opened: the app is web components all the way down
_DEEP_TEXT = """(() => { const walk = n => { let s = ''; if (n.shadowRoot) s += walk(n.shadowRoot);
  for (const c of n.childNodes) s += c.nodeType === 3 ? c.textContent : walk(c); return s; };
  return walk(document.body).replace(/\\s+/g, ' '); })()"""

# every verdict wabac.js keeps for one archive (its database db:<archive id>): [{id, expected, matched}]
_VERDICTS = """(async name => {
  if (!(await indexedDB.databases()).some(d => d.name === name)) return 'null';
  return JSON.stringify(await new Promise((res, rej) => { const r = indexedDB.open(name);
    r.onerror = () => rej(r.error);
    r.onsuccess = () => { const db = r.result;
      if (!db.objectStoreNames.contains('verification')) { db.close(); res([]); return; }
      const q = db.transaction('verification').objectStore('verification').getAll();
      q.onsuccess = () => { db.close(); res(q.result); }; q.onerror = () => rej(q.error); }; })); })"""
_ITEM_ID = re.compile(r"Archived Item ID (?:Copy )?(id-[0-9a-f]+)")


@dataclass(frozen=True)
class Shown:
    """An archive as ReplayWeb.page showed it: its info panel's text, and wabac.js's verdicts on it."""

    text: str
    verdicts: dict[str, dict[str, Any]]  # verdict id -> {expected, matched}

    def field(self, label: str, following: str) -> bool:
        """Whether the panel shows ``label`` followed by ``following`` (the app puts a "Copy" button between)."""
        return any(self.text.find(f"{label}{sep}{following}") >= 0 for sep in (" ", " Copy "))


def evaluate_async(browser: Any, expression: str) -> Any:
    res = browser.send("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True})
    if "exceptionDetails" in res:
        raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
    return res["result"].get("value")


def open_archive(browser: Any, base: str, name: str, page_params: str = "") -> Shown:
    """Open ``/wacz/<name>`` in ReplayWeb.page at ``base`` (in a new tab of ``browser``) on its Archive Info
    view, wait until the panel shows its Validation line, and read the panel and wabac.js's verdicts."""
    source = quote(f"{base}/wacz/{name}", safe="")
    browser.open_url(f"{base}/index.html?source={source}{page_params}#view=info")
    deadline = time.monotonic() + WAIT
    while True:
        text = browser.evaluate(_DEEP_TEXT) or ""
        if "Validation" in text and "Observer Public Key" in text:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"ReplayWeb.page did not show {name}'s archive info: {text[:600]}")
        time.sleep(0.25)
    item = _ITEM_ID.search(text)
    if item is None:
        raise AssertionError(f"no archive id in ReplayWeb.page's panel: {text[:600]}")
    rows = json.loads(evaluate_async(browser, f"({_VERDICTS})({json.dumps('db:' + item[1])})"))
    if rows is None:
        raise AssertionError(f"ReplayWeb.page keeps no database for {name} ({item[1]})")
    return Shown(text, {r["id"]: {"expected": r.get("expected"), "matched": r.get("matched")} for r in rows})
