"""``g6.core.http`` as the knowledge fetcher's document names it (code: :mod:`g6.compat.http`)."""

from g6.compat.http import Client, FetchPolicy, FetchResponse, Request, Response, Transport

__all__ = ["Client", "FetchPolicy", "FetchResponse", "Request", "Response", "Transport"]
