"""The knowledge fetcher's face, as its document names it (code: :mod:`g6.compat.knowledge_fetcher`)."""

from g6.compat.knowledge_fetcher import (
    SOURCES,
    Document,
    FetchRequest,
    FetchResult,
    HttpAdapter,
    Sources,
    fetch,
    run,
)

__all__ = ["SOURCES", "Document", "FetchRequest", "FetchResult", "HttpAdapter", "Sources", "fetch", "run"]
