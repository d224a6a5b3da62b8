"""``g6 fetch`` given a URL over the 8,192-character limit: rejected, nothing sent, receipted, a one-line message."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from g6.cli import cli
from g6.demo.site import Reply
from g6.home import EvidenceHome

ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"}
PAGE = Reply(body=b"<html><body><p>A page worth keeping.</p></body></html>")


def test_fetch_of_a_30_kb_url_is_rejected_receipted_and_said_in_one_short_line(site, tmp_path: Path) -> None:
    s = site({"/page.html": PAGE, "/robots.txt": Reply(404, b"")})
    url = s.url("/page.html?q=" + "b" * 30_000)
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "fetch", url], env=ENV)
    assert r.exit_code == 2, r.output
    assert s.requests == []
    assert "url_too_long: a URL of 30," in r.stdout and "nothing was sent" in r.stdout
    assert len(r.stdout) + len(r.stderr) < 2000  # never the whole URL
    with EvidenceHome(tmp_path / "h") as home:
        (entry,) = list(home.ledger.entries())
        assert entry.receipt.outcome == "rejected" and entry.receipt.detail["url_length"] == len(url)


def test_a_batch_with_one_long_url_goes_on_with_the_others(site, tmp_path: Path) -> None:
    s = site({"/page.html": PAGE, "/robots.txt": Reply(404, b"")})
    long_url = s.url("/page.html?q=" + "b" * 30_000)
    (tmp_path / "urls.txt").write_text(f"{long_url}\n{s.url('/page.html')}\n")
    r = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "fetch", "--input", str(tmp_path / "urls.txt"),
                                 "--json"], env=ENV)
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert sorted(x["outcome"] for x in lines) == ["ok", "rejected"] and all(x["receipt_id"] for x in lines)
    assert [q.path for q in s.requests] == ["/robots.txt", "/page.html"]
    assert r.exit_code == 1
    with EvidenceHome(tmp_path / "h") as home:
        assert len(home.ledger) == 2
