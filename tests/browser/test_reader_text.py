"""The reader's text of a capture (``page_js.READER_TEXT``): text the browser lays out but no reader sees is left out
(tests/attack/test_browser_capture_attacks.py holds the attacker's cases), and text that looks hidden to a naive
rule but is shown is kept: the other side of each rule."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply
from g6.fetch.render import fetch_rendered
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
POLICY = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=5, total_timeout=10)
PIXEL = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00"
         b"\x00\x0cIDATx\x9cc\x10\x10\x10\x00\x00\x00D\x00!\xc1\xb7\x8a\xd6\x00\x00\x00\x00IEND\xaeB`\x82")

# Shown to a reader, each by a way a rule of hidden text could get wrong.
SHOWN = {
    "scroll_box": '<div style="height:40px;overflow:auto"><p style="margin-top:200px">Zqscrollbox words.</p></div>',
    "escapes_clip": '<div style="height:0;overflow:hidden"><p style="position:absolute;top:900px">Zqescapes words.</p>'
                    "</div>",
    "gradient_text": '<p style="background:linear-gradient(red,blue);-webkit-background-clip:text;background-clip:text;'
                     'color:transparent">Zqgradient words.</p>',
    "white_on_dark": '<div style="background:#123"><p style="color:#fff">Zqdark words.</p></div>',
    "white_on_image": '<div style="position:relative"><img src="/p.png" style="position:absolute;inset:0;'
                      'width:100%;height:100%"><p style="position:relative;color:#fff">Zqhero words.</p></div>',
    "white_over_background_image": '<div style="background:url(/p.png)"><p style="color:#fff">Zqbgimage words.</p>'
                                   "</div>",
    "outlined_text": '<p style="color:transparent;-webkit-text-stroke:1px #000">Zqoutlined words.</p>',
    "shadowed_text": '<p style="color:#fff;text-shadow:0 0 2px #000">Zqshadowed words.</p>',
    "fixed_header": '<p style="position:fixed;top:0;right:0;margin:0">Zqfixed words.</p>',
    "far_below": '<p style="margin-top:3000px">Zqfarbelow words.</p>',
    "content_visibility_auto": '<div style="content-visibility:auto;margin-top:3000px"><p>Zqcvauto words.</p></div>',
    "faint_but_legible": '<p style="opacity:0.4;color:#888">Zqfaint words.</p>',
    "selected_option": '<select><option>Zqfirst option</option><option selected>Zqchosen option</option></select>',
    "open_listbox": '<select size="3"><option>Zqlistone</option><option>Zqlisttwo</option></select>',
    "partly_cut": '<p style="width:120px;white-space:nowrap;overflow:hidden">Zqshownword Zqcutword more and more and '
                  "more words past the edge of the box.</p>",
}
# Hidden, in ways beyond the attack's cases
HIDDEN = {
    "absolute_inside_clipped_positioned": '<div style="position:relative;height:0;overflow:hidden"><p style="position:'
                                          'absolute;top:0">Zqpositioned words.</p></div>',
    "same_as_nested_background": '<div style="background:#123"><div><p style="color:#112233">Zqnested words.</p></div>'
                                 "</div>",
    "parent_opacity": '<div style="opacity:0"><div><p>Zqparentopacity words.</p></div></div>',
    "zero_polygon": '<p style="clip-path:polygon(0 0, 0 0, 0 0)">Zqpolygon words.</p>',
    "faint_on_white": '<p style="color:#fdfdfd">Zqfaintwhite words.</p>',
}


@pytest.fixture(scope="module")
def text(pool: BrowserPool, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    body = "\n".join(["<p>Zqplain words.</p>", *SHOWN.values(), *HIDDEN.values()])
    page = f"<!doctype html><html><body style='background:#fff;color:#000'>{body}</body></html>".encode()
    home = EvidenceHome(tmp_path_factory.mktemp("reader") / "h", fsync=False)
    home.keys.init()
    with LocalSite({"/": Reply(body=page), "/p.png": Reply(body=PIXEL, content_type="image/png"),
                    "/robots.txt": ROBOTS}).start() as s, CheckedClient(POLICY) as client:
        r = fetch_rendered(home, client, pool, s.url("/"), limits=RenderLimits(deadline=15))
    assert r.outcome.value == "ok"
    yield r.documents[0].text or ""
    home.close()


@pytest.mark.parametrize("case", sorted(SHOWN))
def test_text_a_reader_sees_is_kept(text: str, case: str) -> None:
    words = {"selected_option": ["Zqchosen option"], "open_listbox": ["Zqlistone", "Zqlisttwo"],
             "partly_cut": ["Zqshownword"]}.get(case) or ["Zq" + SHOWN[case].split("Zq", 1)[1].split(" ", 1)[0]]
    for w in words:
        assert w in text, f"{w!r} missing from the reader's text"
    assert "Zqplain words." in text


@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_text_no_reader_sees_is_left_out(text: str, case: str) -> None:
    assert "Zq" + HIDDEN[case].split("Zq", 1)[1].split(" ", 1)[0] not in text


def test_a_closed_select_shows_only_its_selected_option_and_a_cut_line_only_its_shown_words(text: str) -> None:
    assert "Zqfirst option" not in text
    assert "Zqcutword" not in text and "past the edge" not in text
