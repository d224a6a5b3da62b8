"""The home page (`/`, `/api/home`) lists the newest captures and manifests, a page at a time.

A home of 120 web reads (fetches and re-checks) and 25 manifests known from their re-checks, served for
real: the first page holds the newest, `next` leads to the older ones without a gap or a repeat, the last
page holds what is left, and a page number that is not a page is a 400 that says which are (and points
at one that answers). Same data as JSON (serve-home.v1) and as the HTML page's tables and links."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import lxml.html
import pytest

from g6.home import EvidenceHome
from g6.ledger import Receipt
from tests.conftest import validate
from tests.serve.server import served

READS, MANIFESTS = 125, 25  # 3 pages of captures (50, 50, 25), 2 of manifests (20, 5)


@dataclass
class Home:
    root: Path
    captures: list[str]  # receipt ids of the web reads, newest first (ledger order, reversed)
    manifests: list[str]  # manifest ids, newest re-check first


def _read(i: int) -> Receipt:
    if i % 5 == 4:  # every fifth read a re-check of one of the manifests
        return Receipt(kind="recheck", source="web", outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED",
                       request={"url": f"https://example.org/{i}", "manifest_id": f"mfst_m{i // 5:02d}"},
                       detail={"verdicts": {"c_0": "unchanged"}})
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("home-lists") / "home"
    with EvidenceHome(root, fsync=False) as ev:
        ev.keys.init()
        search = Receipt(kind="search", source="arxiv", request={"query": "x"}, outcome="ok",
                         outcome_code="G6_E_KNOWLEDGE_FETCHED")  # not a web read: never listed
        done = ev.ledger.append_many([search, *(_read(i) for i in range(READS))], ev.signing_key())
    reads = [r.receipt_id for r in done if r.kind in ("fetch", "recheck")]
    manifests = [f"mfst_m{i // 5:02d}" for i in range(READS) if i % 5 == 4]
    assert len(reads) == READS and len(manifests) == MANIFESTS
    return Home(root, reads[::-1], manifests[::-1])


@pytest.fixture(scope="module")
def base(home: Home) -> Iterator[str]:
    with served(home.root) as url:
        yield url


def api(base: str, query: str = "") -> dict:
    r = httpx.get(base + "api/home" + query)
    assert r.status_code == 200, r.text
    body = r.json()
    validate(body, "serve-home.v1")
    return body


def test_first_next_and_last_pages_of_captures_as_json(base: str, home: Home) -> None:
    first = api(base)["newest_captures"]
    assert (first["page"], first["pages"], first["per_page"], first["total"]) == (1, 3, 50, READS)
    assert first["prev"] is None and first["first"] == "/api/home?page=1" and first["last"] == "/api/home?page=3"
    seen = [c["receipt_id"] for c in first["items"]]
    page = first
    while page["next"] is not None:
        page = api(base, page["next"].removeprefix("/api/home"))["newest_captures"]
        seen += [c["receipt_id"] for c in page["items"]]
    assert page["page"] == 3 and len(page["items"]) == READS - 100 and page["prev"] == "/api/home?page=2"
    assert seen == home.captures  # every web read once, newest first
    assert api(base, "?page=3")["newest_captures"] == page


def test_manifests_newest_first_paged_apart(base: str, home: Home) -> None:
    body = api(base)
    ms = body["newest_manifests"]
    assert (ms["page"], ms["pages"], ms["per_page"], ms["total"]) == (1, 2, 20, MANIFESTS)
    assert [m["manifest_id"] for m in ms["items"]] == home.manifests[:20]
    assert ms["items"][0] | {"last_recheck_at": None} == {
        "manifest_id": home.manifests[0], "file": None, "citations": None, "created_at": None, "rechecks": 1,
        "last_recheck_at": None}
    assert ms["next"] == "/api/home?manifests_page=2"
    second = api(base, "?page=2&manifests_page=2")
    assert [m["manifest_id"] for m in second["newest_manifests"]["items"]] == home.manifests[20:]
    assert second["newest_captures"]["page"] == 2  # each list keeps its own page
    assert second["newest_manifests"]["prev"] == "/api/home?page=2&manifests_page=1"
    assert second["newest_captures"]["next"] == "/api/home?page=3&manifests_page=2"


@pytest.mark.parametrize("query, says", [
    ("?page=0", "give a whole number from 1 to 3"), ("?page=-1", "give a whole number from 1 to 3"),
    ("?page=abc", "give a whole number from 1 to 3"), ("?page=1.5", "give a whole number from 1 to 3"),
    ("?page=", "give a whole number from 1 to 3"), ("?page=4", "past the last, 3"),
    ("?page=99999999999999999999", "give a whole number from 1 to 3"),
    ("?manifests_page=3", "past the last, 2"), ("?manifests_page=x", "give a whole number from 1 to 2"),
    ("?pages=2", "unknown parameter 'pages'")])
def test_a_bad_page_number_is_a_400_that_says_which_pages_there_are(base: str, query: str, says: str) -> None:
    for path, accept in (("api/home", "application/json"), ("", "application/json"), ("", "text/html")):
        r = httpx.get(base + path + query, headers={"accept": accept})
        assert r.status_code == 400, (path, query, r.text)
        if accept == "text/html":
            assert says in lxml.html.fromstring(r.text).text_content() and "Traceback" not in r.text
            continue
        body = r.json()
        validate(body, "serve-refusal.v1")
        assert says in body["message"], body
        if "see" in body:  # the page it points at answers
            assert httpx.get(base + body["see"].lstrip("/"), headers={"accept": accept}).status_code == 200


def test_the_html_page_lists_them_with_links_to_the_other_pages(base: str, home: Home) -> None:
    def page(path: str) -> lxml.html.HtmlElement:
        r = httpx.get(base + path.lstrip("/"), headers={"accept": "text/html"})
        assert r.status_code == 200, r.text
        return lxml.html.fromstring(r.text)

    def ids(doc: lxml.html.HtmlElement, section: str, prefix: str) -> list[str]:
        hrefs = doc.xpath(f"//section[@id='{section}']//a[starts-with(@href, '{prefix}')]/@href")
        return [h.rsplit("/", 1)[1] for h in hrefs]

    doc = page("/")
    assert ids(doc, "captures", "/capture/") == home.captures[:50]
    older = doc.xpath("//section[@id='captures']//a[@rel='next']/@href")
    assert older == ["/?page=2"] and doc.xpath("//section[@id='captures']//a[@rel='prev']") == []
    assert ids(page(older[0]), "captures", "/capture/") == home.captures[50:100]
    last = page(doc.xpath("//section[@id='captures']//a[@rel='last']/@href")[0])
    assert ids(last, "captures", "/capture/") == home.captures[100:]
    assert last.xpath("//section[@id='captures']//a[@rel='next']") == []
    assert ids(doc, "manifests", "/manifest/") == home.manifests[:20]
    assert doc.xpath("//section[@id='manifests']//a[@rel='next']/@href") == ["/?manifests_page=2"]
    assert re.search(r"page 1 of 3", doc.xpath("string(//section[@id='captures'])"))


def test_an_empty_home_has_one_empty_page(tmp_path: Path) -> None:
    EvidenceHome(tmp_path / "h", fsync=False).close()
    with served(tmp_path / "h") as url:
        body = api(url)
        assert body["newest_captures"] | {"items": None} == {
            "page": 1, "pages": 1, "per_page": 50, "total": 0, "first": "/api/home?page=1", "prev": None,
            "next": None, "last": "/api/home?page=1", "items": None}
        assert body["newest_captures"]["items"] == [] and body["newest_manifests"]["items"] == []
        assert httpx.get(url + "api/home?page=2").status_code == 400
        assert "Nothing has been captured" in httpx.get(url, headers={"accept": "text/html"}).text
    assert json.dumps(body)  # plain JSON
