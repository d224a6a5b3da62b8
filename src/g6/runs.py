"""Resumable runs: what a long command (``g6 recheck``, ``g6 fetch --input``) settled, one JSON line an item.

A run file is appended to as each item is decided and fsynced, so a crash loses at most the line it
was writing; running again with the same run id skips every item the file already settles.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson


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
            # lines end at a newline only: a verdict's text may hold U+2028 or U+0085, which str.splitlines
            # would also cut at (orjson and json write both as they are)
            lines = self.path.read_bytes().split(b"\n")
        except FileNotFoundError:
            return done
        for line in lines:
            if not line.strip():
                continue
            try:
                v = self._decode(json.loads(line))
                done[self._key(v)] = v  # a key that is no key (a list: an edited line) is no line either
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut by a crash: that item is done again
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
                f.write(b"".join(_line(v.to_json()) for v in verdicts))
                f.flush()
                os.fsync(f.fileno())


def _line(d: Mapping[str, Any]) -> bytes:
    """One run-file line: orjson (a run writes one per item decided), or ``json.dumps`` for what orjson refuses
    (a lone surrogate, an integer past 64 bits), which ``load`` reads back the same."""
    try:
        return orjson.dumps(d) + b"\n"
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(d).encode("ascii") + b"\n"  # \u escapes: a lone surrogate reads back as written


def scrub(folder: Path, receipt_ids: Collection[str], fields: Sequence[str], detail_fields: Sequence[str] = (),
          mark: Mapping[str, Any] | None = None) -> int:
    """Drop ``fields`` (and ``detail_fields`` of each line's ``detail``) from the lines of every run file in
    ``folder`` whose ``receipt_id`` is one of ``receipt_ids``, adding ``mark`` to their ``detail``: the copies of
    a redacted read's words a run kept (a re-check verdict's new text, its diff). Each file is replaced whole
    (a temp file, fsynced, renamed), so a crash leaves it as it was or scrubbed; a second call finds nothing
    more to do. How many lines were scrubbed."""
    if not receipt_ids or not folder.is_dir():
        return 0
    n = 0
    for path in sorted(folder.glob("*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        out, changed = [], 0
        for line in lines:
            try:
                d = json.loads(line)
            except ValueError:
                out.append(line)  # a torn line: left for the run that reads it
                continue
            detail = d.get("detail") if isinstance(d, dict) else None
            words = isinstance(d, dict) and (any(f in d for f in fields) or isinstance(detail, dict)
                                             and any(f in detail for f in detail_fields))
            if not words or d.get("receipt_id") not in receipt_ids:
                out.append(line)
                continue
            for f in fields:
                d.pop(f, None)
            if isinstance(detail, dict):
                for f in detail_fields:
                    detail.pop(f, None)
                detail.update(mark or {})
            out.append(json.dumps(d, ensure_ascii=False).encode() + b"\n")
            changed += 1
        if changed:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            with tmp.open("wb") as f:
                f.write(b"".join(out))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            n += changed
    return n
