"""How the folder store reaches what lies under its root: never through a symbolic link, never blocking
on a FIFO, and every way a read can fail told apart.

The store writes no symbolic link. One found below its root — a blob's file, its meta, a sha256 index
entry, or any folder from ``blake3/``, ``meta/``, ``sha256/`` and ``tmp/`` down — was put there by someone
else, so it is refused, never followed, even when it leads to the very bytes expected: bytes kept outside
the store, or reached through a folder that is not the store's own, are not the store's to vouch for
(``LinkRefused``). Each folder on the way is opened relative to the one above it with ``O_NOFOLLOW |
O_DIRECTORY`` and the file last with ``O_NOFOLLOW | O_NONBLOCK``, so nothing is followed even if the tree
changes while it is read, and a FIFO planted there never blocks the open. The root itself may be a link
(a home on another disk): whoever configured it chose it.

What a caller is told: ``FileNotFoundError`` (nothing there, or a file where a folder of the path should
be: ``NotADirectoryError``), ``NotAFile`` (a folder, FIFO, device or socket where a file should be),
``LinkRefused``, or another ``OSError`` (the folder or file cannot be read: permissions, I/O).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Callable, Iterator

from g6.store.base import CHUNK

ROOT_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_DIRECTORY
DIR_FLAGS = ROOT_FLAGS | os.O_NOFOLLOW
FILE_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_NOCTTY", 0)
# O_NOFOLLOW on a link: ELOOP on Linux and macOS, EMLINK on FreeBSD; with O_DIRECTORY Linux says ENOTDIR
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}


class NotAFile(FileNotFoundError):
    """What sits where a file of the store belongs is not a regular file (a folder, a FIFO, a device, a
    socket): it is no blob, meta or index entry, and every reader takes it for absent."""


class LinkRefused(OSError):
    """A symbolic link where the store keeps a file or a folder of its own: never followed."""

    def __init__(self, rel: str) -> None:
        super().__init__(errno.ELOOP, f"{rel} is a symbolic link, which the store never makes (not followed)")
        self.rel = rel

    def __str__(self) -> str:
        return str(self.strerror)


def why(e: OSError) -> str:
    """What went wrong, for a verdict or a one-line error: the link refused, or what cannot be read and why."""
    if isinstance(e, LinkRefused):
        return str(e)
    where = f"{e.filename} " if e.filename else ""
    if isinstance(e, NotAFile):
        return f"{where}is not a regular file"
    return f"{where}cannot be read ({e.strerror or e})"


def _refusal(e: OSError, dfd: int, name: str, rel: str) -> OSError:
    """``e``, raised opening ``name`` in folder ``dfd``, made a ``LinkRefused`` when a link was the reason."""
    if e.errno in _LINK_ERRNOS:
        return LinkRefused(rel)
    if e.errno == errno.ENOTDIR:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except OSError:
            return e
        if stat.S_ISLNK(st.st_mode):
            return LinkRefused(rel)
    if isinstance(e.filename, str):
        e.filename = rel  # the path under the root, not only its last part
    return e


_HAS_PROC_FD = os.path.isdir("/proc/self/fd")
_proc_fd: tuple[int, int] | None = None  # (pid, a descriptor of /proc/<pid>/fd): per process, as a fork has its own
_proc_lock = threading.Lock()
_real_roots: dict[str, str] = {}


def _named(fd: int) -> str:
    """The path the kernel gives for the descriptor ``fd`` (its ``/proc/<pid>/fd`` entry)."""
    global _proc_fd
    pid = os.getpid()
    held = _proc_fd
    if held is None or held[0] != pid:
        with _proc_lock:
            held = _proc_fd
            if held is None or held[0] != pid:
                held = _proc_fd = (pid, os.open(f"/proc/{pid}/fd", ROOT_FLAGS))
    return os.readlink(str(fd), dir_fd=held[1])


def _opened_directly(root: str, rel: str) -> int | None:
    """The folder ``root/rel`` opened by its whole path in one call, kept only when the kernel names the
    folder it reached (``/proc/self/fd``) exactly as the root's real path followed by ``rel``: then no link
    was followed below the root (a link there would have led to another name, or, back to its own, to
    ELOOP). None when that cannot be shown, and the walk, one folder at a time, decides. This costs two
    calls where the walk costs one per folder."""
    if not _HAS_PROC_FD or not rel:
        return None
    try:
        fd = os.open(f"{root}/{rel}", DIR_FLAGS)
    except OSError:
        return None
    try:
        if _named(fd) == f"{_real(root)}/{rel}":
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def open_dir(root: str, rel: str, *, create: bool = False) -> int:
    """A descriptor of the folder ``root/rel`` reached without following a link below ``root``; with
    ``create``, the folders missing on the way are made (as ``mkdir -p`` would, but never through a link)."""
    fast = _opened_directly(root, rel)
    if fast is not None:
        return fast
    fd = os.open(root, ROOT_FLAGS)
    try:
        done = ""
        for part in rel.split("/") if rel else ():
            done = f"{done}/{part}" if done else part
            try:
                nfd = os.open(part, DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass  # made by another writer meanwhile, or something else is there: the open says which
                try:
                    nfd = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as e:
                    raise _refusal(e, fd, part, done) from None
            except OSError as e:
                raise _refusal(e, fd, part, done) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in(dfd: int, name: str, rel: str) -> tuple[int, int]:
    """A descriptor of the regular file ``name`` in the folder ``dfd`` (whose path under the root is ``rel``'s
    folder), not following a link, and its size."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dfd)
    except OSError as e:
        raise _refusal(e, dfd, name, rel) from None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotAFile(errno.ENOENT, "not a regular file", rel)
    return fd, st.st_size


