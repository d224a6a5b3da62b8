"""Attacks on "every read gets a receipt" (a receipt is at most 65,535 bytes of canonical JSON, else nothing is
appended) with hostile sizes: a server's header values, many long hops, long inputs at the URL limit; and on
``g6 report check --replay RESULT`` with hostile results."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from g6.adapters import CheckedClient
from g6.adapters.net.urls import MAX_URL_LENGTH, counted_length
from g6.adapters.outcomes import Outcome
from g6.cli import cli
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.transparency.tiles import MAX_ENTRY
from tests.report.check_helpers import first_check

Site = Callable[..., LocalSite]
ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}
PAGE = b"<html><body><p>The page a server sent with hostile headers.</p></body></html>"
NO_ROBOTS = Reply(404, b"")
# a header value a client accepts (httpcore's h11 takes a header block of up to 100 KB): past a receipt's 65,535
HUGE = 70_000


def fits(home: EvidenceHome, receipt_id: str) -> dict[str, Any]:
    """The receipt ``receipt_id``, appended and under a published log's entry size."""
    receipt = home.ledger.get(receipt_id)
    assert len(receipt.canonical_bytes(with_signature=True)) <= MAX_ENTRY
    return receipt.to_json() if hasattr(receipt, "to_json") else {}


def verifies(g6home: Path) -> None:
    """``g6 ledger verify`` of the home: exit 0."""
    r = CliRunner().invoke(cli, ["--home", str(g6home), "ledger", "verify"], env=ENV)
    assert r.exit_code == 0, r.output


def of_length(base: str, n: int, query: str = "") -> str:
    """``base`` + "/p?" + ``query`` padded with ``b`` to a URL of exactly ``n`` counted characters."""
    url = f"{base}/p?{query}pad="
    pad = n - counted_length(url)
    assert pad > 0
    return url + "b" * pad


# -- A. a server's header values --------------------------------------------------------------------------------
def test_a_huge_content_type_is_capped_and_the_read_receipted(site: Site, client: CheckedClient,
                                                               home: EvidenceHome) -> None:
    ctype = "text/html; charset=utf-8; x=" + "a" * HUGE
    s = site({"/p": Reply(body=PAGE, content_type=ctype), "/robots.txt": NO_ROBOTS})
    result = fetch(home, client, s.url("/p"))
    fits(home, result.receipt_id)
    receipt = home.ledger.get(result.receipt_id)
    shown = receipt.detail["content_type"]
    assert len(shown) < 2000 and shown.endswith("…") and shown.startswith("text/html; charset=utf-8")
    verifies(home.root)


def test_a_huge_retry_after_is_capped_and_the_read_receipted(site: Site, client: CheckedClient,
                                                              home: EvidenceHome) -> None:
    s = site({"/p": Reply(429, b"slow down", headers=(("Retry-After", "1" * HUGE),)), "/robots.txt": NO_ROBOTS})
    result = fetch(home, client, s.url("/p"))
    assert result.outcome is Outcome.RATE_LIMITED
    receipt = home.ledger.get(result.receipt_id)
    fits(home, result.receipt_id)
    assert len(receipt.detail["retry_after"]) < 2000 and receipt.detail["retry_after"].endswith("…")
    verifies(home.root)


def test_a_huge_link_and_set_cookie_are_not_copied(site: Site, client: CheckedClient, home: EvidenceHome) -> None:
    headers = (("Link", "<http://x/" + "l" * 40_000 + ">; rel=next"), ("Set-Cookie", "c=" + "v" * 40_000))
    s = site({"/p": Reply(body=PAGE, headers=headers), "/robots.txt": NO_ROBOTS})
    result = fetch(home, client, s.url("/p"))
    assert result.outcome is Outcome.OK
    fits(home, result.receipt_id)
    verifies(home.root)


def test_a_secret_repeated_in_a_header_is_redacted_then_capped_never_cut_inside(site: Site, client: CheckedClient,
                                                                                home: EvidenceHome) -> None:
    """The URL carries ``key=S``; the server echoes S thousands of times in its Content-Type: redaction makes the
    text longer (S is shorter than "REDACTED"), the cap comes after, so no prefix of S is left at the cut."""
    secret = "s3kr"
    s = site({"/p": Reply(body=PAGE, content_type="text/html; x=" + secret * 15_000), "/robots.txt": NO_ROBOTS})
    result = fetch(home, client, s.url(f"/p?key={secret}"))
    fits(home, result.receipt_id)
    shown = home.ledger.get(result.receipt_id).detail["content_type"]
    assert "s3k" not in shown and "REDACTED" in shown and shown.endswith("…")
    verifies(home.root)


