"""The blob store on S3-compatible object storage (AWS S3, SeaweedFS, MinIO, Ceph RGW, R2 ...).

Same contract as the folder store (:class:`g6.store.folder.BlobStore`), the one interface
(:class:`g6.store.base.BlobBackend`): raw bytes under their blake3 digest, sha256 alongside, streamed
while hashed, visible under the digest only once whole, stored once. Layout under ``s3://bucket/prefix/``::

    blake3/<hex>     the raw bytes; object metadata ``sha256`` and ``size`` (written with the bytes)
    sha256/<hex>     one line: the blake3 digest, so blobs open by sha256 too
    tmp/<random>     large bodies while they upload; swept (and stale multipart uploads aborted) by ``gc``

Write path: a body up to one part (8 MiB) is held in memory while both digests are computed, then
put straight to ``blake3/<hex>`` with ``If-None-Match: *`` (put-if-absent: a 412 means the same
bytes are there already). A larger body streams to ``tmp/`` as a multipart upload, one part at a
time (memory stays at one part whatever the size), hashed on the way; once the upload is complete
and the digest known, the server copies it to ``blake3/<hex>`` with ``If-None-Match: *`` (bodies
past S3's 5 GiB single-copy limit: a multipart copy whose completion carries the condition), and the
temporary object is deleted. Every commit writes the sha256 index too (also put-if-absent), and
returns only when both objects are durable, so a receipt is appended only for a stored blob; a crash
in between leaves at most an unreferenced blob or a temporary object, as on the folder store.

Why boto3 rather than obstore: one client gives us each request we need with its exact conditions
(conditional ``PutObject``, ``CopyObject`` with ``If-None-Match``, ``UploadPartCopy`` with a
conditional ``CompleteMultipartUpload``); obstore's streaming multipart put takes no put mode, so
put-if-absent of a large body would still need the copy step, outside its API. boto3 is also what
the raw-put benchmark compares against, so the figure measures our overhead, not two clients.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import blake3

from g6.errors import BadDigest, BlobCorrupt, BlobNotFound, StoreBackendError
from g6.store.base import (
    INDEX_MAX,
    BlobBackend,
    BlobCheck,
    BlobRef,
    GcReport,
    StoreVerifyReport,
    StreamedPut,
    VerifiedReads,
    hash_stream,
    index_target,
    refuse_mismatch,
)
from g6.store.digest import Digest
from g6.store.verifying import check_every_blob, judge_index

PART = 8 << 20
COPY_LIMIT = 5 << 30  # S3's largest single CopyObject
_MISSING = {"404", "NoSuchKey", "NotFound"}
_EXISTS = {"412", "PreconditionFailed"}


def _blob_name(name: str) -> bool:
    """Whether a key's name under ``blake3/`` is one a put writes (anything else is listed by ``verify``)."""
    return len(name) == 64 and "/" not in name


def _code(e: Any) -> str:
    return str(getattr(e, "response", {}).get("Error", {}).get("Code", ""))


