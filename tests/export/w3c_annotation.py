"""The W3C's checks of Web Annotations, as data: its JSON-LD context and its test schemas, both kept in
``fixtures/w3c-annotation`` (provenance in its README), used offline.

* :func:`must_failures` runs the MUST assertions of one of the W3C's ``.test`` files (``annotationMusts``,
  ``collectionMusts``…: JSON Schemas, draft 04, from w3c/web-annotation-tests) on a document: the assertions
  whose result is not the one the file expects (empty: the document meets every MUST those tests check);
  ``uri`` and ``date-time`` formats are checked (rfc3986-validator, rfc3339-validator).
* :func:`expand` and :func:`compact` are pyld's, with a document loader that serves the pinned copy of
  ``http://www.w3.org/ns/anno.jsonld`` and refuses every other URL (nothing is fetched).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from pyld import jsonld
from referencing.jsonschema import DRAFT4

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "w3c-annotation"
TESTS = ROOT / "web-annotation-tests"
CONTEXT_URL = "http://www.w3.org/ns/anno.jsonld"
ANNOTATION_MUSTS = "annotations/annotationMusts.test"
COLLECTION_MUSTS = "collections/collectionMusts.test"


@cache
def _registry() -> referencing.Registry:
    resources = []
    for p in sorted(TESTS.rglob("*.json")):
        if "tools" in p.parts:
            continue
        d = json.loads(p.read_text())
        if isinstance(d, dict) and "$schema" in d and "id" in d:
            resources.append((d["id"], DRAFT4.create_resource(d)))
    return referencing.Registry().with_resources(resources)


def _checker() -> jsonschema.FormatChecker:
    checker = jsonschema.Draft4Validator.FORMAT_CHECKER
    missing = {"uri", "date-time"} - set(checker.checkers)
    assert not missing, f"formats not checked: {missing} (the test extra's rfc3986-validator, rfc3339-validator)"
    return checker


def must_failures(test: str, doc: Any) -> list[str]:
    """The assertions of the W3C test file ``test`` that ``doc`` does not meet as the file expects."""
    spec = json.loads((TESTS / test).read_text())
    bad = []
    for name in spec["assertions"]:
        schema = json.loads((TESTS / name).read_text())
        assert schema.get("assertionType") == "must", name
        ok = jsonschema.Draft4Validator(schema, registry=_registry(), format_checker=_checker()).is_valid(doc)
        if ok != (schema.get("expectedResult", "valid") == "valid"):
            bad.append(name)
    return bad


def _loader(url: str, options: dict[str, Any] | None = None) -> dict[str, Any]:
    if url.rstrip("/") not in (CONTEXT_URL, CONTEXT_URL.replace("http:", "https:")):
        raise jsonld.JsonLdError(f"offline: no document for {url}", "jsonld.LoadDocumentError",
                                 code="loading document failed")
    return {"contentType": "application/ld+json", "contextUrl": None, "documentUrl": url,
            "document": json.loads((ROOT / "anno.jsonld").read_text())}


def expand(doc: Any) -> list[dict[str, Any]]:
    return jsonld.expand(doc, {"documentLoader": _loader})


def compact(doc: Any) -> dict[str, Any]:
    return jsonld.compact(doc, CONTEXT_URL, {"documentLoader": _loader})
