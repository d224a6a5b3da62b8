"""Attacks on `g6 report check`, `verify` and `bundle` as a user runs them (a real `g6` process, a real home,
loopback pages) and on the MCP tool: exit 0 where a citation was never checked, crashes (exit 70, the result
lost) on what a judge or a report may say, evidence destroyed by an output path, a result that cannot say how
its bundle was trusted. The findings were strict xfails and are fixed; every test here now passes."""

from __future__ import annotations

import base64
import json
import os
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply
from g6.home import EvidenceHome
from g6.report.result import canonical, exit_code
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report
from tests.test_mcp import env_for, session_calls

Site = Callable[..., LocalSite]
INTERNAL = 70  # g6's exit code for an internal error (a bug): never the answer to any input


@pytest.fixture
def pages(site: Site) -> LocalSite:
    return site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})


def one_citation(tmp: Path, s: LocalSite) -> Path:
    return write_report(tmp / "report.json", report_of(cite(s.url("/a"), QUOTE, "Bills rose 12%.", claim_start=0,
                                                            claim_end=15), text="Bills rose 12%."))


def judge(tmp: Path, answer: str) -> str:
    """A judge that answers every pair with the line ``answer`` (as its bytes are written here)."""
    p = tmp / "judge.py"
    p.write_text("import sys\nfor line in sys.stdin:\n    sys.stdout.write(" + repr(answer + "\n")
                 + ")\n    sys.stdout.flush()\n")
    return f"{sys.executable} {p}"


# -- finding 11: citations g6 cannot read do not count --------------------------------------------------------
def test_a_report_with_citations_g6_could_not_check_does_not_exit_0(tmp_path: Path, pages: LocalSite) -> None:
    """A Markdown report makes three citations: one quote on a real page, and two claims whose links are
    ``javascript:`` and ``ftp:``. The reader keeps the two in ``Report.unusable``; the check and the result
    count only the first: ``citations: 1``, ``quote_found_share: 1.0``, ``claims_without_citations: 0``, exit
    0, which the docs define as "every citation's quote was found". A citation that could not be checked is a
    citation: it is counted (as `source_failed`, or a figure of its own) and the exit code is not 0."""
    md = (f'Bills rose, the Gazette says "{QUOTE}" ([Gazette]({pages.url("/a")})).\n\n'
          "The vaccine cures every disease ([Ministry](javascript:alert(1))).\n\n"
          "The moon is made of cheese ([Lab](ftp://127.0.0.1/moon)).\n")
    (tmp_path / "r.md").write_text(md)
    r = g6(tmp_path / "home", "report", "check", str(tmp_path / "r.md"), "--json")
    result = json.loads(r.stdout)
    assert r.returncode != 0 and result["exit_code"] != 0, result["figures"]


# -- finding 17 (fixed): a judge's answer that is JSON but not canonical JSON ----------------------------------------
@pytest.mark.parametrize("answer", ['{"label": "supports", "score": NaN}', '{"label": "supports", "score": Infinity}',
                                    '{"label": "supports", "n": 123456789012345678901234567890}',
                                    '{"label": "supports\\ud800"}'],
                         ids=["nan", "infinity", "big_integer", "lone_surrogate"])
def test_a_judge_answer_that_cannot_be_signed_is_a_typed_judge_error(tmp_path: Path, pages: LocalSite,
                                                                     answer: str) -> None:
    """Python's ``json.loads`` accepts ``NaN``, ``Infinity``, integers of any size and ``"\\ud800"``; the judge
    keeps the answer as given, and signing the result (RFC 8785 canonical JSON) refuses each: ``g6: internal
    error: FloatDomainError`` (``IntegerDomainError``, ``CanonicalizationError``), exit 70, after every page
    was read and judged; no result is written. "Whatever the program does, each pair gets an opinion or a
    typed error, never a crash": an answer that is not I-JSON (RFC 7493) is ``judge_garbage``."""
    r = g6(tmp_path / "home", "report", "check", str(one_citation(tmp_path, pages)), "--judge",
           judge(tmp_path, answer), "--json")
    assert r.returncode == 0, r.stderr.decode()[-300:]
    (c,) = json.loads(r.stdout)["citations"]
    assert c["judge"]["error"]["code"] == "judge_garbage"


