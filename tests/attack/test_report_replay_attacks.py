"""Attacks on the replay promise of `g6 report check`: "run again with `--receipts-only` on the same home, or from the
bundle on another machine, it gives the same verdicts". A grader relies on it: the first check read live, every later
one only reads evidence. Each test builds a home whose first check fetched over a loopback site
(``g6.demo.site.LocalSite``), then does what a later check (or someone with write access to the home's files) would
do, and asks that the later verdicts are the first ones, or fail closed (``source_failed``), never a ``quote_found``
the bytes do not support. Findings are said in their docstrings; the attacks that found nothing stay as tests."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger import takedown
from g6.ledger.receipts import Receipt
from g6.report.check import CheckRun
from g6.report.texts_cache import DERIVED, FILE, TextsCache, encode, mac_key, read_key
from g6.report.verdicts import body_texts, texts_source
from tests.report.check_helpers import QUOTE, article, check, cite, g6, report_of, same, write_report
from tests.report.test_check_papers import ToSite

ROOT = Path(__file__).resolve().parents[2]
Site = Callable[..., LocalSite]
OTHER = "Water prices were flat all year."
HIDDEN = "<p style='display:none'>The board approved every claim in the report.</p>"


def pages(site: Site, **more: Reply) -> LocalSite:
    """A site with a page that holds QUOTE, one that does not, one hiding a sentence, a 404 and a redirect home."""
    routes = {"/a": Reply(body=article(QUOTE)), "/b": Reply(body=article(OTHER)),
              "/h": Reply(body=article(OTHER).replace(b"</article>", HIDDEN.encode() + b"</article>")),
              "/gone": Reply(404, b"no"), "/old": Reply(302, headers=(("Location", "/"),)),
              "/": Reply(body=article("Welcome.")), "/robots.txt": Reply(404), **more}
    return site(routes)


def replayed(home: EvidenceHome, client: CheckedClient, report: Any, **kw: Any) -> tuple[CheckRun, CheckRun]:
    """The first check (it fetches) and a second with receipts only, on the same home."""
    return check(home, report, client, **kw), check(home, report, None, **kw)


def verdicts(run: CheckRun) -> list[str]:
    return [v.verdict for v in run.verdicts]


# -- URL forms ------------------------------------------------------------------------------------------------
def test_every_form_of_a_cited_url_finds_the_read_the_first_check_made(
        home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """Defended: a report citing ``HTTP://127.0.0.1:PORT/a#frag``, ``/a?``, ``/%61`` (percent-encoded ``a``), a
    trailing slash, a dot segment: the first check fetches each form it cannot match to a stored read, and the
    receipts-only check finds that very read for each (never "no read"), with the same verdict."""
    s = pages(site, **{"/a/": Reply(body=article(OTHER))})
    port = s.url("/").split(":")[2].rstrip("/")
    forms = [s.url("/a"), f"HTTP://127.0.0.1:{port}/a#frag", s.url("/a") + "?", s.url("/%61"), s.url("/a/"),
             s.url("/x/../a"), f"http://127.0.0.1:{port}/%7Ea", s.url("/gone#x")]
    report = report_of(*[cite(u, QUOTE) for u in forms])
    first, again = replayed(home, client, report)
    assert same(again) == same(first), (verdicts(first), verdicts(again))
    assert not [v.reason for v in again.verdicts if "no read of" in v.reason]
    assert verdicts(first)[0] == "quote_found" and verdicts(first)[4] == "quote_not_found"


def test_an_international_host_name_finds_its_read_again(home: EvidenceHome, site: Site) -> None:
    """Defended: an IDN host (``bücher.example``, stored as punycode) and its punycode form, read through a resolver
    that sends every name to the loopback site: the receipts-only check finds the read the first made."""
    s = pages(site)
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0)
    report = report_of(cite("http://bücher.example/a", QUOTE), cite("http://xn--bcher-kva.example/a", QUOTE),
                       cite("http://BÜCHER.example:80/a#top", QUOTE))
    with CheckedClient(policy, transport=ToSite(s), resolver=lambda host, port: ["127.0.0.1"]) as c:
        first, again = replayed(home, c, report)
    assert verdicts(first) == ["quote_found"] * 3, [v.reason for v in first.verdicts]
    assert same(again) == same(first)
    assert len({v.receipt_id for v in first.verdicts}) == 1  # one read for the three forms


# -- which receipt a later check picks ----------------------------------------------------------------------
def test_a_newer_failed_read_does_not_displace_the_ok_read(home: EvidenceHome, client: CheckedClient,
                                                           site: Site) -> None:
    """Defended: after the first check, the page answers 404 and a `g6 fetch` keeps that failed read, newer; the
    receipts-only check rests on the newest ok read still, the one the first check rested on."""
    s = pages(site)
    report = report_of(cite(s.url("/a"), QUOTE))
    first = check(home, report, client)
    s.routes["/a"] = Reply(404, b"gone")
    assert fetch(home, client, s.url("/a")).outcome != "ok"
    again = check(home, report, None)
    assert same(again) == same(first) and verdicts(again) == ["quote_found"]


def _swap_rows(home: EvidenceHome, a: str, b: str) -> None:
    """Write access to the ledger file, no key: the rows of receipts ``a`` and ``b`` trade places (seq), every
    signed receipt left as it is."""
    db = sqlite3.connect(home.ledger.path, isolation_level=None)
    try:
        sa, sb = (db.execute("SELECT seq FROM receipts WHERE receipt_id = ?", (r,)).fetchone()[0] for r in (a, b))
        db.execute("BEGIN")
        db.execute("UPDATE receipts SET seq = ? WHERE seq = ?", (10**9, sa))
        db.execute("UPDATE receipts SET seq = ? WHERE seq = ?", (sa, sb))
        db.execute("UPDATE receipts SET seq = ? WHERE seq = ?", (sb, 10**9))
        db.execute("COMMIT")
    finally:
        db.close()


def test_rows_reordered_in_the_ledger_do_not_change_which_read_is_newest(
        tmp_path: Path, client: CheckedClient, site: Site) -> None:
    """Finding: "newest" is the ledger's order, the rows' ``seq``. Each receipt signs its own place in the log
    (``log.seq``), but the check read the order from the column and verified only each signature, so swapping two
    rows' ``seq`` in the database (no key needed) made the older read of a page the newest: the first check said
    ``quote_not_found`` (the page no longer holds the quote), the receipts-only check ``quote_found`` on the old
    read. A receipt standing at another place than the one it signs is no evidence (as an edited row is not)."""
    s = pages(site)
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        old = fetch(home, client, s.url("/a"))
        s.routes["/a"] = Reply(body=article(OTHER))
        report = report_of(cite(s.url("/a"), QUOTE))
        new = fetch(home, client, s.url("/a"))
        first = check(home, report, None)
        assert verdicts(first) == ["quote_not_found"] and first.verdicts[0].receipt_id == new.receipt_id
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        _swap_rows(home, old.receipt_id, new.receipt_id)
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        again = check(home, report, None)
    assert verdicts(again) != ["quote_found"], again.verdicts[0].reason
    assert again.verdicts[0].receipt_id != old.receipt_id


def test_an_edited_newest_row_is_never_what_a_later_check_rests_on(
        tmp_path: Path, client: CheckedClient, site: Site) -> None:
    """Defended (by the documented rule): the row of the read the first check rested on is edited in the database
    (its status). Its signature fails, so it is as good as absent: the receipts-only check rests on the older
    genuine read it then finds newest, and says which; never on the edited row."""
    s = pages(site)
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        older = fetch(home, client, s.url("/a"))
        s.routes["/a"] = Reply(body=article(OTHER))
        newer = fetch(home, client, s.url("/a"))
        report = report_of(cite(s.url("/a"), QUOTE))
        assert check(home, report, None).verdicts[0].receipt_id == newer.receipt_id
        path = home.ledger.path
    db = sqlite3.connect(path, isolation_level=None)
    text = db.execute("SELECT receipt FROM receipts WHERE receipt_id = ?", (newer.receipt_id,)).fetchone()[0]
    db.execute("UPDATE receipts SET receipt = ? WHERE receipt_id = ?",
               (text.replace('"http_status":200', '"http_status":203'), newer.receipt_id))
    db.close()
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        again = check(home, report, None)
    assert again.verdicts[0].receipt_id == older.receipt_id  # the genuine older read, said so


def test_a_body_gone_or_altered_in_the_store_fails_closed(home: EvidenceHome, client: CheckedClient,
                                                          site: Site) -> None:
    """Defended: the body the first check's read names is altered (then removed) in the store, with an older ok read
    of the page there too and the texts cache holding the body's texts: the receipts-only check says
    ``source_failed`` on the same receipt, never a verdict from the cache's texts or from the older read."""
    s = pages(site)
    s.routes["/a"] = Reply(body=article("An older version of the page.", QUOTE))
    older = fetch(home, client, s.url("/a"))
    s.routes["/a"] = Reply(body=article(QUOTE))
    fetch(home, client, s.url("/a"))
    report = report_of(cite(s.url("/a"), QUOTE))
    first, again = replayed(home, client, report)
    assert first.verdicts[0].read["content"] != older.content
    assert verdicts(first) == verdicts(again) == ["quote_found"]
    blob = home.store.path(first.verdicts[0].read["content"]["blake3"])
    blob.chmod(0o644)
    blob.write_bytes(blob.read_bytes()[:-1] + b"!")
    for _ in range(2):
        got = check(home, report, None).verdicts[0]
        assert got.verdict == "source_failed", got.reason
        assert got.receipt_id in (None, first.verdicts[0].receipt_id)  # never the older read
        blob.unlink(missing_ok=True)  # the store may have set the damaged file aside already


