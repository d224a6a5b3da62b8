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
