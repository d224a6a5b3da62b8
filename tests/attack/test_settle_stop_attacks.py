"""Attacks on 1d6a2e6 (``_Settler.settle`` / ``keep_ready``): an early stop (Ctrl-C) while the settler waits for a
URL's receipt leaves each receipt made durable before the stop with exactly one run-file line, none for a receipt
the ledger does not hold, and a resumed run receipts every other URL once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from concurrent.futures import Future
from pathlib import Path

import pytest

import g6.fetch.batch as batch_mod
from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import Reply
from g6.fetch.batch import batch_fetch
from g6.home import EvidenceHome
from tests import settler_world as world

DEADLINE = 60.0  # a condition wait's bound: only a hang reaches it


def page(n: int) -> Reply:
    return Reply(body=f"<html><body><article><p>Page {n} says something worth keeping.</p></article></body></html>"
                 .encode())


def lines_of(path: Path) -> list[str]:
    return [json.loads(x)["url"] for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def fetch_receipts(home: EvidenceHome) -> Counter[str]:
    return Counter(e.receipt.request["url"] for e in home.ledger.entries(kind="fetch"))


def test_a_receipt_made_durable_while_its_result_waits_in_the_hosts_queue_keeps_its_line(
        site, home: EvidenceHome, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stop lands while the settler waits for /0's receipt; meanwhile the host's thread read /1 and /2 and the
    ledger writer made their receipts durable, but their results still sat in ``per_host``'s queue (never in
    ``arrived``). ``keep_ready`` saw only ``arrived``: /1 and /2 had receipts and no line, and the resumed run
    receipted them a second time."""
    s = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(3)}})
    urls = [s.url(f"/{i}") for i in range(3)]
    settler_waits = threading.Event()
    real_fetch_one, real_waited = batch_mod._fetch_one, batch_mod.waited

    def held_fetch_one(home_, client, url, *args):  # type: ignore[no-untyped-def]
        if url != urls[0]:  # /1 and /2 are read only once the settler waits for /0: never in ``arrived``
            assert settler_waits.wait(DEADLINE)
        return real_fetch_one(home_, client, url, *args)

    reader = home.ledger.reopen()

    def waited_then_stopped(f):  # type: ignore[no-untyped-def]
        settler_waits.set()
        real_waited(f)
        # Ctrl-C lands once the writer has made every receipt durable (a condition, not a delay)
        for _ in range(int(DEADLINE / 0.05)):
            if sum(1 for _ in reader.entries(kind="fetch")) == 3:
                break
            threading.Event().wait(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(batch_mod, "_fetch_one", held_fetch_one)
    monkeypatch.setattr(batch_mod, "waited", waited_then_stopped)
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client, pytest.raises(KeyboardInterrupt):
        batch_fetch(home, client, urls, run_id="r1", concurrency=1)
    reader.close()
    run_file = home.root / "knowledge" / "fetches" / "r1.jsonl"
    received = fetch_receipts(home)
    assert sorted(received) == sorted(urls)  # the stop came after every receipt was durable
    assert sorted(lines_of(run_file)) == sorted(received), "a durable receipt without its run-file line"

    monkeypatch.setattr(batch_mod, "_fetch_one", real_fetch_one)
    monkeypatch.setattr(batch_mod, "waited", real_waited)
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, urls, run_id="r1", concurrency=1)
    assert report.resumed == 3
    assert fetch_receipts(home) == Counter({u: 1 for u in urls}), "a URL receipted twice after the resume"


class _StopAfterAppend(list):
    """``ready`` on which a Ctrl-C lands just after a result is appended, before ``settle`` takes it out of
    ``arrived`` (a signal's handler runs between any two bytecodes of the main thread)."""

    def append(self, item):  # type: ignore[no-untyped-def]
        super().append(item)
        raise KeyboardInterrupt


def test_a_stop_between_ready_and_arrived_writes_one_line(home: EvidenceHome) -> None:
    urls = [f"http://127.0.0.1/{c}" for c in "ab"]
    path = home.root / "r.jsonl"
    settler = world.settler(home, urls, path)
    settler.arrived.extend(world.durable(home, urls))
    settler.ready = _StopAfterAppend()
    with pytest.raises(KeyboardInterrupt):
        settler.settle()
    settler.ready = list(settler.ready)
    settler.keep_ready()
    assert sorted(lines_of(path)) == urls, "a URL in both 'ready' and 'arrived' got two lines"


