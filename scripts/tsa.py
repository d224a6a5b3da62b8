"""A throwaway RFC 3161 time-stamping authority on 127.0.0.1, for `g6 ledger checkpoint --tsa` and
`g6 ledger verify --tsa-root` on your own machine.

    python scripts/tsa.py [--port N] [--state DIR] [--print-env]

Makes a CA and a TSA certificate it issued in DIR (kept and reused: a fresh temporary folder without
--state), runs ``openssl ts -reply`` behind a small HTTP server (the one the tests use,
tests/prove/openssl_tsa_server.py; the CA is made by tests/prove/_tsa.py) and prints the URL to give
``--tsa`` and the root certificate to give ``--tsa-root``. With --print-env, stdout is one line,
``export G6_TSA_URL=… G6_TSA_ROOT=…``. Runs until Ctrl-C (or SIGTERM). Not a production TSA: its key
is a file in DIR and its clock is this machine's.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from _servers import Refused, announce, fail, port_arg, port_free, stop_on_sigterm  # noqa: E402

PROG = "tsa.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", default="0", help="the port on 127.0.0.1 (default 0: one the system picks)")
    ap.add_argument("--state", type=Path, help="the folder of the CA and the TSA key (default: a fresh temporary one)")
    ap.add_argument("--print-env", action="store_true", help="print `export G6_TSA_URL=… G6_TSA_ROOT=…` on stdout")
    args = ap.parse_args(argv)
    try:
        port = port_arg(args.port)
        if shutil.which("openssl") is None:
            raise Refused("openssl is not on PATH: the TSA is `openssl ts -reply` (apt-get install openssl)")
        state = args.state.resolve() if args.state else Path(tempfile.mkdtemp(prefix="g6-tsa-"))
        if state.exists() and not state.is_dir():
            raise Refused(f"--state {state} is not a folder", 2)
        if port and not port_free(port):
            raise Refused(f"cannot listen on 127.0.0.1:{port}: the port is in use", 2)
        from tests.prove._tsa import make_openssl_tsa
        from tests.prove.openssl_tsa_server import serve

        cnf = state / "tsa.cnf"
        if not (cnf.is_file() and (state / "root.pem").is_file() and (state / "tsa.key").is_file()):
            try:
                cnf = make_openssl_tsa(state, "g6 quick-start TSA")
            except OSError as e:
                raise Refused(f"cannot write the CA in {state}: {e.strerror}", 2) from None
        try:
            server = serve(str(cnf), port)
        except OSError as e:
            raise Refused(f"cannot listen on 127.0.0.1:{port}: {e.strerror}", 2) from None
    except Refused as e:
        fail(PROG, e)
    url = f"http://127.0.0.1:{server.server_address[1]}/tsa"
    root = str(state / "root.pem")
    stop_on_sigterm()
    try:  # from before the lines a script waits for: a signal sent as soon as it reads them stops it cleanly
        announce([("tsa", url), ("root certificate (for --tsa-root)", root)],
                 {"G6_TSA_URL": url, "G6_TSA_ROOT": root}, args.print_env)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
