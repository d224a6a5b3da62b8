"""The console examples of the README and of docs/ are what the commands print (scripts/docs_examples.py --check).

The servers the examples need come from the session's fixtures: Elasticsearch (noida-db, CI's
``G6_TEST_ELASTIC_URL`` or one started by conftest) and PostgreSQL + SeaweedFS (CI's ``G6_TEST_PG_*`` /
``G6_TEST_S3_*`` or started by conftest); the demo site is started by the script itself, from its
documented command ``g6 demo --serve``. Nothing is skipped: a server that cannot start fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import docs_examples as rx  # noqa: E402

# The blocks shown as written and never run, each with its reason in its marker. Keep this number
# small: a new example is run, or it says here and in its marker why it cannot be.
NOT_RUN = 0


@pytest.fixture(scope="module")
def servers_env(elastic_url: str, backend_servers: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update(backend_servers)
    env["G6_TEST_ELASTIC_URL"] = elastic_url
    return env


def run_script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_examples.py"), *args], env=env,
                          capture_output=True, text=True, timeout=900, cwd=ROOT)


def test_the_pages_are_the_readme_and_every_docs_page() -> None:
    pages = rx.doc_pages()
    assert pages[0] == ROOT / "README.md"
    assert set(pages[1:]) == set((ROOT / "docs").rglob("*.md")) and len(pages) > 10
    assert ROOT / "docs" / "commands" / "fetch.md" in pages


def test_every_console_block_is_marked_and_few_are_not_run() -> None:
    unmarked: list[str] = []
    not_run: list[tuple[str, int, str]] = []
    blocks_in: dict[str, int] = {}
    for page in rx.doc_pages():
        name = rx.page_name(page)
        text = page.read_text(encoding="utf-8")
        lines = text.split("\n")
        unmarked += [f"{name}:{i + 1}" for i, line in enumerate(lines)
                     if line.startswith("```console") and not (i and rx.MARKER.match(lines[i - 1]))]
        blocks = rx.parse(text, name)
        assert all(b.commands for b in blocks), name
        blocks_in[name] = len(blocks)
        not_run += [(name, b.start + 1, b.reason) for b in blocks if b.session is None]
    assert unmarked == [], f"console blocks without an example marker: {unmarked}"
    assert all(reason for _, _, reason in not_run)
    assert len(not_run) == NOT_RUN, not_run
    # the README's quick start runs, and so does every command page with examples
    assert blocks_in["README.md"] >= 1 and blocks_in["docs/commands/fetch.md"] >= 1


def test_sessions_are_per_page(tmp_path: Path) -> None:
    """A session name used on two pages is two sessions: each page's shell starts afresh."""
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("<!-- example: s -->\n```console\n$ export X=from-one; echo $X\nold\n```\n", encoding="utf-8")
    two.write_text("<!-- example: s -->\n```console\n$ echo ${X:-unset}\nold\n```\n", encoding="utf-8")
    pages = [rx.Page(one, one.read_text(encoding="utf-8")), rx.Page(two, two.read_text(encoding="utf-8"))]
    blocks = {p.path: rx.parse(p.text, p.name) for p in pages}
    assert [b.session for p in pages for b in blocks[p.path]] == ["s", "s"]
    srv = rx.Servers({"G6_DEMO_SITE": str(tmp_path / "site")}, {})
    out = {p.path: rx.run_session("s", blocks[p.path], tmp_path / "w" / p.slug / "s", srv, {}) for p in pages}
    assert out[one] == {1: [["from-one"]]}
    assert out[two] == {1: [["unset"]]}
    only_one = {f"{pages[0].name}:s"}  # --session PAGE:NAME picks the session of that page only
    assert rx._selected(pages[0], "s", only_one) and not rx._selected(pages[1], "s", only_one)
    with pytest.raises(SystemExit, match="no session named nope"):
        rx.regenerate_pages(pages, only={"nope"})


def test_readme_examples_are_what_the_commands_print(servers_env: dict[str, str]) -> None:
    r = run_script(servers_env, "--check")
    assert r.returncode == 0, f"a page differs from what its examples print (run `python " \
                              f"scripts/docs_examples.py` to rewrite it):\n{r.stdout[-20000:]}\n{r.stderr[-5000:]}"


def test_check_fails_when_a_block_was_edited(servers_env: dict[str, str], tmp_path: Path) -> None:
    text = (ROOT / "docs" / "commands" / "README.md").read_text(encoding="utf-8")
    assert "\nG6_HOST_PAUSE=0\n" in text
    edited = tmp_path / "README.md"
    edited.write_text(text.replace("\nG6_HOST_PAUSE=0\n", "\nG6_HOST_PAUSE=5\n", 1), encoding="utf-8")
    r = run_script(servers_env, "--check", str(edited), "--session", "env")
    assert r.returncode == 1
    assert "-G6_HOST_PAUSE=5" in r.stdout and "+G6_HOST_PAUSE=0" in r.stdout
    # without --check the block is rewritten to what the command prints
    assert run_script(servers_env, str(edited), "--session", "env").returncode == 0
    assert edited.read_text(encoding="utf-8") == text


