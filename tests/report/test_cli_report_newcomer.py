"""What a new user met trying `g6 report check` (a walkthrough by someone who had never seen g6), each as they ran
it: a real process, a real home, loopback pages.

- a run stopped with Ctrl-C said nothing of its run id, so its reads could not be reused (``--run``);
- a mistyped ``--run`` id started a new run without a word;
- a loopback citation refused without the setting that allows it (``g6 fetch`` names it);
- a bundle given as the report was called a report "not UTF-8";
- a quote over 100 characters was shown cut without an ellipsis (a shorter quote, to the eye);
- "1 citation were decided";
- a report read from /dev/null (or any path) was named by its last part in messages ("null: empty");
- results, manifests and reports were written 0600 whatever the umask.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply, SeenRequest
from tests.children import Children, stopped_once_reached
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report

Site = Callable[..., LocalSite]
LONG = ("Content-addressed storage names every body by the hash of its bytes, so the same page read twice is kept "
        "once and any change shows")


def _env(home: Path, **more: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1", **more})
    return e


@pytest.mark.signals
def test_a_run_stopped_with_ctrl_c_says_how_to_resume_it(tmp_path: Path, site: Site, children: Children) -> None:
    arrived, release = threading.Event(), threading.Event()

    def held(_req: SeenRequest) -> Reply:  # the page answers once the test has stopped the check (no timing)
        arrived.set()
        release.wait(120)
        return Reply(body=article(QUOTE))

    s = site({"/a": Reply(body=article(QUOTE)), "/held": held, "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/held"), QUOTE)))
    home = tmp_path / "home"
    code, _, text = stopped_once_reached(children, [sys.executable, "-m", "g6", "-q", "report", "check", str(report)],
                                         arrived, release, env=_env(home), cwd=tmp_path)
    assert code == 130, text
    assert "Traceback" not in text and "g6: interrupted" in text
    (line,) = [x for x in text.splitlines() if "--run run_" in x]  # with -q too
    run_id = line.rsplit("--run ", 1)[1].strip()
    again = g6(home, "report", "check", str(report), "--run", run_id)
    assert again.returncode == 0, again.stderr  # stopped before it decided anything: nothing on file, said so
    assert f"nothing is on file for run {run_id}".encode() in again.stderr, again.stderr


def test_a_run_id_that_is_not_on_file_is_said_to_be_new(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE)))
    home = tmp_path / "home"
    first = g6(home, "report", "check", str(report), "--run", "run_typo")
    said = b"g6: nothing is on file for run run_typo in this home: every citation is decided now"
    assert first.returncode == 0 and said in first.stderr, first.stderr
    second = g6(home, "report", "check", str(report), "--run", "run_typo")
    assert second.returncode == 0 and b"nothing is on file" not in second.stderr
    assert b"1 citation was decided by an earlier run" in second.stderr, second.stderr


def test_a_loopback_citation_refused_names_the_setting_that_allows_it(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE)))
    r = g6(tmp_path / "home", "report", "check", str(report), "--json", env={"G6_ALLOW_LOOPBACK": "0"})
    assert r.returncode == 1, r.stderr
    (c,) = json.loads(r.stdout)["citations"]
    assert c["verdict"] == "source_failed" and "address_not_public" in c["reason"]
    assert "G6_ALLOW_LOOPBACK=1" in c["reason"], c["reason"]


def test_a_bundle_given_as_the_report_is_said_to_be_one(tmp_path: Path) -> None:
    zipped = tmp_path / "evidence.zip"
    zipped.write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(200, 256)) * 4)
    r = g6(tmp_path / "home", "report", "check", str(zipped))
    assert r.returncode == 2
    assert b"a zip archive, not a report" in r.stderr and b"--bundle ZIP --key KEY" in r.stderr, r.stderr
    assert b"UTF-8" not in r.stderr


def test_a_report_that_cannot_be_read_is_named_by_the_path_given(tmp_path: Path) -> None:
    r = g6(tmp_path / "home", "report", "check", "/dev/null")
    assert r.returncode == 2
    assert r.stderr.startswith(b"g6: /dev/null: empty (0 bytes)"), r.stderr
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.json").write_bytes(b"{not json")
    r = g6(tmp_path / "home", "report", "check", str(tmp_path / "sub" / "r.json"))
    assert r.returncode == 2
    assert f"g6: {tmp_path / 'sub' / 'r.json'}: ".encode() in r.stderr, r.stderr
    r = g6(tmp_path / "home", "report", "check", "-", input=b"")
    assert r.returncode == 2 and r.stderr.startswith(b"g6: REPORT: empty"), r.stderr


def test_a_long_quote_is_shown_with_an_ellipsis_where_it_is_cut(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(LONG)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), LONG)))
    r = g6(tmp_path / "home", "report", "check", str(report))
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.decode().splitlines() if x.strip().startswith("quote:")]
    assert line.endswith('…"') and len(line.split('"', 1)[1]) == 101, line  # 99 characters, the ellipsis, quote


def test_outputs_are_written_with_the_mode_the_umask_gives(tmp_path: Path, site: Site) -> None:
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    report = write_report(tmp_path / "r.json", report_of(cite(s.url("/a"), QUOTE)))
    for mask, mode in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        out = tmp_path / f"out-{mask:o}"
        out.mkdir()
        r = subprocess.run(["sh", "-c", f'umask {mask:03o} && exec "$0" "$@"', sys.executable, "-m", "g6", "report",
                            "check", str(report), "-o", str(out / "result.json"), "--manifest",
                            str(out / "found.json"), "--html", str(out / "report.html")],
                           env=_env(tmp_path / "home"), cwd=tmp_path, capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
        for name in ("result.json", "found.json", "report.html"):
            assert (out / name).stat().st_mode & 0o777 == mode, (name, oct((out / name).stat().st_mode), mask)