def _real(root: str) -> str:
    real = _real_roots.get(root)
    if real is None:
        real = _real_roots[root] = os.path.realpath(root).rstrip("/")
    return real


def opened_directly(root: str, rel: str) -> tuple[int, int] | None:
    """The regular file ``root/rel`` (descriptor, size) opened by its whole path in one call, its last part
    not followed, kept only when the kernel names the file reached exactly as the root's real path followed
    by ``rel`` (see ``_opened_directly``); None when that cannot be shown (absent, a link, not a regular file,
    unreadable…: ``open_file``'s walk then says which)."""
    if not _HAS_PROC_FD:
        return None
    try:
        fd = os.open(f"{root}/{rel}", FILE_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and _named(fd) == f"{_real(root)}/{rel}":
            return fd, st.st_size
    except OSError:
        pass
    os.close(fd)
    return None


def open_file(root: str, rel: str) -> tuple[int, int]:
    """A descriptor of the regular file ``root/rel`` (and its size), reached without following a link."""
    got = opened_directly(root, rel)
    if got is not None:
        return got
    folder, _, name = rel.rpartition("/")
    dfd = open_dir(root, folder)
    try:
        return open_in(dfd, name, rel)
    finally:
        os.close(dfd)


def read_fd(fd: int, size: int) -> bytes:
    """A whole file with the fewest reads: one (more only for a file past one read's limit, or one that
    grew since its size was taken)."""
    data = os.read(fd, size + 1)
    if len(data) == size:
        return data
    parts = [data]
    while block := os.read(fd, max(size, CHUNK)):
        parts.append(block)
    return b"".join(parts)


def slurp(root: str, rel: str) -> bytes:
    """The whole regular file ``root/rel`` (see ``open_file`` for what else it may raise)."""
    fd, size = open_file(root, rel)
    try:
        return read_fd(fd, size)
    finally:
        os.close(fd)


def read_head(root: str, rel: str, limit: int) -> bytes:
    """The first ``limit`` bytes of the regular file ``root/rel`` (a sha256 index entry, a meta)."""
    fd, _ = open_file(root, rel)
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def kind_in(dfd: int, name: str) -> str | None:
    """What ``name`` in the folder ``dfd`` is, not following a link: 'file', 'dir', 'link', 'other', or None."""
    try:
        mode = os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    return _kind(mode)


def _kind(mode: int) -> str:
    return ("link" if stat.S_ISLNK(mode) else "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode)
            else "other")


def lstat(root: str, rel: str) -> os.stat_result:
    """``root/rel``'s own status (a link's, not what it points at), its folders reached without following one."""
    folder, _, name = rel.rpartition("/")
    dfd = open_dir(root, folder)
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    finally:
        os.close(dfd)


def kind_of(root: str, rel: str) -> str | None:
    """What ``root/rel`` is (``kind_in``), its folders reached without following a link; None when it or a
    folder on its way is missing (a file in a folder's place: None too). ``LinkRefused`` for a link on the way."""
    folder, _, name = rel.rpartition("/")
    try:
        dfd = open_dir(root, folder)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return kind_in(dfd, name)
    finally:
        os.close(dfd)


def entries(root: str, rel: str) -> list[tuple[str, str]]:
    """(name, kind) of everything in the folder ``root/rel``, sorted by name; kind as ``kind_in``."""
    fd = open_dir(root, rel)
    try:
        out = []
        with os.scandir(fd) as it:
            for e in it:  # the kinds come from the listing itself where the filesystem gives them (d_type)
                kind = ("link" if e.is_symlink() else "dir" if e.is_dir(follow_symlinks=False)
                        else "file" if e.is_file(follow_symlinks=False) else "other")
                out.append((e.name, kind))
    finally:
        os.close(fd)
    return sorted(out)


Problem = Callable[[str, str, str], None]  # (the path under the root, its kind or "unreadable", why)
LINK_FOR_FOLDER = "a symbolic link where the store keeps a folder; the store never makes one (not followed)"
LINK_FOR_FILE = "a symbolic link where the store keeps a file; the store never makes one (not followed)"


def leaves(root: str, top: str, depth: int, problem: Problem) -> Iterator[tuple[str, str, str]]:
    """(folder, name, kind) of every entry of every folder ``depth`` levels below ``root/top``, in order. A
    folder that is missing is empty; ``problem(path, kind, why)`` is told of what is not a folder where one
    belongs (kind 'link', 'file' or 'other') and of a folder that cannot be read ('unreadable'), and the
    walk goes on beside it."""
    try:
        found = entries(root, top)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        problem(top, "unreadable", why(e))
        return
    for name, kind in found:
        path = f"{top}/{name}"
        if depth == 0:
            yield top, name, kind
        elif kind == "dir":
            yield from leaves(root, path, depth - 1, problem)
        else:
            problem(path, kind, LINK_FOR_FOLDER if kind == "link" else
                    "not a blob: a file where the store keeps only folders")


def unlink(root: str, rel: str) -> bool:
    """Remove the file ``root/rel`` (a link there too, never what it points at), its folders reached without
    following a link; whether something was removed. Nothing there, or a link on the way (left for
    ``verify`` to report), removes nothing."""
    folder, _, name = rel.rpartition("/")
    try:
        dfd = open_dir(root, folder)
    except (FileNotFoundError, NotADirectoryError, LinkRefused):
        return False
    try:
        os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    finally:
        os.close(dfd)
    return True