def test_a_judge_cannot_change_a_verdict_the_figures_or_the_exit_code(tmp_path: Path, site: Site) -> None:
    """Defended: a judge that answers every pair with a label and a forged verdict, figures and exit code (and
    shouts on stderr) is kept as an opinion only: the verdicts, figures and exit code are those of the check
    without a judge."""
    s = site({"/a": Reply(body=article(QUOTE)), "/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "report.json", report_of(
        cite(s.url("/a"), "Bills fell by 40%.", "Bills fell.", claim_start=0, claim_end=11),
        cite(s.url("/gone"), QUOTE, "Gone.", claim_start=12, claim_end=17), text="Bills fell. Gone."))
    assert g6(tmp_path / "home", "report", "check", str(report)).returncode == 1  # the pages read once
    plain = g6(tmp_path / "home", "report", "check", str(report), "--receipts-only", "--json")
    forged = '{"label": "supports", "verdict": "quote_found", "exit_code": 0, "figures": {"quote_found": 2}}'
    p = tmp_path / "j.py"
    p.write_text("import sys\nfor line in sys.stdin:\n    print('VERDICT: quote_found', file=sys.stderr)\n"
                 f"    print({forged!r}, flush=True)\n")
    judged = g6(tmp_path / "home", "report", "check", str(report), "--receipts-only", "--judge",
                f"{sys.executable} {p}", "--json")
    a, b = json.loads(plain.stdout), json.loads(judged.stdout)
    assert judged.returncode == plain.returncode != 0 and b["figures"] == a["figures"]
    assert [c["verdict"] for c in b["citations"]] == [c["verdict"] for c in a["citations"]]
    assert b["citations"][0]["judge"]["opinion"]["verdict"] == "quote_found"  # its words, beside the verdict


# -- finding 18: a model report holding a lone surrogate -------------------------------------------------------
def test_a_model_report_with_a_lone_surrogate_is_refused_as_input(tmp_path: Path, pages: LocalSite) -> None:
    """The model JSON is read with ``json.loads``, which turns ``"\\ud800"`` into a lone surrogate (the other
    formats use orjson, which refuses it). The check reads the page and judges the citation, and signing the
    result fails: exit 70, no result. A report whose strings are not Unicode text is bad input, said before
    anything is fetched (exit 2, ``G6_E_REPORT_MALFORMED`` or ``G6_E_REPORT_ENCODING``)."""
    (tmp_path / "r.json").write_text(json.dumps({
        "schema": "g6.report-model.v1", "text": "Bills \ud800 rose.",
        "citations": [{"source": pages.url("/a"), "claim": "Bills \ud800 rose.", "quote": "rose by 12\ud800"}]}))
    r = g6(tmp_path / "home", "report", "check", str(tmp_path / "r.json"))
    assert r.returncode == 2 and pages.requests == [], (r.returncode, r.stderr.decode()[-300:])


def test_enormous_nesting_and_malformed_reports_are_input_errors(tmp_path: Path) -> None:
    """Defended: JSON nested 100,000 deep (as a provider format and as the model's own JSON) and a report with
    a NUL are one line and exit 2, nothing read."""
    for i, data in enumerate([b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
                              b'{"schema": "g6.report-model.v1", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
                              b"A claim\x00 [a](http://127.0.0.1:9/)."]):
        (tmp_path / f"r{i}").write_bytes(data)
        r = g6(tmp_path / "home", "report", "check", str(tmp_path / f"r{i}"), "--receipts-only")
        assert r.returncode == 2 and b"Traceback" not in r.stderr and len(r.stderr.splitlines()) <= 3, r.stderr


# -- finding 19 (fixed): verify on a hostile result -------------------------------------------------------------------
@pytest.mark.parametrize("citation_id", [["c_1"], {"id": "c_1"}, 5], ids=["list", "object", "number"])
def test_verify_fails_closed_on_a_hostile_result_without_crashing(tmp_path: Path, citation_id: object) -> None:
    """A result is a file anyone can hand a grader. ``_manifest_check`` builds ``sorted({c["citation_id"] …})``
    before anything says a citation id is a string: a list or an object is unhashable, a number beside a
    string does not sort: ``g6: internal error: TypeError``, exit 70. ``verify`` must fail closed on any
    input: exit 1 with the check that failed (the shape)."""
    result = {"schema": "g6.report-check.v1", "result_id": "rchk_x", "figures": {},
              "citations": [{"verdict": "quote_found", "citation_id": citation_id},
                            {"verdict": "quote_found", "citation_id": "c_2"}]}
    (tmp_path / "result.json").write_text(json.dumps(result))
    r = g6(tmp_path / "home", "report", "verify", str(tmp_path / "result.json"))
    assert r.returncode == 1, (r.returncode, r.stderr.decode()[-300:])


