"""Every answer of ``g6 serve`` proves its own fixity: ``Content-Digest`` (RFC 9530) of the bytes sent, read off
the socket before any decoding (``iter_raw``), parsed as an RFC 8941 dictionary by ``http-sfv``; mementos
link their signed receipt (``describedby``) and the URI that names them for good (``cite-as``).

The home holds real reads of a loopback site: an HTML page (twice in one second), a binary body, a redirect,
a page the site sent gzip-encoded (g6 keeps it decoded: it is served as kept, with no Content-Encoding), and
one sent in stacked codings (kept raw as evidence, a failed read: never served as the page). The tiles of its
log are published, so one answer the server compresses itself (an entry bundle, gzip) is tested too.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import http_sfv
import httpx
import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import prepare_fetch
from g6.home import EvidenceHome
from g6.prove.publish import publish
from g6.prove.publish_dest import open_destination
from tests.serve.server import served

PAGE = b"<!doctype html><html><body><p>Fixity is a property of bytes.</p></body></html>"
BINARY = bytes(range(256)) * 64
ZIPPED = b"<html><body><p>" + b"compressed on the wire, kept decoded " * 40 + b"</p></body></html>"
EMPTY = hashlib.sha256(b"").digest()
ROUNDS = 20


@dataclass
class World:
    home: Path
    tiles: Path
    site: LocalSite
    ids: dict[str, list[str]] = field(default_factory=dict)


def _build(root: Path) -> World:
    site = LocalSite({
        "/page": Reply(body=PAGE),
        "/data.bin": Reply(body=BINARY, content_type="application/octet-stream"),
        "/moved": Reply(302, headers=(("Location", "/page"),), content_type=None),
        "/zipped": Reply(body=gzip.compress(ZIPPED, mtime=0), headers=(("Content-Encoding", "gzip"),)),
        "/stacked": Reply(body=gzip.compress(gzip.compress(ZIPPED, mtime=0), mtime=0),
                          headers=(("Content-Encoding", "gzip, gzip"),)),
        "/robots.txt": Reply(404, b""),
    }).start()
    world = World(root / "home", root / "tiles", site)
    t0 = (datetime.now(UTC) - timedelta(seconds=300)).replace(microsecond=0)
    plan = [("page", "/page", 0.25), ("page", "/page", 0.75), ("bin", "/data.bin", 10.0), ("moved", "/moved", 20.0),
            ("zipped", "/zipped", 30.0), ("stacked", "/stacked", 40.0), ("page", "/page", 50.0)]
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=2, total_timeout=5)
    with EvidenceHome(world.home, fsync=False) as ev, CheckedClient(policy) as client:
        ev.keys.init()
        for label, path, after in plan:
            prepared = prepare_fetch(ev.store, client, site.url(path))
            stamp = (t0 + timedelta(seconds=after)).isoformat(timespec="microseconds").replace("+00:00", "Z")
            world.ids.setdefault(label, []).append(ev.record(replace(prepared.receipt, fetched_at=stamp)).receipt_id)
        ev.ledger.checkpoint(ev.signing_key())
        publish(ev, open_destination(str(world.tiles), {}), latest_only=True)
    return world


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    w = _build(tmp_path_factory.mktemp("digests"))
    yield w
    w.site.stop()


@pytest.fixture(scope="module")
def base(world: World) -> Iterator[str]:
    with served(world.home, "--tiles", str(world.tiles)) as url:
        yield url.rstrip("/")


@pytest.fixture(scope="module")
def http(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, trust_env=False, follow_redirects=False, timeout=30) as c:
        yield c


def digest_of(value: str) -> bytes:
    """The sha-256 member of a digest field, parsed as RFC 8941 says (http-sfv); it must be the only member."""
    d = http_sfv.Dictionary()
    d.parse(value.encode("ascii"))
    assert list(d) == ["sha-256"], value
    got = d["sha-256"].value
    assert isinstance(got, bytes) and len(got) == 32, value
    return got


@dataclass
class Sent:
    status: int
    headers: httpx.Headers
    raw: bytes  # the content as it came off the socket, before any Content-Encoding is undone


def fetch(http: httpx.Client, url: str, method: str = "GET", **headers: str) -> Sent:
    with http.stream(method, url, headers=headers) as r:
        return Sent(r.status_code, r.headers, b"".join(r.iter_raw()))


def receipt(http: httpx.Client, rid: str) -> dict:
    r = http.get(f"/receipt/{rid}")
    assert r.status_code == 200
    return json.loads(r.content)


def receipt_sha256(http: httpx.Client, rid: str) -> bytes:
    return bytes.fromhex(receipt(http, rid)["content"]["sha256"].removeprefix("sha256:"))


def mementos(http: httpx.Client, world: World) -> list[dict]:
    """Every memento of every URL read, as the JSON TimeMaps list them."""
    out = []
    for path in ("/page", "/data.bin", "/moved", "/zipped"):
        tm = http.get(f"/web/timemap/json/{world.site.url(path)}").json()
        out += tm["mementos"]["list"]
    return out


def test_each_memento_twenty_times_has_one_digest_the_receipts(http: httpx.Client, world: World) -> None:
    """Downloaded 20 times, each memento shows one Content-Digest: the sha256 its signed receipt names, and the
    digest of the bytes that came off the socket each time. A redirect memento sends no content: its digest is
    of empty content, not of the page its receipt kept."""
    listed = mementos(http, world)
    assert len(listed) == 7  # /page 3 times and once through /moved, data.bin, the redirect of /moved, zipped
    for m in listed:
        seen = set()
        for _ in range(ROUNDS):
            s = fetch(http, m["uri"])
            assert hashlib.sha256(s.raw).digest() == digest_of(s.headers["content-digest"]), m["uri"]
            assert s.headers["repr-digest"] == s.headers["content-digest"]
            seen.add(s.headers["content-digest"])
        assert len(seen) == 1, (m["uri"], seen)
        value = digest_of(seen.pop())
        if m["redirect_to"] is None:
            assert s.status == 200 and "content-encoding" not in s.headers
            assert value == receipt_sha256(http, m["receipt_id"])
        else:
            assert s.status == 302 and value == EMPTY != receipt_sha256(http, m["receipt_id"])


def test_a_page_sent_gzipped_is_served_as_kept_decoded(http: httpx.Client, world: World) -> None:
    """g6 undoes a gzip coding when it reads (the kept body is the page) and serve sends the kept bytes with no
    Content-Encoding, even to a client that accepts gzip: the digest of what was sent is the receipt's, and not
    the digest of the gzip bytes the site sent."""
    rid = world.ids["zipped"][0]
    r = receipt(http, rid)
    m = next(x for x in mementos(http, world) if x["receipt_id"] == rid)
    s = fetch(http, m["uri"], **{"accept-encoding": "gzip, br"})
    assert s.status == 200 and "content-encoding" not in s.headers and s.raw == ZIPPED
    assert digest_of(s.headers["content-digest"]) == hashlib.sha256(ZIPPED).digest() == receipt_sha256(http, rid)
    assert hashlib.sha256(gzip.compress(ZIPPED, mtime=0)).hexdigest() not in r["content"]["sha256"]


def test_a_body_left_in_stacked_codings_is_never_served(http: httpx.Client, world: World) -> None:
    """Kept raw (``gzip, gzip`` is not undone), the read is a failed read: its URI answers what the read was, not
    the bytes, and that answer's digest is of its own body."""
    rid = world.ids["stacked"][0]
    tm = http.get(f"/web/timemap/json/{world.site.url('/stacked')}").json()
    assert tm["mementos"]["list"] == [] and [x["receipt_id"] for x in tm["failed_reads"]] == [rid]
    s = fetch(http, tm["failed_reads"][0]["uri"], accept="application/json")
    assert s.status == 404 and "memento-datetime" not in s.headers
    assert json.loads(s.raw)["code"] == "failed_read"
    assert digest_of(s.headers["content-digest"]) == hashlib.sha256(s.raw).digest()
    assert 'rel="cite-as"' not in s.headers["link"] and 'rel="describedby"' in s.headers["link"]


