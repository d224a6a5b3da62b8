"""Where ``g6 ledger publish`` writes a log: a folder (``file:///path`` or a path) or S3 (``s3://bucket/prefix``).

A destination does three things, each whole or not at all: read a file (None when there is none), create
an immutable file only if it is absent (False when something is already there: the caller compares), and
replace the checkpoint. Paths are the C2SP tlog-tiles names under the prefix (``checkpoint``,
``tile/0/x001/234``, ``tile/entries/000.p/7``).

Folder: each file is written to a temporary name beside it, fsynced, then linked into place
(``link(2)`` refuses to replace a file, so a tile is never overwritten); the folders written to are fsynced
before the checkpoint, which goes last by temp file and ``os.replace``. Files are created mode 0644 (less
the umask), so a static file server run as another user can serve them. S3: a tile is one PUT with
``If-None-Match: *`` (put-if-absent), the checkpoint one plain PUT; each object carries the Content-Type
and Cache-Control the spec asks for (:data:`HEADERS`), which a folder cannot hold: its web server must set them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from g6.errors import InputError, PublishError

CHECKPOINT = "checkpoint"
# what each kind of file is served with (https://c2sp.org/tlog-tiles): the checkpoint changes, so no cache
# keeps it; a tile's bytes never change once published, so every cache may keep it for good
CHECKPOINT_HEADERS = {"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-cache"}
TILE_HEADERS = {"Content-Type": "application/octet-stream", "Cache-Control": "public, max-age=31536000, immutable"}
HEADERS = {"checkpoint": CHECKPOINT_HEADERS, "tile": TILE_HEADERS}
READ_MAX = 256 * (2 + 0xFFFF)  # the largest entry bundle; a checkpoint or a tile is far smaller


class Destination(Protocol):
    where: str  # what messages name: the folder, or the s3:// URL

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when there is none."""
        ...

    def create(self, path: str, data: bytes) -> bool:
        """Write ``path`` only if absent: True when written, False when something is already there."""
        ...

    def replace_checkpoint(self, data: bytes) -> None:
        """Write the checkpoint whole, after everything ``create`` wrote is durable."""
        ...


class FolderDestination:
    def __init__(self, root: Path) -> None:
        _check_folder(root)
        self.root = root
        self.where = str(root)
        self._dirs: set[Path] = set()

    def _file(self, path: str) -> Path:
        return self.root.joinpath(*path.split("/"))

    def read(self, path: str) -> bytes | None:
        f = self._file(path)
        try:
            with f.open("rb") as fh:
                return fh.read(READ_MAX + 1)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise PublishError(f"cannot read {f}: {e.strerror or e}") from None

    @contextlib.contextmanager
    def _temp(self, final: Path, data: bytes) -> Iterator[Path]:
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp = final.parent / f".{final.name}.{secrets.token_hex(6)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            raise PublishError(f"cannot write {final}: {e.strerror or e}") from None
        try:
            yield tmp
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def create(self, path: str, data: bytes) -> bool:
        final = self._file(path)
        with self._temp(final, data) as tmp:
            try:
                os.link(tmp, final)
            except FileExistsError:
                return False
            except OSError as e:
                raise PublishError(f"cannot write {final}: {e.strerror or e}") from None
        self._dirs.add(final.parent)
        return True

    def replace_checkpoint(self, data: bytes) -> None:
        try:
            for d in sorted(self._dirs, key=lambda p: -len(p.parts)):  # the tiles' names are durable first
                _fsync_dir(d)
            final = self._file(CHECKPOINT)
            with self._temp(final, data) as tmp:
                os.replace(tmp, final)
            _fsync_dir(self.root)
        except OSError as e:
            raise PublishError(f"cannot write the checkpoint in {self.root}: {e.strerror or e}") from None
        self._dirs.clear()


def _check_folder(root: Path) -> None:
    """Refuse a folder that cannot be written (a file, a folder under a file, one we may not write) before
    anything is done: said as bad input, before a checkpoint is signed for nothing."""
    probe = root
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"publish destination {root} is not a folder" + (f" ({probe} is a file)" if probe != root
                                                                        else ""))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"publish destination {root} cannot be written" + (f" ({probe} is not writable)"
                                                                          if probe != root else ""))


