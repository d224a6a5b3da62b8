"""Telling "the disk is full" (or a file-size limit was hit) apart from other write failures."""

from __future__ import annotations

import errno

# ENOSPC: no space left; EDQUOT: quota exceeded; EFBIG: past RLIMIT_FSIZE or the filesystem's file-size limit
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_disk_full(e: BaseException) -> bool:
    """Whether ``e`` (or an exception it was raised from) is an OS "no space" error."""
    seen: set[int] = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno in _FULL_ERRNOS:
            return True
        cur = cur.__cause__ or cur.__context__
    return False
