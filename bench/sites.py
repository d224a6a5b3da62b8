"""Loopback sites in a separate process, so servers and the client under test do not share a GIL."""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

PARAS = ["Paragraph {i} of page {p} on host {h}: receipts keep the address, the time and the bytes of every read.",
         "Paragraph {i} of page {p} on host {h}: a citation names a passage by the hash of its normalised text.",
         "Paragraph {i} of page {p} on host {h}: a re-check fetches the page and looks for the cited passage."]


def page_paragraphs(h: int, p: int, n: int = 5) -> list[str]:
    return [PARAS[i % 3].format(i=i, p=p, h=h) for i in range(n)]


# A cookie banner as most news pages carry one (OneTrust's markup, a TCF stub): its bytes are ones a wall
# holds too, so the wall check looks at such a page, where it passes over one without them unparsed.
BANNER = ('<div id="onetrust-consent-sdk"><div id="onetrust-banner-sdk" role="region" aria-label="Cookie banner">'
          '<p id="onetrust-policy-text">We and our partners use cookies to measure this site and to show adverts.</p>'
          '<button id="onetrust-reject-all-handler">Reject all</button>'
          '<button id="onetrust-accept-btn-handler">Accept all cookies</button></div></div>')
TCF_STUB = ("<script>window.__tcfapi=window.__tcfapi||function(){(window.__tcfapi.a=window.__tcfapi.a||[])"
            ".push(arguments)};</script>")
# and, as such pages do, style rules that hide things (menus, dialogs), which the reading applies
STYLE = "<style>" + "".join(f".menu-{k} .sub{{display:none}} .modal-{k}[hidden]{{visibility:hidden}}"
                            for k in range(30)) + "</style>"


def page_html(h: int, p: int, banner: bool = False) -> bytes:
    """A page of five paragraphs; ``banner``: with the cookie banner, its stub and the style rules."""
    body = "".join(f"<p>{t}</p>" for t in page_paragraphs(h, p))
    head, foot = (STYLE + TCF_STUB, BANNER) if banner else ("", "")
    return (f"<html><head><title>Page {p}</title>{head}</head><body><article>{body}</article>{foot}</body>"
            "</html>").encode()


def _serve(hosts: int, pages: int, port_q: Any, stop: Any) -> None:
    from g6.demo.site import LocalSite, Reply

    sites = []
    port = 0
    for h in range(hosts):
        routes: dict[str, Any] = {f"/p/{p}": Reply(body=page_html(h, p)) for p in range(pages)}
        routes.update({f"/b/{p}": Reply(body=page_html(h, p, banner=True)) for p in range(pages)})
        routes["/robots.txt"] = Reply(404, b"")
        s = LocalSite(routes, host=f"127.0.0.{h + 2}", port_wanted=port).start()
        port = s.port
        sites.append(s)
    port_q.put(port)
    stop.wait()
    for s in sites:
        s.stop()


class SiteFarm:
    def __init__(self, hosts: int, pages: int) -> None:
        self.hosts, self.pages = hosts, pages
        ctx = multiprocessing.get_context("spawn")
        self._q = ctx.Queue()
        self._stop = ctx.Event()
        self._proc = ctx.Process(target=_serve, args=(hosts, pages, self._q, self._stop), daemon=True)

    def __enter__(self) -> SiteFarm:
        self._proc.start()
        self.port = self._q.get(timeout=60)
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._proc.join(10)
        if self._proc.is_alive():
            self._proc.kill()

    def urls(self, banner: bool = False) -> list[tuple[int, int, str]]:
        """(host, page, URL) of every page; ``banner``: the same pages with a cookie banner."""
        kind = "b" if banner else "p"
        return [(h, p, f"http://127.0.0.{h + 2}:{self.port}/{kind}/{p}") for h in range(self.hosts)
                for p in range(self.pages)]
