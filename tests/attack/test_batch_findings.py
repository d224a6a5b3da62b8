"""Findings F3-F5 of the second attack round (perf-blob, perf-batch), once strict xfails, now fixed
(branch fix-batch) and kept as regression tests: F3 a cross-host redirect beside the target host's own
worker (the checked client's per-host gate), F4 spellings of one host pooled as several (host_of is
the checked client's normalised host), F5 a resumed run reporting lines no receipt in the ledger backs.
See the attack report."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.net.pacing import HostGate
from g6.cli import cli
from g6.demo.site import Reply, SeenRequest
from g6.fetch.batch import batch_fetch
from g6.fetch.host_pool import host_of
from g6.home import EvidenceHome
from tests.attack.test_batch_attacks import page


class _HostB:
    """A loopback host that counts its requests in flight; ``/slow`` and ``/other`` are answered only
    once another request is in flight on this same host (or after 10 s, when none comes: the safe
    case), so an overlap is seen whichever of them arrives first."""

    def __init__(self, site) -> None:  # type: ignore[no-untyped-def]
        self.lock = threading.Lock()
        self.inflight = self.peak = 0
        self.busy, self.overlap = threading.Event(), threading.Event()
        self.site = site({"/robots.txt": self._counted(Reply(404, b"")), "/slow": self._counted(page(1), hold=True),
                          "/target": self._counted(page(2)), "/other": self._counted(page(3), hold=True)},
                         host="127.0.0.2")

    def _counted(self, reply: Reply, hold: bool = False):  # type: ignore[no-untyped-def]
        def handler(req: SeenRequest) -> Reply:
            with self.lock:
                self.inflight += 1
                self.peak = max(self.peak, self.inflight)
                if self.inflight > 1:
                    self.overlap.set()
            try:
                if hold:
                    self.busy.set()
                    self.overlap.wait(10)  # bounded: in the safe case nobody else comes and this just ends
                return reply
            finally:
                with self.lock:
                    self.inflight -= 1
        return handler


@pytest.mark.parametrize("pause", [0.0, 0.2])
def test_a_cross_host_redirect_does_not_overlap_the_target_hosts_own_requests(site, home: EvidenceHome,
                                                                               pause: float) -> None:
    b = _HostB(site)

    def redirect(req: SeenRequest) -> Reply:
        b.busy.wait(10)  # host B's own page is in flight (bounded, in case it never is)
        return Reply(302, b"", headers=(("Location", b.site.url("/target")),))

    a = site({"/robots.txt": Reply(404, b""), "/r": redirect})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=pause)) as client:
        report = batch_fetch(home, client, [b.site.url("/slow"), a.url("/r")], concurrency=2)
    assert [r.outcome for r in report.results] == ["ok", "ok"]
    assert b.peak == 1, f"{b.peak} requests at once on 127.0.0.2"


def test_the_pool_keys_a_host_as_the_checked_client_names_it() -> None:
    """F4 (fixed): host_of is the checked client's normalised host, so every spelling of one host is one group."""
    spellings = ["http://127.0.0.2:8080/a", "http://127.0.0.2.:8080/b", "http://127.2:8080/c",
                 "http://0x7f.0.0.2/d"]
    assert {host_of(u) for u in spellings} == {"127.0.0.2"}
    assert host_of("http://Example.COM./x") == host_of("http://example.com/y") == "example.com"
    assert host_of("http://[bad/") == ""


@pytest.mark.parametrize("alias", ["127.0.0.2.", "127.2"])
def test_spellings_of_one_host_share_its_one_request_at_a_time(site, home: EvidenceHome, alias: str) -> None:
    b = _HostB(site)
    other = b.site.url("/other").replace("127.0.0.2", alias, 1)
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        report = batch_fetch(home, client, [b.site.url("/slow"), other], concurrency=2)
    assert [r.outcome for r in report.results] == ["ok", "ok"]
    assert b.peak == 1, f"{b.peak} requests at once on 127.0.0.2"


