"""A login, challenge or consent page served with 200 is a wall, not the page.

The read succeeded (its outcome stays ``ok``: the bytes are what the server sent, and they are kept
and receipted), but the words are the wall's. So the fetch result and the receipt say so
(``interstitial``: its kind and what gave it away), ``g6 cite`` refuses such a read, and ``g6 recheck``
never calls a citation ``current`` against one, even when the wall shows the cited sentence (a teaser).
Pages that merely carry the parts of a wall (a login box in the header, a cookie banner beside the
article, a captcha on a contact form, an article about challenge pages) are not flagged.
Every page is one of ``fixtures/interstitial`` (see its README), served by a real HTTP server on loopback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient
from g6.adapters.html.interstitial import LITTLE_TEXT, MAX_INSPECT, Interstitial, detect
from g6.cite.cite import cite_web, web_citation_id
from g6.cite.manifest import Manifest, save_manifest
from g6.cite.recheck import recheck
from g6.compat.knowledge_fetcher import page_result
from g6.demo.site import LocalSite, Reply
from g6.errors import InterstitialReadError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from tests.conftest import FIXTURES, validate

Site = Callable[..., LocalSite]
PAGES = FIXTURES / "interstitial"
TEASER = "Wholesale electricity prices fell by 12% in November"

WALLS = {
    "cloudflare-just-a-moment.html": ("challenge", "Cloudflare challenge title"),
    "cloudflare-attention-required.html": ("challenge", "Cloudflare challenge title"),
    "akamai-access-denied.html": ("challenge", "Akamai access denied page"),
    "ddos-guard.html": ("challenge", "DDoS-Guard challenge title"),
    "captcha-check.html": ("challenge", "captcha form (reCAPTCHA) and little else"),
    "login-page.html": ("login", "password form"),
    "login-teaser.html": ("login", "password form"),
    "consent-before-you-continue.html": ("consent", "consent title (Before you continue)"),
    "consent-wall-cmp.html": ("consent", "consent dialog (IAB TCF CMP)"),
}
NOT_WALLS = ("article-header-login.html", "article-comment-login.html", "article-cookie-banner.html",
             "contact-recaptcha.html", "article-about-challenges.html")


def page(name: str) -> bytes:
    return (PAGES / name).read_bytes()


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args], capture_output=True,
                          text=True, timeout=120, env={**_env(), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"})


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("G6_")}


def test_the_fixtures_are_all_named() -> None:
    assert sorted(p.name for p in PAGES.glob("*.html")) == sorted([*WALLS, *NOT_WALLS])


# -- the detector -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(WALLS))
def test_walls_are_flagged_with_what_gave_them_away(name: str) -> None:
    assert detect(page(name), status=200) == Interstitial(*WALLS[name])


@pytest.mark.parametrize("name", NOT_WALLS)
def test_pages_with_a_walls_parts_are_not_walls(name: str) -> None:
    """A login box in the header or under the article, a cookie banner beside it, a captcha on a contact
    form, challenge titles and markers quoted in an article's text: none of them is a wall."""
    assert detect(page(name), status=200) is None


def test_a_challenge_is_told_by_its_script_without_its_title() -> None:
    body = page("cloudflare-just-a-moment.html").replace(b"<title>Just a moment...</title>", b"")
    assert detect(body) == Interstitial("challenge", "Cloudflare challenge marker")


def test_a_consent_host_is_a_consent_wall() -> None:
    wall = detect(b"<html><body><p>anything</p></body></html>",
                  final_url="https://consent.google.com/ml?continue=https://www.google.com/")
    assert wall == Interstitial("consent", "consent host consent.google.com")


def test_only_a_2xx_page_is_judged() -> None:
    """A 403 or 503 challenge is a failed read already (blocked, server_error): no second word on it."""
    assert detect(page("cloudflare-just-a-moment.html"), status=503) is None
    assert detect(page("login-page.html"), status=204) == Interstitial("login", "password form")


def test_a_long_article_with_a_login_form_in_its_body_is_not_a_wall() -> None:
    """The amount of other text decides: a teaser under the limit is a wall, the whole story is not."""
    para = "<p>" + "word " * 40 + "</p>"
    form = b'<form action="/login"><input type="password" name="p"></form>'
    short = f"<html><body><main>{para * 2}".encode() + form + b"</main></body></html>"
    long = f"<html><body><main>{para * 12}".encode() + form + b"</main></body></html>"
    assert 8 * 40 < LITTLE_TEXT < 4 * 12 * 40
    assert detect(short) == Interstitial("login", "password form")
    assert detect(long) is None


