"""Hostile reads, fetched for real from a loopback site, exported as WARC and WACZ, then read back by the field's
tools: warcio (``warcio check``, ArchiveIterator), pywb replay (``id_`` mode) and py-wacz ``validate``.

Findings (each test failed before its fix):

1. a URL with non-ASCII characters (``/café/ü?x=ä``, or a redirect's ``Location`` to one) stopped the whole
   export: warcio cannot write a non-ASCII request line (UnicodeEncodeError), so one hostile read left no
   WARC or WACZ at all; a non-ASCII ``Location`` header would have been percent-encoded whole by warcio
   (``http%3A//…``), another URL. Every URL is now written as the client sent it (``wire_url``).
2. a URL with a space (``/a b``) was written raw: a WARC-Target-URI with a space (invalid; warcio warns and
   rewrites it when reading) and a request record ``GET /a b HTTP/1.1`` (four tokens, no valid request line).

The other tests guard what held: odd headers and bodies, secrets in URLs, failed reads, the byte cap, a body
gone from the store, IPv6 loopback, an 8 KB URL, and every digest and index entry.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.errors import BlobNotFound
from g6.export.wacz import export_wacz
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from pywb_server import no_proxy_env, tool  # noqa: E402
from pywb_server import wayback as pywb_wayback  # noqa: E402

Site = Callable[..., LocalSite]
CAP = 1000  # the fetch policy's byte cap in these tests
SECRET = "SUPERSECRETVALUE99"
GZ_BODY = b"<html><body><p>Sent gzipped, stored decoded.</p></body></html>"


def new_home(root: Path) -> EvidenceHome:
    h = EvidenceHome(root, fsync=False)
    h.keys.init()
    return h


def records(path: Path) -> list[tuple[str, dict[str, str], object, bytes]]:
    """(type, WARC headers, HTTP headers or None, payload) of every record."""
    out = []
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            out.append((rec.rec_type, dict(rec.rec_headers.headers), rec.http_headers, rec.content_stream().read()))
    return out


def warcio_check(path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "warcio.cli", "check", "-v", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "digest fail" not in r.stdout, r.stdout + r.stderr


def export_both(home: EvidenceHome, out: Path) -> tuple[Path, Path]:
    every = [e.receipt for e in home.ledger.entries()]
    export_warc(home, out / "out.warc.gz", every)
    export_wacz(home, out / "out.wacz", every)
    return out / "out.warc.gz", out / "out.wacz"


# --- hostile URLs ------------------------------------------------------------------------------------------

@pytest.fixture
def url_world(site: Site, tmp_path: Path) -> dict[str, object]:
    """Reads of non-ASCII, spaced, CRLF-encoded, 8 KB, secret-carrying and IPv6 URLs, each answered with a
    body of its own, and a redirect to a non-ASCII address."""
    long_q = "q=" + "a" * 8192
    s = site({"/caf%C3%A9/%C3%BC": Reply(body=b"<p>cafe</p>"), "/a%20b": Reply(body=b"<p>a space</p>"),
              "/p%0d%0aX-Inj:%201": Reply(body=b"<p>crlf encoded</p>"), "/long": Reply(body=b"<p>long</p>"),
              "/to-cafe": Reply(302, b"", headers=(("Location", "/caf\u00e9 d\u00e9?q=\u00fc"),), content_type=None),
              "/caf%C3%A9%20d%C3%A9": Reply(body=b"<p>landed</p>"), "/q": Reply(body=b"<p>query</p>"),
              "/robots.txt": Reply(404, b"")})
    s6 = site({"/six": Reply(body=b"<p>over ipv6</p>"), "/robots.txt": Reply(404, b"")}, host="::1")
    home = new_home(tmp_path / "urls")
    asked = {"unicode": s.url("/caf\u00e9/\u00fc?x=\u00e4"), "space": s.base_url + "/a b",
             "crlf": s.url("/p%0d%0aX-Inj:%201"), "long": s.url("/long?" + long_q), "redirect": s.url("/to-cafe"),
             "secret": s.url(f"/q?api_key={SECRET}&x=1#frag"),
             "userinfo": s.base_url.replace("://", f"://user:{SECRET}@") + "/q?y=2", "ipv6": s6.url("/six")}
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        ids = {k: fetch(home, c, u).receipt_id for k, u in asked.items()}
    warc, wacz = export_both(home, home.root)
    return {"home": home, "warc": warc, "wacz": wacz, "ids": ids, "base": s.base_url, "base6": s6.base_url,
            "long_q": long_q}


def test_non_ascii_urls_are_written_as_the_uris_sent(url_world: dict[str, object]) -> None:
    """Finding 1: the export stopped with UnicodeEncodeError on the first non-ASCII URL."""
    base = url_world["base"]
    recs = records(url_world["warc"])  # type: ignore[arg-type]
    warcio_check(url_world["warc"])  # type: ignore[arg-type]
    targets = {h.get("WARC-Target-URI") for t, h, _, _ in recs if t in ("response", "revisit")}
    assert f"{base}/caf%C3%A9/%C3%BC?x=%C3%A4" in targets
    assert f"{base}/caf%C3%A9%20d%C3%A9?q=%C3%BC" in targets
    redirect = next(http for t, h, http, _ in recs if t == "response" and h["WARC-Target-URI"] == f"{base}/to-cafe")
    assert redirect.get_statuscode() == "302"  # type: ignore[attr-defined]
    assert redirect.get_header("Location") == f"{base}/caf%C3%A9%20d%C3%A9?q=%C3%BC"  # type: ignore[attr-defined]
    for t, h, http, _ in recs:
        if t == "request":  # what went on the wire: an ASCII path, the request's own target
            line = http.protocol + " " + http.statusline  # type: ignore[attr-defined]
            method, path, proto = line.split(" ")
            assert (method, proto) == ("GET", "HTTP/1.1") and path.isascii(), line
            assert h["WARC-Target-URI"].endswith(path), (h["WARC-Target-URI"], path)


def test_a_capture_s_resource_records_are_named_after_the_page_as_sent(url_world: dict[str, object]) -> None:
    """The screenshot, text and DOM records (``urn:fullPage:<page URL>``...) name the page as its response record and
    the WACZ's page do, the wire's form: a raw ``café`` there was another page to a replay tool."""
    import dataclasses

    from g6.export.capture_records import capture_records

    home: EvidenceHome = url_world["home"]  # type: ignore[assignment]
    r = home.ledger.get(url_world["ids"]["unicode"])  # type: ignore[index]
    assert r is not None and r.content is not None
    ref = dict(r.content)
    capture = dataclasses.replace(r, capture={"screenshot": ref, "text": ref, "dom": ref})
    base = url_world["base"]
    assert [c.uri for c in capture_records(capture)] == [
        f"urn:{w}:{base}/caf%C3%A9/%C3%BC?x=%C3%A4" for w in ("fullPage", "textFinal", "dom")]


def test_url_with_a_space_is_a_valid_target_uri_and_request_line(url_world: dict[str, object]) -> None:
    """Finding 2: ``/a b`` was written with a raw space in WARC-Target-URI and in ``GET /a b HTTP/1.1``."""
    raw = gzip.decompress(Path(url_world["warc"]).read_bytes())  # type: ignore[arg-type]
    assert b"GET /a%20b HTTP/1.1\r\n" in raw  # (the receipt in its metadata record keeps the URL as asked)
    for line in raw.split(b"\r\n"):
        if line.startswith(b"WARC-Target-URI:"):
            uri = line.split(b":", 1)[1].strip()
            assert b" " not in uri and uri.isascii(), uri


def test_secrets_in_urls_never_reach_the_archive(url_world: dict[str, object]) -> None:
    """The receipt redacts the key's value and userinfo; the export writes the receipt's (redacted) URL as the
    WARC-Target-URI, as docs/commands/export.md says, and the secret is nowhere in the WARC or the WACZ."""
    raw = gzip.decompress(Path(url_world["warc"]).read_bytes())  # type: ignore[arg-type]
    assert SECRET.encode() not in raw and b"user:" not in raw
    with zipfile.ZipFile(url_world["wacz"]) as z:  # type: ignore[arg-type]
        for name in z.namelist():
            data = z.read(name)
            data = gzip.decompress(data) if name.endswith(".gz") else data
            assert SECRET.encode() not in data, name
    targets = {h.get("WARC-Target-URI") for t, h, _, _ in records(url_world["warc"]) if t == "response"}  # type: ignore[arg-type]
    assert f"{url_world['base']}/q?api_key=REDACTED&x=1" in targets


# --- hostile headers and bodies -----------------------------------------------------------------------------

def _raw(head: bytes, body: bytes = b"") -> Reply:
    return Reply(raw=b"HTTP/1.1 " + head + b"\r\n\r\n" + body)


@pytest.fixture
def body_world(site: Site, tmp_path: Path) -> dict[str, object]:
    gz = gzip.compress(GZ_BODY)
    s = site({
        "/gz": Reply(body=gz, headers=(("Content-Encoding", "gzip"),)),
        "/chunked": _raw(b"200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked",
                         b"5\r\nhello\r\n0\r\n\r\n"),
        "/noheaders": _raw(b"200 OK", b"a body without headers"),
        "/reason": _raw(b"200 Totally \xff Fine\r\nContent-Type: text/plain\r\nContent-Length: 6", b"reason"),
        "/folded": _raw(b"200 OK\r\nContent-Type: text/plain\r\n x-folded: yes\r\nContent-Length: 6", b"folded"),
        "/dup": _raw(b"200 OK\r\nContent-Type: text/plain\r\nContent-Type: text/html\r\nContent-Length: 3", b"dup"),
        "/cookie": Reply(body=b"<p>cookie</p>", headers=(("Set-Cookie", f"sid={SECRET}; HttpOnly"),)),
        "/huge": Reply(body=b"<p>huge headers</p>", headers=tuple((f"X-H{i}", "v" * 200) for i in range(300))),
        "/cl-lies": _raw(b"200 OK\r\nContent-Type: text/plain\r\nContent-Length: 50", b"short"),
        "/204": Reply(204, b"", content_type=None), "/304": Reply(304, b"", content_type=None),
        "/empty": Reply(body=b""), "/bin": Reply(body=bytes(range(256)) * 2, content_type="application/octet-stream"),
        "/at-cap": Reply(body=b"C" * CAP, content_type="text/plain"),
        "/over-cap": Reply(body=b"D" * (CAP * 5), content_type="text/plain"),
        "/robots.txt": Reply(404, b"")})
    with socket.socket() as sock:  # a port nobody listens on: unreachable
        sock.bind(("127.0.0.1", 0))
        dead = sock.getsockname()[1]
    home = new_home(tmp_path / "bodies")
    paths = [p for p in s.routes if p != "/robots.txt"]
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0, max_bytes=CAP)) as c:
        ids = {p: fetch(home, c, s.url(p)).receipt_id for p in paths}
        for k, u in {"unreachable": f"http://127.0.0.1:{dead}/x", "refused": "http://10.1.2.3/x",
                     "scheme": "ftp://127.0.0.1/x"}.items():
            ids[k] = fetch(home, c, u).receipt_id
    warc, wacz = export_both(home, home.root)
    return {"home": home, "warc": warc, "wacz": wacz, "ids": ids, "base": s.base_url}


def _by_target(recs: list, base: str) -> dict[str, tuple[str, dict[str, str], object, bytes]]:
    return {h["WARC-Target-URI"][len(base):]: (t, h, http, body) for t, h, http, body in recs
            if t in ("response", "revisit")}


def test_hostile_headers_and_bodies_export_what_was_stored(body_world: dict[str, object]) -> None:
    home: EvidenceHome = body_world["home"]  # type: ignore[assignment]
    warcio_check(body_world["warc"])  # type: ignore[arg-type]
    recs = records(body_world["warc"])  # type: ignore[arg-type]
    got = _by_target(recs, str(body_world["base"]))
    originals = {h["WARC-Record-ID"]: body for t, h, _, body in recs if t == "response"}
    for path, rid in body_world["ids"].items():  # type: ignore[union-attr]
        r = home.ledger.get(rid)
        if not (r.content and r.http_status):
            assert path not in got, path  # a read without a body: its metadata record only
            continue
        t, h, http, body = got[path]
        payload = body if t == "response" else originals[h["WARC-Refers-To"]]
        assert payload == home.store.read(str(r.content["blake3"])), path  # the bytes the receipt names
        assert h["WARC-Payload-Digest"] == "sha256:" + hashlib.sha256(payload).hexdigest()
        assert http.get_statuscode() == str(r.http_status)  # type: ignore[attr-defined]
        assert http.get_header("Content-Length") == str(len(payload)), path  # type: ignore[attr-defined]
        # the stored body is the decoded entity: no header may say it is still encoded or chunked
        for name in ("Content-Encoding", "Transfer-Encoding", "Set-Cookie", "X-H1"):
            assert http.get_header(name) is None, (path, name)  # type: ignore[attr-defined]
        assert (h.get("WARC-Truncated") == "length") == bool(r.truncated), path
    assert got["/gz"][3] == GZ_BODY and got["/chunked"][3] == b"hello"
    assert got["/at-cap"][1].get("WARC-Truncated") is None and len(got["/at-cap"][3]) == CAP
    assert got["/over-cap"][1]["WARC-Truncated"] == "length" and got["/over-cap"][3] == b"D" * CAP
    raw = gzip.decompress(Path(body_world["warc"]).read_bytes())  # type: ignore[arg-type]
    assert SECRET.encode() not in raw  # the cookie the server set
    metadata = {h["WARC-Target-URI"] for t, h, _, _ in recs if t == "metadata"}
    assert {f"urn:g6:receipt:{rid}" for rid in body_world["ids"].values()} <= metadata  # type: ignore[union-attr]


def test_a_body_gone_from_the_store_stops_the_export(body_world: dict[str, object], tmp_path: Path) -> None:
    home: EvidenceHome = body_world["home"]  # type: ignore[assignment]
    r = home.ledger.get(body_world["ids"]["/bin"])  # type: ignore[index]
    home.store.path(str(r.content["blake3"])).unlink()  # type: ignore[attr-defined,index]
    out = tmp_path / "gone.warc.gz"
    with pytest.raises(BlobNotFound):
        export_warc(home, out, [x.receipt for x in home.ledger.entries()])
    assert not out.exists() and not out.with_name(out.name + ".tmp").exists()


# --- WACZ and replay ---------------------------------------------------------------------------------------

def _check_wacz(wacz: Path, tmp_path: Path) -> None:
    ok = subprocess.run([tool("wacz"), "validate", "-f", str(wacz)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr
    with zipfile.ZipFile(wacz) as z:
        package = json.loads(z.read("datapackage.json"))
        for res in package["resources"]:
            data = z.read(res["path"])
            assert res["hash"] == "sha256:" + hashlib.sha256(data).hexdigest() and res["bytes"] == len(data)
        digest = json.loads(z.read("datapackage-digest.json"))
        assert digest["hash"] == "sha256:" + hashlib.sha256(z.read("datapackage.json")).hexdigest()
        warc = z.read("archive/data.warc.gz")
        index = gzip.decompress(z.read("indexes/index.cdx.gz")).decode()
    for line in index.splitlines():
        _, _, js = line.split(" ", 2)
        entry = json.loads(js)
        chunk = warc[int(entry["offset"]):int(entry["offset"]) + int(entry["length"])]
        rec = next(iter(ArchiveIterator(io.BytesIO(chunk))))  # the index points at exactly that record
        assert rec.rec_headers.get_header("WARC-Target-URI") == entry["url"], entry
        if "digest" in entry:
            assert rec.rec_headers.get_header("WARC-Payload-Digest").endswith(entry["digest"].split(":")[-1])


def test_wacz_of_hostile_reads_validates_and_its_index_matches(url_world: dict[str, object],
                                                               body_world: dict[str, object], tmp_path: Path) -> None:
    for world in (url_world, body_world):
        _check_wacz(world["wacz"], tmp_path)  # type: ignore[arg-type]
        with zipfile.ZipFile(world["wacz"]) as z:  # type: ignore[arg-type]
            pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()[1:]]
        for p in pages:
            assert p["url"].isascii() and " " not in p["url"], p["url"]


@pytest.fixture
def wayback(url_world: dict[str, object], body_world: dict[str, object], tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "pywb"
    root.mkdir()
    wb = tool("wb-manager")
    for args in (["init", "g6"], ["add", "g6", str(url_world["warc"]), str(body_world["warc"])],
                 ["init", "wz"], ["add", "--unpack-wacz", "wz", str(url_world["wacz"])]):
        r = subprocess.run([wb, *args], cwd=root, capture_output=True, text=True, env=no_proxy_env(), timeout=120)
        assert r.returncode == 0, r.stderr
    with pywb_wayback(root, tmp_path / "wayback.log") as url:
        yield url


def test_hostile_reads_replay_byte_for_byte_in_pywb(url_world: dict[str, object], body_world: dict[str, object],
                                                    wayback: str) -> None:
    checked = 0
    with httpx.Client(trust_env=False, timeout=60, follow_redirects=False) as c:
        for world in (url_world, body_world):
            recs = records(world["warc"])  # type: ignore[arg-type]
            originals = {h["WARC-Record-ID"]: body for t, h, _, body in recs if t == "response"}
            for t, h, http, body in recs:
                if t not in ("response", "revisit"):
                    continue
                target, status = h["WARC-Target-URI"], int(http.get_statuscode())  # type: ignore[attr-defined]
                got = c.get(f"{wayback}/g6/2100id_/{target}")
                if "%0d%0a" in target.lower():
                    # left (pywb's, not the WARC's): pywb 2.10 answers 500 for a URL whose path holds an encoded
                    # CRLF; warcio and the WACZ's index read the record as written, the URL the client sent
                    assert got.status_code in (status, 500), (target, got.status_code)
                    continue
                if len(target) > 8000:  # left: pywb takes no request line over 8 KB (414); indexed all the same
                    assert got.status_code in (status, 414), got.status_code
                    continue
                assert got.status_code == status, (target[:120], got.status_code)
                if http.get_header("Location"):  # type: ignore[attr-defined]
                    assert got.headers["location"].endswith(http.get_header("Location")), got.headers  # type: ignore[attr-defined]
                elif status not in (204, 304):
                    want = body if t == "response" else originals[h["WARC-Refers-To"]]
                    assert got.content == want, target[:120]
                    assert "content-encoding" not in got.headers, target
                checked += 1
        # the redirect to a non-ASCII address, followed, lands on that page; the WACZ's pages replay too
        base = url_world["base"]
        landed = c.get(f"{wayback}/g6/2100id_/{base}/to-cafe", follow_redirects=True)
        assert landed.status_code == 200 and landed.content == b"<p>landed</p>"
        with zipfile.ZipFile(url_world["wacz"]) as z:  # type: ignore[arg-type]
            for p in [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()[1:]]:
                if len(p["url"]) > 8000 or "%0d%0a" in p["url"].lower():
                    continue  # pywb's own limits, as above
                got = c.get(f"{wayback}/wz/2100id_/{p['url']}", follow_redirects=True)
                assert got.status_code == p["status"], (p["url"][:120], got.status_code)
    assert checked >= 20