def _fsync_dir(d: Path) -> None:
    fd = os.open(d, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class S3Destination:
    """A prefix of a bucket, through the boto3 client the blob store makes (``g6.store``'s settings)."""

    def __init__(self, url: str, env: Mapping[str, str]) -> None:
        from g6.store.s3 import S3BlobStore, parse_s3_url

        merged = {**{k: v for k, v in os.environ.items() if k.startswith("AWS_")}, **dict(env)}
        try:
            bucket, prefix = parse_s3_url(url)
        except ValueError as e:
            raise InputError(f"publish destination: {e}") from None
        # the blob store's client (endpoint, credentials, timeouts); the bucket is checked here, so that a
        # missing one is named as the publish destination's, not G6_BLOB_URL's
        store = S3BlobStore(bucket, prefix, endpoint=merged.get("G6_S3_ENDPOINT") or None,
                            access_key=merged.get("AWS_ACCESS_KEY_ID") or None,
                            secret_key=merged.get("AWS_SECRET_ACCESS_KEY") or None,
                            region=merged.get("AWS_REGION") or merged.get("AWS_DEFAULT_REGION") or None,
                            check_bucket=False)
        self.s3: Any = store.s3
        self.bucket = store.bucket
        self.prefix = store.prefix
        self.endpoint = merged.get("G6_S3_ENDPOINT") or None
        self.where = store.url.rstrip("/")
        with self._errors("open the bucket"):
            self.s3.head_bucket(Bucket=bucket)

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        import botocore.exceptions as bx

        at = f"{self.where}" + (f" at {self.endpoint}" if self.endpoint else "")
        try:
            yield
        except bx.ClientError as e:
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            code = e.response.get("Error", {}).get("Code", "")
            if code == "NoSuchBucket" or (status == 404 and doing == "open the bucket"):
                hint = f"bucket {self.bucket!r} does not exist: create it or publish to another bucket"
            elif status == 403 or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
                hint = "access refused (403): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket's policy"
            else:
                hint = f"the server answered {status} {code}"
            raise PublishError(f"publish destination {at}: cannot {doing}: {hint}") from None
        except bx.NoCredentialsError:
            raise PublishError(f"publish destination {at}: cannot {doing}: no credentials; set AWS_ACCESS_KEY_ID "
                               "and AWS_SECRET_ACCESS_KEY") from None
        except bx.BotoCoreError as e:
            raise PublishError(f"publish destination {at}: cannot {doing}: {e}; check that the S3 service is "
                               "running and G6_S3_ENDPOINT points at it") from None

    def _key(self, path: str) -> str:
        return self.prefix + path

    def read(self, path: str) -> bytes | None:
        import botocore.exceptions as bx

        with self._errors(f"read {path}"):
            try:
                body = self.s3.get_object(Bucket=self.bucket, Key=self._key(path))["Body"]
            except bx.ClientError as e:
                if e.response.get("Error", {}).get("Code", "") in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise
            try:
                return bytes(body.read(READ_MAX + 1))
            finally:
                body.close()

    def _put(self, path: str, data: bytes, headers: Mapping[str, str], **kw: Any) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=self._key(path), Body=data, ContentType=headers["Content-Type"],
                           CacheControl=headers["Cache-Control"], **kw)

    def create(self, path: str, data: bytes) -> bool:
        import botocore.exceptions as bx

        with self._errors(f"write {path}"):
            try:
                self._put(path, data, TILE_HEADERS, IfNoneMatch="*")
            except bx.ClientError as e:
                if e.response.get("Error", {}).get("Code", "") in ("412", "PreconditionFailed"):
                    return False
                raise
        return True

    def replace_checkpoint(self, data: bytes) -> None:
        with self._errors("write the checkpoint"):
            self._put(CHECKPOINT, data, CHECKPOINT_HEADERS)


def open_destination(dest: str, env: Mapping[str, str]) -> Destination:
    """``s3://bucket/prefix``, ``file:///path`` or a plain path."""
    scheme = urlsplit(dest).scheme.lower()
    if scheme == "s3":
        return S3Destination(dest, env)
    if scheme == "file":
        p = urlsplit(dest)
        if p.netloc not in ("", "localhost") or not p.path:
            raise InputError(f"publish destination {dest!r}: write file:///path/to/folder")
        return FolderDestination(Path(unquote(p.path)))
    if "://" in dest:
        raise InputError(f"publish destination {dest!r}: give a folder, file:///path or s3://bucket/prefix")
    if not dest.strip():
        raise InputError("publish destination is empty: give a folder, file:///path or s3://bucket/prefix")
    return FolderDestination(Path(dest).expanduser())
