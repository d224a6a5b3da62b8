"""What `g6 cite` says of a quote it cannot cite, when the reason is not "an error page" or "not on the page":

* the raw read of a page whose text scripts write (outcome ``empty``, ``no_text_without_scripts``) is an empty
  read, not an error page; the message names the rendered capture that names it as its raw read (``links.raw``),
  or, without one, says to render the page;
* a quote in a rendered capture's DOM but not in the text the browser showed a reader (white on white…) is in the
  page but not shown to readers, not "not on the page";
* a raw read's text hidden by the CSS rules of ``g6.adapters.html.css_invisible`` is said hidden, with the reason.

The captures here are receipts made as ``g6.fetch.render`` makes them (no browser: what cite reads of one is the
DOM blob, ``capture.text`` and ``links.raw``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import CAPTURE_ROWS, cite_web
from g6.demo.site import LocalSite, Reply
from g6.errors import FailedReadError, InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, new_receipt_id

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
SHELL = b'<!doctype html><html><body><div id="app"></div><script src="/app.js"></script></body></html>'
SAID = "The council voted seven to two on the budget after a long debate."
WHITE = "The mayor kept quiet about the clause in white on white."
DOM = (f'<!doctype html><html><body><div id="app"><p>{SAID}</p><p style="color:#fff;background:#fff">{WHITE}</p>'
       '<p style="display:none">A paragraph the page hides with display none.</p></div></body></html>').encode()

ENGINE = {"name": "chromium", "version": "1.0", "product": "Chrome/1.0", "user_agent": "test", "protocol": "1.3"}
COUNTS = {"answered": 0, "bytes": 0, "failed": 0, "over_limit": 0, "popups": 0, "requests": 0}


@pytest.fixture
def shell(home: EvidenceHome, client: CheckedClient, site: Site) -> Receipt:
    s = site({"/": Reply(body=SHELL), "/robots.txt": ROBOTS, "/other": Reply(body=b"<p>Another page here.</p>")})
    raw = fetch(home, client, s.url("/"))
    assert raw.outcome.value == "empty"
    r = home.ledger.get(raw.receipt_id)
    assert r.detail.get("reason") == "no_text_without_scripts" and r.http_status == 200
    return r


def capture_of(home: EvidenceHome, raw: Receipt, *, link: bool = True) -> Receipt:
    """A rendered capture of ``raw``'s page as g6.fetch.render appends it: the DOM as its content, the reader's
    text (``SAID`` only: the browser showed no white-on-white words) in ``capture.text``, ``links.raw``."""
    dom, text = home.store.put(DOM), home.store.put(SAID.encode())
    cap = replace(raw, receipt_id=new_receipt_id(), outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED",
                  content=dom.to_json(), detail={"content_type": "text/html; charset=utf-8"},
                  links={"raw": raw.receipt_id} if link else {}, signature=None, log=None,
                  capture={"page_url": raw.final_url, "final_url": raw.final_url, "engine": ENGINE,
                           "viewport": {"width": 1280, "height": 800}, "render_ms": 1, "ended": "settled",
                           "resources": [], "counts": COUNTS, "dom": dom.to_json(), "text": text.to_json(),
                           "screenshot": home.store.put(b"not a png: cite never reads it").to_json()})
    return home.ledger.append(cap, home.signing_key())


def test_the_raw_read_of_a_shell_is_an_empty_read_and_its_capture_is_named(home: EvidenceHome, shell: Receipt,
                                                                           client: CheckedClient) -> None:
    cap = capture_of(home, shell)
    with pytest.raises(FailedReadError) as e:
        cite_web(home, shell.receipt_id, quote="The council voted seven to two")
    msg = str(e.value)
    assert "is an empty read (empty, HTTP 200; no text without scripts" in msg, msg
    assert "error page" not in msg.replace("not an error page", "")
    assert f"cite the rendered capture {cap.receipt_id} instead" in msg
    assert msg.index("rendered capture") < msg.index("--allow-failed-read")  # the flag is not the first move
    assert cite_web(home, cap.receipt_id, quote="The council voted seven to two").text_source == "rendered"


def test_without_a_capture_the_message_says_to_render(home: EvidenceHome, shell: Receipt) -> None:
    capture_of(home, shell, link=False)  # a render that is no capture of this read (no links.raw)
    with pytest.raises(FailedReadError) as e:
        cite_web(home, shell.receipt_id, quote="The council voted seven to two")
    msg = str(e.value)
    assert f"render the page (g6 fetch {shell.final_url} --render) and cite the rendered capture" in msg, msg
    assert "cite the rendered capture rcpt_" not in msg
    # cited anyway: still no words in it, and the same way on
    with pytest.raises(InputError) as e2:
        cite_web(home, shell.receipt_id, quote="The council voted seven to two", allow_failed_read=True)
    assert "no text to cite (empty: no text without scripts" in str(e2.value) and "--render" in str(e2.value)


def test_the_capture_is_found_past_a_renders_requests(home: EvidenceHome, shell: Receipt,
                                                                        client: CheckedClient) -> None:
    from g6.fetch.render import MAX_REQUESTS_LIMIT

    assert CAPTURE_ROWS > MAX_REQUESTS_LIMIT + 2  # a render's every request receipt, then its capture
    filler = home.ledger.get(fetch(home, client, f"{shell.final_url}other").receipt_id)  # a render's requests
    home.ledger.append_many([replace(filler, receipt_id=new_receipt_id(), signature=None, log=None)
                             for _ in range(40)], home.signing_key())
    cap = capture_of(home, shell)
    with pytest.raises(FailedReadError) as e:
        cite_web(home, shell.receipt_id, quote="The council voted seven to two")
    assert f"cite the rendered capture {cap.receipt_id} instead" in str(e.value)


def test_a_quote_in_the_captured_dom_but_not_shown_is_said_not_shown(home: EvidenceHome, shell: Receipt) -> None:
    cap = capture_of(home, shell)
    with pytest.raises(InputError) as e:
        cite_web(home, cap.receipt_id, quote="The mayor kept quiet about the clause")
    msg = str(e.value)
    assert "not on the page" not in msg, msg
    assert f"is in receipt {cap.receipt_id}'s captured page (its DOM) but not shown to readers" in msg
    with pytest.raises(InputError) as e:  # display:none keeps its own reason
        cite_web(home, cap.receipt_id, quote="A paragraph the page hides with display none")
    assert "hidden from readers (display:none from an inline style)" in str(e.value)
    with pytest.raises(InputError) as e:  # and words on neither side are still not on the page
        cite_web(home, cap.receipt_id, quote="Words that this page never held at all")
    assert "not on the page, visible or hidden" in str(e.value)


RAW_CSS = b"""<html><head><style>.off{position:absolute;left:-9999px} .t{color:rgba(0,0,0,0)}
.z{font-size:0}</style></head><body><p>A visible paragraph that anyone reads here.</p>
<p class=off>Words moved off the page to the left.</p><p class=t>Words drawn in a transparent colour.</p>
<p class=z>Words in a font size of zero here.</p></body></html>"""


@pytest.mark.parametrize(("quote", "words"), [
    ("Words moved off the page to the left", "positioned off the page: left:-9999px"),
    ("Words drawn in a transparent colour", 'drawn in a transparent colour: color:rgba(0,0,0,0) from the <style> rule'),
    ("Words in a font size of zero", 'a font size of zero: font-size:0 from the <style> rule ".z"'),
])
def test_a_raw_reads_css_invisible_text_names_its_reason(home: EvidenceHome, client: CheckedClient, site: Site,
                                                         quote: str, words: str) -> None:
    s = site({"/": Reply(body=RAW_CSS), "/robots.txt": ROBOTS})
    rid = fetch(home, client, s.url("/")).receipt_id
    with pytest.raises(InputError) as e:
        cite_web(home, rid, quote=quote)
    assert f"but hidden from readers ({words}" in str(e.value), str(e.value)


def test_the_cli_says_empty_read_and_names_the_capture(home: EvidenceHome, shell: Receipt, tmp_path: Path) -> None:
    cap = capture_of(home, shell)
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), "cite", shell.receipt_id, "--quote",
                        "The council voted seven to two", "--manifest", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "is an empty read" in r.stderr and cap.receipt_id in r.stderr, r.stderr
    assert not (tmp_path / "m.json").exists()
