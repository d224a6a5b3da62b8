"""``g6 fetch --input``: hosts in parallel, one request at a time per host, a receipt per URL, resumable."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import trafilatura
from click.testing import CliRunner

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.html.page import read_page
from g6.adapters.net.checked_client import FetchResponse
from g6.adapters.outcomes import Outcome
from g6.cli import cli
from g6.demo.site import Reply, SeenRequest
from g6.fetch.batch import batch_fetch
from g6.fetch.capture import page_outcome
from g6.home import EvidenceHome
from tests.children import Children

ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}


def page(n: int) -> Reply:
    return Reply(body=f"<html><body><article><p>Page {n} says something worth keeping.</p></article></body></html>"
                 .encode())


def run(home: Path, *args: str, stdin: str | None = None):
    return CliRunner().invoke(cli, ["--home", str(home), "fetch", *args], input=stdin, env=ENV)


def test_hosts_in_parallel_one_request_per_host_a_receipt_per_url(site, tmp_path: Path) -> None:
    b_seen = threading.Event()
    inflight = {"127.0.0.1": 0, "127.0.0.2": 0}
    peak = dict(inflight)
    lock = threading.Lock()

    def tracked(n: int, host: str, wait_for_b: bool = False):
        def reply(req: SeenRequest) -> Reply:
            with lock:
                inflight[host] += 1
                peak[host] = max(peak[host], inflight[host])
            if host == "127.0.0.2":
                b_seen.set()
            # host A's first page is answered only once host B has been asked: a serial run would
            # starve here (and end in a 503 after 30 s), a parallel one never waits long
            ok = b_seen.wait(30) if wait_for_b else True
            with lock:
                inflight[host] -= 1
            return page(n) if ok else Reply(503, b"host B never came")
        return reply

    a = site({"/robots.txt": Reply(404, b""), "/0": tracked(0, "127.0.0.1", True),
              **{f"/{i}": tracked(i, "127.0.0.1") for i in range(1, 4)}})
    b = site({"/robots.txt": Reply(404, b""), **{f"/{i}": tracked(i, "127.0.0.2") for i in range(4)}}, host="127.0.0.2")
    urls = [a.url(f"/{i}") for i in range(4)] + [b.url(f"/{i}") for i in range(4)]
    (tmp_path / "urls.txt").write_text("# a list\n" + "\n".join(urls) + "\n\n" + urls[0] + "\n")
    r = run(tmp_path / "h", "--input", str(tmp_path / "urls.txt"), "--json", "--concurrency", "2")
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted(x["url"] for x in lines) == sorted(urls)  # the duplicate fetched once
    assert all(x["outcome"] == "ok" and x["receipt_id"] for x in lines)
    assert peak == {"127.0.0.1": 1, "127.0.0.2": 1}
    assert "8/8" in r.stderr and "resume with --run" in r.stderr
    with EvidenceHome(tmp_path / "h") as home:
        assert len(home.ledger) == 8 and home.verify().ok
        assert {e.receipt.receipt_id for e in home.ledger.entries()} == {x["receipt_id"] for x in lines}


def test_exit_1_unless_every_url_ok_and_a_run_resumes(site, tmp_path: Path) -> None:
    s = site({"/robots.txt": Reply(404, b""), "/ok": page(1), "/gone": Reply(404, b"no")})
    urls = f"{s.url('/ok')}\n{s.url('/gone')}\n"
    r = run(tmp_path / "h", "--input", "-", "--run", "nightly-1", stdin=urls)
    assert r.exit_code == 1
    assert sorted(ln.split()[0] for ln in r.stdout.splitlines()) == ["not_found", "ok"]

    def pages() -> int:
        return sum(1 for q in s.requests if q.path != "/robots.txt")

    asked = pages()
    again = run(tmp_path / "h", "--input", "-", "--run", "nightly-1", "--json", stdin=urls)
    assert again.exit_code == 1 and pages() == asked  # both settled by the first run: nothing fetched
    assert sorted(json.loads(x)["outcome"] for x in again.stdout.splitlines()) == ["not_found", "ok"]
    assert "2 URLs (2 from the earlier run)" in again.stderr
    more = run(tmp_path / "h", "--input", "-", "--run", "nightly-1", stdin=urls + s.url("/ok?x=2") + "\n")
    assert "3 URLs (2 from the earlier run)" in more.stderr and pages() == asked + 1


def test_bad_input_is_a_usage_error(tmp_path: Path) -> None:
    assert run(tmp_path / "h").exit_code == 2
    r = run(tmp_path / "h", "--input", "-", stdin="http://127.0.0.1/ two words\n")
    assert r.exit_code == 2 and "one URL a line" in r.output
    r = run(tmp_path / "h", "--input", "-", stdin="# nothing\n\n")
    assert r.exit_code == 2 and "no URL in the input" in r.output
    r = run(tmp_path / "h", "http://127.0.0.1/", "--input", "-", stdin="http://127.0.0.1/\n")
    assert r.exit_code == 2 and "not both" in r.output
    r = run(tmp_path / "h", "--input", "-", "--run", "../escape", stdin="http://127.0.0.1:1/\n")
    assert r.exit_code == 2 and "run id" in r.output


def test_an_unexpected_error_stops_the_batch_without_hanging(site, home: EvidenceHome) -> None:
    s = site({"/robots.txt": Reply(404, b""), "/a": page(1)})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client, \
            pytest.raises(ValueError, match="extract must be one of"):
        batch_fetch(home, client, [s.url("/a"), s.url("/a?2"), s.url("/a?3")], extract="bogus")
    assert len(home.ledger) == 0 and not any(q.path.startswith("/a") for q in s.requests)


def test_kill_9_loses_no_reported_result(site, tmp_path: Path, children: Children) -> None:
    """Every result printed on stdout has a durable receipt and a run-file line, whenever the process dies."""
    release = threading.Event()

    def held(req: SeenRequest) -> Reply:
        release.wait(60)  # keeps the run from ending before the kill; set as soon as the kill is done
        return page(0)

    a = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(40)}})
    b = site({"/robots.txt": Reply(404, b""), "/held": held}, host="127.0.0.2")
    urls = [b.url("/held")] + [a.url(f"/{i}") for i in range(40)]
    home = tmp_path / "h"
    env = {**os.environ, **ENV, "G6_HOME": str(home)}
    p = children.start([sys.executable, "-m", "g6", "--home", str(home), "fetch", "--input", "-", "--json",
                        "--run", "killed", "--concurrency", "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write("\n".join(urls) + "\n")
        p.stdin.close()
        printed = [json.loads(p.stdout.readline()) for _ in range(5)]  # host A's pages, while B is held
    finally:
        p.kill()  # SIGKILL: no finally, no flush, no atexit in the child
        p.wait()
        release.set()
    assert all(r["outcome"] == "ok" and r["receipt_id"] for r in printed)
    with EvidenceHome(home) as ev:
        durable = {e.receipt.receipt_id for e in ev.ledger.entries()}
        assert ev.verify().ok
    assert {r["receipt_id"] for r in printed} <= durable
    lines = [json.loads(x) for x in (home / "knowledge" / "fetches" / "killed.jsonl").read_text().splitlines()]
    assert {r["url"] for r in printed} <= {x["url"] for x in lines}


def test_a_host_goes_on_while_its_receipts_wait_for_the_ledger(site, home: EvidenceHome) -> None:
    """Group commit: a host's thread hands its receipt to the writer and fetches its next URL; the
    results are reported only once their receipts are in (here: after the test lets the writer in)."""
    all_asked = threading.Event()
    n = 6

    def last(req: SeenRequest) -> Reply:
        all_asked.set()
        return page(n - 1)

    s = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(n - 1)}, f"/{n - 1}": last})
    blocker = sqlite3.connect(home.ledger.path, isolation_level=None, check_same_thread=False)
    blocker.execute("BEGIN IMMEDIATE")  # the ledger's write lock: no receipt can be appended

    def let_the_writer_in() -> None:
        all_asked.wait(30)  # a host that waited for each receipt would never ask for its last page
        blocker.execute("ROLLBACK")

    opener = threading.Thread(target=let_the_writer_in)
    opener.start()
    seen: list[tuple[bool, int]] = []
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, [s.url(f"/{i}") for i in range(n)], concurrency=1,
                             on_result=lambda r, done, total: seen.append((all_asked.is_set(), len(home.ledger))),
                             progress=lambda done, total: seen.append((True, -done)))
    opener.join()
    blocker.close()
    assert report.ok and len(home.ledger) == n
    reported = [x for x in seen if x[1] >= 0]
    assert len(reported) == n and all(asked for asked, _ in reported)  # every page asked before any was reported
    assert all(in_ledger >= i + 1 for i, (_, in_ledger) in enumerate(reported))  # none before its receipt
    assert [-d for _, d in seen if d < 0] == list(range(1, n + 1))  # progress as each URL settled


def test_a_stop_while_results_are_reported_writes_no_line_twice(site, home: EvidenceHome) -> None:
    """Ctrl-C landing while settled URLs are reported (their lines on file already) wrote their lines a second time
    when the stopped batch kept what was ready (seen in CI: a run file with one URL's line twice)."""
    s = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(3)}})

    def stop(r, done, total) -> None:
        raise KeyboardInterrupt  # where a Ctrl-C lands: after the lines' append, while they are reported

    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client, pytest.raises(KeyboardInterrupt):
        batch_fetch(home, client, [s.url(f"/{i}") for i in range(3)], run_id="r1", concurrency=1, on_result=stop)
    lines = [json.loads(x) for x in (home.root / "knowledge" / "fetches" / "r1.jsonl").read_text().splitlines()]
    urls = [x["url"] for x in lines]
    assert urls and len(urls) == len(set(urls)), urls


