"""The WARC export replays in pywb itself: `wb-manager init/add`, then `wayback` on a loopback port
started here and stopped by its PID. Every response and revisit replays byte for byte, a redirect
replays as a redirect, and no page replays as its receipt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.cite.recheck import recheck
from g6.demo.site import LocalSite, Reply
from g6.export.warc import export_warc
from g6.fetch.capture import fetch
from g6.fetch.convert import convert
from g6.home import EvidenceHome

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import validate  # noqa: E402
from pywb_server import no_proxy_env, tool  # noqa: E402
from pywb_server import wayback as pywb_wayback  # noqa: E402
from test_convert import make_pdf  # noqa: E402

Site = Callable[..., LocalSite]
SAME = b"<html><body><p>One body served at two addresses, written once, replayed twice.</p></body></html>"
OTHER = b"<html><body><p>A page of its own.</p></body></html>"


@pytest.fixture
def archive(home: EvidenceHome, site: Site, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    s = site({"/same-a": Reply(body=SAME), "/same-b": Reply(body=SAME), "/other": Reply(body=OTHER),
              "/moved": Reply(301, headers=(("Location", "/other"),), content_type=None),
              "/paper.pdf": Reply(body=make_pdf("Replay keeps the PDF"), content_type="application/pdf"),
              "/missing": Reply(404, b"no such page", content_type="text/plain"),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        ids = {p: fetch(home, c, s.url(p)).receipt_id for p in ("/same-a", "/same-b", "/other", "/moved",
                                                                 "/paper.pdf", "/missing")}
        m = Manifest.new().with_citation(cite_web(home, ids["/other"], quote="A page of its own."))
        recheck(home, c, m, state_dir=tmp_path / "runs")  # same bytes again: a revisit of /other
    pdf = home.ledger.get(ids["/paper.pdf"])
    ids["convert"] = convert(home, str(pdf.content["blake3"])).receipt_id  # type: ignore[index]
    out = tmp_path / "out.warc.gz"
    summary = export_warc(home, out, [e.receipt for e in home.ledger.entries()])
    assert (summary.redirects, summary.conversions) == (1, 1)
    assert summary.revisits == 3  # /same-b (another URL), /moved landing on /other, the re-check of /other
    return out, {"base": s.base_url, **ids}


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home.root)
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=300)


@pytest.fixture
def wacz_file(home: EvidenceHome, archive: tuple[Path, dict[str, str]], tmp_path: Path) -> tuple[Path, dict]:
    out = tmp_path / "evidence.wacz"
    r = g6(home, "export", "wacz", "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)  # stdout is the summary alone: wacz's own chatter is kept off it
    validate(summary, "export-wacz.v1")
    return out, summary


def records(path: Path) -> list[tuple[str, dict[str, str], int | None, dict[str, str], bytes]]:
    out = []
    with path.open("rb") as f:
        for rec in ArchiveIterator(f):
            headers = dict(rec.rec_headers.headers)
            status = int(rec.http_headers.get_statuscode()) if rec.http_headers and rec.rec_type in (
                "response", "revisit") else None
            http = dict(rec.http_headers.headers) if rec.http_headers else {}
            out.append((rec.rec_type, headers, status, http, rec.content_stream().read()))
    return out


def test_warc_layout_for_replay(home: EvidenceHome, archive: tuple[Path, dict[str, str]]) -> None:
    path, ids = archive
    recs = records(path)
    by_id = {h["WARC-Record-ID"]: (t, h) for t, h, _, _, _ in recs}
    metas = [(h, body) for t, h, _, _, body in recs if t == "metadata"]
    assert len(metas) == len(list(home.ledger.entries()))
    for h, body in metas:  # own URI, concurrent to the response it describes
        rid = json.loads(body)["receipt_id"]
        assert h["WARC-Target-URI"] == f"urn:g6:receipt:{rid}"
        if "WARC-Concurrent-To" in h:
            assert by_id[h["WARC-Concurrent-To"]][0] in ("response", "revisit", "conversion")
    page_uris = {h["WARC-Target-URI"] for t, h, _, _, _ in recs if t in ("response", "revisit")}
    assert not any(u.startswith("urn:") for u in page_uris)
    redirect = [(h, s, http) for t, h, s, http, _ in recs if t == "response" and s == 301]
    assert len(redirect) == 1 and redirect[0][0]["WARC-Target-URI"] == ids["base"] + "/moved"
    assert redirect[0][2]["Location"] == ids["base"] + "/other"
    revisits = [(h, http) for t, h, _, http, _ in recs if t == "revisit"]
    for h, http in revisits:
        assert h["WARC-Profile"].endswith("/revisit/identical-payload-digest")
        ref_type, ref = by_id[h["WARC-Refers-To"]]
        assert ref_type == "response" and ref["WARC-Payload-Digest"] == h["WARC-Payload-Digest"]
        assert ref["WARC-Target-URI"] == h["WARC-Refers-To-Target-URI"]
        assert http.get("Content-Type", "").startswith("text/html") and "Content-Length" in http
    assert {h["WARC-Target-URI"] for h, _ in revisits} == {ids["base"] + "/same-b", ids["base"] + "/other"}
    conv = [(h, body) for t, h, _, _, body in recs if t == "conversion"]
    assert len(conv) == 1 and conv[0][1] == b"Replay keeps the PDF"
    src_type, src = by_id[conv[0][0]["WARC-Refers-To"]]
    assert src_type == "response" and src["WARC-Target-URI"] == ids["base"] + "/paper.pdf"


@pytest.fixture
def wayback(archive: tuple[Path, dict[str, str]], wacz_file: tuple[Path, dict], tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "pywb"
    root.mkdir()
    wb_manager = tool("wb-manager")
    for args in (["init", "g6"], ["add", "g6", str(archive[0])],
                 ["init", "wz"], ["add", "--unpack-wacz", "wz", str(wacz_file[0])]):
        r = subprocess.run([wb_manager, *args], cwd=root, capture_output=True, text=True, env=no_proxy_env(),
                           timeout=120)
        assert r.returncode == 0, r.stderr
    with pywb_wayback(root, tmp_path / "wayback.log") as url:
        yield url


def _ts(warc_date: str) -> str:
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


def test_every_response_and_revisit_replays_in_pywb(home: EvidenceHome, archive: tuple[Path, dict[str, str]],
                                                     wayback: str) -> None:
    path, ids = archive
    recs = records(path)
    originals = {h["WARC-Record-ID"]: body for t, h, _, _, body in recs if t == "response"}
    checked = {"response": 0, "revisit": 0, "redirect": 0}
    with httpx.Client(trust_env=False, timeout=30, follow_redirects=False) as c:
        for t, h, status, http, body in recs:
            if t not in ("response", "revisit"):
                continue
            target = h["WARC-Target-URI"]
            got = c.get(f"{wayback}/g6/{_ts(h['WARC-Date'])}id_/{target}")
            if status is not None and 300 <= status < 400:
                assert got.status_code == status, (target, got.status_code)
                assert got.headers["location"].endswith(http["Location"]), got.headers["location"]
                checked["redirect"] += 1
                continue
            want = body if t == "response" else originals[h["WARC-Refers-To"]]
            assert got.status_code == status, (target, got.status_code, got.text[:200])
            assert got.content == want, target
            assert not got.content.lstrip().startswith(b'{"'), "a page replayed as its receipt"
            checked[t] += 1
        # the old address replays as a redirect to the archived page, which then replays the page
        moved = c.get(f"{wayback}/g6/2100id_/{ids['base']}/moved")
        assert moved.status_code == 301 and moved.headers["location"].endswith(ids["base"] + "/other")
        followed = c.get(f"{wayback}/g6/2100id_/{ids['base']}/moved", follow_redirects=True)
        assert followed.status_code == 200 and followed.content == OTHER
    assert checked == {"response": 4, "revisit": 3, "redirect": 1}


def test_wacz_validates_and_carries_the_evidence(home: EvidenceHome, archive: tuple[Path, dict[str, str]],
                                                 wacz_file: tuple[Path, dict], tmp_path: Path) -> None:
    from g6.ledger.proofs import verify_inclusion_proof

    path, summary = wacz_file
    wacz_bin = tool("wacz")
    ok = subprocess.run([wacz_bin, "validate", "-f", str(path)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0 and "is valid" in ok.stdout, ok.stdout + ok.stderr
    receipts = [e.receipt for e in home.ledger.entries()]
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        lines = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()]
        assert lines[0]["format"] == "json-pages-1.0"
        read = [r for r in receipts if r.kind in ("fetch", "recheck", "search") and r.content and r.http_status]
        assert [p["id"] for p in lines[1:]] == [r.receipt_id for r in read]
        assert {p["url"] for p in lines[1:]} >= {archive[1]["base"] + "/moved", archive[1]["base"] + "/missing"}
        assert summary["pages"] == len(read) and summary["receipts"] == len(receipts) == summary["proofs"]
        key = home.signing_key().public
        assert z.read("keys/signing.pub").decode().strip() == key.to_text()
        note = z.read("checkpoint/checkpoint.note").decode()
        for r in receipts:
            assert json.loads(z.read(f"receipts/{r.receipt_id}.json")) == r.to_json()
            proof = z.read(f"proofs/{r.receipt_id}.tlog-proof").decode()
            assert note in proof
            assert verify_inclusion_proof(proof, r.to_json(), key, home.ledger.origin).ok
        assert {"archive/data.warc.gz", "indexes/index.cdx.gz", "datapackage.json",
                "datapackage-digest.json"} <= names
        members = {i.filename: z.read(i.filename) for i in z.infolist()}
    # the validator does check the extra files: a receipt edited after export is caught
    forged = tmp_path / "forged.wacz"
    victim = f"receipts/{receipts[0].receipt_id}.json"
    with zipfile.ZipFile(forged, "w") as z:
        for name, data in members.items():
            z.writestr(name, data.replace(b'"fetch"', b'"fetcH"') if name == victim else data)
    bad = subprocess.run([wacz_bin, "validate", "-f", str(forged)], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "is invalid" in bad.stdout


def test_every_wacz_page_replays_in_pywb(home: EvidenceHome, archive: tuple[Path, dict[str, str]],
                                          wacz_file: tuple[Path, dict], wayback: str) -> None:
    with zipfile.ZipFile(wacz_file[0]) as z:
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()[1:]]
    with httpx.Client(trust_env=False, timeout=30, follow_redirects=True) as c:
        for p in pages:
            r = home.ledger.get(p["id"])
            got = c.get(f"{wayback}/wz/{_ts(p['ts'])}id_/{p['url']}")
            assert got.status_code == p["status"], (p, got.status_code)
            assert got.content == home.store.read(str(r.content["blake3"])), p  # type: ignore[index]
    assert len(pages) == 7  # six fetches and one re-check


def test_wacz_without_the_wacz_package_is_a_clear_input_error(home: EvidenceHome, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from g6.export.wacz import WaczUnavailable, export_wacz

    monkeypatch.setitem(sys.modules, "wacz.main", None)  # import of wacz.main now fails
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(WaczUnavailable, match=r"pip install 'g6-evidence\[wacz\]'"):
        export_wacz(home, out / "x.wacz", [e.receipt for e in home.ledger.entries()])
    assert list(out.iterdir()) == []  # nothing written, no temporary left
