"""The walkthroughs of the README and of docs/ run as a reader runs them, and their console examples are
what the commands print (scripts/docs_examples.py --check).

Each session runs in namespaces of its own and starts every server it needs from the page's own
commands (the demo site, noida-db, PostgreSQL and SeaweedFS, the witness and the TSA): nothing here
comes from the test session's fixtures, and nothing is skipped: a server that cannot start fails.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import docs_examples as rx  # noqa: E402

# The blocks shown as written and never run, each with its reason in its marker. Keep these numbers
# small: a new example is run, or it says here and in its marker why it cannot be.
NOT_RUN = {"console": 0, "sh": 5}


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_examples.py"), *args], env=env,
                          capture_output=True, text=True, timeout=1800, cwd=ROOT)


def page(tmp_path: Path, text: str, name: str = "page.md") -> rx.Page:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return rx.Page(path, text)


def session(tmp_path: Path, p: rx.Page, name: str = "s") -> rx.Run:
    blocks = rx.sessions_of([p])[(p, name)]
    return rx.run_session(name, blocks, tmp_path / "w" / p.slug / name, rx.files(p.text, p.name), p.name)


def test_the_pages_are_the_readme_and_every_docs_page() -> None:
    pages = rx.doc_pages()
    assert pages[0] == ROOT / "README.md"
    assert set(pages[1:]) == set((ROOT / "docs").rglob("*.md")) and len(pages) > 10
    assert ROOT / "docs" / "commands" / "fetch.md" in pages


def test_every_console_and_sh_block_is_marked_and_few_are_not_run() -> None:
    """A ```sh block is what a reader runs to set up: the check runs it in its walkthrough, or its marker
    says why not (an unmarked one was skipped, so the check could not see a setup the page got wrong)."""
    unmarked: list[str] = []
    not_run: dict[str, list[tuple[str, int, str]]] = {"console": [], "sh": []}
    blocks_in: dict[str, int] = {}
    for path in rx.doc_pages():
        name = rx.page_name(path)
        text = path.read_text(encoding="utf-8")
        lines = text.split("\n")
        unmarked += [f"{name}:{i + 1}" for i, line in enumerate(lines)
                     if line in ("```console", "```sh") and not (i and rx.MARKER.match(lines[i - 1]))]
        blocks = rx.parse(text, name)
        assert all(b.commands for b in blocks), name
        blocks_in[name] = sum(b.kind == "console" for b in blocks)
        for b in blocks:
            if b.session is None:
                not_run[b.kind].append((name, b.start + 1, b.reason))
    assert unmarked == [], f"console and sh blocks without an example marker: {unmarked}"
    assert all(reason for kind in not_run.values() for _, _, reason in kind)
    assert {k: len(v) for k, v in not_run.items()} == NOT_RUN, not_run
    # the README's quick start runs, and so does every command page with examples
    assert blocks_in["README.md"] >= 1 and blocks_in["docs/commands/fetch.md"] >= 1


def test_the_readme_is_one_walkthrough() -> None:
    """The witness section follows the Quick start in the reader's shell (one receipt there already, the
    site still running, in /tmp/ex): one session, its servers started by its own ```sh blocks."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = rx.parse(text, "README.md")
    run = [b for b in blocks if b.session is not None]
    assert {b.session for b in run} == {"quickstart"}
    setup = [b.commands[0].text for b in run if b.kind == "sh"]
    assert setup[0].startswith(". .venv/bin/activate") and "g6 demo --serve" in setup[0]
    assert any("scripts/witness.py" in s for s in setup) and setup[-1].startswith("kill ")
    assert rx.prelude(rx.Page(ROOT / "README.md", text), blocks, []) == []  # the README starts from the checkout


