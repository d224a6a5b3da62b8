"""Content-addressed blob store: raw bytes kept by their blake3 digest, sha256 alongside."""

from g6.store.blobs import BlobCheck, BlobRef, BlobStore, BlobWriter, GcReport, StoreVerifyReport
from g6.store.digest import Digest

__all__ = ["BlobCheck", "BlobRef", "BlobStore", "BlobWriter", "Digest", "GcReport", "StoreVerifyReport"]
