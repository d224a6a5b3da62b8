"""One deadline for a whole read: DNS, connect, TLS, response headers and body.

httpx's timeouts are per socket operation: a server that drips one header byte per second never
trips a 30 s read timeout and holds a fetch for as long as it likes. So the checked client's
transport uses a network backend whose every socket operation (connect, TLS handshake, each read
and write) gets ``min(its own timeout, time left before the deadline)``, and fails at once when
no time is left. The deadline of the fetch running in this thread is found in a context variable,
set by the client around each fetch; a read cut short by it is marked, so the client can tell
``total_timeout`` from an ordinary read timeout.

DNS goes through ``resolve_within``: the resolver runs in a worker thread and is waited for at
most the time left (``getaddrinfo`` has no timeout of its own; a lookup still running when the
deadline passes is abandoned to finish in the background).
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import threading
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import httpcore
import httpx


class DeadlinePassed(httpcore.ReadTimeout):
    """A socket operation asked for after the fetch's deadline (httpx reports it as a timeout)."""


@dataclass
class Deadline:
    at: float
    clock: Callable[[], float]
    cut: bool = False  # a socket operation was shortened or refused because of this deadline

    def remaining(self) -> float:
        return self.at - self.clock()

    def bound(self, timeout: float | None) -> float:
        left = self.remaining()
        if left <= 0:
            self.cut = True
            raise DeadlinePassed("the fetch's total deadline passed")
        if timeout is None or left < timeout:
            self.cut = True  # if this operation now times out, the deadline is why
            return left
        return timeout


_CURRENT: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar("g6_fetch_deadline", default=None)


@contextlib.contextmanager
def running_until(deadline: Deadline) -> Iterator[Deadline]:
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def _bound(timeout: float | None) -> float | None:
    d = _CURRENT.get()
    return timeout if d is None else d.bound(timeout)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bound(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bound(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _bound(timeout)))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend with every operation held to the current fetch's deadline."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _bound(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self._inner.connect_unix_socket(path, _bound(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_DEFAULT_TLS: list[ssl.SSLContext] = []
_DEFAULT_TLS_LOCK = threading.Lock()


def default_tls_context() -> ssl.SSLContext:
    """httpx's own default (certifi's roots, hostname checked, certificates required), made once per process and
    shared by every transport: each one making its own read the whole root bundle again, about 13 ms of CPU per host
    a batch reads (measured), and held it in memory once more."""
    with _DEFAULT_TLS_LOCK:
        if not _DEFAULT_TLS:
            _DEFAULT_TLS.append(httpx.create_ssl_context(verify=True, trust_env=False))
        return _DEFAULT_TLS[0]


def deadline_transport(**kwargs: typing.Any) -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` (no proxies from the environment, no retries) whose sockets obey
    the deadline; TLS by ``verify`` when given, else by ``default_tls_context()``. httpx does not take a
    network backend, so its pool's backend is swapped (the attribute is private;
    ``tests/adapters/test_deadline.py`` fails if httpcore renames it)."""
    kwargs.setdefault("verify", default_tls_context())
    t = httpx.HTTPTransport(trust_env=False, retries=0, **kwargs)
    pool = t._pool
    if not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpcore's ConnectionPool has no _network_backend: the deadline cannot be enforced")
    pool._network_backend = DeadlineBackend(pool._network_backend)
    return t


class ResolveTimeout(Exception):
    """The resolver did not answer before the deadline."""


def resolve_within(resolver: Callable[[str, int], Sequence[str]], host: str, port: int,
                   deadline: Deadline | None) -> list[str]:
    """``resolver(host, port)``, waited for at most until ``deadline``. Its errors are re-raised."""
    if deadline is None:
        return list(resolver(host, port))
    left = deadline.remaining()
    if left <= 0:
        raise ResolveTimeout(host)
    box: dict[str, typing.Any] = {}

    def run() -> None:
        try:
            box["value"] = list(resolver(host, port))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    worker = threading.Thread(target=run, name=f"g6-resolve-{host}", daemon=True)
    worker.start()
    worker.join(left)
    if worker.is_alive():
        raise ResolveTimeout(host)
    if "error" in box:
        raise box["error"]
    return typing.cast(list[str], box["value"])


def current_deadline() -> Deadline | None:
    """The deadline of the fetch running in this context, if any."""
    return _CURRENT.get()