# -- the page-texts cache ---------------------------------------------------------------------------------------
def _cache_file(home: EvidenceHome) -> Path:
    return Path(home.root) / DERIVED / FILE


def _forged_row(key: bytes, r: Receipt, texts_of: bytes) -> tuple[str, str, bytes, bytes]:
    """A row, MAC'd with ``key``, saying the body ``r`` read has the texts of ``texts_of`` (another page)."""
    row = encode(key, str((r.content or {})["blake3"]), *texts_source(r), body_texts(r, texts_of))
    assert row is not None
    return row


def test_a_cache_row_made_with_another_homes_key_is_ignored(tmp_path: Path, client: CheckedClient,
                                                            site: Site) -> None:
    """Defended: someone with a home of their own (so its key) forges rows saying the body the grader's home read
    holds the quote, and copies them into the grader's ``derived/page-texts.sqlite3``; so does a rotated-out key
    of the grader's own home. Neither row verifies: the texts are extracted again, the verdict is the first one."""
    s = pages(site)
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        report = report_of(cite(s.url("/b"), QUOTE))
        first = check(home, report, client)
        assert verdicts(first) == ["quote_not_found"]
        read = home.ledger.get(str(first.verdicts[0].receipt_id))
        with EvidenceHome(tmp_path / "other", fsync=False) as other:
            other.keys.init()
            theirs = mac_key(other.signing_key())
        old_key = mac_key(home.signing_key())
        home.rotate_key()
        for key in (theirs, old_key):
            cache = TextsCache(home.root, key)
            cache.put_many([_forged_row(key, read, article(QUOTE))])
            cache.close()
            again = check(home, report, None)
            assert same(again) == same(first), again.verdicts[0].verdict
        # the forged row under the home's own current key is taken (the control: the attack is wired right)
        key = mac_key(home.signing_key())
        cache = TextsCache(home.root, key)
        cache.put_many([_forged_row(key, read, article(QUOTE))])
        cache.close()
        assert verdicts(check(home, report, None)) == ["quote_found"]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "text_cells", "int_cells", "null_cells", "directory"])