def test_a_docs_page_starts_where_the_commands_readme_leaves_its_reader() -> None:
    fetch = rx.Page(ROOT / "docs" / "commands" / "fetch.md",
                    (ROOT / "docs" / "commands" / "fetch.md").read_text(encoding="utf-8"))
    sessions = rx.sessions_of([fetch], {"fetch"})
    first = sessions[(fetch, "fetch")][0]
    assert first.session == "prelude" and first.page == "docs/commands/README.md"
    assert "g6 demo --serve" in first.commands[0].text and first.commands[0].text.startswith(". .venv/bin/activate")


def test_a_walkthrough_is_one_shell_from_the_checkout(tmp_path: Path) -> None:
    """Setup blocks run; `cd`, variables and jobs carry across blocks; the reader starts in the checkout
    with no venv on the PATH; `A$` starts from the first shell's state."""
    p = page(tmp_path, "<!-- example: s -->\n```sh\nls pyproject.toml\ncommand -v g6 || echo no-g6 > /tmp/ex.txt\n"
                       "mkdir -p /tmp/ex/sub && cd /tmp/ex/sub && export X=kept && Y=shell-only\nsleep 600 &\n```\n\n"
                       "text\n\n<!-- example: s -->\n```console\n$ pwd; echo $X $Y; jobs | wc -l\nold\n"
                       "A$ pwd; echo $X ${Y:-unset}\n$ cat /tmp/ex.txt; g6 --version\n```\n")
    run = session(tmp_path, p)
    assert run.problems == []
    assert run.outputs == {11: [["/tmp/ex/sub", "kept shell-only", "1"], ["/tmp/ex/sub", "kept unset"],
                                ["no-g6", "bash: g6: command not found"]]}  # as the README's reader saw it


def test_sessions_are_per_page(tmp_path: Path) -> None:
    """A session name used on two pages is two sessions: each page's shell starts afresh."""
    one = page(tmp_path, "<!-- example: s -->\n```console\n$ export X=from-one; echo $X\nold\n```\n", "one.md")
    two = page(tmp_path, "<!-- example: s -->\n```console\n$ echo ${X:-unset}\nold\n```\n", "two.md")
    assert session(tmp_path, one).outputs == {1: [["from-one"]]}
    assert session(tmp_path, two).outputs == {1: [["unset"]]}
    only_one = {f"{one.name}:s"}  # --session PAGE:NAME picks the session of that page only
    assert rx._selected(one, "s", only_one) and not rx._selected(two, "s", only_one)
    with pytest.raises(SystemExit, match="no session named nope"):
        rx.regenerate_pages([one, two], only={"nope"})


BIND = ("python3 -c 'import socket, sys; s = socket.socket(); s.bind((\"127.0.0.1\", int(sys.argv[1]))); "
        "print(\"bound\")' ")


