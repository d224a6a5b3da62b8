# ruff: noqa: F811 (the fixtures world, server and http are imported from memento_world)
"""``g6 manifest export --format robust-links``: each citation an anchor with ``data-originalurl``,
``data-versiondate`` and ``data-versionurl``, read back by a Robust Links reader written from the spec
(``tests/robust_links_resolver.py``: the project's ``robustlinks.js`` is not served by npm), whose pathways are
then followed over real sockets to a ``g6 serve`` of the home: each snapshot URI, and the original URI with the
link date through the TimeGate (RFC 7089). Each must land on the memento of the cited read: its bytes, the
Content-Digest of its signed receipt.

The home is the Memento tests' (``tests/serve/memento_world.py``): /page read six times (two in one second),
once through a redirect, and a 403."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import lxml.html
import pytest

from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.home import EvidenceHome
from g6.serve.digests import field_of_hex
from tests.robust_links_resolver import near_link_date, read_links, rfc1123
from tests.serve.memento_world import World, http, server, world  # noqa: F401


@dataclass(frozen=True)
class Cited:
    manifest: Path
    receipts: list[str]  # in the manifest's order


@pytest.fixture(scope="module")
def cited(world: World, tmp_path_factory: pytest.TempPathFactory) -> Cited:
    """A manifest citing /page at three times (versions 1, 2 and 5: the second of two captures in one second),
    the page read through /moved, and the 403 (cited as a failed read)."""
    pages = world.ids["page"]
    picks = [(pages[0], "Version 1 of the page."), (pages[1], "Version 2 of the page."),
             (pages[3], "Version 5 of the page."), (world.ids["moved"][0], "Version 3 of the page.")]
    m = Manifest.new()
    with EvidenceHome(world.home, fsync=False) as ev:
        for rid, quote in picks:
            m = m.with_citation(cite_web(ev, rid, quote=quote))
        m = m.with_citation(cite_web(ev, world.ids["forbidden"][0], quote="Forbidden", allow_failed_read=True))
    path = tmp_path_factory.mktemp("robust") / "citations.json"
    save_manifest(m, path)
    return Cited(path, [rid for rid, _ in picks] + [world.ids["forbidden"][0]])


def g6(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(world.home), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def exported(world: World, server: str, cited: Cited, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("robust-out") / "links.html"
    # a second "archive": the same server's 14-digit URIs, a template as a user writes one for any Wayback
    r = g6(world, "manifest", "export", str(cited.manifest), "--format", "robust-links", "--base-url", server + "/",
           "--archive", f"mirror={server}/web/{{timestamp}}id_/{{url}}", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out}: 5 citations as robust-links, 4 with a g6 memento")
    assert "no memento in g6 serve (a failed read (blocked, HTTP 403))" in r.stderr
    yield out.read_text()


def memento_of(http: httpx.Client, uri: str) -> httpx.Response:
    r = http.get(uri)
    assert r.status_code == 200, (uri, r.status_code)
    return r


def receipt_id_of(r: httpx.Response) -> str:
    described = next(p for p in r.headers["link"].split(", <") if 'rel="describedby"' in p)
    return described.split(">", 1)[0].rsplit("/", 1)[1]


def test_each_link_s_version_uri_is_the_cited_memento(world: World, http: httpx.Client, server: str, cited: Cited,
                                                      exported: str) -> None:
    links = read_links(exported)
    assert len(links) == 5
    for link, rid in zip(links, cited.receipts, strict=True):
        receipt = http.get(f"/receipt/{rid}").json()
        assert link.href == link.original == receipt["final_url"]
        assert link.date.strftime("%Y-%m-%dT%H:%M:%S") == receipt["fetched_at"][:19]
        if rid == world.ids["forbidden"][0]:  # a failed read: only the other archive's URI
            assert [u for u, _ in link.versions] == [f"{server}/web/{link.date:%Y%m%d%H%M%S}id_/{link.original}"]
            continue
        (g6_uri, g6_date), (mirror_uri, mirror_date) = link.versions
        assert g6_date is None and mirror_date is None
        r = memento_of(http, g6_uri)
        assert receipt_id_of(r) == rid
        assert r.content == world.bodies[rid]
        assert r.headers["content-digest"] == field_of_hex(receipt["content"]["sha256"])
        assert hashlib.sha256(r.content).hexdigest() == receipt["content"]["sha256"].removeprefix("sha256:")
        assert f'<{g6_uri}>; rel="cite-as"' in r.headers["link"]  # the URI the memento itself says to cite
        # the mirror's 14-digit URI serves the first capture of that second: the cited one unless it shares it
        mirror = memento_of(http, mirror_uri)
        assert (receipt_id_of(mirror) == rid) == (rid != world.ids["page"][3])


def test_each_link_s_date_finds_the_memento_through_the_timegate(world: World, http: httpx.Client, server: str,
                                                                 cited: Cited, exported: str) -> None:
    """The spec's other pathway: original URI and link date, negotiated with g6 serve's TimeGate. The date is to
    the second, so for the capture that shares its second with an earlier one the TimeGate gives the earlier
    (nearest the second's start): the version URI is what names it exactly."""
    for link, rid in zip(read_links(exported), cited.receipts, strict=True):
        if rid == world.ids["forbidden"][0]:
            with pytest.raises(ValueError, match="answered 404"):  # no memento of the 403 to negotiate
                near_link_date(http, f"{server}/web/", link)
            continue
        found = memento_of(http, near_link_date(http, f"{server}/web/", link))
        assert found.headers["memento-datetime"] == rfc1123(link.date)
        expected = world.ids["page"][2] if rid == world.ids["page"][3] else rid
        assert receipt_id_of(found) == expected


def test_the_anchors_are_html_a_browser_reads(exported: str) -> None:
    """Parsed as HTML (lxml's HTML parser, as a browser's): one <li> per citation, each with its quote and one
    anchor; every attribute value is escaped."""
    doc = lxml.html.fromstring(exported)
    items = doc.findall(".//li")
    assert len(items) == 5 and all(li.get("id", "").startswith("c_") for li in items)
    assert [li.find("q").text for li in items][:2] == ["Version 1 of the page.", "Version 2 of the page."]
    assert all(len(li.findall("a")) == 1 for li in items) and not doc.findall(".//script")


def test_json_says_what_was_written(world: World, server: str, cited: Cited, tmp_path: Path) -> None:
    r = g6(world, "manifest", "export", str(cited.manifest), "--format", "robust-links", "--base-url", server,
           "-o", str(tmp_path / "l.html"), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [c["receipt_id"] for c in doc["citations"]] == cited.receipts
    assert doc["citations"][-1]["versions"] == [] and doc["citations"][-1]["no_memento"].startswith("a failed read")
    assert [v["archive"] for v in doc["citations"][0]["versions"]] == ["g6"]
    # without a base URL: originalurl and versiondate only (the spec's data-versionurl is RECOMMENDED, not REQUIRED)
    bare = g6(world, "manifest", "export", str(cited.manifest), "--format", "robust-links")
    assert bare.returncode == 0 and "data-versionurl" not in bare.stdout and bare.stdout.count("data-versiondate") == 5


@pytest.mark.parametrize(("args", "says"), [
    (["--base-url", "ftp://x.example/"], "is not the http(s) root of a g6 serve"),
    (["--base-url", "http://x.example/?q=1"], "is not the http(s) root of a g6 serve"),
    (["--archive", "ia"], "is not NAME=URLTEMPLATE"),
    (["--archive", "g6=http://x.example/{url}"], "the name g6 is the g6 serve"),
    (["--archive", "ia=http://x.example/{when}/{url}"], "unknown placeholder {when}"),
    (["--archive", "ia=http://x.example/{timestamp}"], "has no {url}"),
    (["--archive", "ia=http://x.example/{url", "--archive", "b=http://y/{url}"], "does not parse"),
    (["--archive", "a=http://x.example/{url}", "--archive", "a=http://y.example/{url}"], "is given twice"),
    (["--json"], "give -o FILE"),
])
def test_bad_options_are_one_line_and_exit_2(world: World, cited: Cited, args: list[str], says: str) -> None:
    r = g6(world, "manifest", "export", str(cited.manifest), "--format", "robust-links", *args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_manifest_of_another_home_is_refused(world: World, cited: Cited, tmp_path: Path) -> None:
    other = tmp_path / "other"
    with EvidenceHome(other, fsync=False) as ev:
        ev.keys.init()
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(other), "manifest", "export", str(cited.manifest),
                        "--format", "robust-links"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr and cited.receipts[0] in r.stderr, r.stderr