def test_the_bytes_inspected_are_capped() -> None:
    """Only the first MAX_INSPECT bytes are read: a password form past them is not seen (and a huge page is
    never parsed whole); inside them it is."""
    form = b'<form action="/login"><input type="password" name="p"></form>'
    pad = b"<!--" + b" " * MAX_INSPECT + b"-->"
    assert detect(b"<html><body>" + form + pad + b"</body></html>") == Interstitial("login", "password form")
    assert detect(b"<html><body>" + pad + form + b"</body></html>") is None


def test_evidence_never_holds_the_pages_own_words() -> None:
    """The evidence goes into a signed receipt, which never holds body text: fixed words only."""
    for name, (_, evidence) in WALLS.items():
        assert evidence in {w.evidence for w in (detect(page(name)),) if w is not None}
        assert "12%" not in evidence and "Daily Ledger" not in evidence


# -- fetch: the result, the receipt, the source documents' shapes ---------------------------------------------
@pytest.fixture
def served(site: Site) -> LocalSite:
    routes: dict[str, Any] = {f"/{n}": Reply(body=page(n)) for n in [*WALLS, *NOT_WALLS]}
    routes["/robots.txt"] = Reply(404, b"")
    return site(routes)


def test_fetch_flags_a_wall_in_the_result_and_the_receipt(home: EvidenceHome, client: CheckedClient,
                                                          served: LocalSite) -> None:
    for name in [*WALLS, *NOT_WALLS]:
        result = fetch(home, client, served.url(f"/{name}"))
        receipt = home.ledger.get(result.receipt_id)
        assert result.outcome.value == "ok" and result.status == 200, name  # the read itself succeeded
        if name in WALLS:
            kind, evidence = WALLS[name]
            assert result.interstitial == {"kind": kind, "evidence": evidence}, name
            assert receipt.interstitial == {"kind": kind, "evidence": evidence}
            assert result.to_json()["interstitial"] == {"kind": kind, "evidence": evidence}
        else:
            assert result.interstitial is None and receipt.interstitial is None, name
            assert "interstitial" not in result.to_json() and "interstitial" not in receipt.to_json()
        ok, why = receipt.verify_signature(home.keys.trusted())
        assert ok, why
        reply = page_result(home, result).to_json()  # g6 fetch --json, the MCP fetch tool
        validate(reply, "fetch-result.v1")
        assert reply.get("interstitial") == result.interstitial


def test_an_unflagged_receipt_is_signed_as_before() -> None:
    """The field is absent when not flagged, so a receipt signed before it existed verifies unchanged;
    a flagged one signs the field (it cannot be taken off without breaking the signature)."""
    from g6.ledger.keys import SigningKey

    key = SigningKey.generate()
    keys = {key.key_id: key.public}
    plain = Receipt(kind="fetch", source="web", request={"url": "https://example.org/"}, outcome="ok",
                    outcome_code="G6_E_KNOWLEDGE_FETCHED").signed(key)
    assert "interstitial" not in plain.to_json()
    assert Receipt.from_json(json.loads(json.dumps(plain.to_json()))).verify_signature(keys)[0]
    wall = replace(plain, signature=None, interstitial={"kind": "login", "evidence": "password form"}).signed(key)
    again = Receipt.from_json(json.loads(json.dumps(wall.to_json())))
    assert again.interstitial == {"kind": "login", "evidence": "password form"} and again.verify_signature(keys)[0]
    stripped = {k: v for k, v in wall.to_json().items() if k != "interstitial"}
    assert not Receipt.from_json(stripped).verify_signature(keys)[0]
    validate(wall.to_json(), "receipt.v1")