def test_head_gives_empty_content_and_the_representation_s_digest(http: httpx.Client, world: World) -> None:
    """RFC 9530 example B.2: a HEAD answer's Content-Digest is of empty content; Repr-Digest is of the body a GET
    sends (for a memento, the receipt's sha256). The same for an answer the middleware digests (a receipt)."""
    for m in mementos(http, world):
        s = fetch(http, m["uri"], "HEAD")
        assert s.raw == b"" and digest_of(s.headers["content-digest"]) == EMPTY
        if m["redirect_to"] is None:
            assert digest_of(s.headers["repr-digest"]) == receipt_sha256(http, m["receipt_id"])
            assert s.headers["content-length"] == str(receipt(http, m["receipt_id"])["content"]["size"])
    rid = world.ids["bin"][0]
    head, get = fetch(http, f"/receipt/{rid}", "HEAD"), fetch(http, f"/receipt/{rid}")
    assert head.raw == b"" and digest_of(head.headers["content-digest"]) == EMPTY
    assert digest_of(head.headers["repr-digest"]) == hashlib.sha256(get.raw).digest()


def test_range_is_not_answered_the_whole_body_is_sent(http: httpx.Client, world: World) -> None:
    """serve answers no Range request (RFC 9110 §14.2 lets it ignore the header): 200, the whole body, its digest;
    mementos say so with Accept-Ranges: none. No answer is ever partial, so no digest is of a part."""
    rid = world.ids["bin"][0]
    m = next(x for x in mementos(http, world) if x["receipt_id"] == rid)
    s = fetch(http, m["uri"], range="bytes=0-9")
    assert s.status == 200 and "content-range" not in s.headers and s.headers["accept-ranges"] == "none"
    assert s.raw == BINARY and digest_of(s.headers["content-digest"]) == receipt_sha256(http, rid)


