"""``g6 mcp``'s stdin and stdout, passed through two pipes of its own, so that a stop loses no answer.

The SDK ends at EOF on stdin by cancelling the requests under way, and it reads stdin on a thread that no
cancellation reaches, so neither a signal nor the client closing stdin could let a tool call finish and
answer. Here the SDK reads and writes our pipes; one thread copies the client's lines in (noting each
request's id), another copies the SDK's lines out (crossing off each id answered). A stop (SIGINT, SIGTERM,
or the client's EOF) forwards nothing more, waits until every request forwarded has had its answer written,
and only then gives the SDK its EOF: a tool call that was appending a receipt finishes, and its answer
reaches the client.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from typing import Any, BinaryIO

STOPPING = "G6_E_MCP_STOPPING"
_END = b'{"g6-mcp-wire": "end"}\n'  # written after the SDK's last line: the out copier stops at it


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def _request_id(line: bytes, msg: dict[str, Any] | None) -> object:
    """The id of a request the SDK will run and answer, else None. The SDK's own parser decides: a line it
    refuses (``"jsonrpc": "1.0"``, no ``jsonrpc``, ``params`` not an object) or reads as a notification (an id
    that is an object, a float or a boolean) gets no answer, so counting it as under way would hold a stop
    for good."""
    if msg is None or "method" not in msg or "id" not in msg:
        return None
    from mcp.types import JSONRPCRequest, jsonrpc_message_adapter

    try:
        parsed = jsonrpc_message_adapter.validate_json(line, by_name=False)  # as mcp.server.stdio reads it
    except ValueError:  # pydantic's ValidationError is a ValueError
        return None
    return parsed.id if isinstance(parsed, JSONRPCRequest) else None


def _key(value: object) -> str:
    return json.dumps(value, sort_keys=True)  # ids are numbers or strings; 1 and "1" are different ids


class Wire:
    """Takes over fds 0 and 1 on :meth:`open`; :meth:`close` gives them back."""

    def __init__(self) -> None:
        # ids of requests forwarded and not yet answered, with how many of each (the SDK runs and answers two
        # requests under one id both: a stop waits for both answers)
        self._pending: Counter[str] = Counter()
        self._changed = threading.Condition()
        self._forwarding = True
        self.client_ended = threading.Event()  # the client's stdin reached EOF
        self._in_w = -1
        self._write = threading.Lock()  # both copiers write to the client: one line at a time

    def open(self) -> None:
        self._client_in = os.fdopen(os.dup(0), "rb", buffering=0)
        self._client_out = os.fdopen(os.dup(1), "wb", buffering=0)
        in_r, self._in_w = os.pipe()
        out_r, out_w = os.pipe()
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.close(in_r)
        os.close(out_w)
        self._server_out = os.fdopen(out_r, "rb")
        self._threads = [threading.Thread(target=self._copy_in, name="g6-mcp-in", daemon=True),
                         threading.Thread(target=self._copy_out, name="g6-mcp-out", daemon=True)]
        for t in self._threads:
            t.start()

    def _copy_in(self) -> None:
        for line in _lines(self._client_in):
            msg = _message(line)
            id_ = _request_id(line, msg)
            with self._changed:
                if not self._forwarding:
                    if id_ is not None:
                        self._refuse(id_)
                    continue
                if id_ is not None:
                    self._pending[_key(id_)] += 1
                elif msg is not None and msg.get("method") == "notifications/cancelled":
                    params = msg.get("params")  # a cancelled request gets no answer (MCP): stop waiting for it
                    if isinstance(params, dict):
                        self._answered(_key(params.get("requestId")))
                        self._changed.notify_all()
                os.write(self._in_w, line)
        self.client_ended.set()

    def _refuse(self, id_: object) -> None:
        answer = {"jsonrpc": "2.0", "id": id_, "error": {
            "code": -32000, "message": f"{STOPPING}: g6 mcp is stopping; this request was not run"}}
        with self._write:
            self._client_out.write(json.dumps(answer).encode() + b"\n")

    def _copy_out(self) -> None:
        for line in self._server_out:
            if line == _END:
                break
            msg = _message(line)
            # counted as answered before the client can read the answer: a client that signals the server as
            # soon as it has it must not find the request still under way ("stopping once the 1 request under way
            # finishes"). A stop that sees it answered waits for this line all the same: close() lets every line
            # out before it gives fd 1 back.
            if msg is not None and "method" not in msg and "id" in msg:
                with self._changed:
                    self._answered(_key(msg["id"]))
                    self._changed.notify_all()
            with self._write:
                self._client_out.write(line)

    def _answered(self, key: str) -> None:
        """One request under ``key`` needs no more waiting for (held under ``_changed``)."""
        if self._pending[key] > 1:
            self._pending[key] -= 1
        else:
            self._pending.pop(key, None)

    def stop_forwarding(self) -> int:
        """Forward no more requests; the number forwarded and still unanswered."""
        with self._changed:
            self._forwarding = False
            return sum(self._pending.values())

    def answered(self, wait: float) -> bool:
        """Whether every forwarded request has had its answer written, waiting at most ``wait`` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending, wait)

    def end_input(self) -> None:
        """The SDK's EOF: it then ends its loop."""
        with self._changed:
            self._forwarding = False
            if self._in_w >= 0:
                os.close(self._in_w)
                self._in_w = -1

    def close(self) -> None:
        """Once the SDK has ended: let its last lines out, then give fd 1 back. (The SDK keeps a duplicate of
        the pipe's write end open for good, so the copier would never see EOF: it stops at a line of ours,
        which a pipe delivers after everything written before it.)"""
        self.end_input()
        os.write(1, _END)
        self._threads[1].join()
        os.dup2(self._client_out.fileno(), 1)


def _lines(stream: BinaryIO) -> Any:
    """Lines of an unbuffered stream, read as they come (a client waits for each answer before it writes). A
    long line's chunks are kept apart and joined once: adding each to the whole and splitting it again cost
    time in the square of the line's length (a 60 MB argument took a minute)."""
    pieces: list[bytes] = []  # the line so far, its newline not yet read
    while chunk := stream.read(65536):
        *ends, rest = chunk.split(b"\n")
        for end in ends:
            yield b"".join(pieces) + end + b"\n"
            pieces = []
        if rest:
            pieces.append(rest)
    if pieces:
        yield b"".join(pieces)
