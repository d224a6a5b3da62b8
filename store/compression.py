"""Blobs kept compressed at rest (zstd), read back as the raw bytes they were.

A compressed blob lives beside where its raw file would, as ``<blake3 hex>.zst`` (one zstd frame);
its digests, its name and its recorded size stay those of the raw bytes, and every reader (``open``,
``read``, ``check``) sees raw bytes. An uncompressed blob keeps its plain name, so a store written
before compression existed, or with it off, keeps working beside new compressed blobs.

What is compressed (``G6_BLOB_COMPRESSION=zstd``, the default): bodies of 512 bytes or more that are text — by the
content type when the writer is told it, else by a sniff of the first bytes (no NUL byte) — and
never bodies that already are compressed (PDF, images, audio/video, archives, fonts), which the
magic numbers at their start give away. ``G6_BLOB_COMPRESSION=off`` keeps every new blob raw.

Decompression is bounded by the recorded raw size: a frame that inflates past it is an error, not
a memory blow-up.

A stored ``.zst`` file is exactly what the writer made, one of its two shapes: a held body is one zstd
frame (RFC 8878 section 3.1.1) that declares its size, first byte to last; a streamed body is one frame
without a declared size followed by the 9-byte empty frame that zstandard's stream writer adds when it
is closed (``STREAM_TRAILER``; every streamed blob ever stored ends so). Anything else — a skippable
frame (3.1.2) before or after, another frame, trailing bytes — is ``BlobCorrupt`` for every reader and
for ``verify``, even though a decoder would skip it and serve the right bytes: the file is not what the
store wrote, and an audit that called it ok would vouch for bytes nobody checked (``one_frame_length``
walks the block headers to find where the frame ends, without inflating anything).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import zstandard

from g6.errors import BlobCorrupt, ConfigError

SUFFIX = ".zst"
SETTINGS = ("zstd", "off")
LEVEL = 3  # zstd's default: ~ 300+ MiB/s on text, most of the gain of higher levels
SNIFF = 4096
MIN_SIZE = 512  # smaller bodies are kept raw: a zstd frame would save next to nothing
UNKNOWN_SIZE_LIMIT = 1 << 36  # a compressed blob whose recorded size is lost is hashed up to 64 GiB, no further
MAX_RAW_SIZE = UNKNOWN_SIZE_LIMIT  # a recorded raw size past this (or not a non-negative int) is a corrupt meta
# a frame that declares its size (and agrees with the meta) is inflated in one call into a buffer of that
# size, allocated before a byte is inflated: only up to here, the held bodies' size (``BlobWriter.HOLD``);
# past it, or with no declared size, the output is grown as it is inflated, so what is allocated is what
# the frame really holds, never what a meta (or a forged frame header) claims
ONE_CALL_MAX = 16 << 20
_OUT_CHUNK = 1 << 20
FRAME_MAGIC = b"\x28\xb5\x2f\xfd"  # RFC 8878 3.1.1, little-endian 0xFD2FB528
_MAX_HEADER = 18  # magic, descriptor, window, dictionary id (up to 4), content size (up to 8)
# what ``CompressingFile.finish`` leaves after the frame: closing zstandard's stream writer after the
# FLUSH_FRAME starts and ends a second, empty frame (single segment, content size 0, one empty last raw block)
STREAM_TRAILER = FRAME_MAGIC + b"\x20\x00\x01\x00\x00"

# magic numbers of formats that are compressed already (offset, bytes)
_COMPRESSED_MAGIC: tuple[tuple[int, bytes], ...] = (
    (0, b"%PDF"), (0, b"\x89PNG"), (0, b"\xff\xd8\xff"), (0, b"GIF8"), (0, b"PK\x03\x04"), (0, b"PK\x05\x06"),
    (0, b"\x1f\x8b"), (0, b"BZh"), (0, b"\xfd7zXZ\x00"), (0, b"\x28\xb5\x2f\xfd"), (0, b"7z\xbc\xaf\x27\x1c"),
    (0, b"Rar!"), (0, b"OggS"), (0, b"ID3"), (0, b"fLaC"), (0, b"wOFF"), (0, b"wOF2"), (4, b"ftyp"),
    (8, b"WEBP"), (8, b"AVI "), (0, b"\x1a\x45\xdf\xa3"), (0, b"II*\x00"), (0, b"MM\x00*"),
)
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "application/xhtml",
               "application/atom", "application/rss", "application/x-ndjson", "image/svg")


def parse_setting(value: str | None) -> str:
    v = (value or "zstd").strip().lower()
    if v in ("", "1", "on", "true", "yes", "auto"):
        v = "zstd"
    if v in ("0", "false", "no", "none"):
        v = "off"
    if v not in SETTINGS:
        raise ConfigError(f"G6_BLOB_COMPRESSION must be one of {', '.join(SETTINGS)}, not {value!r}")
    return v


def already_compressed(sample: bytes) -> bool:
    return any(sample[off:off + len(magic)] == magic for off, magic in _COMPRESSED_MAGIC)


def worth_compressing(sample: bytes, content_type: str | None = None) -> bool:
    """Whether a body starting with ``sample`` is text worth keeping compressed."""
    if already_compressed(sample):
        return False
    if content_type:
        ct = content_type.split(";", 1)[0].strip().lower()
        return ct.startswith(_TEXT_TYPES) or ct.endswith(("+json", "+xml"))
    return b"\x00" not in sample[:SNIFF]


_local = threading.local()


def _cctx() -> zstandard.ZstdCompressor:
    """This thread's compressor, kept: a new context costs an allocation of its tables (a few hundred
    KiB, zeroed) on every put. Only for one-call use (``compress_frame``): a streaming writer holds its
    context across calls, so it gets its own."""
    c: zstandard.ZstdCompressor | None = getattr(_local, "cctx", None)
    if c is None:
        c = _local.cctx = zstandard.ZstdCompressor(level=LEVEL)
    return c


def _dctx() -> zstandard.ZstdDecompressor:
    d: zstandard.ZstdDecompressor | None = getattr(_local, "dctx", None)
    if d is None:
        d = _local.dctx = zstandard.ZstdDecompressor()
    return d


def compress_frame(chunks: list[bytes], size: int) -> bytes:
    """One zstd frame of the concatenated ``chunks`` (``size`` bytes in all) that declares its content
    size, so ``read_compressed`` inflates it in one pass straight into the output buffer (a frame
    without the size goes through zstd's window buffer: an extra copy of every byte)."""
    cctx = _cctx()
    if len(chunks) == 1:
        return cctx.compress(chunks[0])
    co = cctx.compressobj(size=size)
    out = [co.compress(c) for c in chunks]
    out.append(co.flush())
    return b"".join(out)


class CompressingFile:
    """A write-only file that zstd-compresses what is written into ``raw``."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._w = zstandard.ZstdCompressor(level=LEVEL).stream_writer(raw, closefd=False)

    def write(self, chunk: bytes) -> int:
        return int(self._w.write(chunk))

    def finish(self) -> None:
        """End the frame; the underlying file stays open (to fsync and close it). The close after the
        flush writes ``STREAM_TRAILER`` (an empty frame) after it, which readers accept only there."""
        self._w.flush(zstandard.FLUSH_FRAME)
        self._w.close()


def one_frame_length(pread: Callable[[int, int], bytes], name: str) -> int:
    """The length in bytes of the zstd frame that starts at offset 0 of a stored blob (``pread(offset,
    n)`` reads from it), found by walking its block headers (RFC 8878 3.1.1.2): nothing is inflated,
    and only 3 bytes per block (at most 128 KiB of output) are read. ``BlobCorrupt`` unless a frame
    starts there: a skippable frame, garbage, or a reserved block type is no blob of ours."""
    head = pread(0, _MAX_HEADER)
    if head[:4] != FRAME_MAGIC:
        raise BlobCorrupt(f"blob {name} is not a zstd frame: it starts with {head[:4].hex() or 'nothing'}, "
                          f"not {FRAME_MAGIC.hex()}")
    try:
        pos = zstandard.frame_header_size(head)
    except zstandard.ZstdError as e:
        raise BlobCorrupt(f"blob {name} has no valid zstd frame header: {e}") from None
    has_checksum = len(head) > 4 and head[4] & 0x04
    while True:
        bh = pread(pos, 3)
        if len(bh) < 3:
            raise BlobCorrupt(f"blob {name}: its zstd frame is cut short at byte {pos}")
        v = int.from_bytes(bh, "little")
        last, kind, size = v & 1, (v >> 1) & 3, v >> 3
        if kind == 3:
            raise BlobCorrupt(f"blob {name}: its zstd frame has a block of the reserved type at byte {pos}")
        pos += 3 + (1 if kind == 1 else size)  # an RLE block holds one byte, repeated ``size`` times
        if last:
            return pos + (4 if has_checksum else 0)


def require_one_frame(total: int, pread: Callable[[int, int], bytes], name: str) -> None:
    """``BlobCorrupt`` unless the ``total`` bytes of a stored blob are exactly one zstd frame as the writer
    makes them (the module docstring): no skippable frame, no other frame, no trailing byte (which a
    decoder would pass over); only a frame of undeclared size (the streamed shape) may end with
    ``STREAM_TRAILER``, byte for byte."""
    end = one_frame_length(pread, name)
    if end > total:
        raise BlobCorrupt(f"blob {name}: its zstd frame is cut short ({total} of its {end} bytes are stored)")
    if end + len(STREAM_TRAILER) == total and pread(end, len(STREAM_TRAILER)) == STREAM_TRAILER and \
            not _declares_size(pread(0, _MAX_HEADER)):
        return
    if end < total:
        raise BlobCorrupt(f"blob {name}: {total - end} bytes follow its zstd frame (another frame, a skippable "
                          "frame or garbage); the store writes one frame and nothing after it")


def _declares_size(header: bytes) -> bool:
    """Whether a frame header (already found valid by ``one_frame_length``) declares the content size."""
    try:
        return zstandard.frame_content_size(header) != -1
    except zstandard.ZstdError:
        return True  # not the streamed shape, whatever it is


def _pread_bytes(data: bytes) -> Callable[[int, int], bytes]:
    return lambda offset, n: data[offset:offset + n]


class _BoundedReader(io.RawIOBase):
    """Raw bytes of a compressed blob, failing if they run past ``size`` or stop short of it."""

    def __init__(self, f: BinaryIO, size: int, name: str, exact: bool = True) -> None:
        self._f = f
        self._r = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=False, closefd=False)
        self._size = self._left = size
        self._name = name
        self._exact = exact

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._size - self._left

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Only a rewind to the start (or staying put): a verified reader re-reads the same open file."""
        if whence == io.SEEK_CUR and offset == 0 or whence == io.SEEK_SET and offset == self.tell():
            return self.tell()
        if (offset, whence) != (0, io.SEEK_SET):
            raise io.UnsupportedOperation("a compressed blob can only be rewound to its start")
        self._r.close()
        self._f.seek(0)
        self._r = zstandard.ZstdDecompressor().stream_reader(self._f, read_across_frames=False, closefd=False)
        self._left = self._size
        return 0

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        want = len(b)
        try:
            chunk = self._r.read(min(want, self._left + 1) if self._left >= 0 else want)
        except zstandard.ZstdError as e:
            raise BlobCorrupt(f"blob {self._name} does not decompress: {e}") from None
        if len(chunk) > self._left:
            raise BlobCorrupt(f"blob {self._name} decompresses past its recorded size")
        if not chunk and self._left > 0 and want and self._exact:
            raise BlobCorrupt(f"blob {self._name} decompresses to fewer bytes than its recorded size")
        self._left -= len(chunk)
        n = len(chunk)
        b[:n] = chunk
        return n

    def close(self) -> None:
        try:
            self._r.close()
            self._f.close()
        finally:
            super().close()


def open_compressed(source: Path | BinaryIO, size: int, exact: bool = True, name: str | None = None) -> BinaryIO:
    """A reader of the raw bytes of a compressed blob whose raw size is ``size`` (with ``exact``
    False: at most ``size``, for a blob whose recorded size is lost and is being re-hashed). ``source`` is
    the ``.zst`` file's path or the file already open (the folder store opens it without following a link;
    the reader then owns it), ``name`` the blob's name in messages."""
    if isinstance(source, Path):
        f: BinaryIO = source.open("rb")
        name = name or source.name.removesuffix(SUFFIX)
    else:
        f = source
    name = name or "?"
    try:
        fd = f.fileno()
        require_one_frame(os.fstat(fd).st_size, lambda offset, n: os.pread(fd, n, offset), name)
    except BaseException:
        f.close()
        raise
    reader = _BoundedReader(f, size, name, exact)
    return io.BufferedReader(reader, 1 << 20)  # type: ignore[return-value]


def read_compressed(path: Path, size: int) -> bytes:
    return decompress(path.read_bytes(), size, path.name.removesuffix(SUFFIX))


def valid_size(size: object) -> bool:
    """Whether ``size`` can be a blob's recorded raw size (a meta's ``size``): a non-negative int within
    ``MAX_RAW_SIZE``. Anything else is a corrupt meta, never a number to allocate by."""
    return type(size) is int and 0 <= size <= MAX_RAW_SIZE


def decompress(data: bytes, size: int, name: str) -> bytes:
    """The raw bytes of the frame ``data`` of blob ``name``, whose recorded raw size is ``size``:
    never inflating past ``size``, and never allocating more than the frame really inflates to (or
    ``ONE_CALL_MAX``), whatever ``size`` or the frame header claim. ``BlobCorrupt`` otherwise, and for
    ``data`` that is not exactly one frame (``require_one_frame``)."""
    if not valid_size(size):
        raise BlobCorrupt(f"blob {name} has a recorded size of {size!r}, not a size in 0..{MAX_RAW_SIZE}")
    require_one_frame(len(data), _pread_bytes(data), name)
    try:
        # a frame that declares its size is checked before anything is inflated
        declared = zstandard.frame_content_size(data)
        if declared not in (-1, size):
            raise BlobCorrupt(f"blob {name} declares {declared} bytes, not its recorded size {size}")
        if declared == size and size <= ONE_CALL_MAX:  # the common path: one call, straight into the output
            out = _dctx().decompress(data, max_output_size=max(size, 1), allow_extra_data=False)
        else:
            out = _inflate_grown(data, size, name)
    except zstandard.ZstdError as e:
        raise BlobCorrupt(f"blob {name} does not decompress within its recorded size: {e}") from None
    if len(out) != size:
        raise BlobCorrupt(f"blob {name} decompresses to {len(out)} bytes, not its recorded size {size}")
    return out


def _inflate_grown(data: bytes, size: int, name: str) -> bytes:
    """Inflate chunk by chunk (at most ``size`` + 1 bytes in all), so memory follows the output actually
    produced; a fresh context, as a stream reader holds its context until closed."""
    parts: list[bytes] = []
    total = 0
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=False) as r:
        while chunk := r.read(min(_OUT_CHUNK, size + 1 - total)):
            total += len(chunk)
            if total > size:
                raise BlobCorrupt(f"blob {name} decompresses past its recorded size {size}")
            parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)
