"""``g6.knowledge``: the knowledge fetcher and the Elasticsearch reader as their documents name them.

``knowledge_fetcher`` (``FetchRequest``, ``fetch``, ``SOURCES``) and ``ctx_elastic``
(``ElasticIndex``, ``elastic``) are thin faces over ``g6.capture``, ``g6.adapters`` and
``g6.elastic``: the same checks, store and signed receipts.
"""
