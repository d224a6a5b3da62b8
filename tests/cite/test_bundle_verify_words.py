"""`g6 bundle verify` names a failing citation by its id and says how many of how many failed.

A bundle of two citations, one of whose bodies was taken out of the zip (as ``zip -d`` would): the failing
citation is ``citation 2 (c_…)``, not a bare number; the summary is ``bundle FAILED: 1 of 2 citations failed``,
not ``2 citations`` (which reads as if both failed); exit 1; --json keeps its fields and adds
``manifest_citation_id`` (the id as the manifest writes it: ``citation_id`` is set only from what verified)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.prove.bundle import build_bundle
from tests.conftest import validate

Site = Callable[..., LocalSite]
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
ONE = "The first page says the council met on a Tuesday evening."
TWO = "The second page says the vote was seven to two in favour."


def without(src: Path, dst: Path, name: str) -> Path:
    """``zip -d``: the bundle less one member, nothing else changed."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as out:
        assert name in z.namelist()
        for info in z.infolist():
            if info.filename != name:
                out.writestr(info, z.read(info))
    return dst


def test_a_failing_citation_is_named_and_the_summary_counts_the_failed(home: EvidenceHome, client: CheckedClient,
                                                                       site: Site, tmp_path: Path) -> None:
    s = site({"/one": Reply(body=f"<p>{ONE}</p>".encode()), "/two": Reply(body=f"<p>{TWO}</p>".encode()),
              "/robots.txt": ROBOTS})
    first = cite_web(home, fetch(home, client, s.url("/one")).receipt_id, quote=ONE)
    second = cite_web(home, fetch(home, client, s.url("/two")).receipt_id, quote=TWO)
    save_manifest(Manifest.new().with_citation(first).with_citation(second).signed(home.signing_key()),
                  tmp_path / "m.json")
    build_bundle(home, tmp_path / "m.json", tmp_path / "b.zip")
    blob = "blobs/" + str(second.content["blake3"]).split(":", 1)[1]
    bad = without(tmp_path / "b.zip", tmp_path / "bad.zip", blob)
    key = home.signing_key().public.to_text()

    def verify(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), "bundle", "verify", str(bad),
                               "--key", key, *more], capture_output=True, text=True, timeout=120)

    out = verify()
    assert out.returncode == 1, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    failing = [x for x in lines if " FAILED" in x and x.startswith("citation ")]
    assert len(failing) == 1 and failing[0].startswith(f"citation 2 ({second.citation_id}) FAILED"), out.stdout
    assert any(x.startswith(f"{first.citation_id} holds") for x in lines), out.stdout
    assert lines[-1] == "bundle FAILED: 1 of 2 citations failed", lines[-1]

    j = verify("--json")
    assert j.returncode == 1
    report = json.loads(j.stdout)
    validate(report, "bundle-verify.v1")
    got = [(c["position"], c["ok"], c["citation_id"], c["manifest_citation_id"]) for c in report["citations"]]
    assert got == [(1, True, first.citation_id, first.citation_id), (2, False, None, second.citation_id)]
    assert report["ok"] is False
