"""Reading a bundle's zip as the hostile input it may be: its layout, its limits, its members.

Nothing is extracted to disk; members are looked up by the names the verifier expects. Member names
that are absolute, hold ``..``, control characters or a backslash, or repeat, fail the index check and
are never opened. Only stored and deflate members are opened (bzip2/LZMA inflate without a bound in the
standard library), and none whose sizes claim more than deflate can produce or overlap another.
``bundle.json`` declares the sha256 and size of every member; each member is inflated at most once,
streaming, never past its declared size, and must hash to what is declared.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from g6.errors import BundleMemberError, G6Error
from g6.ledger.receipts import RepeatedKey, refuse_repeated_keys

SCHEMA = "g6.bundle.v2"  # v2: bundle.json declares each member's size beside its sha256
MAX_MEMBERS = 10_000  # entries in the zip's central directory
MAX_CENTRAL_DIRECTORY = 4 << 20  # bytes; checked before zipfile parses it (it holds all of it in memory)
MAX_INDEX = 2 << 20  # bundle.json and manifest.json (a manifest costs ~5x its size in memory)
MAX_RECORD = 1 << 20  # a receipt, a proof, the checkpoint, a key
MAX_RECORDS_TOTAL = 32 << 20  # all members but blobs, together
MAX_BLOB = 1 << 30
MAX_TOTAL = 4 << 30  # everything the bundle declares, inflated
MAX_PARSED_BODY = 256 << 10  # a page or search reply re-read to check cited text (docs/commands/bundle.md: memory)
MAX_PLAIN_BODY = 4 << 20  # a text body is only decoded, not parsed
DEFLATE_MAX_RATIO = 1032  # deflate cannot inflate more than this per compressed byte
CHUNK = 256 << 10
ALLOWED_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, OSError, NotImplementedError,
               RuntimeError, ValueError, struct.error)
# what a hostile record can make json/rfc8785/our parsers raise: a verdict, never a traceback
RECORD_ERRORS = (G6Error, ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError,
                  UnicodeError)
ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
HEX64 = re.compile(r"[0-9a-f]{64}")
# the only names a bundle has (see the module docstring); anything else is not a bundle's
LAYOUT = re.compile(r"manifest\.json|checkpoint\.note|keys/signing\.pub|keys/checkpoint\.vkey"
                     r"|keys/trusted/[A-Za-z0-9_.-]{1,100}\.pub|receipts/[A-Za-z0-9_-]{1,100}\.json"
                     r"|proofs/[A-Za-z0-9_-]{1,100}\.tlog-proof|blobs/[0-9a-f]{64}|redactions/[0-9a-f]{64}"
                     r"|proofs/consistency/(?:0|[1-9][0-9]{0,18})-(?:0|[1-9][0-9]{0,18})\.tlog-consistency"
                     r"|timestamps/[1-9][0-9]{0,18}-(?:0|[1-9][0-9]{0,5})\.json")



def content_ok(content: Mapping[str, Any] | None) -> bool:
    """Whether ``content`` is a well-formed blob reference (``blake3:<hex>``, ``sha256:<hex>``, a size)."""
    if not content:
        return False
    b3, sha, size = content.get("blake3"), content.get("sha256"), content.get("size")
    return (isinstance(b3, str) and b3.startswith("blake3:") and bool(HEX64.fullmatch(b3[7:]))
            and isinstance(sha, str) and sha.startswith("sha256:") and bool(HEX64.fullmatch(sha[7:]))
            and type(size) is int and size >= 0)


def quoted(s: object, n: int = 80) -> str:
    """An untrusted string as it may appear in a verdict: quoted, escaped, cut."""
    text = str(s)
    return ascii(text[:n] + ("…" if len(text) > n else ""))


def name_problem(name: str) -> str | None:
    if not name:
        return "an empty name"
    if len(name) > 512:
        return "a name over 512 characters"
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        return "an absolute name"
    if "\\" in name or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "a backslash or control character in the name"
    parts = name.split("/")
    if ".." in parts:
        return "'..' in the name"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' path part"
    return None


def central_directory(fp: BinaryIO) -> tuple[int, int, int] | None:
    """(entries, size, offset) of the zip's central directory, read from its end record before
    zipfile parses (and holds in memory) the whole directory. None when there is no end record;
    zipfile then says what is wrong."""
    fp.seek(0, os.SEEK_END)
    size = fp.tell()
    tail_len = min(size, 22 + 0xFFFF)
    fp.seek(size - tail_len)
    tail = fp.read(tail_len)
    i = tail.rfind(b"PK\x05\x06")
    if i < 0 or len(tail) - i < 22:
        return None
    _, _, _, _, entries, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[i:i + 22])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        loc = i - 20  # the zip64 end locator sits right before the end record
        if loc < 0 or tail[loc:loc + 4] != b"PK\x06\x07":
            return None
        _, _, z64_offset, _ = struct.unpack("<4sLQL", tail[loc:loc + 20])
        fp.seek(z64_offset)
        rec = fp.read(56)
        if len(rec) < 56 or rec[:4] != b"PK\x06\x06":
            return None
        _, _, _, _, _, _, _, entries, cd_size, cd_offset = struct.unpack("<4sQ2H2L4Q", rec)
    fp.seek(0)
    return entries, cd_size, cd_offset


def member_problems(infos: list[zipfile.ZipInfo], cd_offset: int | None) -> tuple[list[str], dict[str, str]]:
    """Problems of the archive as a whole, and the members never to open (name -> why)."""
    problems: list[str] = []
    refused: dict[str, str] = {}
    for info in infos:
        shown = quoted(info.filename)
        method = ALLOWED_METHODS.get(info.compress_type)
        if method is None:
            refused[info.filename] = f"{shown} uses compression method {info.compress_type}; bundles use deflate"
        elif info.flag_bits & 0x1:
            refused[info.filename] = f"{shown} is encrypted"
        elif info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            refused[info.filename] = f"{shown} is stored but claims {info.file_size} bytes from {info.compress_size}"
        elif info.file_size > DEFLATE_MAX_RATIO * info.compress_size + 1024:
            refused[info.filename] = (f"{shown} claims {info.file_size} bytes from {info.compress_size} compressed, "
                                      "more than deflate can produce")
    problems += sorted(set(refused.values()))
    # members must not overlap: each local header + data ends before the next starts (a quoted-overlap
    # bomb points many entries at one stream)
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for a, b in zip(ordered, [*ordered[1:], None], strict=True):
        end = a.header_offset + 30 + len(a.orig_filename.encode("utf-8", "replace")) + a.compress_size
        limit = b.header_offset if b is not None else cd_offset
        if limit is not None and end > limit:
            problems.append(f"{quoted(a.filename)} overlaps the next member or the directory")
            refused[a.filename] = f"{quoted(a.filename)} overlaps another member"
    return problems, refused


class Members:
    """The bundle's members, each opened at most once, read bounded by what ``bundle.json`` declares."""

    def __init__(self, z: zipfile.ZipFile, infos: Mapping[str, zipfile.ZipInfo], refused: Mapping[str, str],
                 declared: Mapping[str, tuple[str, int]], progress: Callable[[int, int], None] | None = None) -> None:
        self.z = z
        self.progress = progress
        self.infos = infos
        self.refused = dict(refused)
        self.declared = declared
        self.results: dict[str, str] = {}  # name -> "" when it matched its declaration, else why not
        self.inflated = 0

    def _limit(self, name: str) -> int:
        if name in ("manifest.json", "bundle.json"):
            return MAX_INDEX
        return MAX_BLOB if name.startswith("blobs/") else MAX_RECORD

    def stream(self, name: str, sink: Callable[[bytes], None] | None = None) -> None:
        """Inflate ``name`` chunk by chunk into ``sink``; BundleMemberError unless it is exactly what
        bundle.json declares (size and sha256)."""
        shown = quoted(name)
        if name in self.results:
            if self.results[name]:
                raise BundleMemberError(self.results[name])
            raise BundleMemberError(f"{shown} was already read once")  # never inflate a member twice
        why = None
        if name not in self.declared:
            why = f"{shown} is not listed in bundle.json"
        elif name not in self.infos:
            why = f"the bundle has no {shown}"
        elif name in self.refused:
            why = self.refused[name]
        if why is None:
            want_sha, want_size = self.declared[name]
            info = self.infos[name]
            if want_size > self._limit(name):
                why = f"{shown} declares {want_size} bytes, over the {self._limit(name)} allowed for it"
            elif info.file_size != want_size:
                why = f"{shown}: the zip says {info.file_size} bytes, bundle.json {want_size}"
        if why is not None:
            self.results[name] = why
            raise BundleMemberError(why)
        h = hashlib.sha256()
        n = 0
        try:
            with self.z.open(info) as f:
                while True:
                    chunk = f.read(min(CHUNK, want_size - n + 1))
                    if not chunk:
                        break
                    n += len(chunk)
                    self.inflated += len(chunk)
                    if n > want_size:
                        raise BundleMemberError(f"{shown} inflates past its declared {want_size} bytes")
                    h.update(chunk)
                    if sink is not None:
                        sink(chunk)
        except BundleMemberError as e:
            why = str(e)
        except ZIP_ERRORS as e:
            why = f"{shown} is unreadable ({type(e).__name__}: {e})"
        else:
            if n != want_size:
                why = f"{shown} inflates to {n} bytes, not its declared {want_size}"
            elif "sha256:" + h.hexdigest() != want_sha:
                why = f"{shown} does not hash to the sha256 bundle.json declares"
        self.results[name] = why or ""
        if self.progress is not None:
            self.progress(len(self.results), max(len(self.declared), len(self.results)))
        if why:
            raise BundleMemberError(why)

    def read(self, name: str) -> bytes:
        buf = bytearray()
        self.stream(name, buf.extend)
        return bytes(buf)