def test_each_session_has_its_own_loopback(tmp_path: Path) -> None:
    """The documented ports are real in every session, whatever the machine runs: two sessions bind 8421 at
    once, and a port this test holds on the machine is free, and closed, inside."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        text = (f"<!-- example: s -->\n```console\n$ {BIND}8421\n$ {BIND}{port}\n"
                f"$ curl -s -o /dev/null http://127.0.0.1:{port}/ || echo refused\n```\n")
        pages = [page(tmp_path, text, f"p{i}.md") for i in range(2)]
        new = rx.regenerate_pages(pages, jobs=2)
    for p in pages:
        assert new[p.path].split("```console\n")[1].split("$ ")[1:] == [
            f"{BIND}8421\nbound\n", f"{BIND}{port}\nbound\n",
            f"curl -s -o /dev/null http://127.0.0.1:{port}/ || echo refused\nrefused\n```\n"]


def test_background_jobs_are_stopped_by_pid_with_sigterm(tmp_path: Path) -> None:
    """A server the walkthrough left in the background gets SIGTERM from the check (so it stops as it would
    for the reader's `kill`), not only the namespace's end."""
    p = page(tmp_path, "<!-- example: s -->\n```sh\nmkdir -p /tmp/ex\n"
                       "python3 -c 'import signal, time\nsignal.signal(signal.SIGTERM, lambda *a: "
                       "(open(\"/tmp/ex/stopped\", \"w\").write(\"TERM\"), exit(0)))\nopen(\"/tmp/ex/up\", \"w\")\n"
                       "time.sleep(600)' &\nuntil [ -e /tmp/ex/up ]; do sleep 0.1; done\n```\n")
    run = session(tmp_path, p)
    assert run.problems == []
    assert (tmp_path / "w" / p.slug / "s" / "ex" / "stopped").read_text() == "TERM"


def test_what_a_walkthrough_gets_wrong_fails_the_check(tmp_path: Path) -> None:
    """A setup block that fails, a file written into the checkout, a daemon never stopped: each is named,
    the check exits 1 and rewrites nothing, and nothing it started is left on the machine."""
    token = secrets.token_hex(8)
    p = page(tmp_path, "<!-- example: s -->\n```sh\necho stray > stray.txt\n"
                       f"setsid python3 -c 'import time; time.sleep(600)' {token} > /dev/null 2>&1 < /dev/null &\n"
                       "false\n```\n\n<!-- example: s -->\n```console\n$ echo hi\nold\n```\n")
    r = run_script(str(p.path))
    assert r.returncode == 1 and p.path.read_text(encoding="utf-8") == p.text, r.stdout + r.stderr
    assert "page.md:2: the ```sh block exited 1" in r.stderr
    assert "wrote stray.txt into the checkout" in r.stderr
    assert "left running after its jobs were stopped: " in r.stderr and f"time.sleep(600) {token} (PID " in r.stderr
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                assert token not in (proc / "cmdline").read_bytes().decode(errors="replace"), proc.name
            except OSError:
                pass  # gone while we looked


def test_readme_examples_are_what_the_commands_print() -> None:
    r = run_script("--check")
    assert r.returncode == 0, f"a page differs from what its examples print (run `python " \
                              f"scripts/docs_examples.py` to rewrite it):\n{r.stdout[-20000:]}\n{r.stderr[-5000:]}"


def test_check_fails_when_a_block_was_edited(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "commands" / "README.md").read_text(encoding="utf-8")
    assert "\nG6_HOST_PAUSE=0\n" in text
    edited = tmp_path / "README.md"
    edited.write_text(text.replace("\nG6_HOST_PAUSE=0\n", "\nG6_HOST_PAUSE=5\n", 1), encoding="utf-8")
    r = run_script("--check", str(edited), "--session", "env")
    assert r.returncode == 1
    assert "-G6_HOST_PAUSE=5" in r.stdout and "+G6_HOST_PAUSE=0" in r.stdout
    # without --check the block is rewritten to what the command prints
    assert run_script(str(edited), "--session", "env").returncode == 0
    assert edited.read_text(encoding="utf-8") == text


def test_a_marker_needs_a_console_block_and_a_not_run_needs_a_reason() -> None:
    with pytest.raises(SystemExit, match="must be followed by a ```console or ```sh block"):
        rx.parse("<!-- example: s -->\n```python\ntrue\n```\n")
    (setup,) = rx.parse("<!-- example: s -->\n```sh\ncd /tmp/ex\nexport X=1\n```\n")
    assert setup.kind == "sh" and [c.text for c in setup.commands] == ["cd /tmp/ex\nexport X=1"]
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


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_demo_serve_stops_on_sigterm_as_on_ctrl_c(sig: str, tmp_path: Path) -> None:
    """Started with `&`, Ctrl-C cannot reach it: `kill %1` (SIGTERM) is how the reader stops it, and it
    stops as on Ctrl-C: exit 0, no traceback; the line it prints says so, with its PID."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "g6", "demo", "--serve", "--port", "0", "--site-dir",
                             str(tmp_path / "site")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group: as a job of a shell with job control
    try:
        assert proc.stdout is not None and proc.stderr is not None
        said = proc.stderr.readline()
        assert said.rstrip().endswith(f"Ctrl-C stops it, or `kill {proc.pid}` (its PID) when it runs in the "
                                      "background"), said
        assert proc.stdout.readline().startswith("export ")
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(30) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
