# ruff: noqa: F811 (the fixtures world and served_home are imported from cite_world)
"""``g6 manifest export --format annotation``: the citations as a W3C Web Annotation collection, checked with the
W3C's own material, offline: the model's MUST assertions from the W3C's test suite (w3c/web-annotation-tests,
draft-04 JSON Schemas run with jsonschema) on the collection and on every annotation, and JSON-LD processing by
pyld against the pinned ``anno.jsonld`` (expanded to the ``oa:``/``as:`` IRIs, compacted back to the very
same document: every term used is one the context defines). The selectors are then checked against the text
g6 read, and each ``cached`` memento is fetched from a ``g6 serve`` of the home."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import httpx
import pytest

from g6.cite.cite import document_text
from g6.cite.manifest import load_manifest
from g6.home import EvidenceHome
from tests.export.cite_world import CiteWorld, g6, served_home, world  # noqa: F401
from tests.export.w3c_annotation import ANNOTATION_MUSTS, COLLECTION_MUSTS, TESTS, compact, expand, must_failures

OA = "http://www.w3.org/ns/oa#"
AS = "http://www.w3.org/ns/activitystreams#"


@pytest.fixture(scope="module")
def exported(world: CiteWorld, served_home: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("anno") / "citations.jsonld"
    r = g6(world.home, "manifest", "export", str(world.manifest), "--format", "annotation", "--base-url", served_home,
           "-o", str(out))
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


# -- the checker itself: the W3C's samples ---------------------------------------------------------------------------
def _samples(kind: str) -> list[Path]:
    return sorted((TESTS / "tools" / "samples" / kind).glob("anno*.json"))


# The W3C's correct samples 11-13 use Composite, List and Independents targets, which the Recommendation dropped;
# its own target schema rejects them.
DROPPED = {"anno11.json", "anno12.json", "anno13.json"}


@pytest.mark.parametrize("sample", [p for p in _samples("correct") if p.name not in DROPPED], ids=lambda p: p.name)
def test_the_w3c_correct_samples_meet_every_must(sample: Path) -> None:
    assert must_failures(ANNOTATION_MUSTS, json.loads(sample.read_text())) == []


def test_the_w3c_incorrect_samples_each_fail_a_must() -> None:
    """The checker bites: each incorrect sample that is JSON at all fails at least one MUST assertion."""
    checked = 0
    for p in _samples("incorrect"):
        try:
            doc = json.loads(p.read_text())
        except ValueError:
            continue  # a sample that is not JSON tests a parser, not the model
        assert must_failures(ANNOTATION_MUSTS, doc), p.name
        checked += 1
    assert checked >= 20


# -- our export --------------------------------------------------------------------------------------------------------
def test_the_collection_and_each_annotation_meet_the_w3c_musts(exported: dict) -> None:
    assert exported["type"] == "AnnotationCollection" and exported["total"] == 4
    assert must_failures(COLLECTION_MUSTS, exported) == []
    items = exported["first"]["items"]
    assert len(items) == 4
    for item in items:
        assert must_failures(ANNOTATION_MUSTS, item) == [], item["id"]


@pytest.mark.parametrize(("break_it", "fails"), [
    (lambda a: a.pop("target"), "annotations/3.1-targetKeyFound.json"),
    (lambda a: a.update({"@context": "http://www.w3.org/ns/oa.jsonld"}),
     "annotations/3.1-annotationContextValidated.json"),
    (lambda a: a.update({"id": "not a uri"}), "annotations/3.1-annotationIdValidated.json"),
    (lambda a: a["target"]["selector"].pop("exact"), "annotations/specificResource/4.2.4-textQuoteSelectorValid.json"),
    (lambda a: a["target"]["state"].update({"sourceDate": "yesterday"}),
     "annotations/specificResource/4.3.1-timeStateValid.json"),
])
def test_a_broken_annotation_fails_the_w3c_musts(exported: dict, break_it, fails: str) -> None:
    item = copy.deepcopy(exported["first"]["items"][0])
    break_it(item)
    assert fails in must_failures(ANNOTATION_MUSTS, item)


def test_pyld_expands_it_to_the_model_s_iris_and_compacts_it_back(exported: dict) -> None:
    [top] = expand(exported)
    assert top["@type"] == [f"{AS}OrderedCollection"]  # the context's AnnotationCollection
    [page] = top[f"{AS}first"]
    assert page["@type"] == [f"{AS}OrderedCollectionPage"]
    annotations = page[f"{AS}items"][0]["@list"]
    assert len(annotations) == 4
    for a in annotations:
        assert a["@type"] == [f"{OA}Annotation"] and a[f"{OA}motivatedBy"] == [{"@id": f"{OA}highlighting"}]
        [target] = a[f"{OA}hasTarget"]
        assert target["@type"] == [f"{OA}SpecificResource"]
        [sel] = target[f"{OA}hasSelector"]
        assert sel["@type"] == [f"{OA}TextQuoteSelector"] and sel[f"{OA}exact"][0]["@value"]
        [state] = target[f"{OA}hasState"]
        assert state["@type"] == [f"{OA}TimeState"]
        assert state[f"{OA}sourceDate"][0]["@type"] == "http://www.w3.org/2001/XMLSchema#dateTime"
    # no term fell out on the way: compacting the expansion gives the document back (each item's own @context, the
    # same as the top's, is said once)
    expected = copy.deepcopy(exported)
    for item in expected["first"]["items"]:
        del item["@context"]
    assert compact(expand(exported)) == expected


def test_the_selectors_are_the_text_g6_read(world: CiteWorld, exported: dict) -> None:
    m = load_manifest(world.manifest)
    with EvidenceHome(world.home, fsync=False) as ev:
        for c, a in zip(m.citations, exported["first"]["items"], strict=True):
            sel, target = a["target"]["selector"], a["target"]
            assert target["source"] == c.source_url and sel["exact"] == c.text
            r = ev.ledger.get(c.receipt_id)
            text = document_text(ev, r, c.text_source)
            whole = sel.get("prefix", "") + sel["exact"] + sel.get("suffix", "")
            assert text.count(whole) == 1 and text.index(whole) + len(sel.get("prefix", "")) == c.start
            context = len(sel.get("prefix", "")) + len(sel.get("suffix", ""))
            assert 0 < context <= 64 or whole == text  # a quote that is the whole text has nothing around it
            assert target["state"]["sourceDate"] == r.fetched_at


def test_each_cached_memento_is_the_cited_read(world: CiteWorld, served_home: str, exported: dict) -> None:
    """TimeState cached is the g6 serve memento: the bytes the receipt names (Content-Digest = its sha256). The
    404 cited as a failed read has no memento: its TimeState has no cached."""
    m = load_manifest(world.manifest)
    with httpx.Client(trust_env=False, timeout=30) as http:
        for c, a in zip(m.citations, exported["first"]["items"], strict=True):
            state = a["target"]["state"]
            if c.failed_read is not None:
                assert "cached" not in state
                continue
            r = http.get(state["cached"])
            assert r.status_code == 200
            assert hashlib.sha256(r.content).hexdigest() == str(c.content["sha256"]).removeprefix("sha256:")
            assert f'<{state["cached"]}>; rel="cite-as"' in r.headers["link"]


def test_the_same_manifest_gives_the_same_ids(world: CiteWorld, exported: dict, tmp_path: Path) -> None:
    r = g6(world.home, "manifest", "export", str(world.manifest), "--format", "annotation")
    assert r.returncode == 0, r.stderr
    again = json.loads(r.stdout)
    assert [a["id"] for a in again["first"]["items"]] == [a["id"] for a in exported["first"]["items"]]
    assert again["id"] == exported["id"] and all("cached" not in a["target"]["state"] for a in again["first"]["items"])


def test_archives_are_for_robust_links_only(world: CiteWorld) -> None:
    r = g6(world.home, "manifest", "export", str(world.manifest), "--format", "annotation", "--archive",
           "ia=https://web.archive.org/web/{timestamp}/{url}")
    assert r.returncode == 2 and "--archive is for --format robust-links" in r.stderr
