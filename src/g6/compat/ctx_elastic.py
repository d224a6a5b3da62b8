"""``g6.knowledge.ctx_elastic``: the Elasticsearch reader as its document names it.

    from g6.knowledge.ctx_elastic import ElasticIndex, elastic

    found = elastic.search("handbook", "parental leave", fields=["title", "body"], filters={"team": "hr"})
    found.code, found.status, found.total, [h.rank for h in found.hits]

    handbook = ElasticIndex("handbook", fields=("title", "body"))
    handbook.find("leave")          # a Searched
    handbook.search("leave")        # the hits (a g6.grounding-style retriever)

A thin face over ``g6.fetch.elastic.ElasticIndex`` / ``g6.adapters.sources.elasticsearch.ElasticReader``: the
same mapping checks, store and signed receipts. Each op takes ``caller=``, a stand-in for
``g6.core.outside.call_service(program, method, path, **kw)`` returning ``outside.ServiceReply``.
A result one may read (``G6_E_KNOWLEDGE_ELASTIC_SEARCHED``, ``_PARTIAL``, ``_NO_MATCH``, and the
other ops' reads) comes back; every refusal and failure is raised as ``elastic.ElasticError``
with ``.code``, ``.reason`` and the ``.reply`` that was receipted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from g6.adapters.outcomes import QUALIFIED
from g6.adapters.sources.elasticsearch import ElasticInputError, EsResult, Passage
from g6.errors import ElasticError
from g6.fetch.elastic import EsAnswer
from g6.fetch.elastic import EsIndex as _Index
from g6.fetch.outside import Caller
from g6.home import EvidenceHome

__all__ = ["ElasticError", "ElasticIndex", "Hit", "Searched", "elastic", "reply_for"]


@dataclass(frozen=True, slots=True)
class Hit:
    """One hit: its rank, Elasticsearch's own score and the passage with its address on the server."""

    rank: int
    score: float | None
    passage: Passage
    score_scale: str = "es_bm25"
    trust: str = "untrusted"

    @property
    def text(self) -> str:
        return self.passage.text

    @property
    def source(self) -> dict[str, str]:
        return {"address": self.passage.address, "sha256": self.passage.source_sha256}

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "score": self.score, "score_scale": self.score_scale, "trust": self.trust,
                "passage": {"text": self.passage.text, "source": self.source, "index": self.passage.index,
                            "id": self.passage.doc_id,
                            "instruction_flags": list(self.passage.instruction_flags)}}


@dataclass(frozen=True, slots=True)
class Searched:
    """What a read returned: the hits (search), the count, the mapping or the document."""

    op: str
    code: str
    status: str
    outcome: str
    hits: list[Hit]
    total: int | None
    total_relation: str | None
    fields: list[str]
    complete: bool | None
    receipt_ids: list[str]
    reply: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def count(self) -> int | None:
        return self.reply.get("count")

    @property
    def mapping(self) -> Any:
        return self.reply.get("mapping")

    @property
    def document(self) -> Any:
        return self.reply.get("document")

    def to_json(self) -> dict[str, Any]:
        return dict(self.reply)


def _searched_fields(result: EsResult) -> list[str]:
    q = result.detail.get("query") if isinstance(result.detail, Mapping) else None
    for clause in ((q or {}).get("bool") or {}).get("must") or []:
        if isinstance(clause, dict) and "multi_match" in clause:
            return list(clause["multi_match"].get("fields") or [])
    return []


def reply_for(answer: EsAnswer) -> dict[str, Any]:
    """The document's reply for one read: the library's JSON plus ``status``, ``hits``,
    ``fields`` and ``complete`` (and ``http_status`` of the last reply)."""
    r = answer.result
    d = answer.to_json()
    d["status"] = r.status
    d["http_status"] = r.replies[-1].status if r.replies else None
    if r.op == "get" and r.document is not None:  # as untrusted text with its address on the server
        d["source"] = {"address": r.detail.get("address"), "sha256": r.detail.get("source_sha256")}
    if r.op == "search":
        hits = [Hit(p.rank, p.score, p) for p in r.passages]
        d["hits"] = [h.to_json() for h in hits]
        d["fields"] = _searched_fields(r)
        d["complete"] = (r.status == QUALIFIED and r.outcome.value != "partial" and r.total is not None
                         and r.total_relation == "eq" and len(hits) >= r.total)
    return d


