"""Attacks on 9cdbbd3: ``--render auto`` starts a shell's render from the raw read's bytes (``RawDocument``).

The browser's first top-frame request for the page is answered with what the raw read kept, and that request's
receipt in the capture says so (``links.answered_from``, the raw read's time, hops and body). What must hold: the
browser is given exactly the bytes (and the restricting headers) the receipt vouches for, or the page is read
again as before; nothing else is answered from the raw read (another URL, a reload, a redirected or cut read);
and every consumer of the capture (verify, bundle, WARC) still holds.

FOUND (fixed in ``g6.fetch.render``):

* the bytes handed to the browser were read back from the store unchecked (``store.read``), not hashed against
  the receipt: a blob changed in the store after the raw read (a batch's shells wait for a browser, bodies over
  the read's hold are always read back) was rendered while the receipt named the raw read's digests, so the
  capture's text was of bytes no read received; a blob gone or garbled made the request's receipt say
  ``ok, answered with the raw read's bytes`` while the browser was given a failure (the capture then had no
  document at all).
* a capture that ended (``seal``: its deadline, a limit, a crash) while the first request was being answered from
  the raw read receipted it "it was sent, its answer is not kept": nothing was sent; and with the raw read's bytes
  gone the page was then read again after the seal.

HELD: every other attack here (URL forms, headers, compression, reloads, secrets, 204/205, consumers).
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits, SubRequest
from g6.adapters.browser.pool import BrowserPool
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.export.wacz import export_wacz
from g6.export.warc import export_warc
from g6.fetch import render as render_mod
from g6.fetch.batch import batch_fetch
from g6.fetch.capture import prepare_fetch
from g6.fetch.render import RENDER_HEADERS, RawDocument, Renderer, _SubFetcher, prepare_page, prepare_page_steps
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, new_receipt_id
from g6.prove.bundle import build_bundle, verify_bundle
from g6.store.base import digests
from tests.attack._browser_world import started_pool
from tests.pywb_server import no_proxy_env, tool
from tests.pywb_server import wayback as pywb_wayback
from tests.test_warc_replay import records

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
WORDS = "The words a script wrote once the shell had loaded."
FAKE = "Other words, put in the store after the raw read..."  # as long as WORDS: the same size on disk
assert len(FAKE) == len(WORDS)


def shell(words: str, head: str = "", pad: int = 0) -> bytes:
    """A page with no text of its own until its script runs (a shell); ``pad`` bytes of comment make it big."""
    filler = f"<!--{'x' * pad}-->" if pad else ""
    return (f'<!doctype html><html><head><title>Shell</title>{head}</head><body><div id="app"></div>{filler}'
            f'<script>document.getElementById("app").textContent = {json.dumps(words)};</script>'
            f'</body></html>').encode()


def counted_site(site: Site, routes: dict[str, Any]) -> tuple[LocalSite, Counter[str]]:
    seen: Counter[str] = Counter()

    def count(reply: Any) -> Callable[[SeenRequest], Reply]:
        def answer(req: SeenRequest) -> Reply:
            seen[req.path.split("?", 1)[0]] += 1
            return reply(req) if callable(reply) else reply
        return answer

    return site({"/robots.txt": ROBOTS, **{p: count(r) for p, r in routes.items()}}), seen


def renderer(pool: BrowserPool) -> Renderer:
    return Renderer(pool, RenderLimits(deadline=20))


def appended(home: EvidenceHome, receipts: tuple[Receipt, ...]) -> list[Receipt]:
    return home.ledger.append_many(list(receipts), home.signing_key())


def rendered(home: EvidenceHome, client: CheckedClient, pool: BrowserPool, url: str) -> list[Receipt]:
    """`g6 fetch URL --render auto` of a shell, its receipts appended: the raw read, the requests, the capture."""
    return appended(home, prepare_page(home.store, client, url, render_mode="auto", renderer=renderer(pool)).receipts)


def text_of(home: EvidenceHome, capture: Receipt) -> str:
    ref = capture.capture.get("text") if capture.capture else None
    return home.store.read_as(ref).decode() if ref else ""


def request(url: str, **kw: Any) -> SubRequest:
    d: dict[str, Any] = {"url": url, "method": "GET", "resource_type": "Document", "main_frame": True,
                         "service_worker_script": False, "accept": None, "max_bytes": 1 << 20, "time_left": 20.0}
    return SubRequest(**{**d, **kw})


def raw_document(home: EvidenceHome, client: CheckedClient, url: str) -> RawDocument:
    raw = prepare_fetch(home.store, client, url, pass_headers=RENDER_HEADERS)
    return RawDocument(url, raw.receipt, raw.page.response)


# -- FOUND: the bytes the browser is given are the receipt's ---------------------------------------------------

def _change(path: Path, how: str) -> None:
    os.chmod(path, 0o644)
    if how == "changed":  # other bytes of the same size under the same name (a disk, a hand, a bad sync)
        path.write_bytes(path.read_bytes().replace(WORDS.encode(), FAKE.encode()))
    elif how == "gone":
        path.unlink()
    else:  # a compressed blob whose frame no longer inflates
        path.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * (path.stat().st_size - 4))


@pytest.mark.parametrize(("how", "pad"), [("changed", 0), ("gone", 0), ("garbled", 4000)])
def test_the_browser_is_given_the_bytes_the_receipt_names_or_the_page_is_read_again(
        home: EvidenceHome, client: CheckedClient, pool: BrowserPool, site: Site, how: str, pad: int) -> None:
    """FOUND: ``_from_raw`` handed the browser ``store.read(blake3)``, unchecked. A batch queues its shells for the
    browsers (``prepare_page_steps``: the raw read now, the render later); what sits in the store under that name
    when the render starts is what the browser got. Changed bytes were rendered as the page while the capture's
    document receipt named the raw read's digests (its text the other words: a false capture, signed); a blob gone
    or garbled raised inside the fetcher after the receipt ``ok, answered with the raw read's bytes`` was made, so
    the capture listed a document answered that the browser was told failed, and kept no page at all.
    Now the bytes are read as the receipt names them (``read_as``) and, when they are not, the page is read again
    through the checked client, as before the change."""
    body = shell(WORDS, pad=pad)
    s, seen = counted_site(site, {"/": Reply(body=body)})
    step = prepare_page_steps(home.store, client, s.url("/"), render_mode="auto", renderer=renderer(pool))
    assert callable(step) and seen["/"] == 1  # a shell: its render still to do
    path = home.store.path(digests(body).blake3)
    assert path.name.endswith(".zst") is (pad > 0)
    _change(path, how)
    raw, *subs, capture = appended(home, step().receipts)
    text = text_of(home, capture)
    assert capture.outcome == "ok" and WORDS in text and FAKE not in text, (capture.outcome, capture.detail, text)
    doc = next(r for r in subs if r.request["resource_type"] == "Document")
    # whatever answered the page, its receipt names the bytes the browser rendered: here the server's, read again
    assert doc.content is not None and doc.content["sha256"] == digests(body).sha256
    assert "answered_from" not in doc.links and seen["/"] == 2


@pytest.mark.parametrize("bytes_kept", [True, False])
def test_a_capture_that_ends_before_the_raw_read_answers_does_not_say_the_request_was_sent(
        home: EvidenceHome, client: CheckedClient, site: Site, monkeypatch: pytest.MonkeyPatch,
        bytes_kept: bool) -> None:
    """FOUND: the capture ends (its deadline, a limit, a crash: ``seal``) while the page's first request is being
    answered from the raw read. ``seal`` receipted it as every request still under way, ``unreachable``: "it was
    sent, its answer is not kept"; nothing was sent (the raw read answers it). Worse with the bytes no longer in the
    store (``bytes_kept=False``): the page would then be read again, sent after the seal, which hands nothing to
    the checked client. Now the cut receipt says nothing was sent, and nothing is."""
    body = shell(WORDS)
    s, seen = counted_site(site, {"/": Reply(body=body)})
    first = raw_document(home, client, s.url("/"))
    if not bytes_kept:
        home.store.path(digests(body).blake3).unlink()
    fetcher = _SubFetcher(home.store, client, client.policy, new_receipt_id(), (), first)
    sealed: list[tuple[Receipt, ...]] = []
    real = render_mod.normalise_url

    def ends_now(url: str) -> Any:  # the capture ends while ``answers`` compares the URLs: a seal from the browser
        if not sealed:
            sealed.append(fetcher.seal())
        return real(url)

    monkeypatch.setattr(render_mod, "normalise_url", ends_now)
    got = fetcher(request(s.url("/")))
    assert got.fail is not None and got.body == b"" and seen["/"] == 1  # nothing sent, nothing given
    (cut,) = sealed[0]
    assert cut.outcome == "unreachable" and cut.detail["reason"] == "capture_ended"
    assert "nothing was sent" in cut.detail["message"], cut.detail
    assert fetcher.seal() == sealed[0]  # and no second receipt of it


# -- HELD: what the browser is given is what a read of its own would have given it ------------------------------

HEADERS = (("Content-Security-Policy", "default-src 'self'"), ("Content-Security-Policy", "img-src 'none'"),
           ("X-Frame-Options", "DENY"), ("X-Content-Type-Options", "nosniff"),
           ("Referrer-Policy", "no-referrer"), ("Cross-Origin-Opener-Policy", "same-origin"),
           ("Content-Language", "de"), ("Set-Cookie", "id=1"), ("Cache-Control", "no-store"))


@pytest.mark.parametrize("ctype", ["text/html; charset=windows-1252", "text/html", None])
def test_the_raw_reads_answer_is_the_answer_a_read_of_its_own_gives(
        home: EvidenceHome, client: CheckedClient, site: Site, monkeypatch: pytest.MonkeyPatch,
        ctype: str | None) -> None:
    """HELD: through ``prepare_page_steps`` itself (the raw read as ``--render auto`` makes it), the first request's
    answer (status, headers, body) is the one the old path's read of the page gives: every restricting header
    (two CSPs, X-Frame-Options, nosniff, Referrer-Policy, COOP), the charset or its absence, never a cookie."""
    body = "<!doctype html><html><body><div id=app></div><script>app.textContent='\u00e9'</script></body></html>"
    s, _ = counted_site(site, {"/": Reply(body=body.encode("cp1252"), headers=HEADERS, content_type=ctype)})
    given: dict[str, Any] = {}

    def fake_render(*a: Any, first: RawDocument | None = None, **kw: Any) -> Any:
        given["first"] = first
        raise RuntimeError("no browser here")

    monkeypatch.setattr(render_mod, "prepare_render", fake_render)
    step = prepare_page_steps(home.store, client, s.url("/"), render_mode="auto",
                              renderer=Renderer(object(), RenderLimits()))  # type: ignore[arg-type]
    assert callable(step)
    with pytest.raises(RuntimeError):
        step()
    first = given["first"]
    assert isinstance(first, RawDocument) and first.usable
    a = _SubFetcher(home.store, client, client.policy, new_receipt_id(), (), first)(request(s.url("/")))
    b = _SubFetcher(home.store, client, client.policy, new_receipt_id(), ())(request(s.url("/")))
    assert (a.status, sorted(a.headers), a.body) == (b.status, sorted(b.headers), b.body)
    names = [k for k, _ in a.headers]
    assert "set-cookie" not in names and "x-frame-options" in names and "x-content-type-options" in names
    assert ("content-security-policy", "default-src 'self', img-src 'none'") in a.headers
    assert ("content-type" in names) is (ctype is not None)


@pytest.mark.parametrize("status", [204, 205])
def test_an_answer_without_a_body_is_never_given_from_the_raw_read(home: EvidenceHome, client: CheckedClient,
                                                                   site: Site, status: int) -> None:
    s, _ = counted_site(site, {"/": Reply(status, b"")})
    assert not raw_document(home, client, s.url("/")).usable


def test_only_a_request_for_the_very_url_read_is_answered(home: EvidenceHome, client: CheckedClient,
                                                           site: Site) -> None:
    """HELD: ``answers`` matches after ``normalise_url``, which is what the checked client would have sent for
    the browser's URL: every form that is another request (query order, case, an encoded character, a slash, a
    port, a scheme, a host spelled otherwise) is read again; the forms that send the same request (a fragment, the
    scheme's case) are answered."""
    s, _ = counted_site(site, {"/Page": Reply(body=shell(WORDS))})
    url = s.url("/Page?a=1&b=2")
    first = raw_document(home, client, url)
    assert first.usable
    host, port = s.base_url.split("//", 1)[1].split(":")
    others = [s.url("/Page?b=2&a=1"), s.url("/page?a=1&b=2"), s.url("/Pag%65?a=1&b=2"), s.url("/Page/?a=1&b=2"),
              s.url("/Page?a=1&b=%32"), s.url("/Page?a=1"), s.url("/Page?a=1&b=2&"), s.url("/Page"),
              f"http://{host}:{int(port) + 1}/Page?a=1&b=2", f"https://{host}:{port}/Page?a=1&b=2",
              f"http://localhost:{port}/Page?a=1&b=2", s.url("/Page;x?a=1&b=2"), s.url("/./Page?a=1&b=2x")]
    for other in others:
        assert not first.answers(request(other)), other
    for same in (url, url + "#frag", url.replace("http:", "HTTP:")):
        assert first.answers(request(same)), same


# -- HELD: end to end in a browser -----------------------------------------------------------------------------

def test_a_big_shell_kept_compressed_is_given_whole(home: EvidenceHome, client: CheckedClient, pool: BrowserPool,
                                                     site: Site) -> None:
    """HELD: a shell over 512 bytes is kept zstd-compressed; the browser is given its raw bytes, not the frame."""
    body = shell(WORDS, pad=20_000)
    s, seen = counted_site(site, {"/": Reply(body=body)})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert home.store.path(raw.content["blake3"]).name.endswith(".zst")  # type: ignore[index]
    assert seen["/"] == 1 and subs[0].links.get("answered_from") == raw.receipt_id
    assert subs[0].content == raw.content and WORDS in text_of(home, capture)
    assert home.verify().ok


RELOADS = {
    "reload": "<script>location.reload()</script>",
    "same_href": "<script>location.href = location.href</script>",
    "meta_refresh": '<meta http-equiv="refresh" content="0">',
    "replace": "<script>location.replace(location.pathname)</script>",
}


@pytest.mark.parametrize("how", sorted(RELOADS))
def test_a_page_that_loads_itself_again_is_read_again(home: EvidenceHome, client: CheckedClient,
                                                      pool: BrowserPool, site: Site, how: str) -> None:
    """HELD: the raw read answers one request only. The shell loads its own URL again (a reload, a navigation to
    itself, a meta refresh); the server's second answer is another page, and that is what the capture shows, read
    through the checked client, its receipt not ``answered_from``."""
    n = [0]

    def answer(req: SeenRequest) -> Reply:
        n[0] += 1
        return Reply(body=shell("the first answer, which loads itself again", head=RELOADS[how]) if n[0] == 1
                     else shell(WORDS))

    s, seen = counted_site(site, {"/": answer})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    docs = [r for r in subs if r.request["resource_type"] == "Document"]
    assert seen["/"] >= 2 and len(docs) == seen["/"]  # the raw read, then each load in the browser but its first
    assert capture.outcome == "ok" and WORDS in text_of(home, capture), (how, seen, capture.detail)
    assert [("answered_from" in d.links) for d in docs] == [True] + [False] * (len(docs) - 1)
    assert capture.final_url == raw.final_url and home.verify().ok


def test_push_state_reads_nothing_and_the_capture_names_the_url_read(home: EvidenceHome, client: CheckedClient,
                                                                     pool: BrowserPool, site: Site) -> None:
    head = '<script>history.pushState({}, "", "/elsewhere")</script>'
    s, seen = counted_site(site, {"/": Reply(body=shell(WORDS, head=head)), "/elsewhere": Reply(body=b"no")})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert (seen["/"], seen["/elsewhere"]) == (1, 0)
    assert capture.final_url == raw.final_url == s.url("/") and WORDS in text_of(home, capture)
    assert str(capture.capture.get("location_url", "")).endswith("/elsewhere")


def test_a_secret_in_the_url_stays_out_of_every_receipt(home: EvidenceHome, policy: Any, pool: BrowserPool,
                                                        site: Site) -> None:
    """HELD: the request answered from the raw read is receipted through the same redaction as the raw read."""
    secret = "s3cr3t-VALUE-0123456789"
    s, seen = counted_site(site, {"/": Reply(body=shell(WORDS))})
    with CheckedClient(policy, secrets=(secret,)) as c:
        receipts = rendered(home, c, pool, s.url(f"/?token={secret}&api_key=another-{secret}"))
    raw, *subs, capture = receipts
    assert seen["/"] == 1 and subs[0].links.get("answered_from") == raw.receipt_id
    for r in receipts:
        assert secret not in json.dumps(r.to_json()), r.receipt_id


def test_the_capture_is_cited_bundled_exported_and_verified(home: EvidenceHome, client: CheckedClient,
                                                            pool: BrowserPool, site: Site, tmp_path: Path) -> None:
    """HELD: the consumers of a capture whose document was answered from the raw read: ``ledger verify``, a cite
    of the rendered text, ``bundle`` + ``bundle verify`` (each request's receipt a part of this capture, its sha256
    the one listed), and the WARC (the document a revisit of the raw read's response, the same bytes)."""
    s, _ = counted_site(site, {"/": Reply(body=shell(WORDS))})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert subs[0].links.get("answered_from") == raw.receipt_id
    assert home.verify().ok
    citation = cite_web(home, capture.receipt_id, quote=WORDS)
    assert citation.text_source == "rendered"
    manifest = tmp_path / "m.json"
    save_manifest(Manifest.new().with_citation(citation), manifest)
    build_bundle(home, manifest, tmp_path / "b.zip")
    report = verify_bundle(tmp_path / "b.zip", (home.signing_key().public,), allow_unsigned=True)
    checks = {c.check: (c.ok, c.detail) for c in report.citations[0].checks}
    assert report.ok and checks["capture"][0], checks
    summary = export_warc(home, tmp_path / "out.warc", [e.receipt for e in home.ledger.entries()])
    assert summary.responses >= 1 and summary.revisits >= 1


def test_the_byte_budget_left_is_held_to(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """HELD: a raw read bigger than what the capture may still take is not handed over: the page is read again
    under the capture's budget (``too_large``, over budget), as before."""
    body = shell(WORDS, pad=5000)
    s, seen = counted_site(site, {"/": Reply(body=body)})
    first = raw_document(home, client, s.url("/"))
    fetcher = _SubFetcher(home.store, client, replace(client.policy), new_receipt_id(), (), first)
    got = fetcher(request(s.url("/"), max_bytes=len(body) - 1))
    assert got.fail is not None and got.over_budget and seen["/"] == 2
    assert not any("answered_from" in r.links for r in fetcher.seal())


def test_a_stopped_and_resumed_batch_keeps_each_shells_receipts_once(home: EvidenceHome, client: CheckedClient,
                                                                     site: Site) -> None:
    """HELD: a batch of shells stopped (Ctrl-C) after its first result, then resumed (``run_id``): each URL has one
    raw read and one capture in the ledger, each document answered from a raw read names the raw read its own
    capture links to (``links.raw``), in the same group, and the ledger verifies. (A stop closes the batch's
    browsers: each run has a pool of its own, not the module's.)"""
    with started_pool() as stopped_pool:
        paths = ["/s1", "/s2", "/s3"]
        s, seen = counted_site(site, {p: Reply(body=shell(WORDS + p)) for p in paths})
        urls = [s.url(p) for p in paths]

        def stop(*_: Any) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            batch_fetch(home, client, urls, run_id="r1", concurrency=1, on_result=stop, render_mode="auto",
                        renderer=renderer(stopped_pool))
    with BrowserPool(1) as pool:
        report = batch_fetch(home, client, urls, run_id="r1", concurrency=1, render_mode="auto",
                             renderer=renderer(pool))
    assert report.resumed >= 1 and all(r.render and r.render["rendered"] for r in report.results)
    entries = [e.receipt for e in home.ledger.entries()]
    by_id = {r.receipt_id: r for r in entries}
    captures = [r for r in entries if r.capture is not None]
    raws = [r for r in entries if r.capture is None and "capture" not in r.links and r.request["url"] in urls]
    assert sorted(r.request["url"] for r in captures) == sorted(r.request["url"] for r in raws) == sorted(urls)
    for c in captures:
        parts = [by_id[x["receipt_id"]] for x in c.capture["resources"]]
        answered = [p for p in parts if "answered_from" in p.links]
        assert [p.links["answered_from"] for p in answered] == [c.links["raw"]]
        assert WORDS in text_of(home, c)
    assert sum(1 for r in entries if "answered_from" in r.links) == len(urls)
    assert home.verify().ok


def test_pywb_replays_the_document_answered_from_the_raw_read(home: EvidenceHome, client: CheckedClient,
                                                              pool: BrowserPool, site: Site, tmp_path: Path) -> None:
    """HELD: in the WARC the capture's document is a revisit of the raw read's response (the same URL, the same
    WARC-Date, the same payload); pywb replays it at the capture's time as the bytes and type the raw read got, and
    the WACZ (its pages: the raw read and the capture) validates."""
    body = shell(WORDS, head='<meta name="x" content="replayed">')
    s, _ = counted_site(site, {"/": Reply(body=body, content_type="text/html; charset=utf-8")})
    raw, *subs, capture = rendered(home, client, pool, s.url("/"))
    assert subs[0].links.get("answered_from") == raw.receipt_id
    every = [e.receipt for e in home.ledger.entries()]
    warc, wacz = tmp_path / "out.warc.gz", tmp_path / "out.wacz"
    export_warc(home, warc, every)
    export_wacz(home, wacz, every)
    recs = records(warc)
    at_page = [(t, h["WARC-Date"]) for t, h, _, _, _ in recs if h.get("WARC-Target-URI") == s.url("/")
               and t in ("response", "revisit")]
    assert sorted(at_page) == sorted([("response", at_page[0][1]), ("revisit", at_page[0][1])]), at_page
    with zipfile.ZipFile(wacz) as z:
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()[1:]]
    assert {p["id"] for p in pages} == {raw.receipt_id, capture.receipt_id}
    ok = subprocess.run([tool("wacz"), "validate", "-f", str(wacz)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr
    root = tmp_path / "pywb"
    root.mkdir()
    for args in (["init", "g6"], ["add", "g6", str(warc)]):
        r = subprocess.run([tool("wb-manager"), *args], cwd=root, capture_output=True, text=True, env=no_proxy_env(),
                           timeout=120)
        assert r.returncode == 0, r.stderr
    ts = "".join(ch for ch in capture.fetched_at if ch.isdigit())[:14]
    with pywb_wayback(root, tmp_path / "wayback.log") as url, httpx.Client(trust_env=False, timeout=30) as c:
        got = c.get(f"{url}/g6/{ts}id_/{s.url('/')}")
    assert got.status_code == 200 and got.content == body
    assert got.headers["content-type"].startswith("text/html")
