"""Adapters: the checked HTTP client and the sources that read through it.

The face of the network edge: ``net`` (the checked client), ``html`` (reading a page), ``sources`` (paper and
index sources), ``browser``; ``outcomes`` and ``untrusted``, which all of them share.
"""

from g6.adapters.html.page import Document, PageRead, fetch_page
from g6.adapters.net.addresses import AddressVerdict, check_address, classify
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy, FetchResponse, system_resolver
from g6.adapters.net.urls import NormalizedURL, URLError, normalise_url, redact_url
from g6.adapters.outcomes import Outcome

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