def _answer(run: Any) -> Searched:
    try:
        answer: EsAnswer = run()
    except ElasticInputError as e:
        raise ElasticError(e.code, str(e), e.to_json()) from None
    d = reply_for(answer)
    r = answer.result
    if d["status"] != QUALIFIED:
        message = r.detail.get("message") if isinstance(r.detail, Mapping) else None
        raise ElasticError(r.code, (r.reason + (f": {message}" if message else "")) or r.code, d)
    hits = [Hit(p.rank, p.score, p) for p in r.passages]
    return Searched(r.op, r.code, d["status"], r.outcome.value, hits, r.total, r.total_relation,
                    list(d.get("fields", [])), d.get("complete"), list(answer.receipt_ids), d)


class ElasticIndex:
    """One index, read only: ``find`` returns a ``Searched``; ``search`` the hits (a retriever);
    it is also what the ``elastic`` ops run on."""

    def __init__(self, index: str, fields: Sequence[str] = (), *, home: EvidenceHome | str | None = None,
                 url: str | None = None, api_key: str | None = None, caller: Caller | None = None,
                 transport: Any = None) -> None:
        self.index = index
        self.fields = tuple(fields)
        self._idx = _Index(index, self.fields, home=home, url=url, api_key=api_key, transport=transport,
                           caller=caller)

    def find(self, query: str | None, filters: Mapping[str, Any] | None = None, top_k: int = 10) -> Searched:
        return _answer(lambda: self._idx.search(query, filters or {}, top_k))

    def search(self, query: str, top_k: int = 10, **filters: Any) -> list[Hit]:
        return self.find(query, filters, top_k).hits

    def count(self, query: str | None = None, filters: Mapping[str, Any] | None = None) -> Searched:
        return _answer(lambda: self._idx.count(query, filters or {}))

    def mapping(self) -> Searched:
        return _answer(self._idx.mapping)

    def get_doc(self, doc_id: str) -> Searched:
        return _answer(lambda: self._idx.get(doc_id))

    def close(self) -> None:
        self._idx.close()

    def __enter__(self) -> ElasticIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Elastic:
    """``elastic.search/get_doc/count/mapping``: one read each, with ``caller=`` for tests."""

    ElasticError = ElasticError

    @staticmethod
    def search(index: str, query: str | None = None, fields: Sequence[str] = (),
               filters: Mapping[str, Any] | None = None, top_k: int = 10, *, caller: Caller | None = None,
               home: EvidenceHome | str | None = None) -> Searched:
        with ElasticIndex(index, fields, home=home, caller=caller) as idx:
            return idx.find(query, filters, top_k)

    @staticmethod
    def count(index: str, query: str | None = None, fields: Sequence[str] = (),
              filters: Mapping[str, Any] | None = None, *, caller: Caller | None = None,
              home: EvidenceHome | str | None = None) -> Searched:
        with ElasticIndex(index, fields, home=home, caller=caller) as idx:
            return idx.count(query, filters)

    @staticmethod
    def mapping(index: str, *, caller: Caller | None = None, home: EvidenceHome | str | None = None) -> Searched:
        with ElasticIndex(index, home=home, caller=caller) as idx:
            return idx.mapping()

    @staticmethod
    def get_doc(index: str, id: str, *, caller: Caller | None = None,  # noqa: A002 - the document's word
                home: EvidenceHome | str | None = None) -> Searched:
        with ElasticIndex(index, home=home, caller=caller) as idx:
            return idx.get_doc(id)


elastic = _Elastic()
