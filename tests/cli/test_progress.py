"""Progress on stderr (issue 18): every long command draws a click progress bar with counts and a rate when
stderr is a terminal, draws nothing when stderr is piped or with ``--quiet`` (which also drops the notes), and
prints the same results on stdout in all three cases.

Each command runs as a user runs it: a real process, stderr attached to a real pseudo-terminal (``pty``) or to
a pipe, stdout to a pipe; a real home on disk and a real loopback site."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.home import EvidenceHome
from g6.ledger import Receipt

PAGES = 6
BAR_START = "\x1b[?25l"  # click hides the cursor while it draws a bar: never seen without one


def _page(i: int) -> bytes:
    return (f"<html><head><title>Page {i}</title></head><body><p>Progress page number {i} says "
            f"something worth citing.</p></body></html>").encode()


def _oai(req: SeenRequest) -> Reply:
    """Three pages of two records, linked by resumption tokens."""
    start = int(parse_qs(urlsplit(req.path).query).get("resumptionToken", ["0"])[0])
    recs = "".join(f"<record><header><identifier>oai:p:{i}</identifier></header></record>"
                   for i in range(start, start + 2))
    token = f'<resumptionToken completeListSize="6">{start + 2 if start + 2 < 6 else ""}</resumptionToken>'
    xml = f'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><ListRecords>{recs}{token}</ListRecords></OAI-PMH>'
    return Reply(body=xml.encode(), content_type="text/xml")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_") and k not in ("COLUMNS", "LINES")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", "G6_OAI_PMH_PAUSE": "0"})
    return env


def piped(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=_env(home),
                          stdin=subprocess.DEVNULL, timeout=300)


def on_terminal(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run g6 with stderr on a pseudo-terminal (so it is a TTY) and stdout on a pipe."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "g6", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=_env(home))
    os.close(slave)  # the child holds the only other end: reading gives EIO once it (and its workers) exit
    assert proc.stdout is not None
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    err = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            assert ready, "g6 wrote nothing to the terminal for 300 s"  # a hang guard, not a timing check
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
    reader.join()
    code = proc.wait(timeout=300)
    return subprocess.CompletedProcess(proc.args, code, out[0].decode(), err.decode().replace("\r\n", "\n"))


@dataclass
class World:
    home: Path
    tmp: Path
    site: LocalSite
    manifest: Path
    bundle: Path
    key: str
    urls: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("progress")
    site = LocalSite({**{f"/p{i}": Reply(body=_page(i)) for i in range(PAGES)}, "/oai": _oai}).start()
    try:
        home = tmp / "home"
        urls = tmp / "urls.txt"
        urls.write_text("".join(site.url(f"/p{i}") + "\n" for i in range(PAGES)))
        r = piped(home, "fetch", "--input", str(urls), "--json")
        assert r.returncode == 0, r.stderr
        rids = [json.loads(line)["receipt_id"] for line in r.stdout.splitlines()]
        manifest = tmp / "cited.json"
        for i, rid in enumerate(rids[:3]):
            c = piped(home, "cite", rid, "--quote", f"Progress page number {i} says", "--manifest", str(manifest))
            assert c.returncode == 0, c.stderr
        assert piped(home, "manifest", "sign", str(manifest)).returncode == 0
        bundle = tmp / "evidence.zip"
        assert piped(home, "bundle", str(manifest), "-o", str(bundle)).returncode == 0
        key = json.loads(piped(home, "keys", "show", "--json").stdout)["signing"]["public_key"]
        yield World(home, tmp, site, manifest, bundle, key, urls)
    finally:
        site.stop()


@dataclass(frozen=True)
class Case:
    name: str
    args: Callable[[World, str], list[str]]  # (world, run) -> arguments; run is "tty", "pipe" or "quiet"
    label: str
    unit: str
    quiet_after: bool = False  # `g6 CMD -q` (the command's option) instead of `g6 -q CMD`


CASES = [
    Case("ledger verify", lambda w, run: ["ledger", "verify"], "verifying", "receipts"),
    Case("ledger verify --since", lambda w, run: ["ledger", "verify", "--since", str(w.tmp / "cp.note")],
         "verifying", "receipts", quiet_after=True),
    Case("blob verify", lambda w, run: ["blob", "verify"], "verifying", "blobs", quiet_after=True),
    Case("blob gc", lambda w, run: ["blob", "gc", "--dry-run", "--grace", "0"], "collecting", "blobs"),
    Case("ledger copy", lambda w, run: ["ledger", "copy", "--to", f"sqlite:///{w.tmp / f'copy-{run}.sqlite'}"],
         "copying", "receipts", quiet_after=True),
    Case("blob copy", lambda w, run: ["blob", "copy", "--to", f"file://{w.tmp / f'blobs-{run}'}"],
         "copying", "blobs"),
    Case("ledger publish", lambda w, run: ["ledger", "publish", str(w.tmp / f"tiles-{run}")], "publishing",
         "receipts", quiet_after=True),
    Case("bundle", lambda w, run: ["bundle", str(w.manifest), "-o", str(w.tmp / "again.zip")], "bundling",
         "steps", quiet_after=True),
    Case("bundle verify", lambda w, run: ["bundle", "verify", str(w.bundle), "--key", w.key],
         "verifying the bundle", "files"),
    Case("export warc", lambda w, run: ["export", "warc", "-o", str(w.tmp / "out.warc.gz")], "writing the WARC",
         "receipts", quiet_after=True),
    Case("export wacz", lambda w, run: ["export", "wacz", "-o", str(w.tmp / "out.wacz")], "writing the WACZ",
         "steps"),
    Case("search", lambda w, run: ["search", "oai_pmh", "--endpoint", w.site.url("/oai"), "--max-pages", "5"],
         "searching oai_pmh", "pages", quiet_after=True),
    Case("fetch --input", lambda w, run: ["fetch", "--input", str(w.urls)], "fetching", "URLs"),
    Case("recheck", lambda w, run: ["recheck", str(w.manifest)], "re-checking", "citations", quiet_after=True),
]

IDS = re.compile(r"\b(rcpt|run|fetch|recheck)_[0-9A-Za-z]+")


def _same(text: str) -> str:
    """What may differ between two runs of a command that writes: new receipt and run ids, the run's folder."""
    return re.sub(r"-(tty|pipe|quiet)\b", "-RUN", IDS.sub(r"\1_ID", text))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_bar_on_a_terminal_nothing_piped_or_quiet(world: World, case: Case) -> None:
    if case.name == "ledger verify --since":  # a checkpoint the ledger has since grown past: new rows to check
        note = world.tmp / "cp.note"
        if not note.exists():
            assert piped(world.home, "ledger", "checkpoint", "--out", str(note)).returncode == 0
            assert piped(world.home, "fetch", world.site.url("/p0")).returncode == 0
    cmd = case.args
    tty = on_terminal(world.home, *cmd(world, "tty"))
    pipe = piped(world.home, *cmd(world, "pipe"))
    quiet_args = [*cmd(world, "quiet"), "-q"] if case.quiet_after else ["--quiet", *cmd(world, "quiet")]
    quiet = on_terminal(world.home, *quiet_args)
    assert tty.returncode == pipe.returncode == quiet.returncode == 0, (tty.stderr, pipe.stderr, quiet.stderr)

    # on a terminal: the bar, with its label, counts (done/total, finished), percent and rate
    assert BAR_START in tty.stderr, tty.stderr
    final = re.findall(rf"{re.escape(case.label)}  \[#+\]  (\d+)/(\d+)  100%  [\d,]+ {case.unit}/s", tty.stderr)
    assert final and all(done == total and int(total) > 0 for done, total in final), tty.stderr

    # piped: no bar (nor any of its parts); quiet on a terminal: nothing at all on stderr
    assert BAR_START not in pipe.stderr and f"{case.unit}/s" not in pipe.stderr and "100%" not in pipe.stderr
    assert quiet.stderr == ""

    # the results are the same whatever stderr is
    assert tty.stdout.strip(), tty.stderr
    assert _same(tty.stdout) == _same(pipe.stdout) == _same(quiet.stdout)


