"""Adapters: the checked HTTP client and the sources that read through it."""

from g6.adapters.addresses import AddressVerdict, check_address, classify
from g6.adapters.checked_client import CheckedClient, FetchPolicy, FetchResponse, system_resolver
from g6.adapters.outcomes import Outcome
from g6.adapters.urls import NormalizedURL, URLError, normalise_url, redact_url
from g6.adapters.web import Document, PageRead, fetch_page

__all__ = [
    "AddressVerdict",
    "CheckedClient",
    "Document",
    "FetchPolicy",
    "FetchResponse",
    "NormalizedURL",
    "Outcome",
    "PageRead",
    "URLError",
    "check_address",
    "classify",
    "fetch_page",
    "normalise_url",
    "redact_url",
    "system_resolver",
]
