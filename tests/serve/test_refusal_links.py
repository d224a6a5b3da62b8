"""Every refusal of `g6 serve` (404, 400) that points somewhere points at something that answers.

Each refusal below is asked for as JSON and as HTML; every suggestion in its body is then followed: the
``see`` field and every path or URL of this server in the JSON message; every link, and every path or URL
of this server in the text, of the HTML. None may answer 400 or 404 itself. The path asked is not a
suggestion (a 404 may name what it could not find), and URLs of other servers (the captured ones) are not
followed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

import httpx
import lxml.html
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger import Receipt
from tests.serve.server import served

UNKNOWN = "rcpt_" + "0" * 26  # a receipt id by the schema's pattern that no home holds
LOOSE = "rcpt_abc"  # a receipt id as manifests allow it, not as receipts are made
PATH = re.compile(r"(?<![\w'\"/:.=])/[^\s'\"<>()]*")  # a path in text, not the tail of a URL
URL = re.compile(r"https?://[^\s'\"<>()]+")
JSON, HTML = {"accept": "application/json"}, {"accept": "text/html"}


@dataclass
class Home:
    root: Path
    ok_url: str
    failed_url: str
    ok: str  # receipt ids
    failed: str
    search: str  # a receipt that is not a web read
    uncovered: str  # a web read no checkpoint covers


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("refusals") / "home"
    site = LocalSite({"/page": Reply(body=b"<html><body><p>A page that was read.</p></body></html>"),
                      "/gone": Reply(404, b"<p>gone</p>"), "/robots.txt": Reply(404, b"")}).start()
    ok_url, failed_url = site.url("/page"), site.url("/gone")
    try:
        with EvidenceHome(root, fsync=False) as ev, CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
            ev.keys.init()
            ok, failed = fetch(ev, c, ok_url), fetch(ev, c, failed_url)
            search = ev.record(Receipt(kind="search", source="arxiv", request={"query": "receipts"}, outcome="ok",
                                       outcome_code="G6_E_KNOWLEDGE_FETCHED"))
            ev.ledger.checkpoint(ev.signing_key())
            uncovered = fetch(ev, c, ok_url)
    finally:
        site.stop()
    return Home(root, ok_url, failed_url, ok.receipt_id, failed.receipt_id, search.receipt_id,
                uncovered.receipt_id)


@pytest.fixture(scope="module")
def client(home: Home) -> Iterator[httpx.Client]:
    with served(home.root) as base, httpx.Client(base_url=base, trust_env=False) as c:
        yield c


def refused(home: Home) -> list[tuple[str, dict[str, str]]]:
    """(path, extra headers) of every kind of refusal the server gives."""
    failed_stamp = "19700101000000"  # no capture then
    plain = [
        "/no/such/thing", "/receipt/not-an-id", f"/receipt/{UNKNOWN}", f"/receipt/{UNKNOWN}/proof",
        f"/receipt/{home.uncovered}/proof", f"/receipt/{LOOSE}",
        f"/capture/{LOOSE}", f"/capture/{UNKNOWN}", f"/capture/{home.search}", "/capture/not-an-id",
        f"/api/capture/{LOOSE}", f"/api/capture/{UNKNOWN}", f"/api/capture/{home.search}",
        "/manifest/mfst_NOSUCH", "/manifest/not-an-id", "/api/manifest/mfst_NOSUCH",
        "/api/captures", "/api/captures?q=x", "/api/captures?url=ftp://x", "/api/captures?digest=zz",
        "/search?q=", "/search?q=%3Cb%3E", f"/search?q={LOOSE}", f"/search?q={UNKNOWN}",
        "/web/example.org/page", "/web/https://never.invalid/", "/web/timemap/link/https://never.invalid/",
        "/web/timemap/json/https://never.invalid/", f"/web/{failed_stamp}id_/{home.ok_url}",
        f"/web/{home.failed_url}", "/tile/0/000", "/checkpoint",
        "/?page=0", "/?page=2", "/?manifests_page=x", "/?pages=1", "/api/home?page=abc", "/api/home?page=9",
    ]
    # the failed read's own URI (its real status, 404), found in its TimeMap
    out = [(p, {}) for p in plain]
    out.append((f"/web/{home.ok_url}", {"accept-datetime": "yesterday"}))
    return out


def failed_read_uri(client: httpx.Client, home: Home) -> str:
    tm = client.get(f"/web/timemap/json/{home.failed_url}").json()
    [item] = tm["failed_reads"]
    return urlsplit(item["uri"]).path


def suggestions(base: str, asked: str, r: httpx.Response) -> set[str]:
    """The paths of this server a refusal points at: its links and the paths and URLs in its text."""
    if r.headers["content-type"].startswith("application/json"):
        body = r.json()
        text, links = body["message"], [body["see"]] if body.get("see") else []
    else:
        doc = lxml.html.fromstring(r.text)
        text, links = " ".join(doc.itertext()), doc.xpath("//a/@href | //link/@href | //iframe/@src")
    found = {u.rstrip(".,;:") for u in [*PATH.findall(text), *links]}
    found |= {u.rstrip(".,;:") for u in URL.findall(text)}
    out = set()
    for u in found:
        full = urljoin(base, u)
        if not full.startswith(base):
            continue  # another server's URL (a captured page): named, not suggested
        path = "/" + full[len(base):]
        if path not in (asked, urljoin("/", quote(asked, safe="/:?=&%"))):
            out.add(path)
    return out


@pytest.mark.parametrize("accept", [JSON, HTML], ids=["json", "html"])
def test_every_suggestion_in_a_refusal_answers(client: httpx.Client, home: Home, accept: dict[str, str]) -> None:
    base = str(client.base_url)
    asked = [*refused(home), (failed_read_uri(client, home), {})]
    followed: dict[str, int] = {}
    bad = []
    for path, headers in asked:
        r = client.get(path, headers={**accept, **headers}, follow_redirects=True)
        assert r.status_code in (400, 404), (path, r.status_code, r.text[:300])
        for s in sorted(suggestions(base, urlsplit(str(r.url)).path or path, r)):
            if s not in followed:
                followed[s] = client.get(s, headers=accept, follow_redirects=True).status_code
            if followed[s] in (400, 404):
                bad.append(f"{path} ({r.status_code}) suggests {s}, which answers {followed[s]}")
    assert not bad, "\n".join(bad)
    assert followed  # the refusals above do point somewhere (the TimeMap, the receipt, the pages' own links)


def test_a_receipt_that_is_not_a_capture_is_pointed_to(client: httpx.Client, home: Home) -> None:
    """The one 404 of /capture/ that names /receipt/: a receipt the home holds that is not a web read."""
    for path in (f"/api/capture/{home.search}", f"/capture/{home.search}"):
        r = client.get(path, headers=JSON)
        assert r.status_code == 404 and r.json()["see"] == f"/receipt/{home.search}"
        assert "search receipt" in r.json()["message"]
    assert client.get(f"/receipt/{home.search}").status_code == 200
    for rid in (UNKNOWN, LOOSE):
        body = client.get(f"/api/capture/{rid}").json()
        assert "/receipt/" not in body["message"] and "see" not in body, body
