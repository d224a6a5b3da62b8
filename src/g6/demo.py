"""The demo: a local fixture site on loopback, fetched, stored, receipted and verified; one
sentence cited, the evidence bundled and the bundle verified offline with the pinned key.

The demo is its own operator: it allows loopback for the site it starts, and only for that.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from g6.adapters.checked_client import CheckedClient, FetchPolicy
from g6.bundle import BundleReport, build_bundle, verify_bundle
from g6.capture import FetchResult, fetch
from g6.citing import cite_web
from g6.home import EvidenceHome
from g6.ledger import LedgerVerifyReport
from g6.localsite import LocalSite, Reply
from g6.manifest import Manifest, save_manifest

# path -> the outcome the demo expects there
DEMO_PAGES: tuple[tuple[str, str], ...] = (
    ("/", "ok"),
    ("/article", "ok"),
    ("/old-article", "ok"),
    ("/private/notes", "robots_disallowed"),
    ("/missing", "not_found"),
)


def demo_site() -> LocalSite:
    files = resources.files("g6") / "demo_site"
    page = {name: (files / name).read_bytes() for name in ("index.html", "article.html", "robots.txt")}
    return LocalSite({
        "/": Reply(body=page["index.html"]),
        "/article": Reply(body=page["article.html"]),
        "/old-article": Reply(301, headers=(("Location", "/article"),), content_type=None),
        "/robots.txt": Reply(body=page["robots.txt"], content_type="text/plain"),
        "/private/notes": Reply(body=b"<p>never fetched</p>"),
    })


DEMO_QUOTE = "the answer should be a receipt"


@dataclass(frozen=True)
class DemoRun:
    home: Path
    site: str
    results: tuple[tuple[str, str, FetchResult], ...]  # (path, expected outcome, result)
    verify: LedgerVerifyReport
    bundle_path: Path
    bundle: BundleReport

    @property
    def ok(self) -> bool:
        return self.verify.ok and self.bundle.ok and all(r.outcome.value == want for _, want, r in self.results)


def run_demo(home: Path | None = None) -> DemoRun:
    root = home or Path(tempfile.mkdtemp(prefix="g6-demo-"))
    with EvidenceHome(root) as ev, demo_site() as site:
        if not ev.keys.exists():
            ev.keys.init()
        policy = FetchPolicy(allow_loopback=True, host_pause=0.05, total_timeout=20)
        with CheckedClient(policy) as client:
            results = tuple((path, want, fetch(ev, client, site.url(path))) for path, want in DEMO_PAGES)
        # cite a sentence of the article, sign the manifest, bundle it, verify the bundle offline
        article = next(r for path, _, r in results if path == "/article")
        manifest = Manifest.new().with_citation(cite_web(ev, article.receipt_id, quote=DEMO_QUOTE))
        save_manifest(manifest.signed(ev.signing_key()), root / "demo-manifest.json")
        bundle_path = root / "demo-evidence.zip"
        build_bundle(ev, root / "demo-manifest.json", bundle_path)
        report = verify_bundle(bundle_path, (ev.signing_key().public,))
        return DemoRun(root, site.base_url, results, ev.verify(), bundle_path, report)
