"""The cache of each page's texts (``$G6_HOME/derived/page-texts.sqlite3``): a check that reads a body again takes its
texts from it, with the same verdicts; it is never trusted over the body (a row edited on disk, made with another
key or by another extractor is ignored; a body gone from the store is not judged from its old texts); whatever
goes wrong with it only costs time; ``forget`` removes a body's rows."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

import g6.report.check as check_mod
import g6.report.texts_cache as tc
from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.report.texts_cache import DERIVED, FILE, TextsCache, forget, mac_key, open_cache
from tests.report.check_helpers import QUOTE, article, check, cite, g6, report_of, same, write_report

Site = Callable[..., LocalSite]
FAKE = "The council approved every claim in this report."


def _rows(home_root: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(home_root / DERIVED / FILE)
    try:
        return db.execute("SELECT blake3, read_key FROM texts").fetchall()
    finally:
        db.close()


def _no_extraction(*_: object) -> None:
    raise AssertionError("texts extracted although the cache holds them")


@pytest.fixture
def pages(site: Site) -> LocalSite:
    return site({"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article("Water prices were flat.")),
                 "/robots.txt": Reply(404)})


def _report(s: LocalSite) -> object:
    return report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), FAKE), cite(s.url("/b"), None, "Water was flat."),
                     cite(s.url("/b"), "Water prices were flat."))


def test_a_second_check_takes_the_texts_from_the_cache_with_the_same_verdicts(
        home: EvidenceHome, client: CheckedClient, pages: LocalSite, monkeypatch: pytest.MonkeyPatch) -> None:
    first = check(home, _report(pages), client)
    assert len(_rows(home.root)) == 2  # one row a body read
    monkeypatch.setattr(check_mod, "body_texts", _no_extraction)
    again = check(home, _report(pages), None)  # receipts only: every page from the home, its texts from the cache
    assert same(again) == same(first)
    assert [v.verdict for v in again.verdicts] == ["quote_found", "quote_not_found", "no_quote", "quote_found"]


def _forge(home: EvidenceHome, key: bytes) -> None:
    """Rewrite every row with the fake sentence in its main text, signed with ``key``."""
    db = sqlite3.connect(home.root / DERIVED / FILE)
    rows = db.execute("SELECT blake3, read_key, payload FROM texts").fetchall()
    for blake3, rkey, payload in rows:
        texts = tc._decode(bytes(payload))
        forged = tc.PageTexts(texts.outcome, texts.reason, f"{texts.main}\n{FAKE}", texts.visible, texts.hidden,
                              texts.media_type)
        data = tc.zstandard.ZstdCompressor().compress(tc.orjson.dumps(
            [forged.outcome.value, forged.reason, forged.main, forged.visible, [], forged.media_type]))
        db.execute("UPDATE texts SET payload = ?, mac = ? WHERE blake3 = ? AND read_key = ?",
                   (data, tc._mac(key, blake3, rkey, data), blake3, rkey))
    db.commit()
    db.close()


@pytest.mark.parametrize("how", ["edited", "another key", "garbage"])
def test_a_row_that_does_not_verify_is_ignored_and_the_texts_extracted_again(
        home: EvidenceHome, client: CheckedClient, pages: LocalSite, how: str) -> None:
    first = check(home, _report(pages), client)
    assert first.verdicts[1].verdict == "quote_not_found"
    if how == "garbage":
        (home.root / DERIVED / FILE).write_bytes(b"not a database" * 100)
    else:
        key = mac_key(home.signing_key())
        _forge(home, b"\0" * 32 if how == "another key" else key)
        if how == "edited":  # the MAC is of the row as made: change the payload after it
            db = sqlite3.connect(home.root / DERIVED / FILE)
            db.execute("UPDATE texts SET payload = payload || x'00'")
            db.commit()
            db.close()
    again = check(home, _report(pages), None)
    assert same(again) == same(first)  # the fake sentence is nowhere: the bodies were read again


def test_a_row_is_used_only_with_its_body_intact_in_the_store(home: EvidenceHome, client: CheckedClient,
                                                             pages: LocalSite) -> None:
    first = check(home, _report(pages), client)
    blob = first.verdicts[0].read["content"]["blake3"]
    path = next(p for p in (home.root / "knowledge" / "fetched").rglob("*") if p.is_file()
                and blob.split(":")[1] in p.name)
    path.unlink()  # the body is gone (as redaction, or a disk, would leave it)
    again = check(home, _report(pages), None)
    gone = again.verdicts[0]
    assert gone.verdict == "source_failed" and "cannot be read" in gone.reason
    assert again.verdicts[3].verdict == "quote_found"  # the other page's body is there


def test_another_extractor_or_another_address_is_another_row(home: EvidenceHome, client: CheckedClient,
                                                            pages: LocalSite, monkeypatch: pytest.MonkeyPatch) -> None:
    check(home, _report(pages), client)
    cache = open_cache(home)
    assert cache is not None
    r = home.ledger.get(check(home, _report(pages), None).verdicts[0].receipt_id)
    url, ctype = r.final_url, r.detail.get("content_type")
    assert cache.get(r.content["blake3"], url, ctype) is not None
    assert cache.get(r.content["blake3"], url + "?other", ctype) is None
    assert cache.get(r.content["blake3"], url, "text/plain") is None
    monkeypatch.setattr(tc, "extractor", lambda: "a newer extractor")
    assert cache.get(r.content["blake3"], url, ctype) is None
    cache.close()


def test_forget_removes_every_row_of_a_body(home: EvidenceHome, client: CheckedClient, pages: LocalSite) -> None:
    first = check(home, _report(pages), client)
    blob = first.verdicts[0].read["content"]["blake3"]
    db = sqlite3.connect(home.root / DERIVED / FILE)
    (payload,) = db.execute("SELECT payload FROM texts WHERE blake3 = ?", (blob,)).fetchone()
    db.close()
    assert forget(home.root, blob) == 1 and forget(home.root, blob) == 0
    left = b"".join(p.read_bytes() for p in (home.root / DERIVED).iterdir())
    assert bytes(payload)[8:40] not in left  # no copy in the file, its free pages or its write-ahead log
    assert [b for b, _ in _rows(home.root)] == [first.verdicts[2].read["content"]["blake3"]]
    assert forget(home.root / "nowhere", blob) == 0


def test_a_cache_that_cannot_be_opened_costs_nothing_but_time(home: EvidenceHome, client: CheckedClient,
                                                              pages: LocalSite) -> None:
    (home.root / DERIVED).mkdir(parents=True)
    (home.root / DERIVED / FILE).mkdir()  # a folder where the file should be
    first = check(home, _report(pages), client)
    assert [v.verdict for v in first.verdicts] == ["quote_found", "quote_not_found", "no_quote", "quote_found"]
    assert TextsCache(home.root, b"k").get("blake3:x", "http://x/", None) is None


def test_forked_checks_fill_the_cache_and_read_it(tmp_path: Path, site: Site) -> None:
    routes = {**{f"/p{i}": Reply(body=article(f"Page {i} says {QUOTE}")) for i in range(10)},
              "/robots.txt": Reply(404)}
    hosts = [site(routes), site(routes, host="127.0.0.2")]  # two hosts: the pages are fetched on forked processes
    report = write_report(tmp_path / "r.json", report_of(*(cite(h.url(f"/p{i}"), QUOTE) for h in hosts
                                                           for i in range(10))))
    home = tmp_path / "home"
    runs = [g6(home, "report", "check", str(report), "--processes", "2", "--json")]
    assert len(_rows(home)) == 20  # made by the forked workers, kept by the writer
    runs.append(g6(home, "report", "check", str(report), "--processes", "2", "--receipts-only", "--json"))
    (home / DERIVED / FILE).unlink()
    runs.append(g6(home, "report", "check", str(report), "--processes", "2", "--receipts-only", "--json"))
    assert len(_rows(home)) == 20  # extracted again on forked processes, kept again
    got = [[(c["verdict"], c["receipt_id"], json.dumps(c["found"])) for c in json.loads(r.stdout)["citations"]]
           for r in runs]
    assert all(r.returncode == 0 for r in runs) and got[0] == got[1] == got[2]
    assert {v for v, _, _ in got[0]} == {"quote_found"}


def test_blob_redact_takes_the_body_s_texts_out_of_the_cache(tmp_path: Path, pages: LocalSite) -> None:
    report = write_report(tmp_path / "r.json", _report(pages))
    home = tmp_path / "home"
    first = g6(home, "report", "check", str(report), "--json")
    assert first.returncode == 1 and len(_rows(home)) == 2, first.stderr  # a quote not found: exit 1
    a = next(c for c in json.loads(first.stdout)["citations"] if c["source"].endswith("/a"))
    gone = g6(home, "blob", "redact", "--url", pages.url("/a"), "--reason", "court-order")
    assert gone.returncode == 0, gone.stderr
    assert b"report check's cache" in gone.stderr
    left = [b for b, _ in _rows(home)]
    assert len(left) == 1 and a["read"]["content"]["blake3"] not in left
    again = g6(home, "report", "check", str(report), "--receipts-only", "--json")
    said = {c["source"].rsplit("/", 1)[1]: c["verdict"] for c in json.loads(again.stdout)["citations"]}
    assert said["a"] != "quote_found", said  # the redacted page supports nothing now
