"""Where a report check writes what it makes (``-o``, ``--manifest``, ``--html``, ``report bundle -o``; the MCP
tool's ``output``), and how: never inside the evidence home (its ledger, blobs and keys are what every result
rests on, and a slip of the shell must not replace them), never over something that is not a regular file (a
folder, a FIFO, a device, a socket), always whole (a temporary file in the same folder, then a rename), so a
refused or failed run leaves the old file as it was.

Paths are compared as real paths (symbolic links resolved, in the output's folder and in the home's), so a link
to the home, or a home reached through a link, is the home. An output that is itself a symbolic link (to a
regular file, or dangling) is replaced by the rename, the link and not its target.

Over MCP an agent names no path at all: the output is a file name in ``$G6_HOME/knowledge/reports/results/``
(``mcp_output``), the one folder of the home that holds only what report checks wrote.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from g6.errors import InputError
from g6.prove.proofs import write_note

MCP_RESULTS = Path("knowledge") / "reports" / "results"  # under the home: where report_check's output goes
MCP_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}\.json")
_SQLITE_SIDECARS = ("", "-wal", "-shm", "-journal")


def home_paths(home: Path, values: Mapping[str, str]) -> tuple[Path, ...]:
    """The evidence home as files and folders: the home itself, and the SQLite ledger (with its write-ahead
    log and journal) and the blob folder when ``G6_LEDGER_URL`` and ``G6_BLOB_URL`` put them elsewhere."""
    paths = [home]
    ledger, blobs = values.get("G6_LEDGER_URL") or "", values.get("G6_BLOB_URL") or ""
    if ledger.startswith("sqlite:") and urlsplit(ledger).path:
        db = Path(unquote(urlsplit(ledger).path))
        paths += [db.with_name(db.name + s) for s in _SQLITE_SIDECARS]
    if blobs.startswith("file:") and urlsplit(blobs).path:
        paths.append(Path(unquote(urlsplit(blobs).path)))
    return tuple(paths)


def _inside(path: str, protected: str) -> bool:
    return path == protected or path.startswith(protected.rstrip(os.sep) + os.sep)


def check_output(path: Path, protected: Sequence[Path], flag: str) -> None:
    """Refuse (InputError, one line) an output path that is a folder, in a folder that does not exist, inside
    the evidence home (``protected``, compared as real paths), or an existing file that is not a regular file
    (nor a symbolic link to one, or a dangling one: a link is replaced, never followed)."""
    if not path.name or path.name in (".", ".."):
        raise InputError(f"{flag} {path}: give a file name")
    if not path.parent.is_dir():
        raise InputError(f"{flag} {path}: {path.parent} is a file, not a folder" if path.parent.exists() else
                         f"{flag} {path}: folder {path.parent} does not exist")
    here = os.path.join(os.path.realpath(path.parent), path.name)
    candidates = {here, os.path.realpath(here)}  # the name itself, and where a link in its place points
    for p in protected:
        real = os.path.realpath(p)
        if any(_inside(c, real) for c in candidates):
            raise InputError(f"{flag} {path} is inside the evidence home ({p}): its ledger, blobs and keys are "
                             "never replaced; write the output outside the home")
    try:
        st = os.lstat(here)
    except FileNotFoundError:
        return
    except OSError as e:
        raise InputError(f"{flag} {path}: {e.strerror or e}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(here)
        except OSError:
            return  # a dangling link: the rename replaces it
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode) else \
            "a socket" if stat.S_ISSOCK(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or \
            stat.S_ISBLK(st.st_mode) else "not a regular file"
        raise InputError(f"{flag} {path} is {what}; give a regular file (or a new name) to write")


def write_output(path: Path, text: str, protected: Sequence[Path], flag: str) -> None:
    """``text`` written to ``path`` whole or not at all, checked again (``check_output``) just before: a
    temporary file beside it (created exclusively, never through a link), flushed to disk, then renamed over
    it. On any failure the temporary file is removed and ``path`` is as it was."""
    check_output(path, protected, flag)
    write_note(path, text)  # the parent is a folder (checked): nothing is made


def mcp_output(home: Path, name: str) -> Path:
    """The file an MCP ``output`` names: a plain file name ending ``.json`` in the home's
    ``knowledge/reports/results/``, never a path (InputError otherwise). The folder is made when missing and
    must be that very folder (no link in its place that leads elsewhere)."""
    if not isinstance(name, str) or not MCP_NAME.fullmatch(name):
        raise InputError(f"output {str(name)[:80]!r}: give a file name ending .json (letters, digits, '.', '_', "
                         f"'-'; no folder), written in {home / MCP_RESULTS}")
    folder = home / MCP_RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    if os.path.realpath(folder) != os.path.join(os.path.realpath(home), str(MCP_RESULTS)):
        raise InputError(f"output: {folder} is not the home's own results folder (a symbolic link in its path)")
    return folder / name
