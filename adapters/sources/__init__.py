"""Paper and index sources (arXiv, OAI-PMH, OpenAlex, Semantic Scholar; Elasticsearch), and the paper sources' registry.

Here: the registry of paper sources, ``SOURCES`` (``g6.adapters.sources.SOURCES.register(my_source)``). This
package reads no settings: :func:`g6.config.sources_from` builds the registry the operator's
settings describe (mirrors, pauses, keys) and hands it down.
"""

from __future__ import annotations

from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.oaipmh import OaiPmhSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.adapters.sources.search import Source, SourceRegistry
from g6.adapters.sources.semantic_scholar import SemanticScholarSource


def build_sources(*sources: Source) -> SourceRegistry:
    """A registry of ``sources``; none given: the four built-in sources at their defaults."""
    reg = SourceRegistry()
    for source in sources or (ArxivSource(), OaiPmhSource(), OpenAlexSource(), SemanticScholarSource()):
        reg.register(source)
    return reg


SOURCES = build_sources()
"""The default registry. ``SOURCES.register(my_source)`` adds a user's own source."""
