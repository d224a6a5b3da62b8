"""Content decoding bounded by output size as it happens, not after.

httpx's decoders inflate each network chunk whole: one 64 KiB chunk of a gzip bomb becomes 64 MiB
before any byte cap is looked at, and stacked codings (``gzip, gzip``) multiply that again (a
1.8 KiB body took 2 GiB). Here the raw stream is inflated with ``zlib``'s ``max_length``, so no
single step yields more than ``PIECE`` bytes; the reader stops asking once its cap is reached.

Only one coding is decoded (``gzip``/``x-gzip`` or ``deflate``; the client asks for nothing else).
More than one non-identity coding is *stacked*: the client refuses to decode it (``parse_failed``,
``stacked_content_encoding``) and keeps the raw bytes as evidence, like any coding it cannot decode.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

PIECE = 64 * 1024
DECODABLE = ("gzip", "x-gzip", "deflate")


class ContentDecodingError(Exception):
    """The body is not valid data in its declared coding."""


def codings(header: str | None) -> list[str]:
    """The ``Content-Encoding`` codings in the order applied, ``identity`` left out."""
    return [c.strip().lower() for c in (header or "").split(",") if c.strip() and c.strip().lower() != "identity"]


class BoundedInflater:
    """Inflates one gzip or deflate stream, yielding pieces of at most ``PIECE`` bytes."""

    def __init__(self, coding: str) -> None:
        if coding not in DECODABLE:
            raise ValueError(f"not a decodable coding: {coding!r}")
        self._deflate = coding == "deflate"
        # deflate is meant to be zlib-wrapped, but many servers send raw deflate: httpx tries the
        # wrapped form first and falls back on the first error; so does this.
        self._z = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else zlib.MAX_WBITS | 16)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        buf = data
        while True:
            if self._z.eof:
                return  # trailing bytes after the stream end are ignored, as httpx does
            try:
                out = self._z.decompress(buf, PIECE)
            except zlib.error as e:
                if self._deflate and not self._started:
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    self._started = True
                    continue
                raise ContentDecodingError(f"invalid {'deflate' if self._deflate else 'gzip'} data: {e}") from None
            self._started = True
            buf = self._z.unconsumed_tail
            if out:
                yield out
            # a full piece may leave output pending inside zlib even when all input was taken
            if not buf and len(out) < PIECE:
                return

    def finish(self) -> Iterator[bytes]:
        yield from self.feed(b"")
