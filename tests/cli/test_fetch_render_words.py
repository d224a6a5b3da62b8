"""What ``g6 fetch`` says of a rendered read (a new user's findings, an archivist's): "rendered" only where the
capture receipt records a browser that ran and showed the page; how a capture cut short ended; the hint of the
page's own read under ``--render``; the same exit code for a read alone and in a batch; the no-scheme hint on a batch
line; ``--render URL``; and every URL an interrupted batch settled printed before it stops."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from g6.cli import cli
from g6.demo.site import LocalSite, Reply
from tests.conftest import validate

Site = Callable[..., LocalSite]
ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_RENDER_BROWSERS": "1"}
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PAGE = Reply(body=b"<html><body><p>Hello there, reader of this page.</p></body></html>")
BLANK = Reply(body=b"<html><body></body></html>")
# intervals of 0.1 s never settle a capture (they are counted as work under way): it ends at its deadline
POLLING = Reply(body=b"<html><body><p>Polling for ever.</p><script>"
                     b"setInterval(() => fetch('/robots.txt?' + Math.random()), 100)</script></body></html>")


def need_chromium() -> None:
    from g6.adapters.browser import BrowserUnavailable, find_chromium

    try:
        find_chromium()
    except BrowserUnavailable as e:
        if os.environ.get("G6_REQUIRE_TOOLS"):
            pytest.fail(str(e))
        pytest.skip(str(e))


def g6(home: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), *args], env={**ENV, **(env or {})}, input=stdin)


def pages(site: Site) -> LocalSite:
    return site({"/robots.txt": ROBOTS, "/a": PAGE, "/blank": BLANK, "/poll": POLLING})


def lines(r: Result) -> list[dict[str, Any]]:
    out = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    for x in out:
        validate(x, "fetch-line.v1")
    return out


def test_a_refused_navigation_is_not_called_rendered_and_keeps_the_raw_reads_hint(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = pages(site)
    r = g6(tmp_path / "h", "fetch", s.url("/a"), "--render", env={"G6_ALLOW_LOOPBACK": "0"})
    assert r.exit_code == 1, r.output
    assert "render: rendered" not in r.stdout and "render: not rendered" in r.stdout
    # the hint the raw fetch gives, from the receipt of the page's own (refused) request
    assert "loopback needs the operator setting G6_ALLOW_LOOPBACK=1" in r.stdout
    j = json.loads(g6(tmp_path / "h", "fetch", s.url("/a"), "--render", "--json",
                      env={"G6_ALLOW_LOOPBACK": "0"}).stdout)
    # the raw read was refused: nothing was rendered (--render reads raw first), the raw read's own words say why
    assert j["detail"]["render"] == {"mode": "always", "rendered": False, "why": "not a successful read"}
    assert "G6_ALLOW_LOOPBACK=1" in j["detail"]["message"]


def test_a_render_over_its_byte_limit_names_the_setting(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = pages(site)
    r = g6(tmp_path / "h", "fetch", s.url("/a"), "--render", env={"G6_RENDER_MAX_BYTES": "10"})
    assert r.exit_code == 1 and r.stdout.startswith("too_large "), r.output
    assert "G6_RENDER_MAX_BYTES=10" in r.stdout and "render: not rendered" in r.stdout


def test_batch_lines_no_browser_opened_are_not_rendered_and_a_host_gets_its_hint(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = pages(site)
    bare = s.url("/a").removeprefix("http://")
    given = f"{bare}\nchrome://version\n{s.url('/a')}\n"
    by_url = {x["url"]: x for x in lines(g6(tmp_path / "h", "-q", "fetch", "--input", "-", "--render", "--json",
                                             stdin=given))}
    assert by_url[bare]["render"]["rendered"] is False and by_url["chrome://version"]["render"]["rendered"] is False
    rendered = by_url[s.url("/a")]["render"]
    assert rendered == {"mode": "always", "rendered": True, "ended": "settled",
                        "raw_receipt_id": rendered["raw_receipt_id"]}
    assert by_url[bare]["hint"] == f"{bare!r} has no scheme; did you mean http://{bare} ?"
    assert "hint" not in by_url["chrome://version"]
    text = g6(tmp_path / "h", "-q", "fetch", "--input", "-", "--render", stdin=given)
    said = {x.split(" receipt=")[1].split(" ", 2)[1]: x for x in text.stdout.splitlines()}
    assert not said[bare].split(" (")[0].endswith("rendered") and f"did you mean http://{bare} ?" in said[bare]
    assert not said["chrome://version"].endswith("rendered") and said[s.url("/a")].endswith(" rendered")


def test_a_capture_cut_at_its_deadline_says_so(tmp_path: Path, site: Site) -> None:
    need_chromium()
    s = pages(site)
    env = {"G6_RENDER_TIMEOUT": "1"}
    r = g6(tmp_path / "h", "fetch", s.url("/poll"), "--render", env=env)
    assert r.exit_code == 0, r.output
    assert "render: rendered (ended at the 1 s deadline (G6_RENDER_TIMEOUT): kept what had loaded)" in r.stdout
    j = json.loads(g6(tmp_path / "h", "fetch", s.url("/poll"), "--render", "--json", env=env).stdout)
    assert j["detail"]["render"] == {"mode": "always", "rendered": True, "ended": "deadline",
                                     "raw_receipt_id": j["detail"]["render"]["raw_receipt_id"]}
    batch = g6(tmp_path / "h", "-q", "fetch", "--input", "-", "--render", stdin=s.url("/poll") + "\n", env=env)
    assert batch.stdout.rstrip().endswith(" rendered ended=deadline"), batch.output


@pytest.mark.parametrize("render", [False, True])
def test_an_empty_page_exits_the_same_alone_and_in_a_batch(tmp_path: Path, site: Site, render: bool) -> None:
    if render:
        need_chromium()
    s = pages(site)
    how = ["--render"] if render else []
    alone = g6(tmp_path / "h", "fetch", s.url("/blank"), *how)
    batch = g6(tmp_path / "h", "-q", "fetch", "--input", "-", *how, stdin=s.url("/blank") + "\n")
    assert alone.stdout.startswith("empty ") and batch.stdout.startswith("empty "), (alone.output, batch.output)
    # a page read and receipted that has no text is a read that succeeded, alone or in a batch (docs/commands/fetch.md)
    assert (alone.exit_code, batch.exit_code) == (0, 0)
    failed = g6(tmp_path / "h", "-q", "fetch", "--input", "-", *how, stdin=f"{s.url('/blank')}\n{s.url('/gone')}\n")
    assert failed.exit_code == 1  # one URL that did not succeed fails the batch, as before


def test_render_given_a_url_says_it_takes_a_mode(tmp_path: Path) -> None:
    r = g6(tmp_path / "h", "fetch", "--render", "http://127.0.0.1:9/a.html")
    assert r.exit_code == 2
    assert "'http://127.0.0.1:9/a.html' is a URL, not a mode" in r.stderr and "--render always URL" in r.stderr
    assert "is not one of" in g6(tmp_path / "h", "fetch", "--render", "sometimes", "http://x.org/").stderr


def test_an_interrupted_batch_prints_every_url_it_settled(tmp_path: Path, site: Site,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after a URL settled whose line was not reported yet (a render's line is written by its render thread
    before the calling thread reports it): made without timing, a batch that settles its URLs, reports none of
    them, then is interrupted. Each one is printed before ``g6: interrupted``, and the resumed run, which counts them
    "from the earlier run", prints the same."""
    import g6.fetch.batch as batch

    s = pages(site)
    real = batch.batch_fetch

    def settles_then_interrupted(*args: Any, **kw: Any) -> Any:
        real(*args, **{**kw, "on_result": None})
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "batch_fetch", settles_then_interrupted)
    given = f"{s.url('/a')}\n{s.url('/blank')}\n"
    r = g6(tmp_path / "h", "fetch", "--input", "-", "--run", "myrun", stdin=given)
    assert r.exit_code == 130 and "g6: interrupted" in r.stderr, r.output
    printed = sorted(x.split(" ")[-1] for x in r.stdout.splitlines())
    assert printed == sorted([s.url("/a"), s.url("/blank")])
    monkeypatch.setattr(batch, "batch_fetch", real)
    again = g6(tmp_path / "h", "fetch", "--input", "-", "--run", "myrun", stdin=given)
    assert again.exit_code == 0 and "(2 from the earlier run)" in again.stderr
    assert sorted(again.stdout.splitlines()) == sorted(r.stdout.splitlines())


def test_an_interrupted_batch_prints_no_line_its_ledger_does_not_back(tmp_path: Path, site: Site,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run-file line whose receipt says something else (an edited file) is never printed as settled."""
    import g6.fetch.batch as batch

    s = pages(site)
    real = batch.batch_fetch

    def settles_then_interrupted(*args: Any, **kw: Any) -> Any:
        real(*args, **{**kw, "on_result": None})
        run = tmp_path / "h" / "knowledge" / "fetches" / "edited.jsonl"
        edited = [{**json.loads(x), "outcome": "ok"} for x in run.read_text().splitlines()]
        run.write_text("".join(json.dumps(x) + "\n" for x in edited))
        raise KeyboardInterrupt

    monkeypatch.setattr(batch, "batch_fetch", settles_then_interrupted)
    r = g6(tmp_path / "h", "fetch", "--input", "-", "--run", "edited", stdin=s.url("/blank") + "\n")
    assert r.exit_code == 130 and r.stdout == "", r.output