def strict_json(data: bytes, what: str) -> Any:
    """JSON as RFC 8259 has it: UTF-8, no NaN/Infinity, no repeated key (json.loads keeps the last
    of a repeated key, so a reader and a signer could see different objects)."""
    def constant(name: str) -> Any:
        raise BundleMemberError(f"{what} holds {name}, which is not JSON")

    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=refuse_repeated_keys, parse_constant=constant)
    except RepeatedKey as e:
        raise BundleMemberError(f"{what} repeats the key {quoted(str(e), 40)}") from None
    except UnicodeDecodeError:
        raise BundleMemberError(f"{what} is not UTF-8") from None
    except RecursionError:
        raise BundleMemberError(f"{what} is nested too deeply") from None
    except ValueError as e:
        raise BundleMemberError(f"{what} is not JSON: {e}") from None


def declared_files(index: Any) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """bundle.json's file table, and what is wrong with it."""
    if not isinstance(index, dict):
        raise BundleMemberError("bundle.json is not a JSON object")
    if index.get("schema") != SCHEMA:
        raise BundleMemberError(f"bundle.json is not a {SCHEMA} index (schema {quoted(index.get('schema'), 40)}); "
                                "bundles made before sizes were declared must be made again with `g6 bundle`")
    files = index.get("files")
    if not isinstance(files, dict) or not files:
        raise BundleMemberError("bundle.json lists no files")
    if len(files) > MAX_MEMBERS:
        raise BundleMemberError(f"bundle.json lists {len(files)} files, over {MAX_MEMBERS}")
    declared: dict[str, tuple[str, int]] = {}
    problems: list[str] = []
    for name, entry in files.items():
        bad = name_problem(name) or (None if LAYOUT.fullmatch(name) else "not a name a bundle has")
        if bad:
            problems.append(f"bundle.json lists {quoted(name)}: {bad}")
            continue
        sha = entry.get("sha256") if isinstance(entry, dict) else None
        size = entry.get("size") if isinstance(entry, dict) else None
        if not (isinstance(sha, str) and sha.startswith("sha256:") and HEX64.fullmatch(sha[7:])
                and type(size) is int and size >= 0):
            problems.append(f"bundle.json entry {quoted(name)} is not {{sha256, size}}")
            continue
        declared[name] = (sha, size)
    records = sum(s for n, (_, s) in declared.items() if not n.startswith("blobs/"))
    total = sum(s for _, s in declared.values())
    if records > MAX_RECORDS_TOTAL:
        problems.append(f"bundle.json declares {records} bytes of records, over {MAX_RECORDS_TOTAL}")
    if total > MAX_TOTAL:
        problems.append(f"bundle.json declares {total} bytes in all, over {MAX_TOTAL}")
    return declared, problems
