"""The JSON API of `g6 serve` over a real socket: every answer valid against its schema (serve-*.v1), the
same data the pages show, refusals in JSON, and the home left byte for byte as found."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import validate
from tests.serve.pages_world import CITED, HOSTILE_TEXT, World, build, snapshot
from tests.serve.server import served


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build(tmp_path_factory.mktemp("api"))


@pytest.fixture(scope="module")
def api(world: World) -> Iterator[httpx.Client]:
    before = snapshot(world.home)
    # stopped by SIGINT (Ctrl-C) after the whole module's requests: served() checks it stops cleanly
    with served(world.home, "--manifest", str(world.manifest), stop=signal.SIGINT) as base, \
            httpx.Client(base_url=base) as client:
        yield client
    assert snapshot(world.home) == before  # nothing the server did wrote to the home


def get(api: httpx.Client, path: str, schema: str, status: int = 200) -> dict:
    r = api.get(path)
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    body = r.json()
    validate(body, schema)
    return body


def test_home_counts_checkpoint_and_manifests(api: httpx.Client, world: World) -> None:
    h = get(api, "/api/home", "serve-home.v1")
    assert h["receipts"] == 6  # four fetches, two re-check reads (one per cited URL)
    assert h["counts"] == {"receipts": 6, "captures": 6, "ok": 5, "failed": 1, "urls": 4,
                           "outcomes": {"ok": 5, "not_found": 1}}
    assert h["latest_checkpoint"]["size"] == 6 and h["latest_checkpoint"]["behind"] == 0
    assert h["manifests"] == [{"manifest_id": world.manifest_id, "citations": 2, "file": str(world.manifest)}]


def test_verify_on_demand_says_when(api: httpx.Client) -> None:
    v = get(api, "/api/verify", "serve-verify.v1")
    assert v["status"] == "ok" and v["receipts"] == 6 and v["checked_at"] and v["grown_since"] == 0
    assert {c["name"] for c in v["checks"]} >= {"signature", "chain", "blob", "tree"}
    assert all(c["ok"] for c in v["checks"])
    home = get(api, "/api/home", "serve-home.v1")["verify"]
    assert home["status"] == "ok" and home["checked_at"] == v["checked_at"]  # the page shows the same run


def test_captures_of_a_url_requested_or_final(api: httpx.Client, world: World) -> None:
    c = get(api, "/api/captures?url=" + quote(world.urls["/article"], safe=""), "serve-captures.v1")
    ids = {x["receipt_id"] for x in c["captures"]}
    assert {world.article, world.redirect} <= ids and c["total"] == 3  # the re-check read it too
    assert [x["fetched_at"] for x in c["captures"]] == sorted((x["fetched_at"] for x in c["captures"]), reverse=True)
    first = next(x for x in c["captures"] if x["receipt_id"] == world.article)
    assert first["memento"].endswith("id_/" + world.urls["/article"])


def test_a_failed_read_is_listed_but_has_no_memento(api: httpx.Client, world: World) -> None:
    c = get(api, "/api/captures?url=" + quote(world.urls["/missing"], safe=""), "serve-captures.v1")
    assert [(x["receipt_id"], x["outcome"], x["http_status"], x["memento"]) for x in c["captures"]] == \
        [(world.missing, "not_found", 404, None)]


@pytest.mark.parametrize("prefix, which", [("", "b3"), ("blake3:", "b3"), ("", "sha"), ("sha256:", "sha")])
def test_captures_of_a_digest(api: httpx.Client, world: World, prefix: str, which: str) -> None:
    digest = world.article_blake3 if which == "b3" else world.article_sha256
    c = get(api, "/api/captures?digest=" + quote(prefix + digest), "serve-captures.v1")
    assert c["total"] == 3 and {world.article, world.redirect} <= {x["receipt_id"] for x in c["captures"]}


def test_capture_with_its_cited_span_and_rechecks(api: httpx.Client, world: World) -> None:
    c = get(api, f"/api/capture/{world.hostile}", "serve-capture.v1")
    assert c["outcome"] == "ok" and c["failed_read"] is None and c["text_status"] == "ok"
    [cited] = c["citations"]
    assert cited["found"] and c["text"][cited["start"]:cited["end"]] == HOSTILE_TEXT  # kept raw in JSON
    assert c["receipt"] == f"/receipt/{world.hostile}" and c["proof"] == f"/receipt/{world.hostile}/proof"
    [recheck] = c["rechecks"]
    assert recheck["manifest_id"] == world.manifest_id and list(recheck["verdicts"].values()) == ["unchanged"]

    a = get(api, f"/api/capture/{world.article}", "serve-capture.v1")
    [cited] = a["citations"]
    assert a["text"][cited["start"]:cited["end"]].lower() == CITED  # a main-text citation found in the visible text


def test_redirect_and_failed_read_captures(api: httpx.Client, world: World) -> None:
    r = get(api, f"/api/capture/{world.redirect}", "serve-capture.v1")
    assert [h["status"] for h in r["hops"]] == [302, 200] and r["final_url"] == world.urls["/article"]
    m = get(api, f"/api/capture/{world.missing}", "serve-capture.v1")
    assert m["failed_read"] == "not_found, HTTP 404" and m["memento"] is None and m["citations"] == []


def test_manifest_latest_verdicts(api: httpx.Client, world: World) -> None:
    m = get(api, f"/api/manifest/{world.manifest_id}", "serve-manifest.v1")
    assert m["signature"]["status"] == "ok" and m["rechecks"] == 2
    assert [(c["receipt_id"], c["latest"]["verdict"]) for c in m["citations"]] == \
        [(world.article, "unchanged"), (world.hostile, "unchanged")]


def test_manifest_known_only_from_the_ledger(world: World) -> None:
    with served(world.home) as base:  # no --manifest: the re-check receipts still name its verdicts
        r = httpx.get(base + f"api/manifest/{world.manifest_id}")
        assert r.status_code == 200
        m = r.json()
    validate(m, "serve-manifest.v1")
    assert m["file"] is None and m["signature"] is None
    assert sorted(c["latest"]["verdict"] for c in m["citations"]) == ["unchanged", "unchanged"]
    assert all(c["quote"] is None for c in m["citations"])


@pytest.mark.parametrize("path, status", [
    ("/api/capture/rcpt_NOSUCHRECEIPT", 404), ("/api/capture/..%2F..%2Fetc%2Fpasswd", 404),
    ("/api/capture/%3Cscript%3E", 404), ("/api/manifest/mfst_NOSUCH", 404), ("/api/manifest/%2E%2E", 404),
    ("/api/captures", 400), ("/api/captures?url=ftp://x", 400), ("/api/captures?digest=zz", 400),
    ("/api/captures?url=http://a/&digest=" + "0" * 64, 400), ("/api/captures?q=x", 400),
    ("/api/captures?url=http://nothing.invalid/", 200), ("/api/nothing", 404)])
def test_refusals_are_json(api: httpx.Client, path: str, status: int) -> None:
    r = api.get(path)
    assert r.status_code == status, r.text
    if status == 200:
        validate(r.json(), "serve-captures.v1")
        assert r.json()["total"] == 0
        return
    body = r.json()
    validate(body, "serve-refusal.v1")
    assert len(body["message"]) < 300  # one line that says why (JSON served as JSON, nosniff: no markup runs)


def test_a_manifest_that_cannot_be_read_is_refused_at_start(world: World, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    for arg in (str(tmp_path / "missing.json"), str(tmp_path / "bad.json")):
        r = subprocess.run([sys.executable, "-m", "g6", "--home", str(world.home), "serve", "--port", "0",
                            "--manifest", arg], capture_output=True, text=True, timeout=120)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_tampered_home_verifies_as_failed(world: World, tmp_path: Path) -> None:
    """Verification fails closed: one flipped byte in a kept body, and the status the pages show is failed."""
    import shutil

    home = tmp_path / "home"
    shutil.copytree(world.home, home)
    blob = next(p for p in (home / "knowledge" / "fetched" / "blake3").rglob("*") if p.is_file())
    data = bytearray(blob.read_bytes())
    data[-1] ^= 1
    blob.write_bytes(bytes(data))
    with served(home) as base:
        v = httpx.get(base + "api/verify", timeout=120).json()
        validate(v, "serve-verify.v1")
        assert v["status"] == "failed"
        assert [c["name"] for c in v["checks"] if not c["ok"]] == ["blob"]
        page = httpx.get(base, headers={"accept": "text/html"}).text
        assert 'badge bad">failed</span>' in page


def test_rechecks_appended_while_serving_are_shown(world: World, tmp_path: Path) -> None:
    """A re-check run while the server reads the home shows on the capture and manifest answers (the re-check
    index catches up with the rows appended since)."""
    import shutil

    from tests.serve.pages_world import g6

    home = tmp_path / "home"
    shutil.copytree(world.home, home)
    shutil.copy(world.manifest, tmp_path / "report.json")
    with served(home, "--manifest", str(tmp_path / "report.json")) as base:
        assert len(httpx.get(base + f"api/capture/{world.article}").json()["rechecks"]) == 1
        r = g6(home, "recheck", "report.json", cwd=tmp_path)  # the site is gone: unreachable, still receipted
        assert r.returncode == 3, r.stderr
        c = httpx.get(base + f"api/capture/{world.article}").json()
        validate(c, "serve-capture.v1")
        assert [x["verdicts"][next(iter(x["verdicts"]))] for x in c["rechecks"]] == ["unchanged", "unreachable"]
        m = httpx.get(base + f"api/manifest/{world.manifest_id}").json()
        assert m["rechecks"] == 4 and {x["latest"]["verdict"] for x in m["citations"]} == {"unreachable"}


@pytest.mark.parametrize("extra", [2, 3], ids=["same-length", "longer"])
def test_a_ledger_replaced_while_serving_shows_its_own_rechecks(world: World, tmp_path: Path, extra: int) -> None:
    """The served ledger replaced by another of the same length or longer whose rows differ (a backup put back,
    another copy of the home): the capture and manifest answers show the re-checks of the ledger now in place,
    not those indexed from the one before (the one index is read again when the row it stopped at differs)."""
    import os
    import shutil

    from g6.home import EvidenceHome
    from g6.ledger import Receipt
    from tests.serve.pages_world import g6

    home, other = tmp_path / "home", tmp_path / "other"
    shutil.copytree(world.home, home)
    shutil.copytree(world.home, other)
    shutil.copy(world.manifest, tmp_path / "report.json")
    r = g6(home, "recheck", "report.json", cwd=tmp_path)  # the site is gone: two unreachable re-check reads
    assert r.returncode == 3, r.stderr
    with EvidenceHome(other, fsync=False) as ev:  # the same six rows, then `extra` reads that are not re-checks
        ev.ledger.append_many([Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                       outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)
                               for i in range(extra)], ev.signing_key())

    def verdicts(base: str) -> tuple[int, list[str], int, set[str]]:
        c = httpx.get(base + f"api/capture/{world.article}").json()
        validate(c, "serve-capture.v1")
        m = httpx.get(base + f"api/manifest/{world.manifest_id}").json()
        validate(m, "serve-manifest.v1")
        receipts = httpx.get(base + "api/home").json()["receipts"]
        return (receipts, [v for x in c["rechecks"] for v in x["verdicts"].values()], m["rechecks"],
                {x["latest"]["verdict"] for x in m["citations"]})

    with served(home, "--manifest", str(tmp_path / "report.json")) as base:
        assert verdicts(base) == (8, ["unchanged", "unreachable"], 4, {"unreachable"})
        os.replace(other / "knowledge" / "ledger.sqlite", home / "knowledge" / "ledger.sqlite")
        assert verdicts(base) == (6 + extra, ["unchanged"], 2, {"unchanged"})
