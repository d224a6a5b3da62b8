"""The DevTools protocol over a pipe: commands out, replies and events in, one reader thread.

Chromium started with ``--remote-debugging-pipe`` reads NUL-terminated JSON commands on its fd 3 and
writes NUL-terminated replies and events on its fd 4: no port is opened, so nothing else on the
machine can drive the browser. This module holds the two ends of those pipes.

One thread reads: a reply is handed to the thread waiting for it (by id), an event to ``on_event``,
which runs on the reader thread and must not wait for a reply itself (it hands work to other threads).
Every wait is bounded (``timeout``): a browser that stops answering is a :class:`BrowserHung`, a pipe
that closes is a :class:`BrowserGone`; both fail every command still waiting.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

# A browser writes a screenshot or a DOM as one message: bounded all the same, so a runaway page
# cannot make the reader hold gigabytes (a message past this closes the connection: BrowserGone).
MAX_MESSAGE = 256 * 1024 * 1024


class BrowserError(Exception):
    """The browser could not do what it was asked (a protocol error reply)."""


class BrowserGone(BrowserError):
    """The DevTools pipe closed: the browser exited or crashed."""


class BrowserHung(BrowserError):
    """The browser did not answer a command in time."""


class _Waiter:
    __slots__ = ("event", "reply", "session")

    def __init__(self, session: str | None = None) -> None:
        self.event = threading.Event()
        self.reply: dict[str, Any] | None = None
        self.session = session


class CDPConnection:
    """Commands to a browser on two pipe ends (``to_browser`` written, ``from_browser`` read)."""

    def __init__(self, to_browser: int, from_browser: int,
                 on_event: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._out, self._in = to_browser, from_browser
        os.set_blocking(to_browser, False)  # writes wait in select, bounded (``_write``)
        self.write_timeout = 30.0
        self._on_event = on_event
        self._lock = threading.Lock()  # one writer at a time; ids in order
        self._next = 0
        self._waiting: dict[int, _Waiter] = {}
        self._closed: str | None = None
        self._reader = threading.Thread(target=self._read_loop, name="g6-cdp-reader", daemon=True)
        self._reader.start()

    def set_event_handler(self, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self._on_event = on_event

    @property
    def closed(self) -> str | None:
        """Why the connection closed, or None while it is open."""
        return self._closed

    # -- reading ---------------------------------------------------------------------------
    def _read_loop(self) -> None:
        buf = bytearray()
        why = "the browser closed the DevTools pipe"
        try:
            while True:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    break
                start = 0
                buf += chunk
                while True:
                    end = buf.find(b"\0", start)
                    if end < 0:
                        break
                    self._dispatch(bytes(buf[start:end]))
                    start = end + 1
                del buf[:start]
                if len(buf) > MAX_MESSAGE:
                    why = f"the browser sent a message over {MAX_MESSAGE} bytes"
                    break
        except OSError as e:
            why = f"the DevTools pipe failed: {e}"
        self._fail_all(why)
        # closed here, by the only thread that reads it: closed elsewhere, its number could be given to
        # another file while this thread still reads it
        with contextlib.suppress(OSError):
            os.close(self._in)

    def _dispatch(self, raw: bytes) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return  # not ours to judge: the browser speaks JSON; a broken line is dropped
        if not isinstance(msg, dict):
            return
        mid = msg.get("id")
        if isinstance(mid, int):
            with self._lock:
                w = self._waiting.pop(mid, None)
            if w is not None:
                w.reply = msg
                w.event.set()
            return
        handler = self._on_event
        if handler is not None and isinstance(msg.get("method"), str):
            with contextlib.suppress(Exception):  # a handler's bug must not stop the reader
                handler(msg)

    def _fail_all(self, why: str) -> None:
        with self._lock:
            if self._closed is None:
                self._closed = why
            waiting, self._waiting = self._waiting, {}
        for w in waiting.values():
            w.event.set()  # reply None: the sender raises BrowserGone

    # -- writing ---------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        """Write one message, waiting at most ``write_timeout`` seconds for the browser to read: a stopped
        browser that no longer reads its pipe is hung, not a writer blocked for ever (holding the lock)."""
        view = memoryview(data)
        end = time.monotonic() + self.write_timeout
        while view:
            try:
                n = os.write(self._out, view)
            except BlockingIOError:
                left = end - time.monotonic()
                if left <= 0 or not select.select([], [self._out], [], left)[1]:
                    raise BrowserHung(f"the browser did not read its DevTools pipe for {self.write_timeout:g} s") \
                        from None
                continue
            view = view[n:]

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 30.0) -> dict[str, Any]:
        """Send one command and wait (at most ``timeout`` seconds) for its reply's result."""
        return self.result(self.start(method, params, session=session), timeout)

    def start(self, method: str, params: dict[str, Any] | None = None, *,
              session: str | None = None) -> tuple[str, _Waiter]:
        """Send one command; its reply is had with :meth:`result`. Commands to one session run in the order
        sent, so several can be started before waiting for any (a target paused before it runs answers some
        only once it runs)."""
        w = self._post(method, params, session, want_reply=True)
        assert w is not None
        return method, w

    def result(self, started: tuple[str, _Waiter], timeout: float = 30.0) -> dict[str, Any]:
        method, w = started
        if not w.event.wait(timeout):
            with self._lock:
                self._waiting = {k: v for k, v in self._waiting.items() if v is not w}
            raise BrowserHung(f"the browser did not answer {method} within {timeout:g} s")
        reply = w.reply
        if reply is None:
            raise BrowserGone(self._closed or "the browser closed the DevTools pipe")
        if "error" in reply:
            err = reply["error"]
            message = err.get("message") if isinstance(err, dict) else err
            raise BrowserError(f"{method}: {str(message)[:300]}")
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    def post(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None) -> None:
        """Send one command without waiting for its reply (its reply, error or not, is dropped)."""
        self._post(method, params, session, want_reply=False)

    def _post(self, method: str, params: dict[str, Any] | None, session: str | None,
              want_reply: bool) -> _Waiter | None:
        msg: dict[str, Any] = {"method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        w = _Waiter(session) if want_reply else None
        with self._lock:
            if self._closed is not None or self._out < 0:
                raise BrowserGone(self._closed or "closed by g6")
            self._next += 1
            msg["id"] = self._next
            if w is not None:
                self._waiting[self._next] = w
            try:
                self._write(json.dumps(msg, separators=(",", ":")).encode() + b"\0")
            except BrowserHung:
                self._waiting.pop(msg["id"], None)
                raise
            except OSError as e:
                self._waiting.pop(msg["id"], None)
                raise BrowserGone(f"the DevTools pipe failed: {e}") from None
        return w

    def fail_session(self, session: str, why: str) -> None:
        """Answer every command still waiting on ``session`` with an error (its target crashed: no reply comes)."""
        with self._lock:
            gone = [(k, w) for k, w in self._waiting.items() if w.session == session]
            for k, _ in gone:
                del self._waiting[k]
        for _, w in gone:
            w.reply = {"error": {"message": why}}
            w.event.set()

    def close(self, wait: float = 5.0) -> None:
        """Close the command pipe (a browser reading its end shuts down) and wait up to ``wait`` seconds for
        the reader to see the other pipe close (the caller ends the process if it does not)."""
        with self._lock:
            if self._out >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._out)
                self._out = -1
            if self._closed is None:
                self._closed = "closed by g6"
        self._fail_all("closed by g6")
        self._reader.join(wait)

    def join_reader(self, wait: float) -> bool:
        """Wait for the reader to end (the browser's end of the pipe closed); whether it did."""
        self._reader.join(wait)
        return not self._reader.is_alive()
