"""The citation manifest: which passages a report cites, where they came from, and their hashes.

A JSON file (``schemas/manifest.v1.schema.json``). It can be signed like a receipt: Ed25519 over
RFC 8785 canonical JSON of the manifest without ``signature``; any change drops the signature
(``g6 cite`` removes it when it adds a citation), so sign after the last citation.
"""

from __future__ import annotations

import base64
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from g6.cite.passages import normalise
from g6.errors import InputError
from g6.files import as_made_by_the_person
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.receipts import (
    RepeatedKey,
    Signature,
    canonical_json,
    check_signature,
    new_receipt_id,
    refuse_repeated_keys,
    utc_now,
)

SCHEMA = "g6.manifest.v1"
# Ids that become file names (a re-check's run file is <manifest_id>.<run_id>.jsonl) are a prefix and a
# fixed alphabet: no dot, slash or backslash can reach a path.
MANIFEST_ID = re.compile(r"mfst_[A-Za-z0-9_-]{1,64}")
RUN_ID = re.compile(r"run_[A-Za-z0-9_-]{1,64}")
CITATION_ID = re.compile(r"c_[0-9a-f]{16}")
RECEIPT_ID = re.compile(r"rcpt_[A-Za-z0-9]{1,64}")


def check_id(value: object, pattern: re.Pattern[str], what: str) -> str:
    """``value`` if it is a string of ``pattern``; else an InputError that does not echo it at length."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        shown = repr(value)[:40] + ("…" if len(repr(value)) > 40 else "")
        raise InputError(f"{what} {shown} is not a valid id (expected {pattern.pattern})")
    return value


@dataclass(frozen=True, slots=True)
class Citation:
    citation_id: str
    kind: str  # "web" | "search"
    receipt_id: str
    source_url: str
    requested_url: str
    content: Mapping[str, Any]  # {"blake3", "sha256", "size"} of the cited body
    passage_id: str | None
    text_hash: str  # of the normalised cited text
    text: str  # the cited text (the quote, or the whole passage)
    start: int | None
    end: int | None
    quote: str  # short, for people
    search: Mapping[str, Any] | None = None  # search citations: source, request, total, paper
    added_at: str = field(default_factory=utc_now)
    # the text start/end point into: "main", "visible", "rendered" (a rendered capture's text) or "title" (search)
    text_source: str = "main"
    # set only when the cited read failed and the citation was made anyway (``g6 cite --allow-failed-read``):
    # {"outcome": "blocked", "http_status": 403}, the receipt's; the words are the error page's
    failed_read: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"citation_id": self.citation_id, "kind": self.kind, "receipt_id": self.receipt_id,
                             "source_url": self.source_url, "requested_url": self.requested_url,
                             "content": dict(self.content), "passage_id": self.passage_id,
                             "text_hash": self.text_hash, "text": self.text, "start": self.start, "end": self.end,
                             "quote": self.quote, "added_at": self.added_at, "text_source": self.text_source}
        if self.search is not None:
            d["search"] = dict(self.search)
        if self.failed_read is not None:  # absent otherwise, so older manifests and their signatures are unchanged
            d["failed_read"] = dict(self.failed_read)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Citation:
        for k in ("source_url", "requested_url", "text_hash", "text", "quote", "added_at"):
            if not isinstance(d[k], str):
                raise InputError(f"malformed manifest: citation field {k} is not a string")
        if not isinstance(d["content"], Mapping):
            raise InputError("malformed manifest: citation field content is not an object")
        source = d.get("text_source", "title" if d["kind"] == "search" else "main")
        if d["kind"] not in ("web", "search") or source not in ("main", "visible", "rendered", "title"):
            raise InputError(f"malformed manifest: citation kind {str(d['kind'])[:20]!r} / text_source "
                             f"{str(source)[:20]!r}")
        for k in ("start", "end"):
            if d.get(k) is not None and (not isinstance(d[k], int) or isinstance(d[k], bool) or d[k] < 0):
                raise InputError(f"malformed manifest: citation field {k} is not a non-negative integer")
        failed = d.get("failed_read")
        if failed is not None and not (
                isinstance(failed, Mapping) and set(failed) == {"outcome", "http_status"}
                and isinstance(failed["outcome"], str)
                and (failed["http_status"] is None or type(failed["http_status"]) is int)):
            raise InputError("malformed manifest: citation field failed_read is not {outcome, http_status}")
        return cls(check_id(d["citation_id"], CITATION_ID, "citation_id"), d["kind"],
                   check_id(d["receipt_id"], RECEIPT_ID, "receipt_id"), d["source_url"], d["requested_url"],
                   d["content"], d.get("passage_id"), d["text_hash"], d["text"], d.get("start"), d.get("end"),
                   d["quote"], d.get("search"), d["added_at"], source, dict(failed) if failed is not None else None)


QUOTE_NOT_IN_TEXT = "the manifest's quote is not in the cited text"


def quote_in(quote: object, text: str) -> bool:
    """The one rule for a citation's ``quote``, which people read (the re-check table, the HTML report, a
    bundle's verdicts) while the checks are on ``text``: after normalising, the quote (without the ``…`` a
    shortened quote ends with) is non-empty and inside ``text``. ``g6 bundle verify`` holds a quote to its
    verified text by it; ``g6 manifest sign|verify`` and ``g6 recheck`` hold it to the cited text."""
    q = normalise(quote.removesuffix("…")) if isinstance(quote, str) else ""
    return bool(q) and q in normalise(text)


@dataclass(frozen=True, slots=True)
class Manifest:
    manifest_id: str
    created_at: str
    citations: tuple[Citation, ...] = ()
    signature: Signature | None = None

    @classmethod
    def new(cls) -> Manifest:
        return cls("mfst_" + new_receipt_id().removeprefix("rcpt_"), utc_now())

    def to_json(self, *, with_signature: bool = True) -> dict[str, Any]:
        d: dict[str, Any] = {"schema": SCHEMA, "manifest_id": self.manifest_id, "created_at": self.created_at,
                             "citations": [c.to_json() for c in self.citations]}
        if with_signature and self.signature is not None:
            d["signature"] = self.signature.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Manifest:
        try:
            if d.get("schema") != SCHEMA:
                raise InputError(f"not a {SCHEMA} manifest (schema={d.get('schema')!r})")
            sig = d.get("signature")
            if not isinstance(d["citations"], list):
                raise InputError("malformed manifest: citations is not a list")
            return cls(check_id(d["manifest_id"], MANIFEST_ID, "manifest_id"), d["created_at"],
                       tuple(Citation.from_json(c) for c in d["citations"]),
                       Signature(sig["alg"], sig["key_id"], sig["value"]) if sig else None)
        except (KeyError, TypeError, AttributeError) as e:
            raise InputError(f"malformed manifest: missing or bad field {e}") from None

    def with_citation(self, c: Citation) -> Manifest:
        if any(x.citation_id == c.citation_id for x in self.citations):
            return self
        return replace(self, citations=(*self.citations, c), signature=None)

    def canonical_bytes(self) -> bytes:
        """The RFC 8785 bytes the signature covers. ``canonical_json`` is ``rfc8785.dumps`` (held equal
        by a property test) without its per-character Python loop: a 10,000-citation manifest is
        verified before a re-check fetches anything, so this is on every re-check's critical path."""
        return canonical_json(self.to_json(with_signature=False))

    def signed(self, key: SigningKey) -> Manifest:
        sig = key.sign(self.canonical_bytes())
        return replace(self, signature=Signature("ed25519", key.key_id, base64.b64encode(sig).decode()))

    def verify_signature(self, keys: Mapping[str, VerifyKey]) -> tuple[bool, str]:
        return check_signature(self.signature, keys, self.canonical_bytes(), "manifest")


def load_manifest(path: str | os.PathLike[str]) -> Manifest:
    try:
        data = json.loads(Path(path).read_text(), object_pairs_hook=refuse_repeated_keys)
    except FileNotFoundError:
        raise InputError(f"no manifest at {path}") from None
    except RepeatedKey as e:
        raise InputError(f"{path} repeats the key {str(e)[:80]!r} in an object: not the JSON it was signed as "
                         "(RFC 8785 signs I-JSON)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a manifest object")
    return Manifest.from_json(data)


def save_manifest(m: Manifest, path: str | os.PathLike[str]) -> None:
    """Write atomically: a crash leaves the old manifest or the new one, never half of one."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(m.to_json(), f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        as_made_by_the_person(f.fileno())  # mkstemp's 0600 would stay after the rename
        os.fsync(f.fileno())
    os.replace(tmp, p)