def test_a_stop_while_a_receipt_is_waited_for_keeps_the_line_of_each_durable_receipt(site, home: EvidenceHome,
                                                                                    monkeypatch) -> None:
    """Ctrl-C landing while the settler waits for a URL's receipt (the receipt durable all the same: the ledger writer
    finishes its group) left that URL with a receipt and no line, so a resumed run fetched it again and receipted it a
    second time. Every receipt the stopped batch made durable has its URL's line."""
    import g6.fetch.batch as batch_mod

    s = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(3)}})
    calls = []
    real = batch_mod.waited

    def waited_then_stopped(f):
        got = real(f)  # the receipt is durable here
        calls.append(got)
        if len(calls) == 2:
            raise KeyboardInterrupt  # where a Ctrl-C lands: the second URL's receipt in, its line not yet written
        return got

    monkeypatch.setattr(batch_mod, "waited", waited_then_stopped)
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client, pytest.raises(KeyboardInterrupt):
        batch_fetch(home, client, [s.url(f"/{i}") for i in range(3)], run_id="r1", concurrency=1)
    lines = [json.loads(x) for x in (home.root / "knowledge" / "fetches" / "r1.jsonl").read_text().splitlines()]
    received = {e.receipt.request["url"] for e in home.ledger.entries(kind="fetch")}
    assert len(calls) == 2 and len(received) >= 2
    assert sorted(x["url"] for x in lines) == sorted(received)