class S3BlobWriter:
    """Incremental writer for :class:`S3BlobStore`: ``write`` chunks, then ``commit`` (or ``abort``)."""

    def __init__(self, store: S3BlobStore) -> None:
        self._store = store
        self._buf = bytearray()
        self._b3 = blake3.blake3()
        self._sha = hashlib.sha256()
        self._tmp_key: str | None = None
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._closed = False
        self.size = 0

    def write(self, chunk: bytes) -> None:
        if self._closed:
            raise ValueError("writer already closed")
        self._b3.update(chunk)
        self._sha.update(chunk)
        self._buf += chunk
        self.size += len(chunk)
        while len(self._buf) > self._store.part_size:  # a body of exactly one part stays one plain put
            part = bytes(self._buf[: self._store.part_size])
            del self._buf[: self._store.part_size]
            self._upload_part(part)

    def _upload_part(self, data: bytes) -> None:
        st = self._store
        with st._errors("upload part of a large blob"):
            if self._upload_id is None:
                self._tmp_key = st._key("tmp", f"put-{uuid.uuid4().hex}")
                self._upload_id = st.s3.create_multipart_upload(Bucket=st.bucket, Key=self._tmp_key)["UploadId"]
            n = len(self._parts) + 1
            r = st.s3.upload_part(Bucket=st.bucket, Key=self._tmp_key, UploadId=self._upload_id, PartNumber=n,
                                  Body=data)
        self._parts.append({"PartNumber": n, "ETag": r["ETag"]})

    def commit(self) -> BlobRef:
        if self._closed:
            raise ValueError("writer already closed")
        self._closed = True
        ref = BlobRef(f"blake3:{self._b3.hexdigest()}", f"sha256:{self._sha.hexdigest()}", self.size)
        st = self._store
        try:
            if self._upload_id is None:
                body, self._buf = bytes(self._buf), bytearray()
                st._install_small(body, ref)
            else:
                if self._buf or not self._parts:
                    self._upload_part(bytes(self._buf))
                    self._buf = bytearray()
                with st._errors("complete a large blob's upload"):
                    st.s3.complete_multipart_upload(Bucket=st.bucket, Key=self._tmp_key, UploadId=self._upload_id,
                                                    MultipartUpload={"Parts": self._parts})
                self._upload_id = None
                st._install_from_tmp(self._tmp_key or "", ref)
        except BaseException:
            self._cleanup()
            raise
        self._cleanup()
        return ref

    def _cleanup(self) -> None:
        st = self._store
        with contextlib.suppress(Exception):  # best effort: gc sweeps whatever is left
            if self._upload_id is not None:
                st.s3.abort_multipart_upload(Bucket=st.bucket, Key=self._tmp_key, UploadId=self._upload_id)
                self._upload_id = None
            elif self._tmp_key is not None:
                st.s3.delete_object(Bucket=st.bucket, Key=self._tmp_key)
        self._tmp_key = None

    def abort(self) -> None:
        self._closed = True
        self._buf = bytearray()
        self._cleanup()

    def __enter__(self) -> S3BlobWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._closed:
            self.abort()


