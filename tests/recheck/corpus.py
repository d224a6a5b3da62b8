"""Run the re-check corpus (``fixtures/recheck-corpus``) over a real loopback server.

Phase 1 serves every case's v1, fetches it (under the case's byte cap) and cites the case's quote;
phase 2 serves v2 (or its status, redirect, or a name that no longer resolves) and re-checks the
signed manifest. ``python tests/recheck/corpus.py`` prints the confusion table (expected x got).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.cite.recheck import RecheckReport, Verdict, recheck
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "recheck-corpus"
HOST, DOWN_HOST = "news.example.test", "down.example.test"


def load_cases() -> list[dict[str, Any]]:
    return json.loads((CORPUS / "cases.json").read_text())


class SwitchableResolver:
    """Every corpus name is this machine's loopback, until it is taken down (then it has no address)."""

    def __init__(self) -> None:
        self.down: set[str] = set()

    def __call__(self, host: str, port: int) -> list[str]:
        return [] if host in self.down else ["127.0.0.1"]


def _reply(spec: dict[str, Any]) -> Reply:
    body = (CORPUS / spec["file"]).read_bytes() if spec.get("file") else b""
    return Reply(spec.get("status", 200), body, tuple(spec.get("headers", {}).items()), spec["content_type"])


@dataclass
class CorpusRun:
    cases: list[dict[str, Any]]
    report: RecheckReport
    by_case: dict[str, Verdict]

    def rows(self) -> list[tuple[str, str, str]]:
        return [(c["name"], c["expected"], self.by_case[c["name"]].verdict) for c in self.cases]

    def confusion(self) -> Counter[tuple[str, str]]:
        return Counter((e, g) for _, e, g in self.rows())

    def table(self) -> str:
        labels = sorted({e for _, e, _ in self.rows()} | {g for _, _, g in self.rows()})
        conf = self.confusion()
        w = max(len(x) for x in labels) + 2
        lines = ["| expected \\ got | " + " | ".join(labels) + " |", "|" + " --- |" * (len(labels) + 1)]
        for e in labels:
            if any(k[0] == e for k in conf):
                lines.append(f"| {e:<{w}} | " + " | ".join(str(conf.get((e, g), "")) or "" for g in labels) + " |")
        return "\n".join(lines)


def run_corpus(home: EvidenceHome, cases: list[dict[str, Any]] | None = None) -> CorpusRun:
    cases = load_cases() if cases is None else cases
    resolver = SwitchableResolver()
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=2, read_timeout=5, total_timeout=10)
    site = LocalSite({"/robots.txt": Reply(404, b"")}).start()
    try:
        def url(c: dict[str, Any]) -> str:
            host = DOWN_HOST if not c["v2"]["resolve"] else HOST
            return f"http://{host}:{site.port}/{c['name']}"

        site.routes = {"/robots.txt": Reply(404, b""), **{f"/{c['name']}": _reply(c["v1"]) for c in cases}}
        citations = {}
        refused: dict[str, Verdict] = {}
        with CheckedClient(policy, resolver=resolver) as client:
            for c in cases:
                pol = replace(policy, max_bytes=c["max_bytes"]) if c.get("max_bytes") else None
                r = fetch(home, client, url(c), policy=pol)
                try:
                    citations[c["name"]] = cite_web(home, r.receipt_id, quote=c["quote"])
                except InputError as e:  # counted as its own outcome, so a table can show it
                    refused[c["name"]] = Verdict("", "cite_refused", url(c), detail={"reason": str(e)})
        routes: dict[str, Reply] = {"/robots.txt": Reply(404, b"")}
        for c in cases:
            v2 = _reply(c["v2"])
            if c["v2"]["redirect"]:
                routes[f"/{c['name']}"] = Reply(301, b"", (("Location", f"/{c['name']}-moved"),))
                routes[f"/{c['name']}-moved"] = v2
            else:
                routes[f"/{c['name']}"] = v2
            if not c["v2"]["resolve"]:
                resolver.down.add(DOWN_HOST)
        site.routes = routes
        manifest = Manifest.new()
        for c in cases:
            if c["name"] in citations:
                manifest = manifest.with_citation(citations[c["name"]])
        manifest = manifest.signed(home.signing_key())
        with CheckedClient(policy, resolver=resolver) as client:
            report = recheck(home, client, manifest, workers=4)
    finally:
        site.stop()
    got = {v.citation_id: v for v in report.verdicts}
    return CorpusRun(cases, report, {c["name"]: got[citations[c["name"]].citation_id] if c["name"] in citations
                                     else refused[c["name"]] for c in cases})


def main() -> int:
    with tempfile.TemporaryDirectory() as d:
        home = EvidenceHome(d, fsync=False)
        home.keys.init()
        run = run_corpus(home)
        home.close()
    for name, e, g in run.rows():
        mark = "" if e == g else "   <-- MISMATCH"
        v = run.by_case[name]
        extra = f" similarity={v.similarity}" if v.similarity is not None else ""
        print(f"{name:<32} expected {e:<13} got {g:<13}{extra}{mark}")
    print()
    print(f"{len(run.cases)} pairs, {sum(e == g for _, e, g in run.rows())} as expected")
    print(run.table())
    return 0 if all(e == g for _, e, g in run.rows()) else 1


if __name__ == "__main__":
    sys.exit(main())
