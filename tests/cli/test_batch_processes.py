"""``g6 fetch --input`` on several processes: hosts shared out among forked workers, the per-host
gate and pause shared by them all, signing and appending in the parent, a worker that dies reported
as ``G6_E_WORKER_LOST`` rather than hanging or vanishing.

A fork is only taken where no other thread runs, and this test process runs loopback servers on
threads, so the forked paths run in a child Python (the CLI, or a small script), as a user's would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import Reply, SeenRequest
from g6.fetch.batch import batch_fetch, usable_processes
from g6.fetch.host_pool import can_fork
from g6.home import EvidenceHome
from tests.attack.test_batch_findings import _HostB
from tests.children import Children
from tests.cli.test_batch_fetch import ENV, page

ROOT = Path(__file__).resolve().parents[2]


def _cli(home: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **ENV}
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", *args],
                          input=stdin, capture_output=True, text=True, env=env, timeout=300)


def _script(body: str) -> subprocess.CompletedProcess[str]:
    """``body`` in a fresh Python with no other thread, so it may fork."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_a_forked_batch_receipts_every_url_once_and_resumes(site, tmp_path: Path) -> None:
    sites = [site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(6)}}, host=h)
             for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3")]
    urls = [s.url(f"/{i}") for s in sites for i in range(6)]
    home = tmp_path / "h"
    p = _cli(home, "--json", "--run", "r1", "--processes", "2", "--concurrency", "3", stdin="\n".join(urls))
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert sorted(x["url"] for x in lines) == sorted(urls)
    assert all(x["outcome"] == "ok" and x["receipt_id"] for x in lines)
    for s in sites:  # robots.txt once and each page once, per host
        assert sorted(r.path for r in s.requests) == sorted(["/robots.txt"] + [f"/{i}" for i in range(6)])
    with EvidenceHome(home) as ev:
        entries = list(ev.ledger.entries())
        assert sorted(e.receipt.receipt_id for e in entries) == sorted(x["receipt_id"] for x in lines)
        assert sorted(e.receipt.request["url"] for e in entries) == sorted(urls)
        assert ev.verify().ok
    again = _cli(home, "--json", "--run", "r1", "--processes", "2", stdin="\n".join(urls))
    assert again.returncode == 0, again.stderr
    by_url = sorted(lines, key=lambda x: x["url"])
    assert sorted((json.loads(x) for x in again.stdout.splitlines()), key=lambda x: x["url"]) == by_url
    assert all(len(s.requests) == 7 for s in sites)  # nothing fetched again


def test_a_cross_host_redirect_waits_for_the_host_another_process_is_fetching(site, tmp_path: Path) -> None:
    """F3 across processes: host A (one worker process) redirects to host B while B's own page is in
    flight in the other worker process; the shared gate keeps B at one request at a time. With a gate
    per process the two would overlap (the held reply on B waits to see it)."""
    b = _HostB(site)

    def redirect(req: SeenRequest) -> Reply:
        b.busy.wait(10)  # host B's own page is in flight (bounded, in case it never is)
        return Reply(302, b"", headers=(("Location", b.site.url("/target")),))

    a = site({"/robots.txt": Reply(404, b""), "/r": redirect})
    p = _cli(tmp_path / "h", "--json", "--processes", "2", "--concurrency", "2",
             stdin=f"{b.site.url('/slow')}\n{a.url('/r')}\n")
    assert p.returncode == 0, p.stderr
    assert [json.loads(x)["outcome"] for x in p.stdout.splitlines()] == ["ok", "ok"]
    assert b.peak == 1, f"{b.peak} requests at once on 127.0.0.2"