def test_g6_fetch_says_so_in_text_json_runx_and_batch_lines(home: EvidenceHome, served: LocalSite,
                                                             tmp_path: Path) -> None:
    url = served.url("/login-page.html")
    text = g6(home, "fetch", url)
    assert text.returncode == 0, text.stderr
    assert "!!! interstitial: a login page (password form)" in text.stdout
    as_json = g6(home, "fetch", url, "--json")
    reply = json.loads(as_json.stdout)
    validate(reply, "fetch-result.v1")
    assert reply["outcome"] == "ok" and reply["interstitial"] == {"kind": "login", "evidence": "password form"}
    runx = json.loads(g6(home, "fetch", url, "--as", "runx").stdout)
    validate(runx, "fetch-result.runx.v1")
    assert runx["decision"] == "needs_agent" and runx["interstitial"]["kind"] == "login"
    plain = json.loads(g6(home, "fetch", served.url("/article-header-login.html"), "--as", "runx").stdout)
    assert plain["decision"] == "ready" and "interstitial" not in plain
    urls = (served.url("/ddos-guard.html"), served.url("/article-cookie-banner.html"))
    (tmp_path / "urls.txt").write_text("".join(u + "\n" for u in urls))
    batch = g6(home, "fetch", "--input", str(tmp_path / "urls.txt"), "--json")
    lines = {json.loads(x)["url"]: json.loads(x) for x in batch.stdout.splitlines()}
    for line in lines.values():
        validate(line, "fetch-line.v1")
    assert lines[served.url("/ddos-guard.html")]["interstitial"] == {"kind": "challenge",
                                                                     "evidence": "DDoS-Guard challenge title"}
    assert "interstitial" not in lines[served.url("/article-cookie-banner.html")]