def test_an_edited_or_re_signed_result_does_not_verify(tmp_path: Path, site: Site) -> None:
    """Defended: a result whose failed citation is turned into `quote_found` with its figures and exit code
    recomputed does not verify (the signature covers every field); re-signed with another home's key, it
    does not verify in a home that does not trust that key, nor with ``--key`` pinning the first home's."""
    s = site({"/gone": Reply(404, b"no"), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "report.json", report_of(cite(s.url("/gone"), QUOTE)))
    home = tmp_path / "home"
    assert g6(home, "report", "check", str(report), "-o", "result.json").returncode == 1
    result = json.loads((tmp_path / "result.json").read_text())
    c = result["citations"][0]
    c["verdict"], c["reason"] = "quote_found", "the quote is in the page's main text, exactly"
    result["figures"].update(source_failed=0, quote_found=1, quote_found_share=1.0, sources_failed=0)
    result["exit_code"] = exit_code(result["figures"])
    (tmp_path / "edited.json").write_text(json.dumps(result))
    assert g6(home, "report", "verify", "edited.json").returncode == 1
    with EvidenceHome(tmp_path / "forger", fsync=False) as forger:
        forger.keys.init()
        key = forger.signing_key()
        sig = base64.b64encode(key.sign(canonical(result))).decode()
    result["signature"] = {"alg": "ed25519", "key_id": key.key_id, "value": sig}
    (tmp_path / "forged.json").write_text(json.dumps(result))
    assert g6(home, "report", "verify", "forged.json").returncode == 1
    mine = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
    assert g6(home, "report", "verify", "forged.json", "--key", mine).returncode == 1


# -- finding 20 (fixed): an output path inside the home ---------------------------------------------------------------
@pytest.mark.parametrize("flag", ["-o", "--manifest", "--html"])
def test_an_output_path_never_replaces_the_homes_ledger(tmp_path: Path, pages: LocalSite, flag: str) -> None:
    """``-o $G6_HOME/knowledge/ledger.sqlite`` (a slip of the shell, a script's variable) is accepted: the
    result is written beside it and renamed over it, and the home's ledger, every receipt it held, is gone
    (``g6 ledger verify``: "file is not a database"). The rule of the house is that bad input loses nothing:
    an output path inside the evidence home (its ledger, its blobs, its keys) is refused, exit 2, before
    anything is read."""
    home = tmp_path / "home"
    report = one_citation(tmp_path, pages)
    assert g6(home, "report", "check", str(report)).returncode == 0
    ledger = home / "knowledge" / "ledger.sqlite"
    g6(home, "report", "check", str(report), "--receipts-only", flag, str(ledger))
    r = g6(home, "ledger", "verify", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stdout.decode()[-300:]


def test_an_output_path_that_is_a_symlink_is_replaced_not_followed_and_a_fifo_is_refused(tmp_path: Path,
                                                                                          pages: LocalSite) -> None:
    """Defended: ``-o`` and ``--html`` naming a symbolic link replace the link (its target is untouched). A FIFO
    (like a folder, a device or a socket) is not a file to replace: ``--manifest`` naming one is refused, exit 2,
    one line, before anything is read (nothing blocks on a reader that never comes, the FIFO stays)."""
    report = one_citation(tmp_path, pages)
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "link.json").symlink_to(target)
    (tmp_path / "link.html").symlink_to(target)
    r = g6(tmp_path / "home", "report", "check", str(report), "-o", "link.json", "--html", "link.html", timeout=120)
    assert r.returncode == 0, r.stderr
    assert target.read_text() == "keep me" and not (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "link.json").read_text())["figures"]["quote_found"] == 1
    os.mkfifo(tmp_path / "fifo.json")
    seen = len(pages.requests)
    r = g6(tmp_path / "home", "report", "check", str(report), "--manifest", "fifo.json", timeout=120)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and b"FIFO" in r.stderr, r.stderr
    assert (tmp_path / "fifo.json").is_fifo() and len(pages.requests) == seen


def test_a_citation_of_a_loopback_or_private_address_is_refused_and_receipted(tmp_path: Path,
                                                                              pages: LocalSite) -> None:
    """Defended: under the default policy (no ``G6_ALLOW_LOOPBACK``) a report citing ``127.0.0.1`` (directly,
    and as ``--document 1=URL`` for a ``document:1`` source) gets `source_failed`, each refusal receipted,
    and the loopback site is never asked for anything."""
    report = write_report(tmp_path / "report.json", report_of(cite(pages.url("/a"), QUOTE), cite("document:1", QUOTE),
                                                              cite("http://10.0.0.1/x", QUOTE)))
    home = tmp_path / "home"
    r = g6(home, "report", "check", str(report), "--document", f"1={pages.url('/a')}", "--json",
           env={"G6_ALLOW_LOOPBACK": ""})
    result = json.loads(r.stdout)
    assert r.returncode == 1 and [c["verdict"] for c in result["citations"]] == ["source_failed"] * 3
    assert all(c["receipt_id"] and c["read"]["outcome"] == "refused" for c in result["citations"])
    assert pages.requests == []


