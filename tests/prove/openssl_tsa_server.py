"""A loopback RFC 3161 time-stamping authority for the tests: ``openssl ts -reply`` behind Python's
http.server. Test code only.

    python openssl_tsa_server.py CONFIG

Listens on 127.0.0.1 on a port the system picks and prints ``port N`` on stdout once it listens.
``POST /<section>`` (Content-Type application/timestamp-query) answers with what
``openssl ts -reply -config CONFIG -section <section>`` makes of the query (application/timestamp-reply).
Stop it by its PID.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONFIG = sys.argv[1] if __name__ == "__main__" else ""
LOCK = threading.Lock()  # openssl keeps the next serial number in a file: one reply at a time
MAX_QUERY = 1 << 16


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        section = self.path.strip("/")
        length = int(self.headers.get("Content-Length") or 0)
        if not re.fullmatch(r"[a-z_]{1,40}", section) or length > MAX_QUERY:
            self.send_error(404)
            return
        if self.headers.get("Content-Type") != "application/timestamp-query":
            self.send_error(415)
            return
        query = self.rfile.read(length)
        with LOCK, tempfile.TemporaryDirectory() as d:
            q, r = os.path.join(d, "q.tsq"), os.path.join(d, "r.tsr")
            with open(q, "wb") as f:
                f.write(query)
            run = subprocess.run(["openssl", "ts", "-reply", "-config", CONFIG, "-section", section,
                                  "-queryfile", q, "-out", r], capture_output=True, timeout=30)
            if run.returncode != 0 or not os.path.exists(r):
                sys.stderr.write(run.stderr.decode(errors="replace"))
                self.send_error(500)
                return
            with open(r, "rb") as f:
                reply = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/timestamp-reply")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def serve(config: str, port: int = 0) -> ThreadingHTTPServer:
    """The server bound on 127.0.0.1:``port`` (0: one the system picks), answering from ``config``
    (``scripts/tsa.py`` runs it in the foreground too)."""
    global CONFIG
    CONFIG = config
    return ThreadingHTTPServer(("127.0.0.1", port), Handler)


if __name__ == "__main__":
    server = serve(CONFIG)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()
