"""What a new user setting up nightly re-verification found (issue 22): each check holds, as a real process runs it."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.cite.manifest import load_manifest, save_manifest
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.home import EvidenceHome
from tests.children import Children, stopped_once_reached

Site = Callable[..., LocalSite]
P1 = "Receipts make every read provable: the address, the time and the bytes are kept together."
P2 = "The bridge inspection found the load rating at 1.8 tonnes per axle, within the design limit."
PAGE = f"<html><body><p>{P1}</p><p>{P2}</p></body></html>".encode()
INVENTED = "“We always knew the bridge would collapse within a year,” said the engineer."


def _env(home: Path, loopback: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0"})
    if loopback:
        env["G6_ALLOW_LOOPBACK"] = "1"
    return env


def g6(home: Path, *args: str, loopback: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True,
                          env=_env(home, loopback), timeout=120, cwd=home.parent)


def _cited(tmp_path: Path, site: Site, routes: dict[str, Reply] | None = None) -> tuple[Path, Path, LocalSite]:
    """A home, a signed manifest citing P1 on /a and P2 on /b, and the site."""
    home, man = tmp_path / "home", tmp_path / "report.json"
    s = site(routes or {"/a": Reply(body=PAGE), "/b": Reply(body=PAGE), "/robots.txt": Reply(404)})
    for path, quote in (("/a", P1), ("/b", P2)):
        rid = json.loads(g6(home, "fetch", s.url(path), "--json").stdout)["receipt_id"]
        assert g6(home, "cite", rid, "--quote", quote, "--manifest", str(man)).returncode == 0
    assert g6(home, "manifest", "sign", str(man)).returncode == 0
    return home, man, s


def _with(man: Path, out: Path, change: Callable[[dict], None]) -> Path:
    data = json.loads(man.read_text())
    change(data)
    out.write_text(json.dumps(data))
    return out


def test_a_quote_never_on_the_page_is_not_signed_verified_or_rechecked(tmp_path: Path, site: Site) -> None:
    home, man, _ = _cited(tmp_path, site)

    def invent(d: dict) -> None:
        d.pop("signature")
        d["citations"] = [d["citations"][1]]
        d["citations"][0]["quote"] = INVENTED

    fake = _with(man, tmp_path / "fake.json", invent)
    before = fake.read_bytes()
    signed = g6(home, "manifest", "sign", str(fake))
    assert signed.returncode == 1 and "not signed" in signed.stderr
    assert "the manifest's quote is not in the cited text" in signed.stderr
    assert fake.read_bytes() == before  # nothing signed
    # unsigned, and signed by the home's key all the same (another signer's tool): failed both ways
    ev = EvidenceHome(home)
    try:
        save_manifest(load_manifest(fake).signed(ev.signing_key()), tmp_path / "signed-fake.json")
    finally:
        ev.close()
    for path in (fake, tmp_path / "signed-fake.json"):
        verified = g6(home, "manifest", "verify", str(path))
        assert verified.returncode == 1 and "the manifest's quote is not in the cited text" in verified.stdout
        rechecked = g6(home, "recheck", str(path))
        assert rechecked.returncode == 1, rechecked.stdout
        assert "unverified" in rechecked.stdout and "unchanged" not in rechecked.stdout


def test_a_changed_page_shows_what_was_cited_and_what_is_there_now(tmp_path: Path, site: Site) -> None:
    home, man, s = _cited(tmp_path, site)
    s.routes = {**s.routes, "/b": Reply(body=PAGE.replace(b"1.8 tonnes", b"2.3 tonnes"))}
    out = g6(home, "recheck", str(man))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if " changed " in line)
    assert "-'1.8' +'2.3'" in lines[at]
    assert lines[at + 1].strip() == f'cited: "{P2[:90]}"'
    assert lines[at + 2].strip().startswith('now:   "') and "2.3 tonnes" in lines[at + 2]


def test_a_corrupted_stored_page_is_unverified_not_unchanged(tmp_path: Path, site: Site) -> None:
    home, man, _ = _cited(tmp_path, site)
    digest = json.loads(man.read_text())["citations"][1]["content"]["blake3"].removeprefix("blake3:")
    (blob,) = [p for p in (home / "knowledge").rglob(f"{digest}*") if p.is_file() and p.read_bytes() == PAGE]
    blob.write_bytes(PAGE.replace(b"provable", b"provably"))
    out = g6(home, "recheck", str(man), "--json")
    assert out.returncode == 1, out.stderr
    verdicts = {v["verdict"] for v in json.loads(out.stdout)["verdicts"]}
    assert verdicts == {"unverified"}  # both citations quote the one stored page
    reason = json.loads(out.stdout)["verdicts"][0]["detail"]["reason"]
    assert reason.startswith("the stored bytes of the cited page are not its receipt's")


def test_a_resumed_verdict_must_be_the_one_its_signed_receipt_records(tmp_path: Path, site: Site) -> None:
    home, man, s = _cited(tmp_path, site)
    s.routes = {**s.routes, "/b": Reply(404, body=b"gone")}
    first = g6(home, "recheck", str(man), "--json")
    assert first.returncode == 3
    run_id = json.loads(first.stdout)["run_id"]
    (run,) = (home / "knowledge" / "rechecks").glob(f"*.{run_id}.jsonl")
    lines = [json.loads(line) for line in run.read_text().splitlines()]
    assert sorted(v["verdict"] for v in lines) == ["not_found", "unchanged"]
    run.write_text("".join(json.dumps({**v, "verdict": "unchanged"}) + "\n" for v in lines))
    asked = len(s.requests)
    again = g6(home, "recheck", str(man), "--run", run_id, "--json")
    report = json.loads(again.stdout)
    assert again.returncode == 3 and [v["verdict"] for v in report["verdicts"]] == ["unchanged", "not_found"]
    assert report["resumed"] == 1 and [q.path for q in s.requests[asked:] if q.path != "/robots.txt"] == ["/b"]


def test_an_empty_manifest_passes_nothing(tmp_path: Path, site: Site) -> None:
    home, man, s = _cited(tmp_path, site)
    empty = _with(man, tmp_path / "empty.json", lambda d: (d.pop("signature"), d.update(citations=[])))
    asked = len(s.requests)
    out = g6(home, "recheck", str(empty))
    assert out.returncode == 2 and "the manifest cites nothing" in out.stderr and "0 citations" not in out.stdout
    signed = g6(home, "manifest", "sign", str(empty))
    assert signed.returncode == 2 and "the manifest cites nothing" in signed.stderr
    verified = g6(home, "manifest", "verify", str(empty))
    assert verified.returncode == 1 and "the manifest cites nothing" in verified.stderr
    assert len(s.requests) == asked


@pytest.mark.signals
def test_ctrl_c_says_the_run_to_resume(tmp_path: Path, site: Site, children: Children) -> None:
    home, man, s = _cited(tmp_path, site)
    reached, release = threading.Event(), threading.Event()

    def hold(req: SeenRequest) -> Reply:
        reached.set()
        release.wait(60)
        return Reply(body=PAGE)

    s.routes = {**s.routes, "/a": Reply(body=PAGE.replace(b"<p>", b"<p> ")), "/b": hold}
    code, _, err = stopped_once_reached(children, [sys.executable, "-m", "g6", "recheck", str(man), "--workers", "1",
                                                   "--processes", "1"], reached, release, env=_env(home),
                                        cwd=tmp_path)
    assert code == 130, err
    said = next(line for line in err.splitlines() if line.startswith("g6: stopped; to go on from here:"))
    run_id = said.rsplit("--run ", 1)[1]
    assert said == f"g6: stopped; to go on from here: g6 recheck {man} --run {run_id}"
    resumed = g6(home, "recheck", str(man), "--run", run_id, "--json")
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["run_id"] == run_id


def test_a_missing_home_is_refused_and_not_created(tmp_path: Path, site: Site) -> None:
    _, man, _ = _cited(tmp_path, site)
    missing = tmp_path / "no-such-home"
    out = g6(missing, "recheck", str(man))
    assert out.returncode == 2 and f"no evidence home at {missing}" in out.stderr
    assert "recheck reads the receipts the manifest cites" in out.stderr and not missing.exists()


def test_a_refused_loopback_names_the_setting(tmp_path: Path, site: Site) -> None:
    home, man, _ = _cited(tmp_path, site)
    out = g6(home, "recheck", str(man), loopback=False)
    assert out.returncode == 3 and "address_not_public" in out.stdout and "G6_ALLOW_LOOPBACK=1" in out.stdout


def test_citing_again_what_a_signed_manifest_holds_keeps_the_signature_and_says_nothing(tmp_path: Path,
                                                                                       site: Site) -> None:
    home, man, s = _cited(tmp_path, site)
    rid = json.loads(man.read_text())["citations"][0]["receipt_id"]
    same = g6(home, "cite", rid, "--quote", P1, "--manifest", str(man))
    assert same.returncode == 0 and "removes the signature" not in same.stderr
    assert "signature" in json.loads(man.read_text())
    assert g6(home, "manifest", "verify", str(man)).returncode == 0
    new = g6(home, "cite", rid, "--quote", P2, "--manifest", str(man))
    assert new.returncode == 0 and "removes the signature" in new.stderr
    assert "signature" not in json.loads(man.read_text())


def test_a_second_recheck_of_a_run_in_progress_is_refused(tmp_path: Path, site: Site) -> None:
    home, man, s = _cited(tmp_path, site)
    mid = json.loads(man.read_text())["manifest_id"]
    rechecks = home / "knowledge" / "rechecks"
    rechecks.mkdir(parents=True, exist_ok=True)
    with open(rechecks / f"{mid}.run_busy.jsonl.lock", "w") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # another recheck of run_busy, as far as the file says
        asked = len(s.requests)
        out = g6(home, "recheck", str(man), "--run", "run_busy")
        assert out.returncode == 2 and "run run_busy is being re-checked by another process" in out.stderr
        assert len(s.requests) == asked and not (rechecks / f"{mid}.run_busy.jsonl").exists()
    done = g6(home, "recheck", str(man), "--run", "run_busy")  # the lock is gone with its holder
    assert done.returncode == 0, done.stderr
