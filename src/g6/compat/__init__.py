"""The source documents' shapes, over the same library: the knowledge fetcher (``knowledge_fetcher``,
``http``), the Elasticsearch reader (``ctx_elastic``, ``_index``) and runx web-fetch (``web_fetch``).

Users import them by the documents' paths, ``g6.knowledge.*`` and ``g6.core.*``, which re-export this
package. Only the CLI and the MCP server import it; the rest of the library never does.
"""
