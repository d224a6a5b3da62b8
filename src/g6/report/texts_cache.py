"""Each page's texts (main, visible and hidden: what a quote is looked for in), kept by the body's blake3, so a check
that reads a body it read before (another run, ``--receipts-only``, a re-check of the same report) does not extract
them again (the extraction, trafilatura's main text above all, is most of what judging a stored page costs).

**Where.** ``$G6_HOME/derived/page-texts.sqlite3`` (``DERIVED``, ``FILE``): one row per body and per way it was read
(the URL and content type the texts were read with), the ``blake3`` of the body in its own column. The rows are
copies of a kept body's words: whatever takes a body out of the home (redaction) takes its rows out too,
``forget(root, blake3)``; removing the file loses nothing but time.

**Never trusted over the body.** A row is used only

* for a body just read from the store and found to be the very bytes its receipt names (``read_as`` hashes it),
  so a body that is gone or damaged is never judged from its old texts;
* under the same extractor (``extractor()``: the source of g6's text reading and the versions of the libraries it
  runs), for the same URL and content type;
* with its HMAC, made with a key derived from the home's signing key: a row edited on disk, or made by another
  home, does not verify and the texts are extracted again. Forging one takes the signing key, which forges
  receipts too.

Anything wrong with the file (missing, locked, damaged, full disk) skips the cache: never an error, never a
different verdict.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import importlib.metadata
import sqlite3
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import zstandard

from g6.adapters.html.page import MAX_EXTRACT_BYTES
from g6.adapters.html.text import HiddenText
from g6.adapters.outcomes import Outcome
from g6.cite.page_text import PageTexts

DERIVED = "derived"  # the home's folder of what is derived from kept bodies
FILE = "page-texts.sqlite3"
MAX_PAYLOAD = 4 * MAX_EXTRACT_BYTES  # bytes of a row's texts, decompressed (main + visible + hidden of one body)
# g6's modules whose code decides a body's texts, and the distributions they run: any change to either is another
# extractor, whose rows are not those of this one
_MODULES = ("g6.adapters.html.text", "g6.adapters.html.css", "g6.adapters.html.css_sheets",
            "g6.adapters.html.css_conditions", "g6.adapters.html.refresh", "g6.adapters.html.encoding",
            "g6.adapters.html.page", "g6.adapters.outcomes", "g6.cite.page_text")
_DISTRIBUTIONS = ("trafilatura", "lxml", "lxml-html-clean", "justext", "courlan", "htmldate", "charset-normalizer",
                  "cssselect", "tinycss2")
Row = tuple[str, str, bytes, bytes]  # (body blake3, read key, payload, mac)


@functools.cache
def extractor() -> str:
    """Which extractor made a row: a hash of the source of g6's text reading, the library versions and Python's."""
    h = hashlib.sha256(sys.version.encode())
    for name in _MODULES:
        module = sys.modules.get(name) or __import__(name, fromlist=["_"])
        h.update(name.encode() + b"\0" + Path(str(module.__file__)).read_bytes())
    for dist in _DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        h.update(f"\0{dist}={version}".encode())
    return h.hexdigest()[:32]


def mac_key(signing_key: Any) -> bytes:
    """The rows' HMAC key: a hash of the home key's (deterministic) Ed25519 signature over a fixed label, so it
    takes the signing key to make one, and a new key makes every old row fail (and be made again)."""
    return signing_key.derived_key(b"g6 derived page texts v1")


def read_key(url: str, content_type: str | None) -> str:
    """What, besides the body, the texts depend on: the extractor, the URL and the content type they were read
    with."""
    return hashlib.sha256(f"{extractor()}\n{url}\n{content_type or ''}".encode("utf-8", "surrogatepass")).hexdigest()


def _mac(key: bytes, blake3: str, rkey: str, payload: bytes) -> bytes:
    return hmac.new(key, f"{blake3}\n{rkey}\n".encode() + payload, hashlib.sha256).digest()


def encode(key: bytes, blake3: str, url: str, content_type: str | None, texts: PageTexts) -> Row | None:
    """The row of one body's texts (made where they were extracted: a worker process), or None when they are
    not worth keeping (too large to keep)."""
    data = orjson.dumps([texts.outcome.value, texts.reason, texts.main, texts.visible,
                         [[h.reason, h.how, h.text] for h in texts.hidden], texts.media_type])
    if len(data) > MAX_PAYLOAD:
        return None
    payload = zstandard.ZstdCompressor(level=3).compress(data)
    rkey = read_key(url, content_type)
    return blake3, rkey, payload, _mac(key, blake3, rkey, payload)


def _decode(payload: bytes) -> PageTexts:
    data = zstandard.ZstdDecompressor().decompress(payload, max_output_size=MAX_PAYLOAD)
    outcome, reason, main, visible, hidden, mtype = orjson.loads(data)
    return PageTexts(Outcome(outcome), reason, main, visible, tuple(HiddenText(*h) for h in hidden), mtype)


class TextsCache:
    """The cache of one home (see the module). Thread-safe; used by one process (opened after any fork)."""

    def __init__(self, root: Path, key: bytes) -> None:
        self.path = Path(root) / DERIVED / FILE
        self.key = key
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def _conn(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=2, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a derived cache: a row lost to a crash is made again
                db.execute("CREATE TABLE IF NOT EXISTS texts (blake3 TEXT NOT NULL, read_key TEXT NOT NULL, "
                           "payload BLOB NOT NULL, mac BLOB NOT NULL, PRIMARY KEY (blake3, read_key)) WITHOUT ROWID")
                self._db = db
            except (sqlite3.Error, OSError):
                self._broken = True
        return self._db

    def get(self, blake3: str, url: str, content_type: str | None) -> PageTexts | None:
        """The texts kept for the body ``blake3`` read as ``url`` with ``content_type``, when a row is there and
        verifies; else None (extract them)."""
        rkey = read_key(url, content_type)
        with self._lock:
            db = self._conn()
            if db is None:
                return None
            try:
                row = db.execute("SELECT payload, mac FROM texts WHERE blake3 = ? AND read_key = ?",
                                 (blake3, rkey)).fetchone()
            except sqlite3.Error:
                return None
        # a cell that is not a BLOB (a table someone else made: text, an integer, NULL) is no row of this cache
        if row is None or not isinstance(row[0], bytes) or not isinstance(row[1], bytes) \
                or not hmac.compare_digest(row[1], _mac(self.key, blake3, rkey, row[0])):
            return None
        try:
            return _decode(row[0])
        except (zstandard.ZstdError, ValueError, TypeError):
            return None

    def put_many(self, rows: Iterable[Row | None]) -> None:
        """Keep ``rows`` (``encode``'s), in one transaction; a cache that cannot be written is left as it is."""
        got = [r for r in rows if r is not None]
        if not got:
            return
        with self._lock:
            db = self._conn()
            if db is None:
                return
            try:
                with db:
                    db.execute("BEGIN")
                    db.executemany("INSERT OR REPLACE INTO texts VALUES (?, ?, ?, ?)", got)
            except sqlite3.Error:
                pass

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


def forget(root: Path, blake3: str) -> int:
    """Remove every row derived from the body ``blake3`` (for whatever removes that body from the home), its bytes
    overwritten in the file (``secure_delete``) and the write-ahead log emptied, so no copy is left in
    ``derived/``; how many rows there were. A home without the file has none."""
    path = Path(root) / DERIVED / FILE
    if not path.exists():
        return 0
    db = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete=ON")
        n = db.execute("DELETE FROM texts WHERE blake3 = ?", (blake3,)).rowcount
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n
    finally:
        db.close()


def open_cache(home: Any) -> TextsCache | None:
    """The cache of ``home`` (a home without a signing key has none: its rows could not be checked)."""
    try:
        cache = TextsCache(home.root, mac_key(home.signing_key()))
    except Exception:  # noqa: BLE001 - no key, an unreadable key: no cache, the texts are extracted
        return None
    # known now, in the process that opens the cache: the workers forked after inherit it, and a worker's threads do
    # not each read every distribution's metadata at their first page (functools.cache does not hold them back)
    extractor()
    return cache