# -- A. the limit counted as sent, on both sides ----------------------------------------------------------------
@pytest.mark.parametrize("extra", [0, 1], ids=["8192", "8193"])
@pytest.mark.parametrize("form", ["ascii", "non_ascii", "percent"])
def test_fetch_input_lines_at_the_limit(site: Site, tmp_path: Path, extra: int, form: str) -> None:
    """``g6 fetch --input`` with a line of exactly 8,192 counted characters (sent, receipted ok) and 8,193 (rejected,
    nothing sent, receipted): a non-ASCII character counts as its percent-encoding (é: 6), a written %C3%A9 as 6."""
    s = site({"/p": Reply(body=PAGE), "/robots.txt": NO_ROBOTS})
    query = {"ascii": "", "non_ascii": "q=é&", "percent": "q=%C3%A9&"}[form]
    url = of_length(s.base_url, MAX_URL_LENGTH + extra, query)
    assert counted_length(url) == MAX_URL_LENGTH + extra
    (tmp_path / "urls.txt").write_text(url + "\n", encoding="utf-8")
    g6home = tmp_path / "h"
    r = CliRunner().invoke(cli, ["--home", str(g6home), "fetch", "--input", str(tmp_path / "urls.txt"), "--json"],
                           env=ENV)
    (line,) = [json.loads(x) for x in r.stdout.splitlines()]
    assert line["receipt_id"], r.output
    if extra:
        assert line["outcome"] == "rejected" and s.requests == [] and r.exit_code == 1
    else:
        assert line["outcome"] == "ok" and [q.path.split("?")[0] for q in s.requests] == ["/robots.txt", "/p"]
        assert r.exit_code == 0, r.output
    with EvidenceHome(g6home) as home:
        fits(home, line["receipt_id"])
    verifies(g6home)


# -- A. a rendered page: long navigations, 300 sub-requests with long URLs ----------------------------------------
def _long(n: int, pad: int) -> str:
    return f"/r?n={n}&pad=" + "b" * pad


@pytest.mark.parametrize("hops", [6, 19])
def test_a_render_through_many_long_redirects_is_receipted(home: EvidenceHome, pool: Any, hops: int) -> None:
    """The page redirects ``hops`` times (the browser follows each itself, one read each) to URLs of ~8,000
    characters: the capture receipt lists every hop of the document's navigations; it must still be appended."""
    from tests.attack._browser_world import capture, need_chromium, public_site

    need_chromium()

    def hop(req: SeenRequest) -> Reply:
        n = int(req.path.split("n=", 1)[1].split("&", 1)[0]) if "n=" in req.path else 0
        if n >= hops:
            return Reply(body=b"<p>Zqarrived after the long redirects.</p>")
        return Reply(302, b"", headers=(("Location", _long(n + 1, 8000)),))

    with public_site({"/r": hop}) as (_s, client, _t):
        c = capture(home, client, pool, "http://site.example/r", deadline=8, quiet=0.5)
    assert len(c.receipt.canonical_bytes(with_signature=True)) <= MAX_ENTRY
    assert home.verify().ok


def test_a_page_making_300_long_subrequests_is_receipted(home: EvidenceHome, pool: Any) -> None:
    """300 images, each at a URL of ~8,000 characters (the default request limit): 300 sub-receipts and one capture
    receipt listing all their ids and digests, every one appended."""
    from tests.attack._browser_world import capture, need_chromium, public_site

    need_chromium()
    imgs = "".join(f'<img src="/i?n={i}&pad={"c" * 7900}">' for i in range(320))
    page = f"<p>Zqmany images.</p>{imgs}".encode()
    gif = Reply(body=b"GIF89a\x01\x00\x01\x00\x00\x00\x00;", content_type="image/gif")
    with public_site({"/": Reply(body=page), "/i": gif}) as (_s, client, _t):
        c = capture(home, client, pool, "http://site.example/", deadline=20, quiet=1.0)
    assert len(c.receipt.canonical_bytes(with_signature=True)) <= MAX_ENTRY
    assert len(c.cap["resources"]) >= 290
    assert home.verify().ok


