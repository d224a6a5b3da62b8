"""``EsIndex``: the Python face of ``g6 es`` — one index, reads receipted in an evidence home.

    from g6.fetch.elastic import EsIndex     # also importable as g6.elastic.ElasticIndex

    handbook = EsIndex("handbook", fields=("title", "body"), home="/tmp/evidence")
    for passage in handbook.find("retention policy", tag="hr"):
        print(passage.rank, passage.score, passage.address, passage.text)

Without ``home``/``url`` it reads ``G6_HOME`` and ``G6_ELASTIC_URL``/``G6_ELASTIC_API_KEY`` as the
CLI does (environment, then ``$G6_HOME/.env``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from g6.adapters.outcomes import Outcome
from g6.adapters.sources.elasticsearch import DEFAULT_URL, ElasticReader, EsResult, Passage
from g6.config import load_settings
from g6.errors import ElasticReadError
from g6.fetch.capture import es_read
from g6.fetch.outside import CallerTransport
from g6.home import EvidenceHome


@dataclass(frozen=True)
class EsAnswer:
    result: EsResult
    receipt_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.result.to_json(), "receipt_ids": list(self.receipt_ids)}


class EsIndex:
    """One Elasticsearch index, every read receipted in an evidence home (the Python face of ``g6 es``;
    ``g6.elastic.ElasticIndex`` names it too)."""

    def __init__(self, index: str, fields: tuple[str, ...] = (), *, home: EvidenceHome | str | os.PathLike[str] |
                 None = None, url: str | None = None, api_key: str | None = None,
                 transport: httpx.BaseTransport | None = None, caller: Any = None) -> None:
        settings = load_settings() if home is None or url is None else None
        self._owns_home = not isinstance(home, EvidenceHome)
        if isinstance(home, EvidenceHome):
            self.home = home
        elif home is not None:
            self.home = EvidenceHome(home)
        else:
            assert settings is not None
            self.home = settings.open_home(write=True)
        if not self.home.keys.exists():
            self.home.keys.init()
        url = url or (settings.values.get("G6_ELASTIC_URL") if settings else None) or DEFAULT_URL
        key = api_key or (settings.secret("G6_ELASTIC_API_KEY") if settings else None)
        self.index = index
        self.fields = tuple(fields)
        if caller is not None and transport is None:
            # a stand-in for g6.core.outside.call_service: the reader's requests go through it
            transport = CallerTransport(caller)
        self.reader = ElasticReader(self.home.store, url, api_key=key, transport=transport)

    def _record(self, result: EsResult, request: Mapping[str, Any]) -> EsAnswer:
        _, ids = es_read(self.home, result, request)
        return EsAnswer(result, ids)

    def mapping(self) -> EsAnswer:
        return self._record(self.reader.mapping(self.index), {"index": self.index})

    def search(self, query: str | None, filters: Mapping[str, Any] | None = None, top_k: int = 10) -> EsAnswer:
        result = self.reader.search(self.index, query, self.fields, filters or {}, top_k)
        return self._record(result, {"index": self.index, "query": query, "fields": list(self.fields),
                                     "filters": dict(filters or {}), "top_k": top_k})

    def count(self, query: str | None, filters: Mapping[str, Any] | None = None) -> EsAnswer:
        result = self.reader.count(self.index, query, self.fields, filters or {})
        return self._record(result, {"index": self.index, "query": query, "fields": list(self.fields),
                                     "filters": dict(filters or {})})

    def get(self, doc_id: str) -> EsAnswer:
        return self._record(self.reader.get_doc(self.index, doc_id), {"index": self.index, "id": doc_id})

    def find(self, query: str | None, top_k: int = 10, **filters: Any) -> list[Passage]:
        """The passages for ``query``; raises ``ElasticReadError`` unless the server answered in full."""
        answer = self.search(query, filters, top_k)
        if answer.result.outcome not in (Outcome.OK, Outcome.EMPTY):
            raise ElasticReadError(answer)
        return list(answer.result.passages)

    def close(self) -> None:
        self.reader.close()
        if self._owns_home:  # a home handed in stays open for its owner
            self.home.close()

    def __enter__(self) -> EsIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
