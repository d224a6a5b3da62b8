"""A file g6 writes for the person (a result, a manifest, a report, a note): written to a temporary file first and
renamed over, so it is whole; the temporary file (``mkstemp``) is made 0600, and the rename would keep that, so it
is given the mode a file the person makes has (0666 less their umask) before the rename: a report meant to be
shared or served is readable as their other files are."""

from __future__ import annotations

import os
import threading

_LOCK = threading.Lock()


def umask() -> int:
    """This process's umask: from ``/proc/self/status`` where Linux gives it (reading it does not change it),
    else set and set back under a lock (another thread making a file in between would get 0o077)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def as_made_by_the_person(fd: int) -> None:
    """Give the open file ``fd`` the mode a newly made file of the person's has: 0666 less their umask."""
    os.fchmod(fd, 0o666 & ~umask())