class S3BlobStore(StreamedPut, VerifiedReads):
    """A content-addressed store in one bucket under one prefix. Takes a boto3 client or makes one."""

    def __init__(self, bucket: str, prefix: str = "", *, client: Any = None, endpoint: str | None = None,
                 access_key: str | None = None, secret_key: str | None = None, region: str | None = None,
                 part_size: int = PART, check_bucket: bool = True) -> None:
        if part_size < 5 << 20:
            raise ValueError("S3 multipart parts are at least 5 MiB")
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.url = f"s3://{bucket}/{self.prefix}"
        self.root = self.url  # what messages name (the folder store's root is its path)
        self.endpoint = endpoint
        self.part_size = part_size
        self.fsync = True  # S3 answers a put only once the object is durable
        if client is None:
            import boto3
            from botocore.config import Config

            client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                                  aws_secret_access_key=secret_key, region_name=region or "us-east-1",
                                  config=Config(connect_timeout=5, read_timeout=120,
                                                retries={"max_attempts": 3, "mode": "standard"},
                                                max_pool_connections=16))
        self.s3 = client
        self._pool: ThreadPoolExecutor | None = None
        if check_bucket:
            with self._errors("open the bucket"):
                self.s3.head_bucket(Bucket=bucket)

    # -- errors --------------------------------------------------------------------------------
    def _where(self) -> str:
        return f"blob backend {self.url}" + (f" at {self.endpoint}" if self.endpoint else "")

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """botocore's errors as one typed line naming the store and what to check."""
        import botocore.exceptions as bx

        try:
            yield
        except bx.ClientError as e:
            code = _code(e)
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("NoSuchBucket",) or (status == 404 and doing == "open the bucket"):
                hint = f"bucket {self.bucket!r} does not exist: create it or fix G6_BLOB_URL"
            elif status == 403 or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
                hint = ("access refused (403): check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket's "
                        "policy")
            else:
                hint = f"the server answered {status} {code}"
            raise StoreBackendError(f"{self._where()}: cannot {doing}: {hint}") from None
        except bx.NoCredentialsError:
            raise StoreBackendError(f"{self._where()}: cannot {doing}: no credentials; set AWS_ACCESS_KEY_ID and "
                                    "AWS_SECRET_ACCESS_KEY") from None
        except (bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ReadTimeoutError,
                bx.ConnectTimeoutError, bx.HTTPClientError) as e:
            raise StoreBackendError(f"{self._where()}: cannot {doing}: {e}; check that the S3 service is running "
                                    "and G6_S3_ENDPOINT points at it") from None

    # -- keys ----------------------------------------------------------------------------------
    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}{kind}/{name}"

    def _resolve(self, digest: str | Digest) -> str:
        d = digest if isinstance(digest, Digest) else Digest.parse(digest)
        if d.algo == "blake3":
            return d.hex
        import botocore.exceptions as bx

        with self._errors("read the sha256 index"):
            try:
                stream = self.s3.get_object(Bucket=self.bucket, Key=self._key("sha256", d.hex))["Body"]
                try:
                    line = stream.read(INDEX_MAX)  # an entry is 71 bytes: a huge one is not read whole
                finally:
                    stream.close()
            except bx.ClientError as e:
                if _code(e) in _MISSING:
                    raise BlobNotFound(f"no blob with {d}") from None
                raise
        try:
            text = line.decode().strip()
        except UnicodeDecodeError:
            text = ""
        return index_target(d, text)

    def _head(self, key: str, what: str) -> dict[str, Any] | None:
        """The object's HEAD answer, or None when there is no such object."""
        import botocore.exceptions as bx

        with self._errors(what):
            try:
                head: dict[str, Any] = self.s3.head_object(Bucket=self.bucket, Key=key)
                return head
            except bx.ClientError as e:
                if _code(e) in _MISSING:
                    return None
                raise

    def _exists(self, key: str) -> bool:
        return self._head(key, f"read {key}") is not None

    # -- writing -------------------------------------------------------------------------------
    def writer(self) -> S3BlobWriter:
        return S3BlobWriter(self)

    # ``put_stream`` and ``put`` are ``StreamedPut``'s, over this writer

    def _put_if_absent(self, key: str, body: bytes, meta: dict[str, str] | None = None) -> bool:
        """True if written, False if the key was there already (412)."""
        import botocore.exceptions as bx

        with self._errors(f"store {key}"):
            try:
                self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, IfNoneMatch="*", Metadata=meta or {})
            except bx.ClientError as e:
                if _code(e) in _EXISTS:
                    return False
                raise
        return True

    def _meta(self, ref: BlobRef) -> dict[str, str]:
        return {"sha256": ref.sha256, "size": str(ref.size)}

    def _index(self, ref: BlobRef) -> None:
        self._put_if_absent(self._key("sha256", Digest.parse(ref.sha256).hex), ref.blake3.encode())

    def _install_small(self, body: bytes, ref: BlobRef) -> None:
        # the index and the bytes go at once; commit returns only when both are stored
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="g6-s3")
        index = self._pool.submit(self._index, ref)
        try:
            self._put_if_absent(self._key("blake3", Digest.parse(ref.blake3).hex), body, self._meta(ref))
        finally:
            index.result()

    def _install_from_tmp(self, tmp_key: str, ref: BlobRef) -> None:
        import botocore.exceptions as bx

        final = self._key("blake3", Digest.parse(ref.blake3).hex)
        self._index(ref)
        with self._errors("copy a large blob under its digest"):
            try:
                if ref.size <= COPY_LIMIT:
                    self.s3.copy_object(Bucket=self.bucket, Key=final, CopySource={"Bucket": self.bucket,
                                                                                   "Key": tmp_key},
                                        Metadata=self._meta(ref), MetadataDirective="REPLACE", IfNoneMatch="*")
                else:
                    self._multipart_copy(tmp_key, final, ref)
            except bx.ClientError as e:
                if _code(e) not in _EXISTS:  # 412: the same bytes are stored already (dedupe)
                    raise

    def _multipart_copy(self, src: str, dst: str, ref: BlobRef) -> None:
        up = self.s3.create_multipart_upload(Bucket=self.bucket, Key=dst, Metadata=self._meta(ref))["UploadId"]
        try:
            parts, step = [], 1 << 30
            for n, start in enumerate(range(0, ref.size, step), 1):
                r = self.s3.upload_part_copy(Bucket=self.bucket, Key=dst, UploadId=up, PartNumber=n,
                                             CopySource={"Bucket": self.bucket, "Key": src},
                                             CopySourceRange=f"bytes={start}-{min(start + step, ref.size) - 1}")
                parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
            self.s3.complete_multipart_upload(Bucket=self.bucket, Key=dst, UploadId=up,
                                              MultipartUpload={"Parts": parts}, IfNoneMatch="*")
        except BaseException:
            with contextlib.suppress(Exception):
                self.s3.abort_multipart_upload(Bucket=self.bucket, Key=dst, UploadId=up)
            raise

    # -- reading -------------------------------------------------------------------------------
    def has(self, digest: str | Digest) -> bool:
        try:
            return self._exists(self._key("blake3", self._resolve(digest)))
        except BlobNotFound:
            return False

    def open(self, digest: str | Digest) -> BinaryIO:
        import botocore.exceptions as bx

        key = self._key("blake3", self._resolve(digest))
        with self._errors(f"read {key}"):
            try:
                return self.s3.get_object(Bucket=self.bucket, Key=key)["Body"]  # type: ignore[no-any-return]
            except bx.ClientError as e:
                if _code(e) in _MISSING:
                    raise BlobNotFound(f"no blob {digest}") from None
                raise

    def read(self, digest: str | Digest) -> bytes:
        with self.open(digest) as f:
            return f.read()

    def open_verified(self, digest: str | Digest) -> BinaryIO:
        """The blob, read once from the bucket into a local spool (memory up to 8 MiB, then a temp
        file) while it is hashed, and served from that spool only if it is what was asked for:
        an object is not a file that stays put, so the bytes served are the bytes checked."""
        d = digest if isinstance(digest, Digest) else Digest.parse(digest)
        b3hex = self._resolve(d)
        spool = tempfile.SpooledTemporaryFile(max_size=8 << 20)
        try:
            with self.open(d) as f:
                actual = hash_stream(f, spool.write)
            refuse_mismatch(d, b3hex, actual)
            spool.seek(0)
        except BaseException:
            spool.close()
            raise
        return spool  # type: ignore[return-value]

    def info(self, digest: str | Digest) -> BlobRef:
        b3hex = self._resolve(digest)
        head = self._head(self._key("blake3", b3hex), f"read blob {b3hex}")
        if head is None:
            raise BlobNotFound(f"no blob {digest}")
        meta = head.get("Metadata") or {}
        size = meta.get("size")
        # the size as the writer wrote it (str(int)): int() alone would also take ' 12', '+12' and '١٢'
        if isinstance(size, str) and size.isascii() and size.isdigit() and str(int(size)) == size:
            with contextlib.suppress(KeyError, TypeError, BadDigest):
                return BlobRef(f"blake3:{b3hex}", str(Digest.parse(meta["sha256"])), int(size))
        return self._hash_object(b3hex)  # metadata lost or damaged: the bytes are the truth

    def _list(self, kind: str) -> Iterator[dict[str, Any]]:
        with self._errors(f"list {kind}/"):
            pages = self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket,
                                                                      Prefix=self._key(kind, ""))
            for page in pages:
                yield from page.get("Contents", [])

    def iter_digests(self) -> Iterator[str]:
        start = len(self._key("blake3", ""))
        for obj in self._list("blake3"):
            name = obj["Key"][start:]
            if _blob_name(name):
                yield f"blake3:{name}"

    # -- checking ------------------------------------------------------------------------------
    def _hash_object(self, b3hex: str) -> BlobRef:
        with self.open(f"blake3:{b3hex}") as f, self._errors(f"read blob {b3hex}"):
            return hash_stream(f)

    def check(self, digest: str | Digest, expect: BlobRef | None = None) -> BlobCheck:
        """Re-hash one blob; compare with its name, its metadata and ``expect`` (e.g. a receipt's)."""
        return self._check(digest, expect)[0]

    def _check(self, digest: str | Digest, expect: BlobRef | None = None) -> tuple[BlobCheck, BlobRef | None]:
        name = str(digest)
        try:
            b3hex = self._resolve(digest)
            head = self._head(self._key("blake3", b3hex), f"read blob {b3hex}")
            if head is None:
                return BlobCheck(name, False, "missing"), None
            actual = self._hash_object(b3hex)
        except (BlobNotFound, BadDigest) as e:
            return BlobCheck(name, False, str(e)), None
        if actual.blake3 != f"blake3:{b3hex}":
            return BlobCheck(name, False, f"content hashes to {actual.blake3}"), actual
        if isinstance(digest, str) and digest.startswith("sha256:") and actual.sha256 != str(Digest.parse(digest)):
            return BlobCheck(name, False, f"the sha256 index points at a blob whose sha256 is {actual.sha256}"), actual
        meta = head.get("Metadata") or {}
        if meta and (meta.get("sha256") != actual.sha256 or meta.get("size") != str(actual.size)):
            return BlobCheck(name, False, "meta disagrees with content"), actual
        if expect is not None:
            if expect.sha256 != actual.sha256:
                return BlobCheck(name, False, f"sha256 is {actual.sha256}, expected {expect.sha256}"), actual
            if expect.size != actual.size:
                return BlobCheck(name, False, f"size is {actual.size}, expected {expect.size}"), actual
        return BlobCheck(name, True), actual

    def verify(self, *, progress: Callable[[int, int], None] | None = None) -> StoreVerifyReport:
        """Re-hash every blob (name, metadata), then check every sha256 index object points at a blob
        whose sha256 is that object's name, as the folder store's ``verify`` does (the same
        ``check_every_blob`` and ``judge_index``; only listing and reading differ)."""
        blobs = check_every_blob(self, progress)
        index = judge_index(self._index_entries(), blobs, blobs.listed.__contains__)
        start = len(self._key("blake3", ""))
        strays = [BlobCheck(obj["Key"][start:], False, "not a blob: a key under blake3/ that is no blake3 name")
                  for obj in self._list("blake3") if not _blob_name(obj["Key"][start:])]
        return StoreVerifyReport(blobs.checked, tuple(blobs.bad + index.bad + strays), index.checked,
                                 tuple(index.dangling))

    def _index_entries(self) -> Iterator[tuple[str, bytes]]:
        """Every sha256 index object as (``sha256:<hex>``, its first ``INDEX_MAX`` bytes: an entry is 71, a huge
        one is not read whole); one removed (gc) between the listing and its read is left out."""
        import botocore.exceptions as bx

        start = len(self._key("sha256", ""))
        for obj in self._list("sha256"):
            name = f"sha256:{obj['Key'][start:]}"
            with self._errors(f"read the sha256 index entry {name}"):
                try:
                    stream = self.s3.get_object(Bucket=self.bucket, Key=obj["Key"])["Body"]
                    try:
                        body = stream.read(INDEX_MAX)
                    finally:
                        stream.close()
                except bx.ClientError as e:
                    if _code(e) in _MISSING:
                        continue
                    raise
            yield name, body

    # -- removal -------------------------------------------------------------------------------
    def gc(self, referenced: Iterable[str], *, grace_seconds: float = 3600.0, dry_run: bool = False,
           now: float | None = None, progress: Callable[[int, int], None] | None = None) -> GcReport:
        """Remove blobs no receipt references (older than ``grace_seconds``), old temporary objects
        and stale multipart uploads. The object's ``LastModified`` is its age. ``progress(blobs looked
        at, blobs)`` as it goes."""
        keep = set()
        for r in referenced:
            # a damaged sha256 entry is for `verify` to report; a receipt names the blob by blake3 too
            with contextlib.suppress(BlobNotFound, BlobCorrupt, BadDigest):
                keep.add(self._resolve(r))
        now = time.time() if now is None else now
        start = len(self._key("blake3", ""))
        removed, young, kept = [], [], 0
        objects = list(self._list("blake3"))
        for i, obj in enumerate(objects):
            if progress is not None:
                progress(i, len(objects))
            hexd = obj["Key"][start:]
            if hexd in keep:
                kept += 1
                continue
            if now - obj["LastModified"].timestamp() < grace_seconds:
                young.append(f"blake3:{hexd}")
                continue
            removed.append(f"blake3:{hexd}")
            if not dry_run:
                ref = self.info(f"blake3:{hexd}")
                with self._errors(f"delete blob {hexd}"):
                    self.s3.delete_object(Bucket=self.bucket, Key=obj["Key"])
                    self.s3.delete_object(Bucket=self.bucket, Key=self._key("sha256", Digest.parse(ref.sha256).hex))
        if progress is not None:
            progress(len(objects), len(objects))
        temps = 0
        for obj in list(self._list("tmp")):
            if now - obj["LastModified"].timestamp() >= grace_seconds:
                temps += 1
                if not dry_run:
                    with self._errors("delete a temporary object"):
                        self.s3.delete_object(Bucket=self.bucket, Key=obj["Key"])
        with self._errors("list multipart uploads"):
            ups = self.s3.list_multipart_uploads(Bucket=self.bucket, Prefix=self._key("tmp", "")).get("Uploads", [])
        for up in ups:
            if now - up["Initiated"].timestamp() >= grace_seconds:
                temps += 1
                if not dry_run:
                    with self._errors("abort a stale upload"):
                        self.s3.abort_multipart_upload(Bucket=self.bucket, Key=up["Key"], UploadId=up["UploadId"])
        return GcReport(tuple(removed), kept, temps, tuple(young))

    def remove(self, ref: BlobRef) -> bool:
        """Take one blob out on purpose (a redaction): the object, then its sha256 index object when it names this
        blob (its meta is the object's own metadata). A second call finishes what a crash left of the first."""
        b3, sha = Digest.parse(ref.blake3), Digest.parse(ref.sha256)
        if b3.algo != "blake3" or sha.algo != "sha256":
            raise BadDigest(f"a blob is removed by its blake3 and sha256 digests, not {ref.blake3} and {ref.sha256}")
        removed = self._exists(self._key("blake3", b3.hex))
        with self._errors(f"delete blob {b3.hex}"):
            self.s3.delete_object(Bucket=self.bucket, Key=self._key("blake3", b3.hex))
        try:
            pointed = self._resolve(sha) == b3.hex
        except (BlobNotFound, BlobCorrupt):
            pointed = False  # gone already, or another blob's entry: for `verify` to report, not ours to drop
        if pointed:
            with self._errors(f"delete the sha256 index entry {sha.hex}"):
                self.s3.delete_object(Bucket=self.bucket, Key=self._key("sha256", sha.hex))
            removed = True
        return removed

    def worker_opener(self) -> Callable[[], BlobBackend] | None:
        return None  # a boto3 client is not fork-safe: blobs are checked in the process that opened it

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/prefix`` to (bucket, prefix)."""
    from urllib.parse import urlsplit

    p = urlsplit(url)
    if p.scheme != "s3" or not p.netloc:
        raise ValueError(f"not an s3://bucket/prefix URL: {url!r}")
    return p.netloc, p.path.strip("/")


def store_from_env(url: str, env: dict[str, str] | None = None) -> S3BlobStore:
    """The store at ``s3://bucket/prefix``; the endpoint from ``G6_S3_ENDPOINT`` (none: AWS), the
    credentials from the usual AWS variables (boto3's own chain when they are absent)."""
    env = dict(os.environ if env is None else env)
    bucket, prefix = parse_s3_url(url)
    return S3BlobStore(bucket, prefix, endpoint=env.get("G6_S3_ENDPOINT") or None,
                       access_key=env.get("AWS_ACCESS_KEY_ID") or None,
                       secret_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
                       region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None)
