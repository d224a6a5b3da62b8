"""Citations as W3C Web Annotations (``g6 manifest export --format annotation``): JSON-LD of the Web Annotation
Data Model (https://www.w3.org/TR/annotation-model/), one ``Annotation`` per citation, in one
``AnnotationCollection`` whose ``first`` page is embedded (§5: a collection is the model's way to hand over a
set of annotations; one page holds them all).

Each annotation (§3.1) has the context ``http://www.w3.org/ns/anno.jsonld``, an ``id`` (an IRI), type
``Annotation``, motivation ``highlighting`` (the model's word for marking a passage, §3.3.5; a citation in a
manifest carries no comment, so there is no body, which the model allows) and ``created`` (when the citation was
added). Its ``target`` is a ``SpecificResource`` (§4) whose ``source`` is the cited page, with:

* a ``TextQuoteSelector`` (§4.2.4): ``exact`` the cited text, ``prefix`` and ``suffix`` up to
  :data:`CONTEXT_CHARS` characters before and after it in the text g6 read it from (the page's main or
  reader-visible text, as the citation's ``text_source`` says; a search citation quotes a paper's title and has
  neither);
* a ``TimeState`` (§4.3.1): ``sourceDate`` the time g6 read the page (the receipt's ``fetched_at``) and, with
  ``--base-url``, ``cached`` the memento in that ``g6 serve`` (the bytes g6 read; see ``g6.export.citations``).

The ids are ``urn:uuid:`` IRIs made from the manifest and citation ids (UUID version 5), so exporting the same
manifest twice gives the same ids. ``g6 cite --annotation`` reads this output back (and Hypothesis's).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from g6.cite.cite import document_text
from g6.cite.manifest import Manifest
from g6.export.citations import Exported
from g6.home import EvidenceHome

FORMAT = "annotation"
CONTEXT = "http://www.w3.org/ns/anno.jsonld"
CONTEXT_CHARS = 32  # of prefix and suffix: enough to tell one occurrence of a quote from another
_NAMESPACE = uuid.UUID("5b9f4a8e-3c1d-5e7a-9b2c-6d0e1f2a3b4c")  # g6's own, for the UUIDv5 ids


def urn(*parts: str) -> str:
    return f"urn:uuid:{uuid.uuid5(_NAMESPACE, '/'.join(parts))}"


def _selector(home: EvidenceHome, e: Exported, texts: dict[tuple[str, str], str]) -> dict[str, Any]:
    c = e.citation
    sel: dict[str, Any] = {"type": "TextQuoteSelector", "exact": c.text}
    if c.kind == "web" and c.start is not None and c.end is not None:
        key = (c.receipt_id, c.text_source)
        if key not in texts:
            texts[key] = document_text(home, e.receipt, c.text_source)
        text = texts[key]
        if text[c.start:c.end] == c.text:  # the manifest's offsets still point at its text (verify checks it too)
            if prefix := text[max(0, c.start - CONTEXT_CHARS):c.start]:
                sel["prefix"] = prefix
            if suffix := text[c.end:c.end + CONTEXT_CHARS]:
                sel["suffix"] = suffix
    return sel


def annotation(home: EvidenceHome, manifest: Manifest, e: Exported,
               texts: dict[tuple[str, str], str]) -> dict[str, Any]:
    """The ``Annotation`` of one citation (``texts``: the page texts read so far, by receipt and text source)."""
    c = e.citation
    state: dict[str, Any] = {"type": "TimeState", "sourceDate": e.receipt.fetched_at}
    if e.memento is not None:
        state["cached"] = e.memento
    return {"@context": CONTEXT, "id": urn(manifest.manifest_id, c.citation_id), "type": "Annotation",
            "motivation": "highlighting", "created": c.added_at,
            "target": {"type": "SpecificResource", "source": c.source_url,
                       "selector": _selector(home, e, texts), "state": state}}


def render(home: EvidenceHome, manifest: Manifest, exported: Sequence[Exported]) -> dict[str, Any]:
    """The ``AnnotationCollection`` of a manifest's citations, its one page embedded."""
    texts: dict[tuple[str, str], str] = {}
    # each item keeps its own @context (the same one): an annotation taken out of the page stays whole JSON-LD and
    # meets the model's MUSTs on its own (§3.1), as the W3C's tests check each one
    items = [annotation(home, manifest, e, texts) for e in exported]
    page: dict[str, Any] = {"id": urn(manifest.manifest_id, "page", "1"), "type": "AnnotationPage",
                            "startIndex": 0, "items": items}
    return {"@context": CONTEXT, "id": urn(manifest.manifest_id), "type": "AnnotationCollection",
            "label": f"Citations of {manifest.manifest_id}", "total": len(items), "first": page}
