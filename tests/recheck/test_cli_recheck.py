"""`g6 chunk --text`, `g6 cite` and `g6 recheck` as a user runs them: a real process and a loopback site."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply

Site = Callable[..., LocalSite]
QUOTE = "Household bills rose by 12% over the quarter."


LEAD = ("Energy markets in the region have been volatile since the winter, and households have started to "
        "compare offers more often than before, the council's survey of four districts found this spring.")


def _page(before: str = "") -> bytes:
    return (f"<html><body><nav>Home · Business desk</nav>{before}<article><h1>Bills</h1><p>{LEAD}</p>"
            f"<p>{QUOTE} {LEAD}</p><p>{LEAD}</p></article>"
            "<aside><p>Most read: the cycle lanes open on Monday.</p></aside></body></html>").encode()


def g6(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_HOST_PAUSE": "0", "G6_ALLOW_LOOPBACK": "1"})
    return subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, env=env, timeout=120,
                          cwd=home.parent)


def test_truncated_and_visible_text_from_the_command_line(tmp_path: Path, site: Site) -> None:
    home = tmp_path / "home"
    s = site({"/a": Reply(body=_page()), "/robots.txt": Reply(404)})
    cap = _page().index(QUOTE.encode()) + len(QUOTE) + 10
    fetched = g6(home, "fetch", s.url("/a"), "--max-bytes", str(cap), "--json")
    rid = json.loads(fetched.stdout)["receipt_id"]
    visible = json.loads(g6(home, "chunk", rid, "--text", "visible", "--json").stdout)
    assert visible["text_source"] == "visible" and visible["passages"][0]["text"] == "Home · Business desk"
    man = tmp_path / "m.json"
    cited = g6(home, "cite", rid, "--quote", "home · business desk", "--manifest", str(man))
    assert cited.returncode == 0 and b"(visible text)" in cited.stdout
    assert g6(home, "cite", rid, "--quote", QUOTE, "--manifest", str(man)).returncode == 0
    assert json.loads(man.read_text())["citations"][0]["text_source"] == "visible"
    # v2 puts a long promotion strip above the article: the same byte cap now ends before the passage
    s.routes = {**s.routes, "/a": Reply(body=_page("<div>" + "<p>Sponsored offer.</p>" * 200 + "</div>"))}
    out = g6(home, "recheck", str(man), "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 3, out.stderr
    assert [v["verdict"] for v in report["verdicts"]] == ["current", "truncated"]
    assert report["verdicts"][1]["detail"]["truncated"] is True
    text = g6(home, "recheck", str(man))
    assert text.returncode == 3 and b"truncated" in text.stdout and b"signature unsigned" in text.stdout