def test_counts_are_those_of_the_work(world: World) -> None:
    """The bar counts what the command checks: as many receipts as the ledger holds, as many files as the
    bundle declares."""
    rows = json.loads(piped(world.home, "ledger", "verify", "--json").stdout)["rows"]
    tty = on_terminal(world.home, "ledger", "verify")
    assert f"{rows}/{rows}  100%" in tty.stderr, tty.stderr
    import zipfile

    with zipfile.ZipFile(world.bundle) as z:
        declared = len(json.loads(z.read("bundle.json"))["files"])
    tty = on_terminal(world.home, "bundle", "verify", str(world.bundle), "--key", world.key)
    assert f"{declared}/{declared}  100%" in tty.stderr, tty.stderr


def test_piped_diagnostics_stay_and_quiet_drops_them(world: World) -> None:
    """Without a terminal the notes (receipt ids, files written, the per-URL log of `fetch --input`) stay on
    stderr as before; --quiet drops them, but never an error."""
    r = piped(world.home, "fetch", "--input", str(world.urls))
    assert f"{PAGES}/{PAGES} ok" in r.stderr and "resume with --run" in r.stderr
    q = piped(world.home, "-q", "fetch", "--input", str(world.urls))
    assert q.returncode == 0 and q.stderr == "" and q.stdout.count("\n") == PAGES
    bad = on_terminal(world.home, "-q", "bundle", "verify", str(world.tmp / "missing.zip"))
    assert bad.returncode == 2 and bad.stderr.startswith("g6: no bundle file at ")
    kept = world.tmp / "quiet-cp.note"
    c = piped(world.home, "ledger", "checkpoint", "--out", str(kept))
    assert c.returncode == 0 and "wrote the checkpoint" in c.stderr and "verifier key:" in c.stderr
    cq = piped(world.home, "-q", "ledger", "checkpoint", "--out", str(kept))
    assert cq.returncode == 0 and cq.stderr == "" and cq.stdout.startswith("g6-evidence/")


