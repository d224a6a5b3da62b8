"""``blob verify`` re-checks the sha256 index on either store: an entry that points at the wrong blob,
or holds no blake3 digest, is a failure; one left by a put that never finished is reported as dangling."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from g6.store import BlobStore, S3BlobStore, open_store


def _store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "folder":
        return BlobStore(tmp_path / "blobs", fsync=False)
    return open_store(request.getfixturevalue("s3_url"), str(tmp_path), env=request.getfixturevalue("s3_env"))


def _set_index(store: Any, sha_hex: str, body: bytes) -> None:
    if isinstance(store, S3BlobStore):
        store.s3.put_object(Bucket=store.bucket, Key=store._key("sha256", sha_hex), Body=body)
    else:
        p = store._sha_path(sha_hex)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body)


@pytest.mark.parametrize("kind", ["folder", "s3"])
def test_verify_rechecks_every_sha256_index_entry(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    store = _store(kind, tmp_path, request)
    a, b = store.put(b"body A " * 200), store.put(b"body B " * 200)
    good = store.verify()
    assert good.ok and good.checked == 2 and good.index_checked == 2 and good.dangling == ()

    _set_index(store, a.sha256.split(":")[1], b.blake3.encode())  # A's sha256 now leads to blob B
    _set_index(store, "ab" * 32, b"not a digest")
    orphan = hashlib.sha256(b"never stored").hexdigest()
    _set_index(store, orphan, ("blake3:" + "cd" * 32).encode())  # a put that stopped before its blob
    report = store.verify()
    assert not report.ok and report.checked == 2 and report.index_checked == 4
    details = {c.digest: c.detail for c in report.bad}
    assert details == {a.sha256: f"index entry points at {b.blake3}, whose sha256 is {b.sha256}",
                       "sha256:" + "ab" * 32: "index entry does not hold a blake3 digest"}
    assert report.dangling == (f"sha256:{orphan}",)
    if isinstance(store, S3BlobStore):
        store.close()