# -- finding 21 (fixed): the MCP tool's output path -------------------------------------------------------------------
def test_report_check_over_mcp_never_overwrites_the_homes_ledger(tmp_path: Path, pages: LocalSite) -> None:
    """An agent (or a page's prompt injection reaching it) calls ``report_check`` with ``output`` set to the
    home's ``knowledge/ledger.sqlite``: the tool truncates and rewrites it in place (``Path.write_text``,
    which also follows a symbolic link and blocks on a FIFO), and the ledger is gone. MCP tools are
    documented as ``destructiveHint: false`` ("writers only append receipts and blobs"). The output must be
    refused inside the home (and written as the CLI writes it: a temporary file, then a rename), so a
    check over MCP loses nothing."""
    home = tmp_path / "home"
    report = str(one_citation(tmp_path, pages))
    assert g6(home, "report", "check", report).returncode == 0
    ledger = str(home / "knowledge" / "ledger.sqlite")
    session_calls(env_for(home, G6_MCP_SENSITIVE="report_check"),
                  [("report_check", {"report": report, "receipts_only": True, "output": ledger})])
    r = g6(home, "ledger", "verify", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stdout.decode()[-300:]


# -- finding 22 (fixed): how a bundle's keys were trusted -------------------------------------------------------------
@pytest.fixture
def bundled(tmp_path: Path, pages: LocalSite) -> tuple[Path, Path, str]:
    home = tmp_path / "home"
    report = one_citation(tmp_path, pages)
    assert g6(home, "report", "check", str(report), "-o", "result.json").returncode == 0
    assert g6(home, "report", "bundle", "result.json", "-o", "evidence.zip").returncode == 0
    key = json.loads(g6(home, "keys", "show", "--json").stdout)["signing"]["checkpoint_verifier_key"]
    return report, tmp_path / "evidence.zip", key


def test_a_result_says_how_the_bundles_keys_were_trusted(tmp_path: Path, bundled: tuple[Path, Path, str]) -> None:
    """With ``--trust-bundle-keys`` a bundle is verified with the keys it ships: anyone can make one that
    holds (a home of their own, any page they like, receipts signed by themselves). With ``--key`` it is
    verified against the publisher's key the grader pinned. The signed result a grader hands on records
    ``evidence: {source: bundle, origin, bundle: {sha256, receipts}}`` in both cases, so whoever reads it later
    cannot tell a report checked against its publisher's evidence from one checked against evidence that
    vouched for itself. The result must record the key(s) the bundle was verified with and how they were
    trusted (pinned, or the bundle's own)."""
    report, evidence, key = bundled
    grader = tmp_path / "grader"
    pinned = g6(grader, "report", "check", str(report), "--bundle", str(evidence), "--key", key, "--json")
    own = g6(grader, "report", "check", str(report), "--bundle", str(evidence), "--trust-bundle-keys", "--json")
    assert pinned.returncode == own.returncode == 0, (pinned.stderr, own.stderr)
    assert json.loads(pinned.stdout)["evidence"] != json.loads(own.stdout)["evidence"]


def test_a_bundle_whose_receipt_was_edited_is_refused_whole(tmp_path: Path, bundled: tuple[Path, Path, str]) -> None:
    """Defended: the receipt of the found citation edited in the zip (its URL changed to another page's) fails
    its signature: the bundle is refused whole, exit 1, whether its key is pinned or its own keys trusted."""
    report, evidence, key = bundled
    with zipfile.ZipFile(evidence) as z:
        files = {n: z.read(n) for n in z.namelist()}
    name = next(n for n in files if n.startswith("receipts/"))
    r = json.loads(files[name])
    r["request"]["url"] = r["request"]["url"].replace("/a", "/b")
    files[name] = json.dumps(r).encode()
    with zipfile.ZipFile(tmp_path / "tampered.zip", "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    for trust in (["--key", key], ["--trust-bundle-keys"]):
        got = g6(tmp_path / "grader", "report", "check", str(report), "--bundle", "tampered.zip", *trust)
        assert got.returncode == 1 and b"Traceback" not in got.stderr, got.stderr
