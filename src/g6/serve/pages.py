"""The pages for people: the home page, a search by URL, digest or receipt id, one page per capture, one
per manifest, and the verify status (HTML from :mod:`g6.serve.html`, data from :mod:`g6.serve.views`).

Each page carries :data:`g6.serve.html.CSP`: no script at all, the one stylesheet of this server, frames of
this origin only (the memento of a captured page, itself inside ``<iframe sandbox>``). A rendered capture's
screenshot is served at ``/capture/{id}/screenshot`` (``image/png``, the bytes checked against the digests its
signed receipt names as they are sent, ``Content-Digest``/``Repr-Digest`` from its sha256) for the ``<img>`` of
its page.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from g6.errors import BlobCorrupt, BlobNotFound, G6Error, InputError
from g6.serve import html, lookup, views
from g6.serve.digests import memento_fields
from g6.serve.lookup import NotFound
from g6.serve.responses import SECURITY_HEADERS, bad_request, not_found, redacted, refusal

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

    def screenshot(request: Request) -> Response:
        rid = request.path_params["receipt_id"]
        try:
            r = lookup.by_id(state.caps, rid) if views.RECEIPT_ID.fullmatch(rid) else None
        except NotFound as e:
            return not_found(request, str(e), e.see)
        cap = r.capture if r is not None else None
        ref = views.blob_ref(cap.get("screenshot")) if isinstance(cap, Mapping) else None
        if r is None or ref is None:
            return not_found(request, f"{rid[:80]!r} is no rendered capture with a screenshot in this home")
        gone = state.caps.home().redactions().of_content(ref)
        if gone is not None:  # never served, whether or not bytes are still in the store (RFC 7725)
            return redacted(request, f"the screenshot of {rid}", gone,
                            f"{str(request.base_url).rstrip('/')}/receipt/{gone.receipt_id}")
        try:
            body = state.caps.blob(rid, str(ref["blake3"]), int(ref["size"]))
        except BlobNotFound as err:
            return refusal(request, 404, "blob_missing", f"the screenshot of {rid} is not in the store: {err}")
        except (BlobCorrupt, G6Error) as err:
            return refusal(request, 500, "blob_corrupt", f"the screenshot of {rid} is refused: {err}")
        head = request.method == "HEAD"
        headers = {**SECURITY_HEADERS, "Content-Security-Policy": "default-src 'none'", "Cache-Control": "no-cache",
                   "Content-Length": str(ref["size"]), **memento_fields(str(ref["sha256"]), head=head)}
        if head:
            getattr(body, "close", lambda: None)()
            return Response(headers=headers, media_type="image/png")
        return StreamingResponse(body, headers=headers, media_type="image/png")

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
            Route("/capture/{receipt_id}/screenshot", screenshot),
            Route("/manifest/{manifest_id}", manifest_page), Route("/verify", verify_page),
            Route(html.STYLE_PATH, style)]