def test_a_stop_inside_a_group_writes_each_durable_receipts_line_once(home: EvidenceHome, monkeypatch) -> None:
    """A group of three settled at once, the stop landing on the second's wait: the first (made ready) and the second
    and third (receipts durable, not yet settled) each get one line, none two."""
    import g6.fetch.batch as batch_mod
    from tests import settler_world as world

    urls = [f"http://127.0.0.1/{c}" for c in "abc"]
    settler = world.settler(home, urls, home.root / "r.jsonl")
    settler.arrived.extend(world.durable(home, urls))
    calls = []

    def waited_then_stopped(f):
        calls.append(f)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return f.result()

    monkeypatch.setattr(batch_mod, "waited", waited_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        settler.settle()
    settler.keep_ready()
    lines = [json.loads(x)["url"] for x in (home.root / "r.jsonl").read_text().splitlines()]
    assert sorted(lines) == urls


def test_the_outcome_without_documents_is_the_outcome_with_them(home: EvidenceHome) -> None:
    """page_outcome skips the main-text pass only where the visible text already decides ``ok``."""
    bodies = {
        "visible": b"<html><head><title>T</title></head><body><p>Some text a reader sees.</p></body></html>",
        "only hidden": b"<html><body><p hidden>secret</p><div style='display:none'>gone</div></body></html>",
        "css hidden": b"<html><head><style>.x{display:none}</style></head><body><p class=x>gone</p></body></html>",
        "only script": b"<html><body><script>document.write('hi')</script></body></html>",
        "only title": b"<html><head><title>Just a title</title></head><body></body></html>",
        "blank": b"   ",
        "plain text": b"plain words",
        "noscript": b"<html><body><noscript>Turn scripts on.</noscript></body></html>",
    }
    for name, body in bodies.items():
        ctype = "text/plain" if name == "plain text" else "text/html; charset=utf-8"
        ref = home.store.put(body)
        resp = FetchResponse("http://127.0.0.1/x", Outcome.OK, final_url="http://127.0.0.1/x", status=200,
                             body=ref, byte_count=len(body), content_type=ctype)
        full = read_page(resp, home.store, "http://127.0.0.1/x")
        quick = page_outcome(resp, home.store, "http://127.0.0.1/x")
        assert (quick.outcome, quick.reason, quick.detail) == (full.outcome, full.reason, full.detail), name
        assert quick.documents == ()


def test_a_batch_reads_no_main_text_where_the_visible_text_decides(site, home: EvidenceHome,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = trafilatura.extract
    # the page's URL as trafilatura is given it: in its options (g6.adapters.html.text._main_options)
    monkeypatch.setattr(trafilatura, "extract", lambda *a, **k: calls.append(getattr(k.get("options"), "url", "")
                                                                             or k.get("url", "")) or real(*a, **k))
    s = site({"/robots.txt": Reply(404, b""), "/a": page(1),
              "/hidden": Reply(body=b"<html><body><p hidden>not seen</p></body></html>")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, [s.url("/a"), s.url("/hidden")])
    assert [r.outcome for r in report.results] == ["ok", "empty"]
    assert calls == [s.url("/hidden")]  # the page whose visible text is blank still gets the main-text pass


def test_two_urls_that_differ_only_in_a_secret_are_two_lines_of_the_run(site, home: EvidenceHome) -> None:
    # both show as /a?token=REDACTED: a run stopped after the first was resumed with the second taken as done
    s = site({"/robots.txt": Reply(404, b""), "/a": page(1)})
    first, second = s.url("/a?token=first-secret"), s.url("/a?token=second-secret")
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        one = batch_fetch(home, client, [first], run_id="secrets")
        assert one.ok and len(home.ledger) == 1
        both = batch_fetch(home, client, [first, second], run_id="secrets")
    assert both.ok and both.resumed == 1 and len(both.results) == 2
    asked = [q.path for q in s.requests if q.path.startswith("/a")]
    assert asked == ["/a?token=first-secret", "/a?token=second-secret"]  # the second read, once; the first not again
    assert len(home.ledger) == 2
    lines = (home.root / "knowledge" / "fetches" / "secrets.jsonl").read_text()
    assert "secret" not in lines.replace("REDACTED", "")  # no secret (nor its name's value) in the run file
    keys = [json.loads(line)["url_key"] for line in lines.splitlines()]
    assert len(set(keys)) == 2 and all(len(k) == 32 for k in keys)
