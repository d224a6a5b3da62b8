"""``g6 serve``: one evidence home, read only, over HTTP (an ASGI app under uvicorn).

:func:`g6.serve.app.build_app` assembles the routes of the modules beside it: ``memento`` (RFC 7089
TimeGate, TimeMaps, mementos), ``tlog`` (receipts, proofs, the published tiles), ``api`` (the JSON API)
and ``pages`` (HTML for people). Every route reads through :class:`g6.serve.app.HomeReader`, which
opens the home read-only, one handle per worker thread; nothing here writes to the home.
"""

from g6.serve.app import HomeReader, build_app

__all__ = ["HomeReader", "build_app"]
