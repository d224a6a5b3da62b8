"""Content-addressed blob store: raw bytes kept by their blake3 digest, sha256 alongside."""

from g6.store.blobs import BlobCheck, BlobRef, BlobStore, BlobWriter, GcReport, StoreVerifyReport
from g6.store.digest import Digest

__all__ = ["BlobBackend", "BlobCheck", "BlobCopyReport", "BlobRef", "BlobStore", "BlobWriter", "Digest", "GcReport",
           "S3BlobStore", "StoreVerifyReport", "copy_blobs", "open_store"]

from g6.store.backend import BlobBackend, BlobCopyReport, copy_blobs, open_store  # noqa: E402 - after blobs
from g6.store.s3 import S3BlobStore  # noqa: E402
