"""The registry of paper sources, and how the CLI's settings configure them.

Operator settings (environment or ``$G6_HOME/.env``): ``G6_ARXIV_URL``, ``G6_OPENALEX_URL``,
``G6_SEMANTIC_SCHOLAR_URL`` point a source at another base URL (a mirror, or a local server in
tests); ``G6_<SOURCE>_PAUSE`` changes its pause; ``G6_OPENALEX_MAILTO`` is sent only when set;
``G6_OPENALEX_API_KEY`` and ``G6_SEMANTIC_SCHOLAR_API_KEY`` go to their own source only.
"""

from __future__ import annotations

from collections.abc import Mapping

from g6.adapters.arxiv import ArxivSource
from g6.adapters.oaipmh import OaiPmhSource
from g6.adapters.openalex import OpenAlexSource
from g6.adapters.search import SourceRegistry
from g6.adapters.semantic_scholar import SemanticScholarSource
from g6.config import non_negative_number


def _pause(values: Mapping[str, str], name: str, default: float) -> float:
    setting = f"G6_{name.upper()}_PAUSE"
    return float(non_negative_number(setting, values.get(setting), float, default))  # type: ignore[arg-type]


def build_sources(values: Mapping[str, str] | None = None) -> SourceRegistry:
    v = values or {}
    reg = SourceRegistry()
    arxiv = ArxivSource()
    reg.register(ArxivSource(base_url=v.get("G6_ARXIV_URL") or arxiv.base_url,
                             pause=_pause(v, "arxiv", arxiv.pause)))
    reg.register(OaiPmhSource(pause=_pause(v, "oai_pmh", OaiPmhSource().pause)))
    oa = OpenAlexSource()
    reg.register(OpenAlexSource(base_url=v.get("G6_OPENALEX_URL") or oa.base_url,
                                mailto=v.get("G6_OPENALEX_MAILTO") or None,
                                api_key=v.get("G6_OPENALEX_API_KEY") or None, pause=_pause(v, "openalex", oa.pause)))
    s2 = SemanticScholarSource()
    reg.register(SemanticScholarSource(base_url=v.get("G6_SEMANTIC_SCHOLAR_URL") or s2.base_url,
                                       api_key=v.get("G6_SEMANTIC_SCHOLAR_API_KEY") or None,
                                       pause=_pause(v, "semantic_scholar", s2.pause)))
    return reg


SOURCES = build_sources()
"""The default registry. ``SOURCES.register(my_source)`` adds a user's own source."""