def test_the_pause_is_shared_by_the_worker_processes() -> None:
    """Two processes asking one host twice each: with a clock that stands still, the four waits are
    the slots 0, 1, 2 and 3 pauses after the first, whichever process asked (a pacer per process
    would give 0, 0, 1, 1)."""
    p = _script("""
        import multiprocessing, os
        from g6.adapters.net.pacing import SharedHostPacer
        ctx = multiprocessing.get_context("fork")
        pacer = SharedHostPacer(ctx, clock=lambda: 100.0, sleep=lambda s: None)
        other = SharedHostPacer(ctx, clock=lambda: 100.0, sleep=lambda s: None)
        r, w = os.pipe()
        pids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                waits = [pacer.wait("web", "example.org", 2.5) for _ in range(2)]
                os.write(w, (" ".join(map(str, waits)) + "\\n").encode())
                os._exit(0)
            pids.append(pid)
        for pid in pids:
            os.waitpid(pid, 0)
        os.close(w)
        print(sorted(float(x) for x in os.read(r, 1000).decode().split()))
        print(other.wait("web", "example.org", 2.5), pacer.wait("web", "example.net", 2.5))
        from g6.adapters.net.pacing import HostPacer
        before = HostPacer(clock=lambda: 100.0, sleep=lambda s: None)
        before.wait("web", "example.com", 4.0)  # asked before the batch: next slot at 104
        carried = SharedHostPacer(ctx, clock=lambda: 100.0, sleep=lambda s: None)
        carried.carry_over(before)
        print(carried.wait("web", "example.com", 4.0), carried.wait("web", "example.com", 4.0))
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["[0.0, 2.5, 5.0, 7.5]", "0.0 0.0", "4.0 8.0"]


def test_a_worker_that_dies_settles_its_urls_as_lost_and_the_rest_go_on() -> None:
    p = _script("""
        import os
        from g6.errors import BlobNotFound, WorkerLost
        from g6.fetch.host_pool import per_host_processes

        class Odd(Exception):
            def __init__(self, a, b):  # two arguments: does not survive pickling
                super().__init__(a)

        def work(it):
            host, i = it
            if it == ("h2", 1):
                os._exit(3)  # the worker process dies mid-batch
            if it == ("h1", 2):
                raise BlobNotFound("no such blob")
            if it == ("h1", 3):
                raise Odd("odd", 1)
            return os.getpid()

        # host h2 has the most items, so it is one worker's alone; h0, h1 and h3 are the other's
        items = [(f"h{h}", i) for h in range(4) for i in range(12 if h == 2 else 4)]
        got = {}
        order = {}
        for it, res, _ in per_host_processes(items, lambda it: it[0], work, workers=2, processes=2):
            assert it not in got
            got[it] = res
            order.setdefault(it[0], []).append(it[1])
        assert set(got) == set(items)
        lost = sorted(it for it, r in got.items() if isinstance(r, WorkerLost))
        # h2's first item may be lost too: done, but not yet sent when its worker died
        print("lost", lost in ([("h2", i) for i in range(1, 12)], [("h2", i) for i in range(12)]) or lost)
        print("lost-code", got[("h2", 1)].code)
        print("typed", type(got[("h1", 2)]).__name__, got[("h1", 2)].code)
        print("odd", type(got[("h1", 3)]).__name__, got[("h1", 3)])
        others = {r for (h, _), r in got.items() if h != "h2" and isinstance(r, int)}
        print("two workers", len(others) == 1 and os.getpid() not in others)
        print("in order", all(v == sorted(v) for v in order.values()))
    """)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stdout.splitlines() == ["lost True", "lost-code G6_E_WORKER_LOST",
                                     "typed BlobNotFound G6_E_STORE_BLOB_NOT_FOUND", "odd RuntimeError Odd: odd",
                                     "two workers True", "in order True"]


def test_no_fork_while_another_thread_runs(site, home: EvidenceHome) -> None:
    """This process runs servers on threads: a batch asking for processes runs on threads here, and
    still ends every URL with a receipt."""
    s = site({"/robots.txt": Reply(404, b""), "/0": page(0), "/1": page(1)})  # its server runs on a thread
    assert not can_fork() and threading.active_count() > 1
    assert usable_processes(home, 4) == 1
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, [s.url("/0"), s.url("/1")], processes=4)
    assert report.ok and len(home.ledger) == 2


@pytest.mark.signals
def test_ctrl_c_stops_a_forked_batch_without_a_traceback_or_a_stray_worker(site, tmp_path: Path,
                                                                           children: Children) -> None:
    release = threading.Event()

    def held(req: SeenRequest) -> Reply:
        release.wait(60)
        return page(0)

    # each host ends on a held page, so both workers are busy when Ctrl-C comes
    a = site({"/robots.txt": Reply(404, b""), "/held": held, **{f"/{i}": page(i) for i in range(3)}})
    b = site({"/robots.txt": Reply(404, b""), "/held": held}, host="127.0.0.2")
    home = tmp_path / "h"
    p = children.start([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", "--json",
                        "--run", "stopped", "--processes", "2", "--concurrency", "2"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **ENV}, text=True)
    try:
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        p.stdin.write("\n".join([b.url("/held")] + [a.url(f"/{i}") for i in range(3)] + [a.url("/held")]) + "\n")
        p.stdin.close()
        printed = [json.loads(p.stdout.readline()) for _ in range(3)]  # host A's pages, while B is held
        workers = [int(x) for x in Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()]
        assert len(workers) == 2
        os.killpg(p.pid, signal.SIGINT)  # Ctrl-C: the whole process group, as a terminal sends it
        release.set()  # the held request ends, so the worker holding it can see the stop
        err = p.stderr.read()
        code = p.wait(120)
    finally:
        release.set()
        if p.poll() is None:
            p.kill()
    assert code != 0 and "Traceback" not in err, err
    assert all(r["outcome"] == "ok" for r in printed)
    for pid in workers:  # the workers were joined, not left behind
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            state = "gone"
        assert state in ("gone", "Z"), (pid, state)
    with EvidenceHome(home) as ev:
        assert {r["receipt_id"] for r in printed} <= {e.receipt.receipt_id for e in ev.ledger.entries()}
        assert ev.verify().ok


def test_a_result_is_reported_while_another_worker_is_still_busy(site, tmp_path: Path) -> None:
    """Host A's worker ends after its one page while host B's page is held until A's line is out: the
    parent reports A's result then, not once B's worker reports too."""
    a_reported = threading.Event()
    released_by_report: list[bool] = []

    def held(req: SeenRequest) -> Reply:
        released_by_report.append(a_reported.wait(60))
        return page(1)

    a = site({"/robots.txt": Reply(404, b""), "/0": page(0)})
    b = site({"/robots.txt": Reply(404, b""), "/held": held}, host="127.0.0.2")
    p = subprocess.Popen([sys.executable, "-m", "g6", "--home", str(tmp_path / "h"), "fetch", "--input", "-",
                          "--json", "--processes", "2", "--concurrency", "2"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **ENV}, text=True)
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(f"{b.url('/held')}\n{a.url('/0')}\n")
        p.stdin.close()
        first_line = p.stdout.readline()
        assert first_line, p.stderr.read() if p.stderr else ""
        first = json.loads(first_line)
        a_reported.set()
        second_line = p.stdout.readline()
        assert second_line, p.stderr.read() if p.stderr else ""
        second = json.loads(second_line)
        assert p.wait(120) == 0
    finally:
        a_reported.set()
        if p.poll() is None:
            p.kill()
    assert (first["url"], second["url"]) == (a.url("/0"), b.url("/held"))
    assert released_by_report == [True]


@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_configured_secret_in_a_listed_url_is_shown_nowhere(site, tmp_path: Path, processes: str) -> None:
    secret = "s3cr3t-key-0123456789"
    s = site({"/robots.txt": Reply(404, b""), f"/p/{secret}": page(0), "/q": page(1)})
    b = site({"/robots.txt": Reply(404, b""), "/r": page(2)}, host="127.0.0.2")
    home = tmp_path / "h"
    env = {**os.environ, **ENV, "G6_OPENALEX_API_KEY": secret}
    urls = [s.url(f"/p/{secret}"), s.url("/q"), b.url("/r")]
    p = subprocess.run([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", "--json",
                        "--run", "r", "--processes", processes], input="\n".join(urls), capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    run_file = (home / "knowledge" / "fetches" / "r.jsonl").read_text()
    for where in (p.stdout, p.stderr, run_file):
        assert secret not in where
    assert sorted(json.loads(x)["url"] for x in p.stdout.splitlines()) == sorted(
        [s.url("/p/REDACTED"), s.url("/q"), b.url("/r")])
    again = subprocess.run([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", "--run", "r",
                            "--processes", processes], input="\n".join(urls), capture_output=True, text=True,
                           env=env, timeout=300)
    assert again.returncode == 0 and "0 from the earlier run" not in again.stderr  # resumed, not fetched again
    assert secret not in again.stdout + again.stderr
    bad = subprocess.run([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-"],
                         input=f"not a url {secret}\n", capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 2 and secret not in bad.stdout + bad.stderr and bad.stderr.startswith("g6: ")