# -- cite and re-check ----------------------------------------------------------------------------------------
def test_cite_refuses_a_walls_read(home: EvidenceHome, client: CheckedClient, served: LocalSite,
                                   tmp_path: Path) -> None:
    """The teaser's sentence is on the login wall, but a wall's words are no evidence of the page."""
    rid = fetch(home, client, served.url("/login-teaser.html")).receipt_id
    with pytest.raises(InterstitialReadError) as e:
        cite_web(home, rid, quote=TEASER)
    assert e.value.code == "G6_E_CITE_INTERSTITIAL" and e.value.interstitial["kind"] == "login"
    r = g6(home, "cite", rid, "--quote", TEASER, "--manifest", str(tmp_path / "m.json"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "login page (password form)" in r.stderr and not (tmp_path / "m.json").exists()
    ok = fetch(home, client, served.url("/article-cookie-banner.html")).receipt_id
    assert cite_web(home, ok, quote=TEASER).text_source == "main"


def _article_then(site: Site, home: EvidenceHome, client: CheckedClient, later: str) -> tuple[Any, Manifest]:
    """A signed manifest citing the teaser sentence of the article; the site then serves ``later``."""
    s = site({"/news/energy.html": Reply(body=page("article-header-login.html")), "/robots.txt": Reply(404, b"")})
    rid = fetch(home, client, s.url("/news/energy.html")).receipt_id
    m = Manifest.new().with_citation(cite_web(home, rid, quote=TEASER)).signed(home.signing_key())
    s.routes = {**s.routes, "/news/energy.html": Reply(body=page(later))}
    return s, m


@pytest.mark.parametrize("later", ["login-teaser.html", "consent-wall-cmp.html", "cloudflare-just-a-moment.html"])
def test_recheck_never_calls_current_against_a_wall(home: EvidenceHome, client: CheckedClient, site: Site,
                                                    later: str) -> None:
    """The page later turns into a wall. On the login wall the cited sentence is still there (in the teaser),
    yet the verdict is interstitial (could not check, exit 3), never current, changed or gone."""
    _, m = _article_then(site, home, client, later)
    report = recheck(home, client, m, workers=1)
    v = report.verdicts[0]
    assert v.verdict == "interstitial", v
    assert v.detail["interstitial"] == dict(zip(("kind", "evidence"), WALLS[later], strict=True))
    assert report.exit_code == 3
    validate(json.loads(json.dumps(report.to_json())), "recheck-report.v1")
    receipt = home.ledger.get(v.receipt_id)
    assert receipt.kind == "recheck" and receipt.interstitial == v.detail["interstitial"]


def test_recheck_of_a_page_with_a_cookie_banner_stays_current(home: EvidenceHome, client: CheckedClient,
                                                              site: Site) -> None:
    _, m = _article_then(site, home, client, "article-cookie-banner.html")
    v = recheck(home, client, m, workers=1).verdicts[0]
    assert v.verdict == "current", v
    assert v.receipt_id is not None and home.ledger.get(v.receipt_id).interstitial is None


def _older_citation_of_a_wall(home: EvidenceHome, client: CheckedClient, site: Site) -> tuple[LocalSite, Any, Any]:
    """(site, a citation of the article, a citation of the login wall as an older g6 made it: no refusal)."""
    s = site({"/a": Reply(body=page("article-header-login.html")), "/w": Reply(body=page("login-teaser.html")),
              "/robots.txt": Reply(404, b"")})
    good = cite_web(home, fetch(home, client, s.url("/a")).receipt_id, quote=TEASER)
    wall = home.ledger.get(fetch(home, client, s.url("/w")).receipt_id)
    assert good.start is not None and good.end is not None
    cid = web_citation_id(wall.receipt_id, good.start, good.end, good.text, good.text_source or "main")
    return s, good, replace(good, citation_id=cid, receipt_id=wall.receipt_id, content=dict(wall.content or {}),
                            requested_url=wall.request["url"], source_url=wall.final_url or "")


def test_a_citation_of_a_walls_read_is_unverified(home: EvidenceHome, client: CheckedClient, site: Site,
                                                  tmp_path: Path) -> None:
    """A manifest made by an older g6 (which did not refuse) cites the login wall: re-check does not fetch
    it, and manifest verify fails it, whatever the page serves now."""
    s, _, c = _older_citation_of_a_wall(home, client, site)
    m = Manifest.new().with_citation(c).signed(home.signing_key())
    s.routes = {**s.routes, "/w": Reply(body=page("article-header-login.html"))}
    report = recheck(home, client, m, workers=1)
    v = report.verdicts[0]
    assert v.verdict == "unverified" and "login page (password form)" in v.detail["reason"], v
    assert v.receipt_id is None and report.exit_code == 1
    save_manifest(m, tmp_path / "m.json")
    r = g6(home, "manifest", "verify", str(tmp_path / "m.json"))
    assert r.returncode == 1 and "login page" in r.stdout, r.stdout


def test_mcp_fetch_flags_the_wall_and_cite_refuses_it(tmp_path: Path, served: LocalSite) -> None:
    """The MCP fetch tool answers as `g6 fetch --json` does (the flag included); the cite tool refuses."""
    from tests.test_mcp import env_for, session_calls

    env = env_for(tmp_path, G6_MCP_SENSITIVE="all")
    _, (fetched,) = session_calls(env, [("fetch", {"url": served.url("/login-teaser.html")})])
    assert fetched["outcome"] == "ok" and fetched["interstitial"] == {"kind": "login", "evidence": "password form"}
    args = {"receipt_id": fetched["receipt_id"], "quote": TEASER, "manifest": str(tmp_path / "m.json")}
    _, (refused,) = session_calls(env, [("cite", args)])
    assert refused["status"] == "blocked-escalated" and refused["code"] == "G6_E_CITE_INTERSTITIAL", refused
    assert "login page (password form)" in refused["message"]


def test_bundle_verify_fails_a_citation_of_a_walls_read(home: EvidenceHome, client: CheckedClient, site: Site,
                                                        tmp_path: Path) -> None:
    """Offline, with only the publisher's key: the signed receipt says the read met a wall, so the citation
    of it fails its read check (the other citation holds)."""
    from g6.prove.bundle import build_bundle, verify_bundle

    _, good, of_wall = _older_citation_of_a_wall(home, client, site)
    m = Manifest.new().with_citation(good).with_citation(of_wall).signed(home.signing_key())
    save_manifest(m, tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    report = verify_bundle(tmp_path / "b.zip", (home.signing_key().public,))
    assert not report.ok
    reads = [next(c for c in v.checks if c.check == "read") for v in report.citations]
    assert reads[0].ok and not reads[1].ok
    assert "login page (password form)" in reads[1].detail, reads[1].detail
    validate(report.to_json(), "bundle-verify.v1")


def test_no_page_of_the_browser_fixtures_is_a_wall() -> None:
    """Real-world-like articles of fixtures/browser-pages, one a short news article with a cookie dialog beside
    it (fewer words than a wall may hold): a dialog that says less than the page around it is a banner."""
    pages = sorted((PAGES.parent / "browser-pages" / "pages").glob("*.html"))
    assert len(pages) >= 8
    flagged = {p.name: w for p in pages if (w := detect(p.read_bytes(), status=200,
                                                       final_url="https://harbourpost.example/a")) is not None}
    assert flagged == {}