@pytest.mark.parametrize("lie", ["foreign_receipt", "no_receipt"])
def test_a_resumed_run_reports_ok_only_with_a_receipt_in_the_ledger(site, tmp_path, lie: str) -> None:
    s = site({"/robots.txt": Reply(404, b""), "/a": page(1), "/b": page(2)})
    g6home = tmp_path / "h"
    env = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}
    urls = f"{s.url('/a')}\n{s.url('/b')}\n"
    args = ["--home", str(g6home), "fetch", "--input", "-", "--json", "--run", "r"]
    assert CliRunner().invoke(cli, args, input=urls, env=env).exit_code == 0
    run_file = g6home / "knowledge" / "fetches" / "r.jsonl"
    lines = [json.loads(x) for x in run_file.read_text().splitlines()]
    if lie == "foreign_receipt":  # a line whose receipt is not in this ledger (another home's, a restored ledger)
        lines[1]["receipt_id"] = "rcpt_01M8XNNNKQP7MPR6EB9MN7JD8X"
        urls_now = urls
    else:  # an 'ok' line for a URL never fetched, with no receipt at all
        lines.append({**lines[0], "url": s.url("/never"), "receipt_id": None})
        urls_now = urls + s.url("/never") + "\n"
    run_file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = CliRunner().invoke(cli, args, input=urls_now, env=env)
    with EvidenceHome(g6home, readonly=True) as home:
        held = {e.receipt.receipt_id for e in home.ledger.entries()}
    reported = [json.loads(x) for x in r.stdout.splitlines()]
    unbacked = [x["url"] for x in reported if x["outcome"] == "ok" and x["receipt_id"] not in held]
    assert not unbacked, f"reported ok without a receipt in the ledger (exit {r.exit_code}): {unbacked}"
    refetched = s.url("/b") if lie == "foreign_receipt" else s.url("/never")
    assert f"1 URL of run r has no matching receipt in this ledger; fetching again: {refetched}" in r.stderr
    assert [x["url"] for x in reported] == [x for x in urls_now.split()]


def test_a_resumed_line_needs_the_receipt_of_its_own_url_and_outcome(site, tmp_path) -> None:
    """F5 (fixed): a receipt in the ledger is not enough; it must be the fetch of the line's URL with
    the line's outcome. Swapped receipt ids, or a 404's receipt under an 'ok' line, are fetched again."""
    s = site({"/robots.txt": Reply(404, b""), "/a": page(1), "/b": page(2), "/gone": Reply(404, b"no")})
    g6home = tmp_path / "h"
    env = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}
    urls = f"{s.url('/a')}\n{s.url('/b')}\n{s.url('/gone')}\n"
    args = ["--home", str(g6home), "fetch", "--input", "-", "--json", "--run", "r"]
    assert CliRunner().invoke(cli, args, input=urls, env=env).exit_code == 1  # /gone is not ok
    run_file = g6home / "knowledge" / "fetches" / "r.jsonl"
    a, b, gone = sorted((json.loads(x) for x in run_file.read_text().splitlines()), key=lambda x: x["url"])
    a["receipt_id"], b["receipt_id"] = b["receipt_id"], a["receipt_id"]  # both held, for the other URL
    gone["outcome"] = "ok"  # its receipt says not_found
    run_file.write_text("".join(json.dumps(x) + "\n" for x in (a, b, gone)))
    r = CliRunner().invoke(cli, args, input=urls, env=env)
    assert r.exit_code == 1 and "3 URLs of run r have no matching receipt in this ledger" in r.stderr
    with EvidenceHome(g6home, readonly=True) as home:
        for x in (json.loads(x) for x in r.stdout.splitlines()):
            receipt = home.ledger.get(x["receipt_id"])
            assert (receipt.request["url"], receipt.outcome) == (x["url"], x["outcome"])
    assert sorted(json.loads(x)["outcome"] for x in r.stdout.splitlines()) == ["not_found", "ok", "ok"]


def test_a_host_busy_past_the_deadline_ends_as_a_timeout_not_a_second_request(site, home: EvidenceHome) -> None:
    """F3 (fixed): the gate is waited for within the fetch's one deadline; a host that stays busy
    ends the fetch as ``total_timeout`` and never sees this request."""
    s = site({"/robots.txt": Reply(404, b""), "/p": page(1)})
    gate = HostGate()
    pol = FetchPolicy(allow_loopback=True, host_pause=0, total_timeout=0.05, respect_robots=False)
    with CheckedClient(pol, gate=gate) as client, gate.hold("127.0.0.1", 1) as held:
        assert held
        resp = client.fetch(s.url("/p"), home.store)
    assert (resp.outcome.value, resp.reason, resp.detail.get("stage")) == ("unreachable", "total_timeout", "host_busy")
    assert [r.path for r in s.requests] == []