def test_a_damaged_cache_file_costs_time_only(tmp_path: Path, client: CheckedClient, site: Site,
                                              damage: str) -> None:
    """The cache file replaced by garbage, cut in half, made a folder, or its rows' cells stored as text, integers
    or NULL (a table made by someone else, ``payload TEXT``): the receipts-only check gives the first verdicts, never
    an error. Finding (``text_cells``, ``null_cells``): a cell that is not a BLOB crashed the check with a
    TypeError (``bytes(str)``) out of ``TextsCache.get``, whose contract is "never an error"."""
    s = pages(site)
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        report = report_of(cite(s.url("/a"), QUOTE), cite(s.url("/b"), QUOTE), cite(s.url("/h"), "approved every"))
        first = check(home, report, client)
        path = _cache_file(home)
        raw = path.read_bytes()
        for side in (path.with_name(FILE + "-wal"), path.with_name(FILE + "-shm")):
            side.unlink(missing_ok=True)
        if damage == "garbage":
            path.write_bytes(b"not a database" * 100)
        elif damage == "truncated":
            path.write_bytes(raw[: len(raw) // 2])
        elif damage == "directory":
            path.unlink()
            path.mkdir()
        else:
            path.unlink()
            cell = {"text_cells": "'x'", "int_cells": "7", "null_cells": "NULL"}[damage]
            db = sqlite3.connect(path)
            db.execute("CREATE TABLE texts (blake3 TEXT, read_key TEXT, payload, mac, PRIMARY KEY (blake3, read_key))")
            for v in first.verdicts:
                r = home.ledger.get(str(v.receipt_id))
                db.execute(f"INSERT INTO texts VALUES (?, ?, {cell}, {cell})",
                           (str((r.content or {})["blake3"]), read_key(*texts_source(r))))
            db.commit()
            db.close()
        again = check(home, report, None)
        twice = check(home, report, None, processes=2)
    assert same(again) == same(first) == same(twice)


def test_a_redacted_body_whose_bytes_are_still_there_is_never_judged(
        tmp_path: Path, client: CheckedClient, site: Site) -> None:
    """Finding: a redaction commits its entries before it takes the bytes out (a kill between leaves them, for
    ``finish`` to take). In that state a check on one process says ``source_failed`` (redacted), but one with
    ``--processes 2`` and 16 or more stored pages judged each page's body on forked processes read straight from
    the store (``judge_forked``: ``store.read_as``), past the redaction: ``quote_found`` on bytes the home no longer
    serves, and a different verdict from the same home's one-process check. The body must be read as the check
    reads every body (``HomeEvidence.body``: redactions first)."""
    n = 18
    s = site({**{f"/p{i}": Reply(body=article(f"Page {i} of the set.", QUOTE)) for i in range(n)},
              "/robots.txt": Reply(404)})
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        home.keys.init()
        report = report_of(*[cite(s.url(f"/p{i}"), QUOTE) for i in range(n)])
        first = check(home, report, client)
        assert verdicts(first) == ["quote_found"] * n
        (tmp_path / "h" / DERIVED / FILE).unlink()  # no texts kept: each page is extracted on a forked process
        for side in ("-wal", "-shm"):
            (tmp_path / "h" / DERIVED / (FILE + side)).unlink(missing_ok=True)
        p = takedown.plan(home.ledger, receipt_ids=[v.receipt_id for v in first.verdicts])

        class Killed(Exception):
            pass

        def kill(step: str) -> None:
            if step == "appended":
                raise Killed

        with pytest.raises(Killed):
            takedown.redact(home.ledger, home.store, home.signing_key(), home.removal_roots(), p, "takedown",
                            step=kill)
        assert home.store.path(first.verdicts[0].read["content"]["blake3"]).exists()  # the bytes are still there
    urls = json.dumps([s.url(f"/p{i}") for i in range(n)])
    s.stop()
    with EvidenceHome(tmp_path / "h", fsync=False) as home:
        one = check(home, report, None, processes=1)
    # the two-process check in a process of its own: it forks only when no other thread runs (host_pool.can_fork),
    # and a test process under xdist runs others' threads (servers of session fixtures)
    r = subprocess.run([sys.executable, "-c", _FORKED_CHECK, str(tmp_path / "h"), urls], capture_output=True,
                       text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    two = json.loads(r.stdout)
    assert two["forked"] == [n]  # the forked path was taken
    assert verdicts(one) == ["source_failed"] * n, one.verdicts[0].reason
    assert two["verdicts"] == verdicts(one), two["reasons"][:2]


_FORKED_CHECK = """
import json, sys
from g6.home import EvidenceHome
from g6.report import check as check_module
from tests.report.check_helpers import QUOTE, check, cite, report_of

forked = []
real = check_module.judge_forked

def spy(chk, items, processes):
    forked.append(len(items))
    return real(chk, items, processes)

check_module.judge_forked = spy
report = report_of(*[cite(u, QUOTE) for u in json.loads(sys.argv[2])])
with EvidenceHome(sys.argv[1], fsync=False) as home:
    run = check(home, report, None, processes=2)
print(json.dumps({"forked": forked, "verdicts": [v.verdict for v in run.verdicts],
                  "reasons": [v.reason for v in run.verdicts]}))
"""


# -- the run file --------------------------------------------------------------------------------------------------
def test_a_run_resumed_with_other_flags_decides_every_verdict_again(home: EvidenceHome, client: CheckedClient,
                                                                    site: Site) -> None:
    """Defended: a run made with receipts only on a home that had no read (every citation ``source_failed``),
    resumed with the same run id and fetching allowed, reads the pages and decides again (a run file is not
    evidence); resumed once more with receipts only, it gives the fetching run's verdicts."""
    s = pages(site)
    report = report_of(cite(s.url("/a"), QUOTE), cite(s.url("/gone"), QUOTE), cite(s.url("/old"), QUOTE))
    blind = check(home, report, None, run_id="run_replay")
    assert verdicts(blind) == ["source_failed"] * 3
    live = check(home, report, client, run_id="run_replay")
    assert verdicts(live) == ["quote_found", "source_failed", "redirected_elsewhere"]
    again = check(home, report, None, run_id="run_replay")
    assert same(again) == same(live)


# -- the whole promise, over generated reports -------------------------------------------------------------------
ROUTES = ["/a", "/b", "/h", "/gone", "/old", "/a/", "/moved"]
QUOTES = [QUOTE, "Water prices were flat", "approved every claim in the report", "It said so.", None,
          "bills rose by 12%", "household bills rose"]


def _generated(seed: int, url: Callable[[str], str]) -> Any:
    rnd = random.Random(seed)
    cites = []
    for _ in range(rnd.randint(4, 9)):
        path = rnd.choice(ROUTES)
        u = url(path)
        if rnd.random() < 0.3:
            u = u.replace("http://", "HTTP://") + "#frag"
        cites.append(cite(u, rnd.choice(QUOTES)))
    return report_of(*cites)


@pytest.fixture
def grader(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "grader").mkdir()
    yield tmp_path / "grader" / "home"


def _verdict_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(c["verdict"], c["receipt_id"], json.dumps(c.get("found"), sort_keys=True), c["reason"],
             json.dumps([(h["text"], h["similarity"]) for h in c["hints"]])) for c in result["citations"]]


@pytest.mark.parametrize("seed", [1, 2])
def test_first_run_receipts_only_and_bundle_elsewhere_give_the_same_verdicts(
        tmp_path: Path, site: Site, grader: Path, seed: int) -> None:
    """Defended: a generated report over a few pages (found, not found, hidden, a 404, a redirect home, a redirect
    that moved the page, a trailing slash, URL case and fragments): the first check (it fetches), the receipts-only
    check on the same home, and the check of the bundle on a second home with its own key give the same verdicts,
    verdict for verdict, and `g6 report verify` holds each result."""
    s = pages(site, **{"/moved": Reply(301, headers=(("Location", "/a"),))})
    report = write_report(tmp_path / "report.json", _generated(seed, s.url))
    home = tmp_path / "home"
    r = g6(home, "report", "check", str(report), "-o", "result.json")
    assert r.returncode in (0, 1), r.stderr
    first = json.loads((tmp_path / "result.json").read_text())
    seen = len(s.requests)
    again = g6(home, "report", "check", str(report), "--receipts-only", "--json")
    assert again.returncode == r.returncode, again.stderr
    assert _verdict_rows(json.loads(again.stdout)) == _verdict_rows(first)
    assert g6(home, "report", "bundle", "result.json", "-o", "evidence.zip").returncode == 0
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["checkpoint_verifier_key"]
    (grader.parent / "evidence.zip").write_bytes((tmp_path / "evidence.zip").read_bytes())
    there = g6(grader, "report", "check", str(report), "--bundle", "evidence.zip", "--key", key, "--json")
    assert there.returncode == r.returncode, there.stderr
    second = json.loads(there.stdout)
    assert _verdict_rows(second) == _verdict_rows(first) and second["figures"] == first["figures"]
    assert len(s.requests) == seen  # nothing read again
    assert g6(grader, "report", "verify", "-", input=there.stdout).returncode == 0
