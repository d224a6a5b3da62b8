"""``g6 fetch --input``: hosts in parallel, one request at a time per host, a receipt per URL, resumable."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from g6.adapters import CheckedClient, FetchPolicy
from g6.batch_fetch import batch_fetch
from g6.cli import cli
from g6.home import EvidenceHome
from g6.localsite import Reply, SeenRequest

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
