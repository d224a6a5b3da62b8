"""The demo: a local fixture site on loopback, fetched, stored, receipted and verified; one
sentence cited, the evidence bundled and the bundle verified offline with the pinned key.

The demo is its own operator: it allows loopback for the site it starts, and only for that.

``g6 demo --serve`` (:class:`ServedSite`) serves the same site, and the pages the docs' examples
read, until stopped: on 127.0.0.1 and 127.0.0.2 (two hosts, one port), from a folder of files read
again on every request (so an example can edit a page and re-check it), and, given the recorded
replies of a checkout (``fixtures/http``), the paper sources' answers under ``/arxiv``, ``/oai``,
``/openalex`` and ``/s2``.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from g6.adapters.net.checked_client import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply, Route, SeenRequest
from g6.fetch.capture import FetchResult, fetch
from g6.home import EvidenceHome
from g6.ledger import LedgerVerifyReport
from g6.prove.bundle import BundleReport, PinnedKey, build_bundle, verify_bundle

# path -> the outcome the demo expects there
DEMO_PAGES: tuple[tuple[str, str], ...] = (
    ("/", "ok"),
    ("/article", "ok"),
    ("/old-article", "ok"),
    ("/private/notes", "robots_disallowed"),
    ("/missing", "not_found"),
)


def demo_site() -> LocalSite:
    files = resources.files("g6.demo") / "pages"
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
        # pinned as a grader pins it: the checkpoint verifier key (`g6 keys show`), which names the log too
        report = verify_bundle(bundle_path, (PinnedKey(ev.signing_key().public, ev.ledger.origin),))
        return DemoRun(root, site.base_url, results, ev.verify(), bundle_path, report)


# -- g6 demo --serve -------------------------------------------------------------------------------
# the files of the served site, copied into its folder: name -> (path served, content type)
SERVED_FILES: tuple[tuple[str, str, str], ...] = (
    ("index.html", "/", "text/html; charset=utf-8"),
    ("article.html", "/article", "text/html; charset=utf-8"),
    ("robots.txt", "/robots.txt", "text/plain"),
    ("energy.html", "/news/energy.html", "text/html; charset=utf-8"),
    ("paper.pdf", "/paper.pdf", "application/pdf"),
    # a page whose text a script writes from JSON (`g6 fetch --render auto` renders it; a raw read sees a shell)
    ("app.html", "/app", "text/html; charset=utf-8"),
    ("app.js", "/app.js", "text/javascript"),
    ("app.json", "/app.json", "application/json"),
)
SERVED_HOSTS = ("127.0.0.1", "127.0.0.2")
DEFAULT_SERVE_PORT = 8421


def _from_folder(path: Path, content_type: str) -> Route:
    def reply(_req: SeenRequest) -> Reply:
        try:
            return Reply(body=path.read_bytes(), content_type=content_type)
        except FileNotFoundError:  # a page removed from the folder is gone from the site too
            return Reply(404, b"not here")
    return reply


def recorded_routes(folder: Path) -> dict[str, Route]:
    """The paper sources' recorded real replies (a checkout's ``fixtures/http``), by the path each API uses."""
    def file(sub: str, name: str, ctype: str) -> Reply:
        status = int(name.split("status")[1][:3]) if "status" in name else 200
        return Reply(status, (folder / sub / name).read_bytes(), content_type=ctype)

    def arxiv(req: SeenRequest) -> Reply:
        start = parse_qs(urlsplit(req.path).query).get("start", ["0"])[0]
        name = ("search_q_testing_start0_max10_status200.xml" if start == "0"
                else "search_q_testing_start50_max10_status200.xml")
        return file("arxiv", name, "application/atom+xml; charset=utf-8")

    def oai(req: SeenRequest) -> Reply:
        token = parse_qs(urlsplit(req.path).query).get("resumptionToken")
        return file("oai-pmh", "ListRecords4.xml" if token else "ListRecords.xml", "text/xml")

    return {
        "/arxiv/api/query": arxiv,
        "/oai": oai,
        "/openalex/works": file("openalex", "works_search_49_results_per_page200_status200.json", "application/json"),
        "/s2/graph/v1/paper/search": file("semanticscholar",
                                          "relevance_search_last_page_no_next_total89_status200.json",
                                          "application/json"),
    }


@dataclass
class ServedSite:
    """The demo site (and optionally the recorded paper-source replies) served on loopback until stopped."""

    port: int = DEFAULT_SERVE_PORT  # 0: a free port
    site_dir: Path | None = None  # default: a new temporary folder
    recorded: Path | None = None
    sites: list[LocalSite] = field(default_factory=list)

    def routes(self) -> dict[str, Route]:
        assert self.site_dir is not None
        routes: dict[str, Route] = {path: _from_folder(self.site_dir / name, ctype)
                                    for name, path, ctype in SERVED_FILES}
        routes["/old-article"] = Reply(301, headers=(("Location", "/article"),), content_type=None)
        routes["/private/notes"] = Reply(body=b"<p>never fetched</p>")
        if self.recorded is not None:
            routes.update(recorded_routes(self.recorded))
        return routes

    def start(self) -> ServedSite:
        if self.site_dir is None:
            self.site_dir = Path(tempfile.mkdtemp(prefix="g6-site-"))
        self.site_dir.mkdir(parents=True, exist_ok=True)
        files = resources.files("g6.demo") / "pages"
        for name, _path, _ctype in SERVED_FILES:
            if not (self.site_dir / name).exists():  # a folder already edited keeps its edits
                (self.site_dir / name).write_bytes((files / name).read_bytes())
        routes = self.routes()
        for attempt in range(20):  # with a free port: the first host's port may be taken on the second
            first = LocalSite(routes, host=SERVED_HOSTS[0], port_wanted=self.port).start()
            try:
                self.sites = [first, *(LocalSite(routes, host=h, port_wanted=first.port).start()
                                       for h in SERVED_HOSTS[1:])]
                break
            except OSError:
                first.stop()
                if self.port or attempt == 19:
                    raise
        self.port = self.sites[0].port
        return self

    def stop(self) -> None:
        for site in self.sites:
            site.stop()
        self.sites = []

    def urls(self) -> list[str]:
        return [s.base_url for s in self.sites]

    def exports(self) -> dict[str, str]:
        """The settings the docs' examples run with against this site."""
        assert self.site_dir is not None
        base = self.sites[0].base_url
        env = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_DEMO_SITE": str(self.site_dir)}
        if self.recorded is not None:
            env.update({"G6_ARXIV_URL": f"{base}/arxiv/api/query", "G6_OPENALEX_URL": f"{base}/openalex/works",
                        "G6_SEMANTIC_SCHOLAR_URL": f"{base}/s2/graph/v1", "G6_ARXIV_PAUSE": "0",
                        "G6_OPENALEX_PAUSE": "0", "G6_SEMANTIC_SCHOLAR_PAUSE": "0", "G6_OAI_PMH_PAUSE": "0"})
        return env

    def __enter__(self) -> ServedSite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