# -- B. report check --replay RESULT with hostile results -------------------------------------------------------
def _resigned(home: Path, result: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """``result`` edited by ``edit``, its figures made to add up again, and signed with the home's own key: a
    result the home's trusted key vouches for, whatever it says."""
    from collections import Counter

    from g6.report.result import sign_result

    d = json.loads(result.read_text())
    edit(d)
    counts = Counter(c["verdict"] for c in d["citations"] if isinstance(c, dict))
    for k in d["figures"]:
        if k in counts or k in ("quote_found", "quote_not_found", "no_quote", "source_failed",
                                "redirected_elsewhere"):
            d["figures"][k] = counts.get(k, 0)
    d["figures"]["citations"] = len(d["citations"])
    with EvidenceHome(home) as ev:
        out = result.with_name("resigned.json")
        out.write_text(json.dumps(sign_result(d, ev.signing_key())))
    return out


def _replay(home: Path, report: Path | str, result: Path | str, **kw: Any) -> Any:
    from tests.report.check_helpers import g6

    return g6(home, "report", "check", str(report), "--receipts-only", "--replay", str(result), "--json", **kw)


@pytest.mark.parametrize("edit", ["duplicate_n", "missing_n", "string_n", "list_n", "no_report", "report_list",
                                  "reordered"])
def test_a_signed_result_of_odd_shape_is_refused_typed_or_replayed_alike(tmp_path: Path, site: Site,
                                                                           edit: str) -> None:
    home, report, result, _ = first_check(tmp_path, site)
    first = json.loads(result.read_text())["citations"]

    def change(d: dict[str, Any]) -> None:
        c = d["citations"]
        if edit == "duplicate_n":  # citation 1 twice: the second names citation 2's receipt
            c.append({**c[0], "receipt_id": c[1]["receipt_id"]})
        elif edit == "missing_n":
            del c[0]["n"]
        elif edit == "string_n":
            c[0]["n"] = "1"
        elif edit == "list_n":
            c[0]["n"] = [1]
        elif edit == "no_report":
            del d["report"]
        elif edit == "report_list":
            d["report"] = [d["report"]]
        elif edit == "reordered":
            c.reverse()

    r = _replay(home, report, _resigned(home, result, change))
    assert b"Traceback" not in r.stderr, r.stderr
    if edit == "reordered":  # the same pins, in another order: the same verdicts on the same receipts
        assert r.returncode == 0, r.stderr
        got = [(c["verdict"], c["receipt_id"]) for c in json.loads(r.stdout)["citations"]]
        assert got == [(c["verdict"], c["receipt_id"]) for c in first]
    else:
        assert r.returncode == 2 and r.stderr.startswith(b"g6: --replay"), r.stderr
        assert b'"citations"' not in r.stdout  # nothing checked: only the failure's JSON


def test_a_pinned_receipt_of_another_url_is_refused_source_failed(tmp_path: Path, site: Site) -> None:
    """The result (signed with the home's key) says citation 1 rested on the read of /b: the pin's rules refuse a
    read of another URL, so citation 1 is source_failed, never quote_found."""
    home, report, result, _ = first_check(tmp_path, site)

    def change(d: dict[str, Any]) -> None:
        d["citations"][0]["receipt_id"] = d["citations"][1]["receipt_id"]

    r = _replay(home, report, _resigned(home, result, change))
    assert b"Traceback" not in r.stderr, r.stderr
    verdicts = [c["verdict"] for c in json.loads(r.stdout)["citations"]]
    assert verdicts[0] == "source_failed" and r.returncode == 1


def test_a_result_with_null_receipt_ids_decides_those_as_before(tmp_path: Path, site: Site) -> None:
    home, report, result, _ = first_check(tmp_path, site)

    def change(d: dict[str, Any]) -> None:
        d["citations"][0]["receipt_id"] = None

    r = _replay(home, report, _resigned(home, result, change))
    assert r.returncode == 0, r.stderr
    assert b"--replay: 1 citation rests on" in r.stderr


def test_replay_from_stdin_with_the_report_from_stdin_is_a_typed_refusal(tmp_path: Path, site: Site) -> None:
    home, report, result, _ = first_check(tmp_path, site)
    r = _replay(home, "-", "-", input=report.read_bytes())
    assert b"Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2 and b'"citations"' not in r.stdout, r.stderr
    assert b"both" in r.stderr and b"stdin" in r.stderr, r.stderr  # said as what it is, not "not JSON"


def test_a_huge_result_file_is_refused_typed(tmp_path: Path, site: Site) -> None:
    home, report, _, _ = first_check(tmp_path, site)
    big = tmp_path / "big.json"
    big.write_bytes(b'{"schema": "g6.report-check.v1", "citations": [' + b'{"n": 1},' * 2_000_000 + b'{"n": 1}]}')
    r = _replay(home, report, big)
    assert b"Traceback" not in r.stderr, r.stderr
    assert r.returncode in (1, 2) and b'"citations"' not in r.stdout, r.stderr
