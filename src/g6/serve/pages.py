"""The pages for people: the home page, a search by URL, digest or receipt id, one page per capture, one
per manifest, and the verify status (HTML from :mod:`g6.serve.html`, data from :mod:`g6.serve.views`).

Each page carries :data:`g6.serve.html.CSP`: no script at all, the one stylesheet of this server, frames of
this origin only (the memento of a captured page, itself inside ``<iframe sandbox>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from g6.errors import G6Error, InputError
from g6.serve import html, views
from g6.serve.lookup import NotFound
from g6.serve.responses import SECURITY_HEADERS, bad_request, not_found, refusal

PAGE_HEADERS = {**SECURITY_HEADERS, "Content-Security-Policy": html.CSP, "X-Frame-Options": "DENY",
                "Cache-Control": "no-cache"}


def answer(request: Request, make: Callable[[], str], status: int = 200) -> Response:
    """The page ``make`` renders, or the refusal its error calls for (400 bad input, 404 unknown)."""
    try:
        return HTMLResponse(make(), status_code=status, headers=PAGE_HEADERS)
    except NotFound as e:
        return not_found(request, str(e), e.see)
    except InputError as e:
        return bad_request(request, str(e), getattr(e, "see", None))
    except G6Error as e:  # the home cannot be read as asked: said in one line, never a traceback
        return refusal(request, 500, "unreadable", str(e)[:300])


def routes(reader: Any, **options: Any) -> list[BaseRoute]:
    state = views.serve_state(reader, **options)

    def home_page(request: Request) -> Response:
        q = request.query_params
        if unknown := views.unknown_home_parameter(q):
            return bad_request(request, unknown)
        return answer(request, lambda: html.render_home(views.home_view(
            state.caps, state.manifests, state.verify, page=q.get("page"), manifests_page=q.get("manifests_page"),
            path="/")))

    def search_page(request: Request) -> Response:
        q = request.query_params.get("q", "")
        try:
            kind, value = views.parse_query(q)
        except InputError as e:
            return HTMLResponse(html.render_captures(None, q, str(e)), status_code=400, headers=PAGE_HEADERS)
        if kind == "receipt":
            return RedirectResponse(f"/capture/{value}", status_code=303, headers=SECURITY_HEADERS)
        return answer(request, lambda: html.render_captures(
            views.captures_view(state.caps, **{kind: value}), q))

    def capture_page(request: Request) -> Response:
        rid = request.path_params["receipt_id"]
        return answer(request, lambda: html.render_capture(views.capture_view(state.caps, state.manifests, rid)))

    def manifest_page(request: Request) -> Response:
        mid = request.path_params["manifest_id"]
        return answer(request, lambda: html.render_manifest(
            views.manifest_view(state.caps, state.manifests, mid)))

    def verify_page(request: Request) -> Response:
        def make() -> str:
            home = reader.home()
            state.verify.run(home)
            return html.render_verify(state.verify.snapshot(views.head_of(home)))
        return answer(request, make)

    def style(request: Request) -> Response:
        return Response(html.STYLE, media_type="text/css",
                        headers={**SECURITY_HEADERS, "Cache-Control": "public, max-age=3600"})

    return [Route("/", home_page), Route("/search", search_page), Route("/capture/{receipt_id}", capture_page),
            Route("/manifest/{manifest_id}", manifest_page), Route("/verify", verify_page),
            Route(html.STYLE_PATH, style)]
