"""10,000 citations: progress on stderr, killed in the middle (kill -9, while one page hangs) and resumed with
`--run`: nothing decided is decided again, no page is read twice, every citation gets its verdict."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply, SeenRequest
from tests.report.check_helpers import cite, g6, report_of, write_report

Site = Callable[..., LocalSite]
PER_PAGE, PAGES = 200, 24


def para(host: int, page: int, i: int) -> str:
    return f"Paragraph {i} of page {page} on host {host}: receipts keep the address, the time and the bytes."


def page(host: int, p: int) -> bytes:
    return ("<html><body><article>" + "".join(f"<p>{para(host, p, i)}</p>" for i in range(5))
            + "</article></body></html>").encode()


def test_ten_thousand_citations_killed_and_resumed(tmp_path: Path, site: Site) -> None:
    release = threading.Event()

    def hang(_: SeenRequest) -> Reply:
        release.wait()  # the first read of /hang never ends while the first run lives
        return Reply(body=page(0, 99))

    hosts = [site({**{f"/p/{p}": Reply(body=page(h, p)) for p in range(PAGES)}, "/hang": hang,
                   "/robots.txt": Reply(404)}, host=f"127.0.0.{h + 1}") for h in range(2)]
    try:
        cites = [cite(hosts[h].url(f"/p/{p}"), para(h, p, k % 5)) for h in range(2) for p in range(PAGES)
                 for k in range(PER_PAGE)]
        cites += [cite(hosts[0].url("/hang"), para(0, 99, k % 5)) for k in range(400)]
        assert len(cites) == 10_000
        report = write_report(tmp_path / "r.json", report_of(*cites))
        home = tmp_path / "home"
        env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
        env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
        proc = subprocess.Popen([sys.executable, "-m", "g6", "report", "check", str(report), "--run", "run_10k"],
                                env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        run_file = home / "knowledge" / "reports" / "run_10k.jsonl"
        guard = time.monotonic() + 600  # reports a hang; nothing is asserted on time
        while not (run_file.exists() and run_file.read_bytes().count(b"\n") >= 9_600):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            assert time.monotonic() < guard, "the first run never got to the hanging page"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its worker processes, in the middle of /hang
        proc.wait()
        proc.stderr.close()
        assert run_file.read_bytes().count(b"\n") == 9_600
        release.set()
        r = g6(home, "report", "check", str(report), "--run", "run_10k", "-o", "result.json", timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        err = r.stderr.decode()
        assert "g6: run run_10k: 9,600 citations were decided by an earlier run" in err, err[-2000:]
        assert err.splitlines()[0] == "g6: 0/10,000 citations checked" and "g6: 10,000/10,000" in err
        result = json.loads((tmp_path / "result.json").read_text())
        assert result["figures"]["citations"] == result["figures"]["quote_found"] == 10_000
        assert result["run_id"] == "run_10k"
        for h in hosts:  # every page read once across both runs; /hang once by each (the first never answered)
            paths = [q.path for q in h.requests if q.path != "/robots.txt"]
            assert sorted(paths) == sorted([f"/p/{p}" for p in range(PAGES)] + (["/hang"] * 2 if h is hosts[0]
                                                                                 else []))
    finally:
        release.set()
