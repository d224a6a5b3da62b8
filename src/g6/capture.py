"""``g6.capture``: the import path the first versions of the README named; the code is :mod:`g6.fetch.capture`."""

from g6.fetch.capture import FetchResult, SearchResult, es_read, fetch, search

__all__ = ["FetchResult", "SearchResult", "es_read", "fetch", "search"]