# -- the library loops behind the bars: progress(done, total) climbs to (total, total) ----------------
class Calls(list[tuple[int, int]]):
    def __call__(self, done: int, total: int) -> None:
        self.append((done, total))

    def climbs_to(self, total: int) -> bool:
        """Never goes back, never past its total, and ends at (total, total)."""
        dones = [d for d, _ in self]
        return bool(self) and dones == sorted(dones) and all(d <= t for d, t in self) and self[-1] == (total, total)


def _fill(home: EvidenceHome, n: int) -> None:
    key = home.signing_key()
    for i in range(n):
        ref = home.store.put(f"body {i}".encode() * (1 + i % 3))
        home.ledger.append(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"},
                                   outcome="ok", outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=ref.size,
                                   content=ref.to_json()), key)


@pytest.mark.parametrize("workers", [1, 2])
def test_ledger_verify_reports_rows_in_ranges_and_in_workers(home: EvidenceHome, monkeypatch: pytest.MonkeyPatch,
                                                            workers: int) -> None:
    from g6.ledger.verification import verify_ranges

    monkeypatch.setattr(verify_ranges, "CHUNK", 8)
    monkeypatch.setattr(verify_ranges, "PROGRESS_EVERY", 2)
    _fill(home, 37)
    calls = Calls()
    assert home.ledger.verify(home.trusted(), home.store, workers=workers, progress=calls).ok
    assert calls.climbs_to(37) and {t for _, t in calls} == {37}
    dones = sorted({d for d, _ in calls})
    if workers == 1:
        # every range is reported when it ends (8, 16, …), and every PROGRESS_EVERY rows inside it
        assert {8, 16, 24, 32} <= set(dones) and {2, 4, 6, 10} <= set(dones)
    else:
        # workers' ranges are counted as each one's result arrives, in any order: each step is a whole range
        assert {b - a for a, b in zip([0, *dones], dones, strict=False)} <= {8, 37 - 32}, dones


def test_verify_since_reports_the_new_rows(home: EvidenceHome) -> None:
    from g6.prove.proofs import checkpoint
    from g6.prove.verify_since import verify_since

    _fill(home, 5)
    _, note = checkpoint(home)
    _fill(home, 4)
    calls = Calls()
    assert verify_since(home, note, progress=calls).ok
    assert calls.climbs_to(4)


def test_store_verify_gc_and_copies_report_every_blob(home: EvidenceHome, tmp_path: Path) -> None:
    from g6.ledger import Ledger, copy_ledger
    from g6.store import BlobStore, copy_blobs

    _fill(home, 7)  # bodies repeat every 3 receipts' sizes, but each text differs: 7 blobs
    blobs = sum(1 for _ in home.store.iter_digests())
    for run in (lambda p: home.store.verify(progress=p),
                lambda p: home.store.gc(home.ledger.referenced_digests(), grace_seconds=0, dry_run=True, progress=p),
                lambda p: copy_blobs(home.store, BlobStore(tmp_path / "copy", fsync=False), progress=p)):
        calls = Calls()
        run(calls)
        assert calls.climbs_to(blobs), calls
    calls = Calls()
    home.ledger.referenced_digests(progress=calls)
    assert calls.climbs_to(7)
    calls = Calls()
    copy_ledger(home.ledger, Ledger(tmp_path / "copy.sqlite"), home.trusted(), batch=3, progress=calls)
    assert calls.climbs_to(7) and [d for d, _ in calls] == [3, 6, 7]


def test_bundle_and_exports_report_to_the_end(world: World, tmp_path: Path) -> None:
    from g6.export.warc import export_warc
    from g6.ledger import VerifyKey
    from g6.prove.bundle import build_bundle, verify_bundle

    with EvidenceHome(world.home) as home:
        entries = [e.receipt for e in home.ledger.entries()]
        calls = Calls()
        export_warc(home, tmp_path / "out.warc.gz", iter(entries), progress=calls)  # an iterator: counted once read
        assert calls.climbs_to(len(entries))
        calls = Calls()
        index = build_bundle(home, world.manifest, tmp_path / "b.zip", progress=calls)
    cited = len({c["receipt_id"] for c in json.loads(world.manifest.read_text())["citations"]})
    assert calls.climbs_to(2 * cited + len(index["files"]))  # each receipt read and proved, then each file zipped
    calls = Calls()
    assert verify_bundle(tmp_path / "b.zip", [VerifyKey.from_text(world.key)], progress=calls).ok
    assert calls.climbs_to(len(index["files"]))  # every file bundle.json lists, each read once
