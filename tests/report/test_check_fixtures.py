"""Every report fixture (fixtures/reports/) checked end to end by `g6 report check`, as a user runs it, against
the demo site `g6 demo --serve` serves (127.0.0.1 and 127.0.0.2 on one port, here a free one: the fixtures'
port 8421 is rewritten to it as each is loaded), with the recorded paper sources: every citation's verdict and
why, the figures and the exit code; then again with `--receipts-only` on the same home, the same verdicts.

The table of verdict counts in docs/commands/report.md is these expectations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from g6.demo.run import ServedSite
from tests.report.check_helpers import g6

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REPORTS = FIXTURES / "reports"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedSite]:
    with ServedSite(port=0, site_dir=tmp_path_factory.mktemp("site"), recorded=FIXTURES / "http") as s:
        yield s


def why(c: dict[str, Any]) -> str:
    """A citation's verdict in a few words: where a quote was found, why it was not, why a source failed."""
    d, v = c["detail"], c["verdict"]
    if v == "quote_found":
        return f"{c['found']['text_source']}{' (PDF)' if 'converted' in d else ''}"
    if v == "quote_not_found":
        return str(d.get("hidden_in", "not on the page"))
    if v == "source_failed":
        if "unusable" in d:
            return "unusable: " + c["source"]
        if "answered with another paper" in c["reason"]:
            return "another paper"
        if c["source"].startswith("document:"):
            return "document not mapped"
        if "pinned receipt" in c["reason"]:
            return "pinned receipt not in the home"
        return str(d.get("outcome"))
    return ""


def run(served: ServedSite, home: Path, name: str, *args: str) -> dict[str, Any]:
    """`g6 report check` of fixture ``name`` (its port rewritten to the served site's), its exit code checked
    against its result's."""
    report = home.parent / name
    if not report.exists():
        report.write_bytes((REPORTS / name).read_bytes().replace(b":8421", f":{served.port}".encode()))
    args = tuple(a.replace("SITE2", served.urls()[1]).replace("SITE", served.urls()[0]) for a in args)
    r = g6(home, "report", "check", str(report), "--json", *args, env=served.exports())
    assert r.returncode in (0, 1), r.stderr
    result = json.loads(r.stdout)
    assert r.returncode == result["exit_code"]
    return result


A, B = "127.0.0.1", "127.0.0.2"
# fixture, extra arguments, every citation's (verdict, why) in order, the exit code
EXPECTED: list[tuple[str, tuple[str, ...], list[tuple[str, str]], int]] = [
    ("report.md", (), [
        ("no_quote", ""), ("quote_found", "main"), ("no_quote", ""), ("quote_found", "main"),
        ("quote_found", "main"), ("quote_found", "main"), ("no_quote", ""), ("source_failed", "not_found"),
        ("source_failed", "robots_disallowed"), ("source_failed", "another paper"),
        ("source_failed", "another paper"), ("source_failed", "another paper")], 1),
    ("unusable.md", (), [
        ("quote_found", "main"), ("source_failed", "unusable: javascript:alert(12)"),
        ("source_failed", "unusable: data:text/html,twelve"), ("source_failed", "unusable: /survey/2026"),
        ("source_failed", "unusable: [^print]")], 1),
    ("openai-responses.json", (), [
        ("no_quote", ""), ("no_quote", ""), ("no_quote", ""), ("source_failed", "robots_disallowed")], 1),
    ("openai-chat.json", (), [("no_quote", ""), ("no_quote", ""), ("source_failed", "not_found")], 1),
    ("anthropic.json", (), [
        ("quote_found", "main"), ("quote_not_found", "not on the page"), ("quote_not_found", "display_none"),
        ("quote_found", "main"), ("quote_found", "main")], 1),
    ("anthropic-documents.json", (), [("source_failed", "document not mapped")] * 3, 1),
    ("anthropic-documents.json", ("--document", "0=SITE/news/energy.html", "--document", "1=SITE/paper.pdf",
                                  "--document", "2=SITE2/news/energy.html"),
     [("quote_found", "main"), ("quote_found", "main (PDF)"), ("quote_found", "main")], 0),
    ("gemini.json", (), [("no_quote", "")] * 4 + [("source_failed", "not_found")], 1),
    ("perplexity.json", (), [("no_quote", "")] * 4 + [("source_failed", "not_found")], 1),
    ("annotations.jsonld", (), [
        ("quote_found", "main"), ("quote_not_found", "not on the page"), ("source_failed", "not_found")], 1),
    ("g6-manifest.json", (), [("source_failed", "pinned receipt not in the home")] * 2, 1),
]


@pytest.mark.parametrize(("name", "args", "want", "code"), EXPECTED,
                         ids=[f"{e[0]}{'+documents' if e[1] else ''}" for e in EXPECTED])
def test_each_fixture_end_to_end_against_the_demo_site(tmp_path: Path, served: ServedSite, name: str,
                                                       args: tuple[str, ...], want: list[tuple[str, str]],
                                                       code: int) -> None:
    home = tmp_path / "home"
    result = run(served, home, name, *args)
    got = [(c["verdict"], why(c)) for c in result["citations"]]
    assert got == want
    assert result["exit_code"] == code and [c["n"] for c in result["citations"]] == list(range(1, len(want) + 1))
    f = result["figures"]
    assert f["citations"] == len(want) and all(f[v] == [w for w, _ in want].count(v) for v, _ in want)
    again = run(served, home, name, "--receipts-only", *args)
    assert [(c["verdict"], c["receipt_id"], c["found"] if "found" in c else None) for c in again["citations"]] == \
        [(c["verdict"], c["receipt_id"], c["found"] if "found" in c else None) for c in result["citations"]]


def test_the_second_host_is_read_as_its_own_page(tmp_path: Path, served: ServedSite) -> None:
    result = run(served, tmp_path / "home", "report.md")
    hosts = {c["read"]["url"].split("/")[2].split(":")[0] for c in result["citations"] if c["read"]}
    assert hosts == {A, B}
    second = [c for c in result["citations"] if c["read"] and B in c["read"]["url"]]
    assert [c["verdict"] for c in second] == ["quote_found", "quote_found"]
    assert len({c["receipt_id"] for c in result["citations"] if c["receipt_id"]}) == 7  # one read a URL


def test_the_found_citations_manifest_checks_as_a_report_itself(tmp_path: Path, served: ServedSite) -> None:
    home = tmp_path / "home"
    first = run(served, home, "report.md", "--manifest", str(tmp_path / "found.json"))
    r = g6(home, "report", "check", str(tmp_path / "found.json"), "--receipts-only", "--json", env=served.exports())
    again = json.loads(r.stdout)
    assert r.returncode == 0 and again["report"]["format"] == "g6-manifest"
    assert [c["verdict"] for c in again["citations"]] == ["quote_found"] * first["figures"]["quote_found"]
    assert {c["receipt_id"] for c in again["citations"]} <= {c["receipt_id"] for c in first["citations"]}
    assert all(c["read"]["how"] == "pinned" for c in again["citations"])
