"""Answers every serve module shares: refusals (404, 400, 451) in the form the client asked for."""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

SECURITY_HEADERS = {
    # Nothing from elsewhere, no script at all on pages for people; captured bytes are never
    # rendered on this origin except inside a sandboxed frame (pages set their own CSP for that).
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def wants_json(request: Request) -> bool:
    """JSON for the API and for clients that ask for it; HTML for browsers."""
    if request.url.path.startswith("/api/"):
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def refusal(request: Request, status: int, code: str, why: str, see: str | None = None,
            extra: dict[str, object] | None = None) -> Response:
    """A refusal that says why; ``see``: a path or URL of this server worth following instead (one that
    answers: a refusal never points at another refusal), in the JSON and as the HTML page's one link;
    ``extra``: more members of the JSON body (a redaction's entry)."""
    if wants_json(request):
        body: dict[str, object] = {"outcome": "refused", "status": status, "code": code, "message": why}
        if see is not None:
            body["see"] = see
        body.update(extra or {})
        return JSONResponse(body, status_code=status, headers=SECURITY_HEADERS)
    link = f'<p>See <a href="{html.escape(see)}">{html.escape(see)}</a></p>' if see is not None else ""
    body_html = (f"<!doctype html><meta charset=utf-8><title>{status}</title>"
                 f"<h1>{status}</h1><p>{html.escape(why)}</p>{link}")
    return HTMLResponse(body_html, status_code=status, headers={**SECURITY_HEADERS,
                                                                "Content-Security-Policy": "default-src 'none'"})


def not_found(request: Request, why: str, see: str | None = None) -> Response:
    return refusal(request, 404, "not_found", why, see)


def bad_request(request: Request, why: str, see: str | None = None) -> Response:
    return refusal(request, 400, "bad_request", why, see)


def redacted(request: Request, what: str, entry: Any, entry_url: str) -> Response:
    """451 Unavailable For Legal Reasons (RFC 7725): ``what`` was taken out of the store by the redaction
    ``entry`` (a ``g6.ledger.redactions.Redacted``), whose signed receipt is at ``entry_url``: the one link
    (``see``), and the ``Link: <…>; rel="blocked-by"`` RFC 7725 asks for. The read's own receipt still answers."""
    why = (f"{what} was {entry.said()}: the home no longer serves these bytes; the log still proves they were "
           f"read (receipt {entry_url})")
    r = refusal(request, 451, "redacted", why, see=entry_url, extra={"redaction": entry.to_json()})
    r.headers["Link"] = f'<{entry_url}>; rel="blocked-by"'
    return r