def test_no_line_for_a_receipt_the_ledger_does_not_hold(home: EvidenceHome) -> None:
    """A future refused (the stop), a cancelled one, one not done, and a render's ``_Later``: no line for any; the
    durable one beside them keeps its line."""
    urls = [f"http://127.0.0.1/{c}" for c in "abcde"]
    path = home.root / "r.jsonl"
    settler = world.settler(home, urls, path)
    durable = world.durable(home, urls[:1])
    fetched = durable[0][1][0]
    refused: Future = Future()
    refused.set_exception(batch_mod.InputError("the batch was stopped before this receipt was written"))
    cancelled: Future = Future()
    cancelled.cancel()
    render_done: Future = Future()
    render_done.set_result(durable[0][1][1].result())  # a render's line is its render thread's, never the settler's
    settler.arrived.extend([*durable, (urls[1], (fetched, refused)), (urls[2], (fetched, cancelled)),
                            (urls[3], (fetched, Future())), (urls[4], (batch_mod._Later(Future()), render_done))])
    settler.keep_ready()
    assert lines_of(path) == urls[:1]
    assert settler.arrived == []


def test_a_stop_once_the_lines_are_written_and_not_yet_marked_writes_none_again(home: EvidenceHome) -> None:
    """The stop lands just after ``settle`` appended the group's lines, before it marked them on file: ``keep_ready``
    wrote them a second time."""
    urls = [f"http://127.0.0.1/{c}" for c in "ab"]
    path = home.root / "r.jsonl"
    settler = world.settler(home, urls, path)
    settler.arrived.extend(world.durable(home, urls))
    real = settler.state.add_many

    def written_then_stopped(verdicts):  # type: ignore[no-untyped-def]
        real(verdicts)
        settler.state.add_many = real
        raise KeyboardInterrupt

    settler.state.add_many = written_then_stopped
    with pytest.raises(KeyboardInterrupt):
        settler.settle()
    settler.keep_ready()
    assert sorted(lines_of(path)) == urls, "a line written twice"


def test_a_stop_in_a_forked_batch_then_a_resume_receipts_each_url_once(site, tmp_path: Path) -> None:
    """``processes=2`` (each result a ``_Fetched`` the calling thread hands to the writer): Ctrl-C on the second
    receipt's wait; every receipt made durable has its line, and the resumed run receipts each other URL once.
    A fresh Python (no other thread), so the batch forks."""
    a = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(3)}})
    b = site({"/robots.txt": Reply(404, b""), **{f"/{i}": page(i) for i in range(3)}}, host="127.0.0.2")
    urls = [s.url(f"/{i}") for s in (a, b) for i in range(3)]
    body = f"""
        import json
        import g6.fetch.batch as bf
        from g6.adapters import CheckedClient, FetchPolicy
        from g6.home import EvidenceHome
        forks, calls, real = [], [], bf.waited
        real_forked = bf.per_host_processes
        def counted(*a, **k):
            forks.append(1)
            return real_forked(*a, **k)
        def stopped(f):
            got = real(f)
            calls.append(1)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return got
        bf.per_host_processes, bf.waited = counted, stopped
        home = EvidenceHome({str(tmp_path / "h")!r})
        home.keys.init()
        urls = {urls!r}
        with home, CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
            try:
                bf.batch_fetch(home, client, urls, run_id="r1", processes=2, concurrency=2)
            except KeyboardInterrupt:
                pass
            lines = [json.loads(x)["url"] for x in (home.root / "knowledge/fetches/r1.jsonl").read_text().splitlines()]
            first = sorted(e.receipt.request["url"] for e in home.ledger.entries(kind="fetch"))
            bf.waited = real
            # the stopped batch's threads end on their own a moment after the stop: the resumed batch forks only
            # when none is left (can_fork), so they are waited for, however long a loaded machine takes
            import threading
            for t in threading.enumerate():
                if t is not threading.main_thread():
                    t.join(120)
            r = bf.batch_fetch(home, client, urls, run_id="r1", processes=2, concurrency=2)
            after = sorted(e.receipt.request["url"] for e in home.ledger.entries(kind="fetch"))
        print(json.dumps({{"forks": len(forks), "lines": sorted(lines), "first": first, "after": after,
                           "resumed": r.resumed, "ok": r.ok}}))
    """
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"})
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.splitlines()[-1])
    assert got["forks"] == 2 and got["ok"], got  # forked both times
    assert got["lines"] == got["first"] and len(got["first"]) >= 2, got  # each durable receipt has its line
    assert got["resumed"] == len(got["lines"]) and got["after"] == sorted(urls), got  # each URL receipted once
