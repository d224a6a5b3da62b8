"""Reading the outside world into the evidence home: one page, a paper search, an index, a batch.

``capture`` (fetch, search and Elasticsearch reads: the checked client, the store, a signed receipt
each), ``batch`` (``g6 fetch --input``: many URLs, hosts in parallel), ``host_pool`` (one request at a
time per host), ``convert`` (a kept PDF to text), ``elastic`` (``EsIndex``, one index read through
the home), ``outside`` (a program the person runs on this machine).
"""

from g6.fetch.capture import FetchResult, SearchResult, fetch, search

__all__ = ["FetchResult", "SearchResult", "fetch", "search"]
