"""What the `ledger publish` tests share: a ledger filled to a size, `g6` in a fresh process, a published
log served on loopback (from a folder, or from S3 through a reading proxy), and the two independent
readers run on it: tessera's fsck (v1.0.4) and Go's golang.org/x/mod/sumdb/tlog (``tlogcheck``).

tessera fsck v1.0.4 exits 0 even when the check fails, so its verdict is its "Successfully fsck'd log" line
on stderr; with one worker it can hang on a mismatch, so it runs with four, under a timeout that is only a
guard against that hang (never a measure of anything).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.prove.proofs import note_verifier_key
from tests.peers.go_tools import go_tool

FSCK_OK = "Successfully fsck'd log"
GUARD = 300  # seconds: a hang guard for the Go tools, not a timing assertion
NO_AWS_LOOKUPS = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent",
                  "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}  # boto3 asks nothing but the loopback S3


def receipt(i: int, **extra: Any) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}", **extra}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)


def fill(ev: EvidenceHome, size: int) -> None:
    """Append receipts until the ledger holds ``size``."""
    have = len(ev.ledger)
    if size > have:
        ev.ledger.append_many([receipt(i) for i in range(have, size)], ev.signing_key())


def write_vkey(ev: EvidenceHome, path: Path) -> Path:
    path.write_text(note_verifier_key(ev) + "\n")
    return path


def g6(home: Path, *args: str, env: Mapping[str, str] | None = None,
       prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``g6 --home HOME ARGS`` as a user runs it: no G6_* or AWS_* from the test's environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("G6_", "AWS_"))}
    return subprocess.run([*prefix, sys.executable, "-m", "g6", "--home", str(home), *args], capture_output=True,
                          text=True, timeout=GUARD, env={**base, **NO_AWS_LOOKUPS, **dict(env or {})})


def one_line_error(r: subprocess.CompletedProcess[str]) -> str:
    """The command's error: exactly one ``g6:`` line on stderr, never a traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("g6: ") and "created" not in line]
    assert len(lines) == 1, r.stderr
    return lines[0]


# -- serving a published log on loopback ----------------------------------------------------------------
class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


class _FromS3(http.server.BaseHTTPRequestHandler):
    """GET /PATH answers the object PREFIX/PATH of the bucket (read with the test's credentials)."""

    s3: Any = None
    bucket = ""
    prefix = ""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.prefix + self.path.lstrip("/"))["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def _serving(handler: Any) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def serve_folder(folder: Path) -> contextlib.AbstractContextManager[str]:
    """The folder over http on a free loopback port: its URL, ending in /."""
    return _serving(functools.partial(_Quiet, directory=str(folder)))


def serve_s3(s3: Any, bucket: str, prefix: str) -> contextlib.AbstractContextManager[str]:
    """A prefix of a bucket over plain http on loopback, as a public bucket (or a CDN before it) serves it."""
    handler = type("Handler", (_FromS3,), {"s3": s3, "bucket": bucket, "prefix": prefix.strip("/") + "/"})
    return _serving(handler)


# -- the two readers ----------------------------------------------------------------------------------------
def fsck(url: str, vkey: Path, origin: str) -> tuple[bool, str]:
    """tessera fsck on ``url`` (http://… or file:///abs/dir/): (passed, its stderr)."""
    r = subprocess.run([str(go_tool("fsck")), "--ui=false", "-N=4", f"--storage_url={url}",
                        f"--public_key={vkey}", f"--origin={origin}"], capture_output=True, text=True, timeout=GUARD)
    return FSCK_OK in r.stderr, r.stderr


def folder_url(folder: Path) -> str:
    return folder.resolve().as_uri() + "/"


def tlogcheck(url: str, vkey: Path, index: str = "all", old: int | None = None) -> subprocess.CompletedProcess[str]:
    args = [str(go_tool("tlogcheck")), "-url", url, "-vkey", str(vkey), "-index", index]
    if old is not None:
        args += ["-old", str(old)]
    return subprocess.run(args, capture_output=True, text=True, timeout=GUARD)
