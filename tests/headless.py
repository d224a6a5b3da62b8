"""A headless Chromium driven over the DevTools protocol on a pipe (no port, no network).

``--remote-debugging-pipe`` makes Chromium read NUL-terminated JSON commands on fd 3 and write
replies and events on fd 4. The browser is started with every background service off and a fresh
profile, opens only ``file://`` pages, and is stopped by its PID.

A test takes one from the ``browser`` fixture of ``tests/conftest.py`` (one per module), or from
:func:`chromium` for other flags.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-default-apps", "--mute-audio")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@contextmanager
def chromium(extra_flags: tuple[str, ...] = ()) -> Iterator[Browser]:
    """A :class:`Browser` on the installed Chromium, closed on leaving. Without one the test is skipped, or
    fails when ``G6_REQUIRE_TOOLS`` is set (CI)."""
    import pytest

    exe = chromium_path()
    if exe is None:
        if os.environ.get("G6_REQUIRE_TOOLS"):
            pytest.fail("chromium is not installed (apt-get install -y chromium)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    with Browser(exe, extra_flags=extra_flags) as b:
        yield b


class Browser:
    def __init__(self, executable: str, timeout: float = 60.0, extra_flags: tuple[str, ...] = ()) -> None:
        self._profile = tempfile.mkdtemp(prefix="g6-chromium-")
        r, self._to_chrome = os.pipe()
        self._from_chrome, w = os.pipe()
        # move the child's ends above 10, so putting them on fd 3 and 4 cannot overwrite one another
        to_chrome_r, from_chrome_w = fcntl.fcntl(r, fcntl.F_DUPFD, 10), fcntl.fcntl(w, fcntl.F_DUPFD, 10)
        os.close(r)
        os.close(w)

        def child_fds() -> None:  # the browser reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, *extra_flags, f"--user-data-dir={self._profile}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4, to_chrome_r, from_chrome_w), preexec_fn=child_fds)  # fds are closed after preexec_fn
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.timeout = timeout
        self.session: str | None = None

    # -- protocol ---------------------------------------------------------------------------
    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            # a guard against a hung browser (the test fails instead of hanging), not a timing assertion
            if not select.select([self._from_chrome], [], [], self.timeout)[0]:
                raise RuntimeError(f"chromium said nothing for {self.timeout} s")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> Any:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session or self.session:
            msg["sessionId"] = session or self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._read_message()
            if e.get("method") == method:
                return e
            self.events.append(e)

    # -- pages ------------------------------------------------------------------------------
    def open(self, path: Path) -> None:
        """A new tab on ``file://path``, waited until its load event."""
        self.open_url(path.resolve().as_uri())

    def open_url(self, url: str) -> None:
        """A new tab on ``url`` (a file, or a server the test started on loopback), waited until its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.events.clear()
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Network.enable")
        self.send("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def requested_urls(self) -> list[str]:
        """Every URL the open page asked for (the page itself included), from the Network events."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def evaluate(self, expression: str) -> Any:
        """Evaluate a DOM query from DevTools (allowed whatever the page's CSP says; the page's own
        scripts are what the tests look for, and this is not one of them)."""
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def screenshot(self, out: Path, width: int = 1200) -> Path:
        import base64

        height = int(self.evaluate("document.documentElement.scrollHeight") or 800)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": min(height, 4000), "deviceScaleFactor": 1, "mobile": False})
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
