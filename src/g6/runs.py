"""Resumable runs: what a long command (``g6 recheck``, ``g6 fetch --input``) settled, one JSON line an item.

A run file is appended to as each item is decided and fsynced, so a crash loses at most the line it
was writing; running again with the same run id skips every item the file already settles.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


class RunState:
    """The results of one run (re-check verdicts; batch fetch results), one JSON line each,
    appended as they are decided. ``decode`` reads a line back, ``key`` names what it settled."""

    def __init__(self, path: Path, decode: Callable[[Mapping[str, Any]], Any], key: Callable[[Any], str]) -> None:
        self.path = path
        self._decode = decode
        self._key = key
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any]:
        done: dict[str, Any] = {}
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return done
        for line in lines:
            try:
                v = self._decode(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut by a crash: that item is done again
            done[self._key(v)] = v
        return done

    def add(self, v: Any) -> None:
        self.add_many([v])

    def add_many(self, verdicts: list[Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a+b") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")  # close a line a crash tore, so this verdict starts on its own
                f.write(b"".join(json.dumps(v.to_json(), ensure_ascii=False).encode() + b"\n" for v in verdicts))
                f.flush()
                os.fsync(f.fileno())
