"""The stop signals of ``g6 mcp`` from the moment the command starts: loading the server and its SDK takes
seconds, and a SIGINT or SIGTERM in that time must end it as one later does (exit 0), not kill it by the
signal, nor be lost when the parent left SIGINT ignored. This module stays light (no SDK, no tools): the
command imports it before anything heavy, and :func:`g6.mcp.server.serve` takes over the count."""

from __future__ import annotations

import signal
import threading

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignals:
    """Counts SIGINT and SIGTERM once :meth:`install` ran (on the main thread); ``stopped`` is set by the first."""

    def __init__(self) -> None:
        self.count = 0
        self.stopped = threading.Event()

    def install(self) -> StopSignals:
        for sig in STOP_SIGNALS:  # whatever the parent left them at, ignored included
            signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, signum: int, frame: object) -> None:
        self.count += 1
        self.stopped.set()


# The count ``g6``'s console script started when its command line names ``g6 mcp`` (``g6.console``), before it
# loaded the CLI's modules: the command takes it over (``installed``), so a stop in that first second counts too.
_early: StopSignals | None = None


def install_early() -> None:
    """Count the stop signals from now on (the console script, for ``g6 mcp``, before anything heavy loads)."""
    global _early
    _early = StopSignals().install()


def installed() -> StopSignals:
    """The count the console script started, or a new one installed now."""
    return _early if _early is not None else StopSignals().install()
