"""kill -9 in the middle of writes, and several processes writing at once, to one evidence home.

After every kill: no torn blob is visible under its digest, no receipt points to a missing blob,
and the ledger verifies. ``G6_LONG=1`` (``scripts/reliability``) repeats the kills many more times.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from tests.children import Children

ROUNDS = 60 if os.environ.get("G6_LONG") == "1" else 6
TALLY: dict[str, list[bool]] = {"kill -9 during put_stream": [], "kill -9 during append": []}

PUT_CHILD = """
import os, sys
from g6.store import BlobStore
store = BlobStore(sys.argv[1])
print("ready", flush=True)
while True:
    store.put_stream(os.urandom(1 << 20) for _ in range(48))
"""

APPEND_CHILD = """
import os, sys
from g6.home import EvidenceHome
from g6.ledger import Receipt
home = EvidenceHome(sys.argv[1])
print("ready", flush=True)
i = 0
while True:
    ref = home.store.put(os.urandom(2048) + str(i).encode())
    home.record(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                        outcome_code="G6_E_KNOWLEDGE_FETCHED", content=ref.to_json(), byte_count=ref.size))
    i += 1
"""


def run_and_kill(code: str, root: Path, rng: random.Random) -> None:
    with Children() as kids:  # whatever happens here, the child is gone after (killed with its process group)
        p = kids.start([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE)
        assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.02, 0.6))
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)


def test_kill_during_put_stream_leaves_no_torn_blob(tmp_path: Path) -> None:
    from g6.store import BlobStore

    rng = random.Random(1)
    root = tmp_path / "blobs"
    for _ in range(ROUNDS):
        run_and_kill(PUT_CHILD, root, rng)
        report = BlobStore(root).verify()
        TALLY["kill -9 during put_stream"].append(report.ok)
        assert report.ok, report.bad
    store = BlobStore(root)
    assert store.gc([], grace_seconds=0, dry_run=True).temp_files_removed >= 0  # leftovers are sweepable


def test_kill_during_append_keeps_chain_and_blobs(tmp_path: Path) -> None:
    rng = random.Random(2)
    root = tmp_path / "home"
    EvidenceHome(root).keys.init()
    rows = 0
    for _ in range(ROUNDS):
        run_and_kill(APPEND_CHILD, root, rng)
        with EvidenceHome(root) as home:
            report = home.verify()
            TALLY["kill -9 during append"].append(report.ok)
            assert report.ok, report.failures()
            assert report.rows >= rows
            rows = report.rows
    assert rows > 0


FETCH_CHILD = """
import sys
from g6.adapters import CheckedClient, FetchPolicy
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
home = EvidenceHome(sys.argv[1])
with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
    for i in range(int(sys.argv[3])):
        fetch(home, c, f"{sys.argv[2]}/p{i % 5}")
"""


def test_several_processes_fetching_and_appending_at_once(tmp_path: Path,
                                                          site: Callable[..., LocalSite]) -> None:
    s = site({**{f"/p{i}": Reply(body=f"<p>page {i} for concurrent writers</p>".encode()) for i in range(5)},
              "/robots.txt": Reply(404, b"")})
    root = tmp_path / "home"
    EvidenceHome(root).keys.init()
    n, per = 4, 20
    procs = [subprocess.Popen([sys.executable, "-c", FETCH_CHILD, str(root), s.base_url, str(per)])
             for _ in range(n)]
    for p in procs:
        assert p.wait(120) == 0
    with EvidenceHome(root) as home:
        report = home.verify()
        assert report.ok, report.failures()
        seqs = [e.seq for e in home.ledger.entries()]
    assert seqs == list(range(1, n * per + 1))  # one chain, no fork, nothing lost