def test_a_compressed_answer_s_digest_is_of_the_encoded_bytes(http: httpx.Client, world: World) -> None:
    """The one answer serve compresses (a tile entry bundle, gzip, to a client that accepts it): its
    Content-Digest is of the gzip bytes sent, which differ from the digest of the bundle itself; sent plain, the
    digest is the file's."""
    path = next(p for p in (world.tiles / "tile" / "entries").rglob("*") if p.is_file())
    url = "/" + path.relative_to(world.tiles).as_posix()
    plain = path.read_bytes()
    zipped = fetch(http, url, **{"accept-encoding": "gzip"})
    assert zipped.status == 200 and zipped.headers["content-encoding"] == "gzip"
    assert gzip.decompress(zipped.raw) == plain
    assert digest_of(zipped.headers["content-digest"]) == hashlib.sha256(zipped.raw).digest()
    assert digest_of(zipped.headers["content-digest"]) != hashlib.sha256(plain).digest()
    identity = fetch(http, url, **{"accept-encoding": "identity"})
    assert "content-encoding" not in identity.headers and identity.raw == plain
    assert digest_of(identity.headers["content-digest"]) == hashlib.sha256(plain).digest()


def _links(header: str) -> dict[str, list[tuple[str, str]]]:
    """rel -> [(URI, the rest of the link)] of a Link header (the URIs hold no comma or angle bracket here)."""
    out: dict[str, list[tuple[str, str]]] = {}
    for part in header.split(", <"):
        uri, _, params = part.lstrip("<").partition(">")
        rel = params.split('rel="', 1)[1].split('"', 1)[0]
        for r in rel.split():
            out.setdefault(r, []).append((uri, params))
    return out


def test_a_memento_links_its_receipt_and_the_uri_that_names_it(http: httpx.Client, base: str, world: World) -> None:
    """describedby: the signed receipt (application/json), whose sha256 is the memento's digest. cite-as: the
    20-digit URI of this capture, which serves the same bytes and names itself; the 14-digit URI of a second that
    holds two captures serves the first, and its cite-as says which one it is."""
    for m in mementos(http, world):
        s = fetch(http, m["uri"])
        links = _links(s.headers["link"])
        [(described, params)] = links["describedby"]
        assert described == f"{base}/receipt/{m['receipt_id']}" and 'type="application/json"' in params
        [(cite_as, _)] = links["cite-as"]
        stamp = cite_as.split("/web/", 1)[1].split("id_/", 1)[0]
        assert len(stamp) == 20
        again = fetch(http, cite_as)
        assert again.raw == s.raw and _links(again.headers["link"])["cite-as"][0][0] == cite_as
        if m["redirect_to"] is None:
            assert digest_of(s.headers["content-digest"]) == receipt_sha256(http, described.rsplit("/", 1)[1])
    first, second = world.ids["page"][:2]
    listed = {x["receipt_id"]: x for x in mementos(http, world)}
    fourteen = listed[first]["uri"].replace(listed[first]["uri"].split("/web/")[1].split("id_/")[0],
                                            listed[first]["datetime"].replace("-", "").replace(":", "")
                                            .replace("T", "").rstrip("Z"))
    assert fourteen != listed[first]["uri"]  # two captures in that second: the TimeMap lists 20 digits
    cites = {rid: _links(fetch(http, listed[rid]["uri"]).headers["link"])["cite-as"][0][0] for rid in (first, second)}
    assert cites[first] != cites[second]
    assert _links(fetch(http, fourteen).headers["link"])["cite-as"][0][0] == cites[first]


@pytest.mark.parametrize("path", ["/", "/api/home", "/verify", "/style.css", "/receipt/{rid}", "/receipt/{rid}/proof",
                                  "/checkpoint", "/web/timemap/link/{page}", "/web/timemap/json/{page}",
                                  "/web/{page}", "/web/http://never.invalid/", "/nowhere", "/receipt/bad"])
def test_every_answer_carries_the_digest_of_what_it_sent(http: httpx.Client, world: World, path: str) -> None:
    url = path.format(rid=world.ids["page"][0], page=world.site.url("/page"))
    for accept in ("text/html", "application/json"):
        s = fetch(http, url, accept=accept)
        assert digest_of(s.headers["content-digest"]) == hashlib.sha256(s.raw).digest(), (url, s.status)
        assert s.headers["repr-digest"] == s.headers["content-digest"]


def test_the_field_is_rfc_9530_s_form() -> None:
    """The RFC's own example (Appendix B.1): {"hello": "world"} and a newline."""
    from g6.serve.digests import sha256_field

    body = b'{"hello": "world"}\n'
    assert sha256_field(hashlib.sha256(body).digest()) == "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:"
    assert base64.b64decode("47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=") == EMPTY
