"""`g6 report check` and `g6 report verify` as a user runs them: a real process, a real home, loopback pages;
the manifest of the found citations through `g6 bundle`, `g6 recheck` and `g6 serve --manifest` unchanged."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report
from tests.serve.server import served

Site = Callable[..., LocalSite]
JUDGE = f"{sys.executable} {Path(__file__).resolve().parent / 'judge_script.py'}"


@pytest.fixture
def pages(site: Site) -> LocalSite:
    return site({"/a": Reply(body=article(QUOTE, "Water prices were flat.")), "/gone": Reply(404, b"no"),
                 "/old": Reply(302, headers=(("Location", "/"),)), "/": Reply(body=article("Welcome.")),
                 "/robots.txt": Reply(404)})


def _report(s: LocalSite, tmp: Path) -> Path:
    r = report_of(cite(s.url("/a"), QUOTE, "Bills rose 12%.", claim_start=0, claim_end=15),
                  cite(s.url("/a"), "Water prices fell.", "Water fell.", claim_start=16, claim_end=27),
                  cite(s.url("/a"), None, "Water prices were flat.", claim_start=28, claim_end=51),
                  cite(s.url("/gone"), QUOTE, "Gone.", claim_start=52, claim_end=57),
                  cite(s.url("/old"), QUOTE, "Moved.", claim_start=58, claim_end=64),
                  text="Bills rose 12%. Water fell. Water prices were flat. Gone. Moved. Unsourced.",
                  uncited=["Unsourced."])
    return write_report(tmp / "report.json", r)


def verdicts(result: dict) -> list[tuple]:
    return [(c["verdict"], c["receipt_id"], json.dumps(c.get("found"), sort_keys=True), c["reason"])
            for c in result["citations"]]


def test_check_writes_a_signed_result_a_manifest_and_a_page(tmp_path: Path, pages: LocalSite) -> None:
    home = tmp_path / "home"
    report = _report(pages, tmp_path)
    r = g6(home, "report", "check", str(report), "-o", "result.json", "--manifest", "found.json", "--html",
           "page.html")
    assert r.returncode == 1, r.stderr  # a quote not found, a read redirected elsewhere
    out = r.stdout.decode()
    assert "[1] quote_found" in out and "[2] quote_not_found" in out and "[5] redirected_elsewhere" in out
    assert "5 citations: quote_found 1 (20%)" in out and "claims without citations 1" in out
    assert b"g6: 0/5 citations checked" in r.stderr and b"g6: 5/5 citations checked" in r.stderr
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["figures"] == {"citations": 5, "quote_found": 1, "quote_not_found": 1, "no_quote": 1,
                                 "source_failed": 1, "redirected_elsewhere": 1, "quote_found_share": 0.2,
                                 "sources": 3, "sources_failed": 1, "claims_without_citations": 1}
    assert result["exit_code"] == 1 and result["signature"]["alg"] == "ed25519"
    manifest = json.loads((tmp_path / "found.json").read_text())
    assert [c["citation_id"] for c in manifest["citations"]] == [result["citations"][0]["citation_id"]]
    page = (tmp_path / "page.html").read_text()
    assert 'href="#c-1"' in page and 'id="c-5"' in page and "<script" not in page
    assert '<mark class="good"' in page and "a hint, not support" in page
    v = g6(home, "report", "verify", "result.json", "--json")
    assert v.returncode == 0, v.stdout
    assert [c["ok"] for c in json.loads(v.stdout)["checks"]] == [True] * 5  # and evidence


def test_a_result_that_was_changed_or_not_signed_fails_verify(tmp_path: Path, pages: LocalSite) -> None:
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(_report(pages, tmp_path)), "-o", "result.json").returncode == 1
    result = json.loads((tmp_path / "result.json").read_text())
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    flipped = json.loads(json.dumps(result))
    flipped["citations"][1]["verdict"] = "quote_found"  # a grader's favourite forgery
    flipped["figures"]["quote_found"], flipped["figures"]["quote_not_found"] = 2, 0
    unsigned = {k: v for k, v in result.items() if k != "signature"}
    for name, doc in (("flipped.json", flipped), ("unsigned.json", unsigned)):
        (tmp_path / name).write_text(json.dumps(doc))
        out = g6(home, "report", "verify", name, "--key", key)
        assert out.returncode == 1 and b"signature  FAILED" in out.stdout, out.stdout
    assert g6(home, "report", "verify", "result.json", "--key", key).returncode == 0
    other = g6(tmp_path / "other", "report", "verify", str(tmp_path / "result.json"))  # a home that trusts no key
    assert other.returncode == 1 and b"unknown key" in other.stdout
    (tmp_path / "junk.json").write_text("{not json")
    junk = g6(home, "report", "verify", "junk.json")
    assert junk.returncode == 2 and junk.stderr.startswith(b"g6: the result is not JSON")


def test_receipts_only_gives_the_same_verdicts_and_fetches_nothing(tmp_path: Path, pages: LocalSite) -> None:
    home = tmp_path / "home"
    report = _report(pages, tmp_path)
    first = json.loads(g6(home, "report", "check", str(report), "--json").stdout)
    seen = len(pages.requests)
    again = json.loads(g6(home, "report", "check", str(report), "--receipts-only", "--json").stdout)
    assert verdicts(again) == verdicts(first) and len(pages.requests) == seen
    assert again["evidence"]["receipts_only"] is True and again["figures"] == first["figures"]


def test_the_found_manifest_works_with_bundle_recheck_and_serve(tmp_path: Path, pages: LocalSite) -> None:
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(_report(pages, tmp_path)), "--manifest", "found.json").returncode == 1
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    assert g6(home, "bundle", "found.json", "-o", "evidence.zip").returncode == 0
    verified = g6(home, "bundle", "verify", "evidence.zip", "--key", key, "--json")
    assert verified.returncode == 0, verified.stdout
    assert json.loads(verified.stdout)["ok"] is True
    rechecked = g6(home, "recheck", "found.json", "--json")
    assert rechecked.returncode == 0, rechecked.stderr
    assert [v["verdict"] for v in json.loads(rechecked.stdout)["verdicts"]] == ["unchanged"]
    mid = json.loads((tmp_path / "found.json").read_text())["manifest_id"]
    with served(home, "--manifest", str(tmp_path / "found.json")) as base:
        got = httpx.get(f"{base}api/manifest/{mid}").json()
    assert got["signature"]["status"] == "ok" and got["citations"][0]["quote"] == QUOTE
    assert got["citations"][0]["latest"]["verdict"] == "unchanged"  # the re-check above, as the ledger has it


def test_the_judge_from_the_command_line(tmp_path: Path, pages: LocalSite) -> None:
    home = tmp_path / "home"
    report = _report(pages, tmp_path)
    r = g6(home, "report", "check", str(report), "--judge", f"{JUDGE} words", "--json")
    result = json.loads(r.stdout)
    assert r.returncode == 1 and result["judge"]["pairs"] == 3 and result["judge"]["answered"] == 3
    judged = {c["n"]: c["judge"]["opinion"]["label"] for c in result["citations"] if "judge" in c}
    assert judged == {1: "supports", 2: "neutral", 3: "supports"}
    assert [c["verdict"] for c in result["citations"]][:3] == ["quote_found", "quote_not_found", "no_quote"]
    hung = json.loads(g6(home, "report", "check", str(report), "--receipts-only", "--judge", f"{JUDGE} hang",
                         "--judge-timeout", "0.2", "--json").stdout)
    assert hung["judge"]["errors"] == {"judge_timeout": 3} and hung["exit_code"] == 1
    assert g6(home, "report", "verify", "-", input=json.dumps(hung).encode()).returncode == 0


@pytest.mark.parametrize(("content", "args", "words"), [
    (b"{not json", (), b"g6: r.json: malformed JSON"),
    (b'{"schema": "g6.report-model.v1", "text": "ab", "citations": [{"source": "http://x/", "claim_end": 9}]}', (),
     b"outside the text"),
    (b'{"schema": "g6.report-model.v1", "citations": [{"claim": "no source"}]}', (), b"source is missing"),
    (b"{}", ("--format", "klingon"), b"unknown format 'klingon'"),
    (b"{}", ("--judge", "/no/such/judge"), b"--judge: no program"),
    (b"{}", ("--document", "x=y"), b"--document 'x=y'"),
    (b"{}", ("-o", "no/such/folder/r.json"), b"folder no/such/folder does not exist"),
    (b"{}", ("--key", "ed25519:AAAA"), b"--key and --trust-bundle-keys are for --bundle"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_is_fetched(tmp_path: Path, content: bytes, args: tuple[str, ...],
                                                              words: bytes) -> None:
    home = tmp_path / "home"
    EvidenceHome(home).close()
    (tmp_path / "r.json").write_bytes(content)
    r = g6(home, "report", "check", "r.json", *args)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr and r.stdout == b""
    with EvidenceHome(home) as ev:
        assert len(ev.ledger) == 0
    j = g6(home, "report", "check", "r.json", *args, "--json")
    assert j.returncode == 2 and json.loads(j.stdout)["outcome"] == "rejected"


def test_stored_reads_judged_on_forked_processes_give_the_same_verdicts(tmp_path: Path, site: Site) -> None:
    """Twenty pages and more: `--receipts-only` judges the stored reads on one forked process a core (the CLI's
    default); a PDF and a failed read among them are judged by the calling process."""
    from tests.test_convert import make_pdf

    routes = {f"/p/{k}": Reply(body=article(QUOTE, f"Paragraph number {k} of the series.")) for k in range(24)}
    pdf = Reply(body=make_pdf("Bills rose by twelve percent"), content_type="application/pdf")
    s = site({**routes, "/doc.pdf": pdf, "/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    cites = [cite(s.url(f"/p/{k}"), QUOTE if k % 3 else f"Paragraph number {k + 1} of the series.") for k in range(24)]
    cites += [cite(s.url(f"/p/{k}"), None, f"Paragraph {k} of the series") for k in range(24)]
    cites += [cite(s.url("/doc.pdf"), "Bills rose by twelve percent"), cite(s.url("/gone"), QUOTE)]
    report = write_report(tmp_path / "r.json", report_of(*cites))
    home = tmp_path / "home"
    first = json.loads(g6(home, "report", "check", str(report), "--json").stdout)
    again = g6(home, "report", "check", str(report), "--receipts-only", "--json", "--processes", "2")
    assert verdicts(json.loads(again.stdout)) == verdicts(first)
    assert {c["verdict"] for c in first["citations"]} == {"quote_found", "quote_not_found", "no_quote",
                                                           "source_failed"}
    assert first["citations"][48]["verdict"] == "quote_found" and first["citations"][48]["detail"]["converted"]


def _peak_kib(home: Path, *args: str) -> int:
    """The peak RSS (KiB) of `g6 ARGS` run in a fresh process: the max over the children of a helper that ran
    only it."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    helper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
              "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", helper, sys.executable, "-m", "g6", *args], env=env, cwd=home.parent,
                         capture_output=True, text=True, timeout=300)
    return int(out.stdout.strip())


def test_a_quote_of_a_megabyte_costs_no_more_memory_than_a_line(tmp_path: Path, pages: LocalSite) -> None:
    wide = ("Hausbesitzer zahlten 12 % mehr für Strom. " * 25_000)[:1_000_000]  # not ASCII
    small = write_report(tmp_path / "small.json", report_of(cite(pages.url("/a"), "Water prices fell.")))
    big = write_report(tmp_path / "big.json", report_of(cite(pages.url("/a"), wide, claim=wide)))
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(small)).returncode == 1  # the page read once, for both
    base = _peak_kib(home, "report", "check", str(small), "--receipts-only", "--processes", "1")
    peak = _peak_kib(home, "report", "check", str(big), "--receipts-only", "--processes", "1")
    assert peak - base < 40 * 1024, (base, peak)  # the report's 1 MB read, parsed and hashed: a few MiB
