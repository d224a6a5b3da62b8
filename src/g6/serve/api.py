"""The JSON API of ``g6 serve``: the same views the pages render (:mod:`g6.serve.views`), each answer
valid against its schema (``schemas/serve-*.v1.schema.json``); refusals are JSON (``serve-refusal.v1``).

``/api/home``, ``/api/captures?url=URL`` or ``?digest=HEX``, ``/api/capture/{receipt_id}``,
``/api/manifest/{manifest_id}``, ``/api/verify`` (runs a verify, or joins the one under way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from g6.errors import G6Error, InputError
from g6.serve import views
from g6.serve.lookup import NotFound
from g6.serve.responses import SECURITY_HEADERS, bad_request, not_found, refusal

API_HEADERS = {**SECURITY_HEADERS, "Cache-Control": "no-cache"}


def answer(request: Request, make: Callable[[], dict[str, Any]]) -> Response:
    try:
        return JSONResponse(make(), headers=API_HEADERS)
    except NotFound as e:
        return not_found(request, str(e), e.see)
    except InputError as e:
        return bad_request(request, str(e), getattr(e, "see", None))
    except G6Error as e:
        return refusal(request, 500, "unreadable", str(e)[:300])


def routes(reader: Any, **options: Any) -> list[BaseRoute]:
    state = views.serve_state(reader, **options)

    def home(request: Request) -> Response:
        q = request.query_params
        if unknown := views.unknown_home_parameter(q):
            return bad_request(request, unknown)
        return answer(request, lambda: views.home_view(state.caps, state.manifests, state.verify, page=q.get("page"),
                                                       manifests_page=q.get("manifests_page"), path="/api/home"))

    def captures(request: Request) -> Response:
        q = request.query_params
        unknown = sorted(set(q) - {"url", "digest"})
        if unknown:
            return bad_request(request, f"unknown parameter {unknown[0]!r}: give url= or digest=")
        return answer(request, lambda: views.captures_view(state.caps, url=q.get("url"), digest=q.get("digest")))

    def capture(request: Request) -> Response:
        rid = request.path_params["receipt_id"]
        return answer(request, lambda: views.capture_view(state.caps, state.manifests, rid))

    def manifest(request: Request) -> Response:
        mid = request.path_params["manifest_id"]
        return answer(request, lambda: views.manifest_view(state.caps, state.manifests, mid))

    def verify(request: Request) -> Response:
        def make() -> dict[str, Any]:
            home = reader.home()
            state.verify.run(home)
            return {"schema": "g6.serve.verify.v1", **state.verify.snapshot(views.head_of(home))}
        return answer(request, make)

    return [Route("/api/home", home), Route("/api/captures", captures), Route("/api/capture/{receipt_id}", capture),
            Route("/api/manifest/{manifest_id}", manifest), Route("/api/verify", verify)]
