"""Content-addressed blob store: raw bytes kept by their blake3 digest, sha256 alongside.

``BlobBackend`` (``g6.store.base``) is the one interface; ``BlobStore`` (a folder, ``g6.store.folder``)
and ``S3BlobStore`` (``g6.store.s3``) implement it, and ``open_store`` (``g6.store.open``) picks one by
URL. Import these names from here: which module holds them is the package's own business.
"""

from g6.store.base import BlobBackend, BlobCheck, BlobRef, GcReport, StoreVerifyReport, digests
from g6.store.digest import Digest
from g6.store.folder import BlobStore
from g6.store.folder_writer import BlobWriter
from g6.store.open import BlobCopyReport, copy_blobs, open_store
from g6.store.s3 import S3BlobStore

__all__ = ["BlobBackend", "BlobCheck", "BlobCopyReport", "BlobRef", "BlobStore", "BlobWriter", "Digest", "GcReport",
           "S3BlobStore", "StoreVerifyReport", "copy_blobs", "digests", "open_store"]
