"""Attacks on group commit (perf-batch): no URL is reported (stdout line, run-file line) before its
receipt is durable, whenever the process is killed; a resumed run settles each URL exactly once;
one request at a time per host, robots kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.net.pacing import HostPacer
from g6.cli import cli
from g6.demo.site import Reply, SeenRequest
from g6.fetch.batch import batch_fetch
from g6.home import EvidenceHome
from tests.children import Children
from tests.conftest import validate

ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}


def page(n: int) -> Reply:
    return Reply(body=f"<html><body><article><p>Page {n} says something worth keeping.</p></article></body></html>"
                 .encode())


def run_lines(home: Path, run_id: str) -> list[dict]:
    p = home / "knowledge" / "fetches" / f"{run_id}.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def ledger_ids(home: Path) -> tuple[set[str], bool]:
    with EvidenceHome(home) as ev:
        return {e.receipt.receipt_id for e in ev.ledger.entries()}, ev.verify().ok


@pytest.mark.parametrize("n", [1, 4, 9])
def test_kill_9_after_the_nth_line_then_resume_settles_each_url_once(site, tmp_path: Path, n: int,
                                                                     children: Children) -> None:
    """Three hosts, mixed outcomes (ok, 404, robots-disallowed, a bad URL); host C's pages are held
    until the kill, so the run cannot end first. Every line read before the kill (and whatever the
    pipe still held) names a durable receipt and has its run-file line; the ledger verifies; a
    resumed run then settles every URL exactly once."""
    release = threading.Event()

    def held(i: int):
        def reply(req: SeenRequest) -> Reply:
            release.wait(60)  # set right after the kill: the run cannot finish before it
            return page(i)
        return reply

    a = site({"/robots.txt": Reply(body=b"User-agent: *\nDisallow: /private\n"),
              **{f"/{i}": page(i) for i in range(8)}, "/gone": Reply(404, b"no")})
    b = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(100 + i) for i in range(8)}}, host="127.0.0.2")
    c = site({"/robots.txt": Reply(404, b""), **{f"/{i}": held(200 + i) for i in range(3)}}, host="127.0.0.3")
    urls = ([a.url(f"/{i}") for i in range(8)] + [a.url("/gone"), a.url("/private/x")]
            + [b.url(f"/{i}") for i in range(8)] + [c.url(f"/{i}") for i in range(3)] + ["http://[bad/", "ftp://127.0.0.1/x"])
    home = tmp_path / "h"
    env = {**os.environ, **ENV, "G6_HOME": str(home)}
    cmd = [sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", "--json", "--run", "r1",
           "--concurrency", "3"]
    p = children.start(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                       text=True)
    printed: list[dict] = []
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write("\n".join(urls) + "\n")
        p.stdin.close()
        for _ in range(n):
            line = p.stdout.readline()
            assert line, "the run ended before printing n lines"
            printed.append(json.loads(line))
    finally:
        p.kill()  # SIGKILL at the nth line
        p.wait()
        release.set()
    assert p.stdout is not None
    printed += [json.loads(x) for x in p.stdout.read().splitlines() if x.strip()]  # what the pipe still held
    assert len(printed) >= n
    durable, verified = ledger_ids(home)
    assert verified
    for r in printed:
        assert r["receipt_id"] is None and r["outcome"] == "error" or r["receipt_id"] in durable, r
    lines = run_lines(home, "r1")
    assert {r["url"] for r in printed} <= {x["url"] for x in lines}
    assert all(x["receipt_id"] is None or x["receipt_id"] in durable for x in lines)
    assert not [u for u, k in Counter(x["url"] for x in lines).items() if k > 1]
    # resume: every URL ends with exactly one settled result, each with its receipt
    r = subprocess.run(cmd, input="\n".join(urls) + "\n", capture_output=True, text=True, env=env)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr
    resumed = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(resumed) == len(urls) and len({x["url"] for x in resumed}) == len(urls)
    final = run_lines(home, "r1")
    assert len(final) == len(urls) and len({x["url"] for x in final}) == len(urls)
    durable, verified = ledger_ids(home)
    assert verified
    assert all(x["receipt_id"] in durable for x in final if x["outcome"] != "error")
    by_url = {x["url"]: x for x in final}
    assert by_url[a.url("/private/x")]["outcome"] == "robots_disallowed"
    assert by_url[a.url("/gone")]["outcome"] != "ok"
    assert sum(x["outcome"] == "ok" for x in final) == 8 + 8 + 3
    # what was printed before the kill is what the resumed run reports for that URL (no second settling)
    for x in printed:
        assert by_url[x["url"]]["receipt_id"] == x["receipt_id"], x
    assert not any(q.path.startswith("/private") for q in a.requests)


def test_one_request_at_a_time_on_every_host_robots_kept(site, home: EvidenceHome) -> None:
    """Four hosts, six URLs each, eight workers: never two requests at once on one host (robots.txt
    included); a disallowed path is never asked for."""
    lock = threading.Lock()
    inflight: Counter[str] = Counter()
    peak: Counter[str] = Counter()

    def counted(host: str, reply: Reply):
        def handler(req: SeenRequest) -> Reply:
            with lock:
                inflight[host] += 1
                peak[host] = max(peak[host], inflight[host])
            try:
                return reply
            finally:
                with lock:
                    inflight[host] -= 1
        return handler

    sites = []
    for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"):
        routes = {"/robots.txt": counted(h, Reply(body=b"User-agent: *\nDisallow: /no\n")),
                  **{f"/{i}": counted(h, page(i)) for i in range(5)}, "/no/x": counted(h, page(99))}
        sites.append(site(routes, host=h))
    urls = [s.url(p) for s in sites for p in ["/0", "/1", "/no/x", "/2", "/3", "/4"]]
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, urls, concurrency=8)
    assert set(peak) == {"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
    assert max(peak.values()) == 1, dict(peak)
    by = {r.url: r for r in report.results}
    assert all(by[s.url("/no/x")].outcome == "robots_disallowed" and by[s.url("/no/x")].receipt_id for s in sites)
    assert not any(q.path.startswith("/no") for s in sites for q in s.requests)
    assert len(home.ledger) == len(urls) and home.verify().ok


def test_cli_batch_reports_nothing_for_a_url_list_that_is_not_one(tmp_path: Path) -> None:
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "fetch", "--input", "-", "--json"],
                           input="http://127.0.0.1/a b\n", env=ENV)
    assert r.exit_code == 2 and "Traceback" not in r.output
    # no line of results: only the one refusal object every --json command prints when it fails (refusal.v1)
    refusal = json.loads(r.stdout)
    validate(refusal, "refusal.v1")
    assert (refusal["outcome"], refusal["code"]) == ("rejected", "G6_E_INPUT")


class _RecordingPacer(HostPacer):
    """The real pacer on a clock that stands still and a sleep that only records: every request's
    slot on its host is kept, no wall time is spent or measured."""

    def __init__(self) -> None:
        self.slept: list[float] = []
        self.calls: list[tuple[str, str, float]] = []
        super().__init__(clock=lambda: 0.0, sleep=self.slept.append)

    def wait(self, source: str, host: str, pause: float) -> float:
        self.calls.append((source, host, pause))
        return super().wait(source, host, pause)


def test_the_host_pause_is_kept_for_every_request_of_a_batch(site, home: EvidenceHome) -> None:
    """Each request (robots.txt included) on each host waits for its slot: with a clock that stands
    still, host h's k-th request is scheduled k pauses after the first, on every host."""
    sites = [site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(4)}}, host=h)
             for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3")]
    pacer = _RecordingPacer()
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=2.5), pacer=pacer) as client:
        report = batch_fetch(home, client, [s.url(f"/{i}") for s in sites for i in range(4)], concurrency=3)
    assert report.ok
    for s in sites:
        asked = len(s.requests)
        assert asked == 5  # robots.txt and four pages
        waits = [c for c in pacer.calls if c[1] == s.host]
        assert len(waits) == asked and all(p == 2.5 for _, _, p in waits), waits
    # per host the slots are 0, 2.5, 5, 7.5, 10 (each host's first request waits nothing)
    assert sorted(pacer.slept) == sorted([2.5 * k for k in range(1, 5)] * 3)
