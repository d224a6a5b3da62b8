"""A read-only Elasticsearch reader for a server on this machine.

Four reads — ``mapping``, ``search``, ``count``, ``get_doc`` — over plain HTTP GET/POST to a
loopback address. It never writes: only ``_mapping``, ``_search``, ``_count`` and ``_doc/<id>``
are ever requested, with query JSON built here from the caller's words (never taken from the
caller), and every field and filter checked against the index mapping before anything is sent.
It never sends ``ignore_unavailable``, ``allow_no_indices`` or ``expand_wildcards`` (they would
turn a missing index into an empty 200), and never follows a redirect.

Partial answers (``_shards.failed > 0`` or ``timed_out: true``) are ``partial``, never a plain
result: a partial search's hits and count come back marked as not the whole index; a partial
count is refused (what the shards counted stays in the stored reply, never as the count).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import rfc8785

from g6.adapters.outcomes import Outcome, es_code, es_status
from g6.adapters.sources.jsonsafe import JSONParseError, as_int, parse_json_object
from g6.adapters.untrusted import flag_instructions
from g6.errors import ElasticInputError
from g6.ledger.receipts import Hop
from g6.store import BlobBackend, BlobRef

DEFAULT_URL = "http://127.0.0.1:9200"
TEXT_TYPES = frozenset({"text", "match_only_text", "search_as_you_type"})
EXACT_TYPES = frozenset({"keyword", "constant_keyword", "wildcard", "integer", "long", "short", "byte", "double",
                         "float", "half_float", "scaled_float", "unsigned_long", "boolean", "date", "date_nanos",
                         "ip", "version"})
QUERYABLE_TYPES = TEXT_TYPES | {"keyword", "constant_keyword", "wildcard"}
START_HINT = ("no Elasticsearch answers at {url}; start one on loopback, e.g. "
              "`pip install noida-db && noida-db start --only elasticsearch`, or set G6_ELASTIC_URL")
MAX_REPLY_BYTES = 64 * 1024 * 1024
_BAD_INDEX_CHARS = re.compile(r'[\\/*?"<>| ,#:]')


def check_index_name(index: str) -> str:
    """One concrete index or alias name: no pattern, list, path, remote cluster or hidden index."""
    code = "G6_E_KNOWLEDGE_ELASTIC_INPUT"
    if not isinstance(index, str) or not index:
        raise ElasticInputError(code, "an index name is required")
    if "*" in index or "?" in index:
        raise ElasticInputError(code, f"{index!r} is a pattern; name one index or alias")
    if "," in index:
        raise ElasticInputError(code, f"{index!r} is a list; name one index or alias")
    if "/" in index or "\\" in index or index in (".", ".."):
        raise ElasticInputError(code, f"{index!r} is a path; name one index or alias")
    if index.startswith("."):
        raise ElasticInputError(code, f"{index!r} is a hidden or system index; it is not read")
    if ":" in index:
        raise ElasticInputError(code, f"{index!r} names a remote cluster; only the local server is read")
    if index.startswith(("-", "_", "+")) or index != index.lower() or _BAD_INDEX_CHARS.search(index) \
            or len(index.encode()) > 255:
        raise ElasticInputError(code, f"{index!r} is not a valid index name")
    return index


def check_loopback_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT",
                                f"G6_ELASTIC_URL must be http(s)://host:port, got {url!r}")
    host = parts.hostname
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                raise ValueError
        except ValueError:
            raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT",
                                    f"G6_ELASTIC_URL must be a loopback address (127.0.0.0/8, ::1, localhost), "
                                    f"got {host!r}") from None
    if parts.username or parts.password:
        raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "put credentials in G6_ELASTIC_API_KEY, not the URL")
    return url.rstrip("/")


# -- mapping ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FieldInfo:
    path: str
    type: str  # "object" for an object without a type
    nested: str | None = None  # the nested object this field sits in
    subfields: Mapping[str, str] = field(default_factory=dict)  # multi-fields: name -> type
    indexed: bool = True

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"type": self.type}
        if self.nested:
            d["nested_in"] = self.nested
        if self.subfields:
            d["fields"] = dict(self.subfields)
        if not self.indexed:
            d["index"] = False
        return d


@dataclass(frozen=True, slots=True)
class IndexMapping:
    index: str  # the concrete index
    fields: Mapping[str, FieldInfo]

    def text_fields(self) -> list[str]:
        return [p for p, f in self.fields.items() if f.type in TEXT_TYPES and not f.nested and f.indexed]

    def to_json(self) -> dict[str, Any]:
        return {p: f.to_json() for p, f in sorted(self.fields.items())}


def flatten_properties(props: Any, prefix: str = "", nested: str | None = None) -> dict[str, FieldInfo]:
    out: dict[str, FieldInfo] = {}
    if not isinstance(props, dict):
        return out
    for name, spec in props.items():
        if not isinstance(spec, dict):
            continue
        path = f"{prefix}{name}"
        ftype = spec.get("type") if isinstance(spec.get("type"), str) else None
        if ftype == "nested" or (ftype is None and "properties" in spec) or ftype == "object":
            out[path] = FieldInfo(path, ftype or "object", nested)
            inner_nested = path if ftype == "nested" else nested
            out.update(flatten_properties(spec.get("properties"), f"{path}.", inner_nested))
            continue
        subs = {}
        if isinstance(spec.get("fields"), dict):
            for sub, sspec in spec["fields"].items():
                if isinstance(sspec, dict) and isinstance(sspec.get("type"), str):
                    subs[sub] = sspec["type"]
                    out[f"{path}.{sub}"] = FieldInfo(f"{path}.{sub}", sspec["type"], nested,
                                                     indexed=sspec.get("index", True) is not False)
        out[path] = FieldInfo(path, ftype or "unknown", nested, subs, indexed=spec.get("index", True) is not False)
    return out


def parse_mapping(data: Mapping[str, Any]) -> list[IndexMapping]:
    """``GET /<index>/_mapping`` → one mapping per concrete index (an alias may cover several)."""
    out = []
    for concrete, body in data.items():
        if not isinstance(body, dict) or not isinstance(body.get("mappings"), dict):
            raise JSONParseError(f"no mappings for {concrete!r}")
        out.append(IndexMapping(str(concrete), flatten_properties(body["mappings"].get("properties", {}))))
    if not out:
        raise JSONParseError("empty mapping reply")
    return out


# -- results ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Passage:
    rank: int
    score: float | None
    index: str
    doc_id: str
    address: str
    source_sha256: str
    text: str
    source: Mapping[str, Any]
    instruction_flags: tuple[dict[str, object], ...] = ()
    score_scale: str = "es_bm25"
    trust: str = "untrusted"

    def to_json(self) -> dict[str, Any]:
        return {"trust": self.trust, "rank": self.rank, "score": self.score, "score_scale": self.score_scale,
                "index": self.index, "id": self.doc_id, "address": self.address,
                "source_sha256": self.source_sha256, "text": self.text, "source": dict(self.source),
                "instruction_flags": list(self.instruction_flags)}


@dataclass(frozen=True, slots=True)
class EsReply:
    """One request to the server: what was asked, what came back, where the bytes are kept."""

    op: str
    url: str
    status: int | None
    outcome: Outcome
    reason: str = ""
    body: BlobRef | None = None
    data: Mapping[str, Any] | None = None
    connected_address: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hops(self) -> tuple[Hop, ...]:
        return (Hop(self.url, self.status, self.connected_address),) if self.status is not None else ()


@dataclass(frozen=True, slots=True)
class EsResult:
    op: str
    index: str
    outcome: Outcome
    reason: str = ""
    replies: tuple[EsReply, ...] = ()
    mapping: Mapping[str, Any] | None = None
    concrete_index: str | None = None
    passages: tuple[Passage, ...] = ()
    total: int | None = None
    total_relation: str | None = None
    count: int | None = None
    document: Mapping[str, Any] | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return es_code(self.op, self.outcome, self.reason)

    @property
    def status(self) -> str:
        return es_status(self.op, self.outcome)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"op": self.op, "index": self.index, "outcome": self.outcome.value, "code": self.code,
                             "status": self.status, "trust": self.outcome.trust, "reason": self.reason}
        if self.op == "mapping":
            d["concrete_index"] = self.concrete_index
            d["mapping"] = self.mapping
        elif self.op == "search":
            d.update(total=self.total, total_relation=self.total_relation,
                     passages=[p.to_json() for p in self.passages])
        elif self.op == "count":
            d["count"] = self.count
        elif self.op == "get":
            d["document"] = dict(self.document) if self.document is not None else None
        d["detail"] = dict(self.detail)
        return d


def _error_reason(data: Mapping[str, Any] | None) -> str:
    if not data:
        return ""
    err = data.get("error")
    if isinstance(err, dict):
        reason = err.get("reason") or err.get("type") or ""
        causes = err.get("root_cause")
        if isinstance(causes, list) and causes and isinstance(causes[0], dict):
            first = causes[0].get("reason")
            if first and first != reason:
                reason = f"{reason}: {first}"
        return str(reason)[:500]
    return str(err or data.get("message") or "")[:500]


def partial_reason(data: Mapping[str, Any]) -> str | None:
    shards = data.get("_shards")
    if isinstance(shards, dict) and (as_int(shards.get("failed")) or 0) > 0:
        return "shard_failures"
    if data.get("timed_out") is True:
        return "timed_out"
    return None


class ElasticReader:
    """Reads one loopback Elasticsearch. Takes its transport (tests inject one) and the store."""

    def __init__(self, store: BlobBackend, url: str = DEFAULT_URL, *, api_key: str | None = None,
                 transport: httpx.BaseTransport | None = None, timeout: float = 10.0) -> None:
        self.url = check_loopback_url(url)
        self.store = store
        headers = {"Accept": "application/json", "User-Agent": "g6-evidence (read-only)"}
        if api_key:
            headers["Authorization"] = f"ApiKey {api_key}"
        self._http = httpx.Client(transport=transport or httpx.HTTPTransport(trust_env=False, retries=0),
                                  headers=headers, timeout=timeout, follow_redirects=False, trust_env=False)
        self._mappings: dict[str, list[IndexMapping]] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ElasticReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ---------------------------------------------------------------------------
    def _call(self, op: str, method: str, path: str, body: Mapping[str, Any] | None = None) -> EsReply:
        url = f"{self.url}{path}"
        content = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if content is not None else {}
        try:
            with self._http.stream(method, url, content=content, headers=headers) as resp:
                addr = None
                stream = resp.extensions.get("network_stream")
                if stream is not None:
                    try:
                        addr = str(stream.get_extra_info("server_addr")[0])
                    except Exception:  # noqa: BLE001 - an address we cannot read is just not recorded
                        addr = None
                if 300 <= resp.status_code < 400:
                    return EsReply(op, url, resp.status_code, Outcome.REFUSED, "redirect_not_followed",
                                   connected_address=addr,
                                   detail={"message": "Elasticsearch answered with a redirect; g6 never follows it"})
                with self.store.writer() as w:
                    size = 0
                    for chunk in resp.iter_bytes():
                        size += len(chunk)
                        if size > MAX_REPLY_BYTES:
                            return EsReply(op, url, resp.status_code, Outcome.TOO_LARGE, "reply_over_cap",
                                           connected_address=addr)
                        w.write(chunk)
                    ref = w.commit()
                status = resp.status_code
        except httpx.TimeoutException:
            return EsReply(op, url, None, Outcome.UNREACHABLE, "timeout",
                           detail={"message": f"Elasticsearch at {self.url} did not answer in time"})
        except httpx.ConnectError:
            return EsReply(op, url, None, Outcome.UNREACHABLE, "connect",
                           detail={"message": START_HINT.format(url=self.url)})
        except httpx.HTTPError as e:
            return EsReply(op, url, None, Outcome.HTTP_ERROR, "protocol_error", detail={"message": str(e)[:300]})
        raw = self.store.read(ref.blake3)
        try:
            data = parse_json_object(raw)
        except JSONParseError as e:
            if status >= 400:
                return EsReply(op, url, status, _status_outcome(status), f"http_{status}", ref, None, addr)
            return EsReply(op, url, status, Outcome.PARSE_FAILED, "not_elasticsearch", ref, None, addr,
                           {"message": str(e)})
        if status >= 400:
            outcome = _status_outcome(status)
            err = data.get("error")
            etype = err.get("type") if isinstance(err, dict) else None
            reason = {"index_not_found_exception": "index_not_found"}.get(str(etype), f"http_{status}")
            if op == "get" and status == 404 and data.get("found") is False:
                reason = "document_not_found"
            return EsReply(op, url, status, outcome, reason, ref, data, addr,
                           {"message": _error_reason(data), **({"error_type": etype} if etype else {})})
        return EsReply(op, url, status, Outcome.OK, "", ref, data, addr)

    # -- ops -------------------------------------------------------------------------------
    def mapping(self, index: str) -> EsResult:
        check_index_name(index)
        reply = self._call("mapping", "GET", f"/{quote(index, safe='')}/_mapping")
        if reply.outcome is not Outcome.OK or reply.data is None:
            return EsResult("mapping", index, reply.outcome, reply.reason, (reply,), detail=reply.detail)
        try:
            mappings = parse_mapping(reply.data)
        except JSONParseError as e:
            return EsResult("mapping", index, Outcome.PARSE_FAILED, "not_a_mapping", (reply,),
                            detail={"message": str(e)})
        self._mappings[index] = mappings
        if len(mappings) == 1:
            m = mappings[0]
            return EsResult("mapping", index, Outcome.OK, "", (reply,), mapping=m.to_json(), concrete_index=m.index)
        return EsResult("mapping", index, Outcome.OK, "", (reply,),
                        mapping={m.index: m.to_json() for m in mappings}, concrete_index=None,
                        detail={"concrete_indices": [m.index for m in mappings]})

    def _plan(self, index: str, query: str | None, fields: tuple[str, ...], filters: Mapping[str, Any],
              op: str) -> tuple[dict[str, Any] | None, EsResult | None, tuple[EsReply, ...]]:
        """Check every field and filter against the mapping; build the query JSON, or refuse."""
        check_index_name(index)
        replies: tuple[EsReply, ...] = ()
        if index not in self._mappings:
            m = self.mapping(index)
            replies = m.replies
            if m.outcome is not Outcome.OK:
                return None, EsResult(op, index, m.outcome, m.reason, replies, detail=m.detail), replies
        mappings = self._mappings[index]
        merged: dict[str, FieldInfo] = {}
        for m in mappings:
            for path, info in m.fields.items():
                merged.setdefault(path, info)
        listing = {p: f.to_json() for p, f in sorted(merged.items())}
        text_fields = sorted({p for m in mappings for p in m.text_fields()})
        usable = ", ".join(f"{p} ({f.type})" for p, f in sorted(merged.items())
                           if f.type not in ("object", "nested") and not f.nested)
        def leaf(name: str, use: str) -> FieldInfo:
            """The mapped leaf field ``name``, or the refusal that says what would work."""
            info = merged.get(name)
            if info is None or info.type in ("object", "nested"):
                raise ElasticInputError("G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING",
                                        f"index {index!r} holds no field {name!r} to {use}; "
                                        f"it holds: {usable or 'no fields'}",
                                        fields=listing)
            if info.nested:
                raise ElasticInputError("G6_E_KNOWLEDGE_NESTED_FIELD",
                                        f"{name!r} is inside the nested object {info.nested!r}; g6 does not build "
                                        "nested queries", nested_in=info.nested)
            return info

        for f in fields:
            info = leaf(f, "search")
            if info.type not in QUERYABLE_TYPES:
                raise ElasticInputError("G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING",
                                        f"{f!r} is a {info.type} field; words are matched against text or keyword "
                                        f"fields; it holds: {usable}", fields=listing)
        if query and query.strip() and not fields and not text_fields:
            raise ElasticInputError("G6_E_KNOWLEDGE_NO_TEXT_FIELDS", f"index {index!r} has no text fields to search",
                                    fields=listing)
        must: list[dict[str, Any]] = []
        if query and query.strip():
            must.append({"multi_match": {"query": query, "fields": list(fields or text_fields)}})
        filter_clauses: list[dict[str, Any]] = []
        for name, value in filters.items():
            info = leaf(name, "filter on")
            if info.type in TEXT_TYPES:
                kw = [f"{name}.{s}" for s, t in info.subfields.items() if t == "keyword"]
                hint = f"; filter on {kw[0]!r} instead" if kw else "; it has no keyword sub-field"
                raise ElasticInputError("G6_E_KNOWLEDGE_FILTER_ON_TEXT",
                                        f"{name!r} is analysed text, so an exact filter would not match{hint}",
                                        keyword_subfield=kw[0] if kw else None)
            if not isinstance(value, str | int | float | bool | list) or (
                    isinstance(value, list) and not all(isinstance(v, str | int | float | bool) for v in value)):
                raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", f"filter {name!r} needs a scalar or a list")
            filter_clauses.append({"terms": {name: value}} if isinstance(value, list) else {"term": {name: value}})
        if not must and not filter_clauses and op != "count":  # a count with neither counts every document
            raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "give words to search for, or a filter")
        query_json = {"bool": {"must": must or [{"match_all": {}}], "filter": filter_clauses}}
        return query_json, None, replies

    def search(self, index: str, query: str | None, fields: tuple[str, ...] = (),
               filters: Mapping[str, Any] | None = None, top_k: int = 10) -> EsResult:
        if not 1 <= top_k <= 1000:
            raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "top_k must be between 1 and 1000")
        q, refused, pre = self._plan(index, query, tuple(fields), filters or {}, "search")
        if refused is not None:
            return refused
        reply = self._call("search", "POST", f"/{quote(index, safe='')}/_search", {"query": q, "size": top_k})
        replies = (*pre, reply)
        if reply.outcome is not Outcome.OK or reply.data is None:
            return EsResult("search", index, reply.outcome, reply.reason, replies, detail=reply.detail)
        data = reply.data
        partial = partial_reason(data)
        hits = data.get("hits")
        if not isinstance(hits, dict) or not isinstance(hits.get("hits"), list):
            return EsResult("search", index, Outcome.PARSE_FAILED, "no_hits_in_reply", replies)
        total, relation = _total(hits.get("total"))
        text_fields = tuple(fields) or tuple(self._all_text_fields(index))
        passages = tuple(self._passage(i + 1, h, text_fields) for i, h in enumerate(hits["hits"])
                         if isinstance(h, dict))
        if partial:
            # the reader's document: the hits and the count come back, marked as not the whole index
            return EsResult("search", index, Outcome.PARTIAL, partial, replies, passages=passages, total=total,
                            total_relation=relation,
                            detail={"shards": data.get("_shards"), "timed_out": data.get("timed_out"),
                                    "hits_in_partial_reply": len(hits["hits"]), "partial_total": total,
                                    "query": q})
        if total is None:
            return EsResult("search", index, Outcome.PARSE_FAILED, "no_total_in_reply", replies)
        if passages and not any(p.text.strip() for p in passages):
            # hits that carry none of the searched fields' text cannot be cited (a _source filter,
            # or a reply that is not the search it claims to be): never hand them back as passages
            return EsResult("search", index, Outcome.PARSE_FAILED, "hits_without_field_text", replies,
                            detail={"fields": list(text_fields), "hits_in_reply": len(passages)})
        outcome = Outcome.EMPTY if total == 0 and not passages else Outcome.OK
        return EsResult("search", index, outcome, "source_reports_no_match" if outcome is Outcome.EMPTY else "",
                        replies, passages=passages, total=total, total_relation=relation,
                        detail={"query": q})

    def count(self, index: str, query: str | None, fields: tuple[str, ...] = (),
              filters: Mapping[str, Any] | None = None) -> EsResult:
        q, refused, pre = self._plan(index, query, tuple(fields), filters or {}, "count")
        if refused is not None:
            return refused
        reply = self._call("count", "POST", f"/{quote(index, safe='')}/_count", {"query": q})
        replies = (*pre, reply)
        if reply.outcome is not Outcome.OK or reply.data is None:
            return EsResult("count", index, reply.outcome, reply.reason, replies, detail=reply.detail)
        n = as_int(reply.data.get("count"))
        if n is None or n < 0:
            return EsResult("count", index, Outcome.PARSE_FAILED, "no_count_in_reply", replies)
        partial = partial_reason(reply.data)
        if partial:
            return EsResult("count", index, Outcome.PARTIAL, partial, replies,
                            detail={"shards": reply.data.get("_shards"), "partial_count": n})
        return EsResult("count", index, Outcome.OK, "", replies, count=n, detail={"query": q})

    def get_doc(self, index: str, doc_id: str) -> EsResult:
        check_index_name(index)
        if not isinstance(doc_id, str) or not doc_id or len(doc_id.encode()) > 512:
            raise ElasticInputError("G6_E_KNOWLEDGE_ELASTIC_INPUT", "a document id is 1 to 512 bytes")
        reply = self._call("get", "GET", f"/{quote(index, safe='')}/_doc/{quote(doc_id, safe='')}")
        if reply.outcome is not Outcome.OK or reply.data is None:
            return EsResult("get", index, reply.outcome, reply.reason, (reply,), detail=reply.detail)
        if reply.data.get("found") is not True or not isinstance(reply.data.get("_source"), dict):
            if reply.data.get("found") is False:
                return EsResult("get", index, Outcome.NOT_FOUND, "document_not_found", (reply,))
            return EsResult("get", index, Outcome.PARSE_FAILED, "no_source_in_reply", (reply,))
        src = reply.data["_source"]
        return EsResult("get", index, Outcome.OK, "", (reply,), document=src,
                        detail={"id": doc_id, "concrete_index": reply.data.get("_index"),
                                "address": self._address(str(reply.data.get("_index") or index), doc_id),
                                "source_sha256": _source_hash(src), "trust": "untrusted"})

    # -- helpers ---------------------------------------------------------------------------
    def _all_text_fields(self, index: str) -> list[str]:
        return sorted({p for m in self._mappings.get(index, []) for p in m.text_fields()})

    def _address(self, index: str, doc_id: str) -> str:
        return f"{self.url}/{quote(index, safe='')}/_doc/{quote(doc_id, safe='')}"

    def _passage(self, rank: int, hit: Mapping[str, Any], text_fields: tuple[str, ...]) -> Passage:
        src = hit.get("_source") if isinstance(hit.get("_source"), dict) else {}
        assert isinstance(src, dict)
        parts = [v for f in text_fields for v in _values(src, f)]
        text = "\n".join(parts)
        score = hit.get("_score")
        index = str(hit.get("_index") or "")
        doc_id = str(hit.get("_id") or "")
        return Passage(rank, float(score) if isinstance(score, int | float) else None, index, doc_id,
                       self._address(index, doc_id), _source_hash(src), text, src,
                       tuple(f.to_json() for f in flag_instructions(text)))


def _status_outcome(status: int) -> Outcome:
    if status in (401, 403):
        return Outcome.BLOCKED
    if status == 404:
        return Outcome.NOT_FOUND
    if status == 400:
        return Outcome.REJECTED
    if status == 429:
        return Outcome.RATE_LIMITED
    if status >= 500:
        return Outcome.SERVER_ERROR
    return Outcome.HTTP_ERROR


def _total(total: Any) -> tuple[int | None, str | None]:
    if isinstance(total, dict):
        v = as_int(total.get("value"))
        rel = total.get("relation")
        return v, rel if rel in ("eq", "gte") else None
    v = as_int(total)
    return v, "eq" if v is not None else None


def _values(src: Mapping[str, Any], path: str) -> list[str]:
    cur: list[Any] = [src]
    for part in path.split("."):
        nxt: list[Any] = []
        for c in cur:
            if isinstance(c, dict) and part in c:
                v = c[part]
                nxt.extend(v if isinstance(v, list) else [v])
            elif isinstance(c, list):
                nxt.extend(x[part] for x in c if isinstance(x, dict) and part in x)
        cur = nxt
    return [str(v) for v in cur if isinstance(v, str | int | float) and not isinstance(v, bool)]


def _source_hash(src: Mapping[str, Any]) -> str:
    try:
        canonical = rfc8785.dumps(src)
    except Exception:  # noqa: BLE001 - floats or ints rfc8785 refuses: fall back to sorted JSON
        canonical = json.dumps(src, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return "sha256:" + hashlib.sha256(canonical).hexdigest()