def test_a_marker_needs_a_console_block_and_a_not_run_needs_a_reason() -> None:
    with pytest.raises(SystemExit, match="must be followed by a ```console block"):
        rx.parse("<!-- example: s -->\n```sh\n$ true\n```\n")
    with pytest.raises(SystemExit, match="needs its reason"):
        rx.parse("<!-- example: not-run: -->\n```console\n$ true\n```\n")
    (block,) = rx.parse("<!-- example: s -->\n```console\n$ echo a \\\n  b\na b\nA$ true\n```\n")
    assert [c.text for c in block.commands] == ["echo a \\\n  b", "true"]
    assert [c.shell for c in block.commands] == ["", "A"] and block.commands[0].output == ["a b"]


def test_normaliser_keeps_content_digests_and_numbers_what_varies() -> None:
    norm = rx.Normaliser({"/tmp/g6-readme-x/s": "/tmp/ex"}, {40123: 8421})
    digest = "sha256:4d21cf42b0e52778b0de7473ed8f77e1e1523a5058e29b4835824470156a9f1a"
    out = norm(f"ok rcpt_01M8VR98HXXY6Z2CWA62FG1GHM {digest} http://127.0.0.1:40123/a /tmp/g6-readme-x/s/home\n"
               "again rcpt_01M8VR98HXXY6Z2CWA62FG1GHM then rcpt_01M8VR93YGYKGZ5RE953T8KJZH at "
               "2026-12-03T02:27:42.221158Z published 2022-02-24T15:05:19Z by "
               "ed25519:6268578d55afc24c7f2fc40455122117  ")
    assert out == (f"ok rcpt_<1> {digest} http://127.0.0.1:8421/a /tmp/ex/home\n"
                   "again rcpt_<1> then rcpt_<2> at <time> published 2022-02-24T15:05:19Z by ed25519:<key-1>")



def test_normaliser_numbers_a_did_key() -> None:
    """An Ed25519 key as a did:key (base58btc Multikey, z6Mk…) changes per run: numbered, in the DID and the
    verification method alike; the rest of the line stays."""
    norm = rx.Normaliser({}, {})
    did = "did:key:z6MkrJVnaZkeFzdQyMZu1cgjg7k1pZZ6pvBQ7XJPt4swbTQ2"
    other = "did:key:z6MkvqJRLsQanpzB41khADBvWhftNPpB4SrJMq3aiwWsg2ix"
    assert norm(f'"issuer": "{did}", "verificationMethod": "{did}#{did[8:]}" then {other}') == (
        '"issuer": "did:key:z6Mk<multikey-1>", "verificationMethod": "did:key:z6Mk<multikey-1>#z6Mk<multikey-1>" '
        "then did:key:z6Mk<multikey-2>")

@pytest.mark.signals
@pytest.mark.parametrize("stop, sigint_ignored", [(signal.SIGINT, False), (signal.SIGTERM, False),
                                                   (signal.SIGINT, True), (signal.SIGTERM, True)],
                         ids=["SIGINT", "SIGTERM", "SIGINT-ignored-by-parent", "SIGTERM-ignored-SIGINT"])
def test_demo_serve_serves_both_hosts_from_an_editable_folder(tmp_path: Path, stop: signal.Signals,
                                                              sigint_ignored: bool) -> None:
    """`g6 demo --serve`: the one command the docs' examples' site starts from; SIGINT or SIGTERM stops it with
    exit 0 and nothing more on stderr, also when it was started with SIGINT ignored (as CI runners start it)."""
    import shlex

    import httpx

    from tests.serve.server import IGNORING_SIGINT, assert_clean_stop, stop_process

    cmd = [sys.executable, "-m", "g6", "demo", "--serve", "--port", "0", "--site-dir", str(tmp_path / "site"),
           "--recorded", str(ROOT / "fixtures" / "http")]
    if sigint_ignored:
        cmd = [sys.executable, "-c", IGNORING_SIGINT, *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        exports = dict(w.split("=", 1) for w in shlex.split(proc.stdout.readline())[1:])
        assert "serving the demo site on http://127.0.0.1:" in proc.stderr.readline()
        assert exports["G6_ALLOW_LOOPBACK"] == "1" and exports["G6_DEMO_SITE"] == str(tmp_path / "site")
        base = exports["G6_ARXIV_URL"].removesuffix("/arxiv/api/query")
        other = base.replace("127.0.0.1", "127.0.0.2")
        for url in (base, other):
            assert "Why receipts matter" in httpx.get(url + "/article").text
            assert httpx.get(url + "/old-article").status_code == 301
        assert httpx.get(base + "/paper.pdf").content.startswith(b"%PDF-")
        assert "<feed" in httpx.get(exports["G6_ARXIV_URL"], params={"search_query": "all:x"}).text
        page = tmp_path / "site" / "energy.html"
        page.write_text(page.read_text(encoding="utf-8").replace("12% said", "21% said"), encoding="utf-8")
        assert "21% said" in httpx.get(other + "/news/energy.html").text  # read again on every request
        page.unlink()
        assert httpx.get(base + "/news/energy.html").status_code == 404
    except BaseException:
        stop_process(proc, stop)
        raise
    returncode = stop_process(proc, stop)
    assert_clean_stop(returncode, proc.stderr.read(), stop, "g6 demo --serve")


def test_demo_serve_refuses_a_port_in_use(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = subprocess.run([sys.executable, "-m", "g6", "demo", "--serve", "--port", str(s.getsockname()[1]),
                            "--site-dir", str(tmp_path / "site")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("g6: cannot serve the demo site on port ")
    assert "Traceback" not in r.stderr and r.stdout == ""
