"""``g6 recheck`` on several processes: pages fetched and judged in forked workers, receipts signed
and appended by the parent alone, the same verdicts as on threads, and a worker that dies ends the
run with ``G6_E_WORKER_LOST`` and a run file that resumes.

A fork is only taken where no other thread runs, and this test process runs loopback servers on
threads, so the forked paths run in a child Python (a small script, or the CLI), as a user's would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.children import Children

ROOT = Path(__file__).resolve().parents[2]
Site = Callable[..., LocalSite]
HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
PAGES = 4


def _para(h: int, p: int, i: int) -> str:
    return f"Host {h} page {p} paragraph {i}: a re-check reads the page again and looks for the cited words."


def _page(h: int, p: int, edit: str = "") -> Reply:
    paras = "".join(f"<p>{_para(h, p, i)}</p>" for i in range(3))
    return Reply(body=f"<html><body><article>{paras}{edit}</article></body></html>".encode())


def _cited(tmp_path: Path, site: Site) -> tuple[Path, Path, list[LocalSite]]:
    """A home with every page read once and two passages of each cited, and the signed manifest."""
    sites = [site({"/robots.txt": Reply(404, b""), **{f"/{p}": _page(h, p) for p in range(PAGES)}}, host=host)
             for h, host in enumerate(HOSTS)]
    home = tmp_path / "home"
    man = tmp_path / "manifest.json"
    with EvidenceHome(home) as ev, CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as client:
        ev.keys.init()
        m = Manifest.new()
        for h, s in enumerate(sites):
            for p in range(PAGES):
                rid = fetch(ev, client, s.url(f"/{p}")).receipt_id
                for i in (0, 2):
                    m = m.with_citation(cite_web(ev, rid, quote=_para(h, p, i)))
        man.write_text(json.dumps(m.signed(ev.signing_key()).to_json()))
    for s in sites:
        s.requests.clear()
    return home, man, sites


def _recheck(home: Path, man: Path, processes: int, pids: Path) -> subprocess.CompletedProcess[str]:
    """``recheck(processes=...)`` in a fresh Python with no other thread, each page's judging noted
    with the process that did it."""
    body = f"""
        import json, os
        import g6.cite.recheck as rc
        from g6.adapters import CheckedClient, FetchPolicy
        from g6.cite.manifest import load_manifest
        from g6.home import EvidenceHome

        judge = rc._read_and_judge
        def noted(*a, **k):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            return judge(*a, **k)
        rc._read_and_judge = noted
        with EvidenceHome({str(home)!r}) as ev, CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0.0)) as c:
            report = rc.recheck(ev, c, load_manifest({str(man)!r}), workers=3, processes={processes})
            print(os.getpid())
            print(json.dumps(report.to_json()))
    """
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def _verdicts(report: dict) -> list[tuple[str, str, object]]:
    return [(v["citation_id"], v["verdict"], v.get("similarity")) for v in report["verdicts"]]


def test_forked_workers_judge_the_pages_and_the_parent_alone_appends(tmp_path: Path, site: Site) -> None:
    home, man, sites = _cited(tmp_path, site)
    # v2: one page edited (one cited passage changes, one stays), one gone, one serving an error
    sites[0].routes["/1"] = _page(0, 1, edit="")
    sites[0].routes["/1"] = Reply(body=sites[0].routes["/1"].body.replace(b"paragraph 0: a re-check reads",
                                                                          b"paragraph 0: a re-check rereads"))
    sites[1].routes["/2"] = Reply(body=b"<html><body><article><p>Moved elsewhere.</p></article></body></html>")
    sites[2].routes["/3"] = Reply(404, b"not here")

    forked = _recheck(home, man, 2, tmp_path / "forked.pids")
    assert forked.returncode == 0, forked.stderr
    parent, report = forked.stdout.splitlines()
    judged_in = [int(x) for x in (tmp_path / "forked.pids").read_text().split()]
    assert len(judged_in) == len(HOSTS) * PAGES  # each page read and judged once
    assert int(parent) not in judged_in and len(set(judged_in)) == 2  # in two forked workers, not the parent
    for s in sites:  # robots.txt once and each page once, per host
        assert sorted(r.path for r in s.requests) == sorted(["/robots.txt"] + [f"/{p}" for p in range(PAGES)])

    threads = _recheck(home, man, 1, tmp_path / "threads.pids")
    assert threads.returncode == 0, threads.stderr
    parent1, report1 = threads.stdout.splitlines()
    assert set(int(x) for x in (tmp_path / "threads.pids").read_text().split()) == {int(parent1)}

    forked_report, thread_report = json.loads(report), json.loads(report1)
    assert _verdicts(forked_report) == _verdicts(thread_report)
    counts = {v: sum(1 for _, x, _ in _verdicts(forked_report) if x == v) for v in
              ("unchanged", "changed", "gone", "not_found")}
    assert counts == {"unchanged": 18, "changed": 1, "gone": 2, "not_found": 2}, _verdicts(forked_report)
    with EvidenceHome(home) as ev:
        assert ev.verify().ok
        rechecks = {e.receipt.receipt_id: e.receipt for e in ev.ledger.entries() if e.receipt.kind == "recheck"}
        assert len(rechecks) == 2 * len(HOSTS) * PAGES  # one receipt a page a run, the forked run's signed too
        for v in forked_report["verdicts"]:
            r = rechecks[v["receipt_id"]]
            assert r.detail["verdicts"][v["citation_id"]] == v["verdict"]
            assert r.request["run_id"] == forked_report["run_id"]


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_a_worker_that_dies_ends_the_run_and_the_run_resumes(tmp_path: Path, site: Site, children: Children) -> None:
    home, man, sites = _cited(tmp_path, site)
    cli: list[subprocess.Popen[str]] = []

    def kill_the_workers(req: SeenRequest) -> Reply:
        # host 127.0.0.3's last page: the CLI's worker processes are killed while one waits for it
        if not any(r.path == "/3" for r in sites[2].requests[:-1]):
            for pid in _children(cli[0].pid):
                os.kill(pid, signal.SIGKILL)
        return _page(2, 3)

    sites[2].routes["/3"] = kill_the_workers
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    args = [sys.executable, "-m", "g6", "recheck", str(man), "--run", "run_lost", "--workers", "3",
            "--processes", "2", "--json"]
    cli.append(children.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    out, err = cli[0].communicate(timeout=300)
    assert cli[0].returncode == 1, err
    assert "Traceback" not in err
    assert "G6_E_WORKER_LOST" in err and len(err.strip().splitlines()) == 1, err
    assert json.loads(out)["code"] == "G6_E_WORKER_LOST"

    again = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert [v["verdict"] for v in report["verdicts"]] == ["unchanged"] * (2 * len(HOSTS) * PAGES)
    assert report["run_id"] == "run_lost"
    with EvidenceHome(home) as ev:
        assert ev.verify().ok
        run_file = home / "knowledge" / "rechecks" / f"{report['manifest_id']}.run_lost.jsonl"
        on_file = [json.loads(x)["citation_id"] for x in run_file.read_text().splitlines()]
        assert sorted(on_file) == sorted(v["citation_id"] for v in report["verdicts"])  # each once
        recorded = {e.receipt.receipt_id for e in ev.ledger.entries() if e.receipt.kind == "recheck"}
        assert {v["receipt_id"] for v in report["verdicts"]} <= recorded
