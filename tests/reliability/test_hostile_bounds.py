"""Whatever a server sends, a read ends within its time and memory bounds, with a typed outcome and a
receipt (issue 14). No test here asserts wall time: the deadline tests use a small deadline and a
server that never finishes, and assert the outcome (a fetch thread that outlives its deadline by a
minute is reported as a hang instead of blocking the suite)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import FetchResult, fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hostile_servers import DripServer, bombs, peak_rss_over_baseline, resetting_listener  # noqa: E402

Site = Callable[..., LocalSite]
HANG_GUARD = 60.0  # seconds; only ever reached when a deadline is not enforced
MiB = 1 << 20


def deadline_policy(**kw: Any) -> FetchPolicy:
    # per-operation timeouts far above the total deadline: only the total deadline can end these reads
    base: dict[str, Any] = {"allow_loopback": True, "host_pause": 0, "connect_timeout": 30, "read_timeout": 30,
                            "total_timeout": 0.5, "respect_robots": False}
    return FetchPolicy(**{**base, **kw})


def fetch_guarded(home: EvidenceHome, client: CheckedClient, url: str) -> FetchResult:
    box: dict[str, Any] = {}

    def run() -> None:
        try:  # SQLite connections belong to their thread: this thread opens the same home itself
            with EvidenceHome(home.root, fsync=False) as mine:
                box["result"] = fetch(mine, client, url)
        except BaseException as e:  # noqa: BLE001 - reported below
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(HANG_GUARD)
    assert not t.is_alive(), "the fetch did not end: its deadline is not enforced"
    if "error" in box:
        raise box["error"]
    return box["result"]


def receipted(home: EvidenceHome, r: FetchResult) -> dict[str, Any]:
    receipt = home.ledger.get(r.receipt_id)
    assert receipt.outcome == r.outcome.value
    assert home.verify().ok
    return receipt.to_json()


# -- time ----------------------------------------------------------------------------------
def test_header_drip_ends_as_total_timeout_with_a_receipt(home: EvidenceHome) -> None:
    with DripServer() as drip, CheckedClient(deadline_policy()) as c:
        r = fetch_guarded(home, c, drip.url("/slow-headers"))
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout"), (r.reason, r.detail)
    assert receipted(home, r)["detail"]["reason"] == "total_timeout"


def test_robots_txt_header_drip_ends_as_total_timeout(home: EvidenceHome) -> None:
    with DripServer() as drip, CheckedClient(deadline_policy(respect_robots=True)) as c:
        r = fetch_guarded(home, c, drip.url("/page"))
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout"), (r.reason, r.detail)
    assert r.detail["robots"]["state"] == "disallow_all" and r.detail["robots"]["detail"] == "total_timeout"
    receipted(home, r)


def test_tls_handshake_that_never_completes_ends_as_total_timeout(home: EvidenceHome) -> None:
    with DripServer(silent=True) as silent, CheckedClient(deadline_policy()) as c:
        r = fetch_guarded(home, c, silent.url("/", scheme="https"))
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout"), (r.reason, r.detail)
    assert silent.connections == 1
    receipted(home, r)


def test_dns_that_never_answers_ends_as_total_timeout(home: EvidenceHome) -> None:
    release = threading.Event()

    def stuck_resolver(host: str, port: int) -> list[str]:
        release.wait(HANG_GUARD)
        return ["127.0.0.1"]

    try:
        with CheckedClient(deadline_policy(), resolver=stuck_resolver) as c:
            r = fetch_guarded(home, c, "http://stuck.test:9/")
    finally:
        release.set()
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout") and r.detail["stage"] == "dns"
    receipted(home, r)


def test_body_drip_within_deadline_per_read_still_ends(home: EvidenceHome, site: Site) -> None:
    s = site({"/drip": Reply(chunks=lambda: iter(lambda: b".", None), chunk_delay=0.02)})
    with CheckedClient(deadline_policy()) as c:
        r = fetch_guarded(home, c, s.url("/drip"))
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout")
    receipted(home, r)


def test_resetting_listener_is_unreachable(home: EvidenceHome) -> None:
    with resetting_listener() as port, CheckedClient(deadline_policy(total_timeout=10)) as c:
        r = fetch_guarded(home, c, f"http://127.0.0.1:{port}/")
    assert r.outcome is Outcome.UNREACHABLE or r.outcome is Outcome.HTTP_ERROR, (r.outcome, r.reason)
    receipted(home, r)


# -- memory --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bomb_site() -> Any:
    built = bombs()
    routes = {f"/{name}": Reply(body=body, content_type="text/plain", headers=(("Content-Encoding", enc),))
              for name, (enc, body) in built.items()}
    routes["/robots.txt"] = Reply(404, b"")
    s = LocalSite(routes).start()
    yield s
    s.stop()


@pytest.mark.parametrize("name", ["gzip,gzip", "gzip,deflate,gzip", "gzip,gzip,gzip"])
def test_stacked_codings_are_refused_and_kept_raw(home: EvidenceHome, bomb_site: LocalSite, name: str) -> None:
    enc, body = bombs()[name]
    with CheckedClient(deadline_policy(total_timeout=30, hard_cap=4 * MiB)) as c:
        r = fetch_guarded(home, c, bomb_site.url(f"/{name}"))
    assert (r.outcome, r.reason) == (Outcome.PARSE_FAILED, "stacked_content_encoding")
    assert r.byte_count == len(body) and not r.truncated  # the raw bytes, as evidence
    assert home.store.read(r.content["blake3"]) == body
    assert receipted(home, r)["detail"]["content_encoding"] == enc.replace(" ", "")


@pytest.mark.parametrize("name", ["gzip", "deflate"])
def test_single_coding_bomb_stops_at_the_cap(home: EvidenceHome, bomb_site: LocalSite, name: str) -> None:
    with CheckedClient(deadline_policy(total_timeout=30, hard_cap=4 * MiB)) as c:
        r = fetch_guarded(home, c, bomb_site.url(f"/{name}"))
    assert (r.outcome, r.reason) == (Outcome.TOO_LARGE, "body_over_cap") and r.byte_count == 4 * MiB
    receipted(home, r)


def test_peak_rss_stays_under_128_mib_above_baseline_on_every_bomb(tmp_path: Path) -> None:
    names = ["gzip,gzip", "gzip,deflate,gzip", "gzip", "deflate", "endless", "html-under-extract-limit",
             "html-over-extract-limit"]
    report = peak_rss_over_baseline(tmp_path, names)
    assert report["outcomes"] == {"gzip,gzip": "stacked_content_encoding",
                                  "gzip,deflate,gzip": "stacked_content_encoding",
                                  "gzip": "body_over_cap", "deflate": "body_over_cap", "endless": "body_over_cap",
                                  "html-under-extract-limit": "ok", "html-over-extract-limit": "ok"}
    grew_mib = (report["peak_kib"] - report["baseline_kib"]) / 1024
    assert grew_mib < 128, f"peak RSS grew {grew_mib:.1f} MiB over the baseline"


# -- impossible policies -------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{"total_timeout": 0}, {"total_timeout": -1}, {"total_timeout": float("nan")},
                                {"read_timeout": float("inf")}, {"connect_timeout": 0}, {"max_bytes": 2**53 + 1},
                                {"hard_cap": 2**53 + 1}, {"hard_cap": 0}, {"host_pause": float("nan")},
                                {"max_redirects": -1}])
def test_impossible_policy_is_refused_before_anything_is_sent(kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FetchPolicy(**kw)


def test_deadline_is_one_for_the_whole_read_and_its_redirects(home: EvidenceHome, site: Site) -> None:
    """A chain of redirects, each answered at once, still runs under the first request's deadline:
    the drip at the end of the chain is cut by the same total_timeout."""
    with DripServer() as drip:
        s = site({"/a": Reply(302, headers=(("Location", drip.url("/x")),))})
        with CheckedClient(deadline_policy()) as c:
            r = fetch_guarded(home, c, s.url("/a"))
    assert (r.outcome, r.reason) == (Outcome.UNREACHABLE, "total_timeout")
    assert [h.status for h in home.ledger.get(r.receipt_id).hops] == [302]
