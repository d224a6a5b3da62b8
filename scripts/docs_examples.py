"""Run the walkthroughs of README.md and docs/**/*.md as a reader would and write what their console
examples print back into them (like cog).

    python scripts/docs_examples.py              # rewrite every example block from fresh runs
    python scripts/docs_examples.py --check      # exit 1 and print a diff when a page differs
    python scripts/docs_examples.py --list       # the blocks, their sessions, and the ones not run
    python scripts/docs_examples.py docs/commands/fetch.md --session fetch   # one page, one session

Without FILE arguments the pages are README.md and every docs/**/*.md. A fenced block is run when the
line before its opening fence is a marker::

    <!-- example: SESSION -->                 run it in SESSION: a ```console block's output is replaced
                                              by what its commands print; a ```sh block (what a reader
                                              runs to set up: servers started with `&`, `cd`, exports) is
                                              run as written, its output not shown, and must exit 0
    <!-- example: prelude -->                 (a ```sh block of docs/commands/README.md) run first in
                                              every session of every docs/ page: how their reader set up
    <!-- example: not-run: REASON -->         shown as written, never run (the test counts these)
    <!-- example-file: NAME -->               (before any fenced block) its text is the file NAME in
                                              /tmp/ex of every session of that page, so a shown script
                                              is the one run

Every ```console and ```sh block carries one (tests/test_readme_examples.py).

A session is one walkthrough of one page: its blocks in page order, run in ONE bash, from where the
reader stands when they start: the checkout, with nothing activated or exported (a docs/ page's
session first runs the prelude, which activates .venv, starts the demo site and goes to /tmp/ex).
``cd``, variables and background jobs carry from block to block as in a terminal. Each ``$ `` line
(with its ``\\``-continued lines) is a command; ``A$ `` runs it in another shell ``A`` of the session,
started from the first shell's settings and folder when first used. Everything else in a console
block is output, replaced by what the command prints now, stdout and stderr together as a terminal
shows them (what a background job prints after its command returned is not shown).

Each session runs in a network and PID namespace of its own (scripts/docs_sessions.py says why), so
the documented ports (8421, 8426, 9200) are the real ones and free; /tmp/ex is a fresh folder of its
own, /tmp (TMPDIR) too, and the checkout a folder of links to this one, so that a walkthrough that
writes into the checkout fails the check. When it ends, the jobs its shells started are stopped by
PID; whatever is still running then fails the check.

What changes from run to run is replaced by stable placeholders, numbered by first appearance in a session:
receipt, manifest, run and report-check result ids (``rcpt_<1>``), times (``<time>``; ``<stamp>`` in a memento
URI), signing keys (``ed25519:<key-1>``, ``ed25519:<pub-1>``, as a did:key ``did:key:z6Mk<multikey-1>``), log ids
(``g6-evidence/<log-1>``), verifier keys, signatures, a TSA's genTime, tree hashes and other base64 or hex values
that are not content digests, temporary folder names, and ports a server picked: those of the witness, the TSA,
PostgreSQL and S3 (read from the settings they print) are shown as 7380, 3161, 5432 and 8333, any other as
``<port-N>``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs_sessions import Namespace, SessionBroken  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PRELUDE_PAGE = DOCS / "commands" / "README.md"
MARKER = re.compile(r"^<!-- example: (?P<spec>.+?) -->$")
FILE_MARKER = re.compile(r"^<!-- example-file: (?P<name>[A-Za-z0-9_.-]+) -->$")
PROMPT = re.compile(r"^(?P<shell>[A-Z]?)\$ (?P<cmd>.*)$")
SHOWN_FOLDER = "/tmp/ex"  # where the pages say the examples run
SHOWN_CHECKOUT = "<checkout>"
FIXED_PORTS = (8421, 8426, 9200)  # the ports the pages' servers are started on: real in the namespace
SHOWN_PORTS = {"G6_WITNESS_URL": 7380, "G6_TSA_URL": 3161, "G6_TEST_PG_URL": 5432, "G6_TEST_S3_ENDPOINT": 8333}
COMMAND_TIMEOUT = 180
SETUP_TIMEOUT = 600  # a setup block may build litewitness with Go the first time
VERBOSE = False


# -- the pages' blocks -----------------------------------------------------------------------------
@dataclass
class Command:
    shell: str
    lines: list[str]  # as written, prompt included (a setup block: its lines)
    output: list[str] = field(default_factory=list)
    setup: bool = False

    @property
    def text(self) -> str:
        if self.setup:
            return "\n".join(self.lines)
        first = PROMPT.match(self.lines[0])
        assert first is not None
        return "\n".join([first["cmd"], *self.lines[1:]])


@dataclass
class Block:
    start: int  # index of the opening fence's line
    end: int  # index of the closing fence's line
    session: str | None  # None: not run
    reason: str
    commands: list[Command]
    kind: str = "console"  # or "sh": a setup block, run and not shown
    page: str = ""  # the page it is on (a prelude's is docs/commands/README.md)


def doc_pages() -> list[Path]:
    """The pages whose examples run: README.md, then every docs/**/*.md in path order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_name(path: Path) -> str:
    """How a page is named in messages: relative to the repository when it is in it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def files(text: str, name: str = "README.md") -> dict[str, str]:
    """The fenced blocks marked ``<!-- example-file: NAME -->``: written as NAME in the folder of every
    session of the page."""
    lines = text.split("\n")
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        m = FILE_MARKER.match(line)
        if m:
            if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                raise SystemExit(f"{name}:{i + 1}: an example-file marker must be followed by a fenced block")
            end = lines.index("```", i + 2)
            out[m["name"]] = "\n".join(lines[i + 2:end]) + "\n"
    return out


def _session_of(spec: str, where: str) -> tuple[str | None, str]:
    if spec.startswith("not-run:"):
        reason = spec.removeprefix("not-run:").strip()
        if not reason:
            raise SystemExit(f"{where}: a not-run example needs its reason")
        return None, reason
    if re.fullmatch(r"[a-z0-9-]+", spec):
        return spec, ""
    raise SystemExit(f"{where}: unknown marker {spec!r} (example: SESSION, or not-run: REASON)")


def _console_commands(body: list[str], name: str, first_line: int) -> list[Command]:
    commands: list[Command] = []
    j = 0
    while j < len(body):
        p = PROMPT.match(body[j])
        if p is None:
            if not commands:
                raise SystemExit(f"{name}:{first_line + j}: a console block must start with a `$ ` command")
            commands[-1].output.append(body[j])
            j += 1
            continue
        cmd = [body[j]]
        while cmd[-1].endswith("\\") and j + 1 < len(body):
            j += 1
            cmd.append(body[j])
        commands.append(Command(p["shell"], cmd))
        j += 1
    return commands


def parse(text: str, name: str = "README.md") -> list[Block]:
    """The marked blocks of a page: ```console examples and ```sh setup blocks, in page order."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        fence = lines[i + 1] if i + 1 < len(lines) else ""
        if fence not in ("```console", "```sh"):
            raise SystemExit(f"{name}:{i + 1}: an example marker must be followed by a ```console or ```sh block")
        start = i + 1
        end = start + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        session, reason = _session_of(m["spec"].strip(), f"{name}:{i + 1}")
        body = lines[start + 1:end]
        if fence == "```sh":
            if not body:
                raise SystemExit(f"{name}:{start + 1}: an empty ```sh block")
            blocks.append(Block(start, end, session, reason, [Command("", body, setup=True)], "sh", name))
        else:
            if session == "prelude":
                raise SystemExit(f"{name}:{i + 1}: the prelude is a ```sh block")
            blocks.append(Block(start, end, session, reason, _console_commands(body, name, start + 2),
                                "console", name))
        i = end + 1
    return blocks


# -- what varies between runs ----------------------------------------------------------------------
B64 = r"[A-Za-z0-9+/]"


class Normaliser:
    """Stable placeholders for what changes from run to run, numbered per session in order of appearance."""

    def __init__(self, folders: dict[str, str], ports: dict[int, int]) -> None:
        self.folders = folders  # real path -> shown path
        self.ports = ports  # real port -> shown port
        self.seen: dict[str, dict[str, str]] = {}

    def _n(self, kind: str, value: str, fmt: str) -> str:
        known = self.seen.setdefault(kind, {})
        if value not in known:
            known[value] = fmt.format(len(known) + 1)
        return known[value]

    def _port(self, m: re.Match[str]) -> str:
        port = int(m["port"])
        shown = self.ports.get(port)
        return f"{m['pre']}{shown if shown is not None else self._n('port', str(port), '<port-{}>')}"

    def __call__(self, text: str) -> str:
        for real, shown in sorted(self.folders.items(), key=lambda kv: -len(kv[0])):
            text = text.replace(real, shown)
        text = re.sub(r"(?P<pre>(?:127\.0\.0\.[0-9]+|localhost|\[::1\]):)(?P<port>[0-9]{2,5})\b", self._port, text)
        text = re.sub(r"(?P<pre>\bport )(?P<port>[0-9]{2,5})\b", self._port, text)
        text = re.sub(r"(?<![A-Za-z0-9])(rcpt|mfst|run|rchk)_([0-9A-HJKMNP-TV-Z]{26})(?![A-Za-z0-9])",
                      lambda m: self._n(m[1], m[0], m[1] + "_<{}>"), text)
        # a citation id hashes its receipt id (a passage id hashes only its text, so it stays)
        text = re.sub(r"(?<![A-Za-z0-9])c_[0-9a-f]{16}(?![A-Za-z0-9])", lambda m: self._n("c", m[0], "c_<{}>"), text)
        # a time g6 took (with microseconds); a date read from a page or reply (seconds at most) stays
        text = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d)", "<time>", text)
        # a TSA's genTime, to the second: the time it signed, not a date read from a page
        text = re.sub(r"(?:(?<=genTime )|(?<=before ))\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", "<time>", text)
        # a memento URI's timestamp (g6 serve's 20 digits, another archive's 14) is the read's time
        text = re.sub(r"(?<=/web/)(?:\d{20}|\d{14})(?=(?:id_)?/)", "<stamp>", text)
        text = re.sub(r"\bg6-(demo|site|pg)-[a-z0-9_]{8}\b", lambda m: f"g6-{m[1]}-<tmp>", text)
        text = re.sub(r"ed25519:([0-9a-f]{32})\b", lambda m: self._n("key", m[1], "ed25519:<key-{}>"), text)
        # a signed WACZ: its P-384 key's id, and the time it was made and its package's hash (datapackage-digest.json)
        text = re.sub(r"ecdsa-p384:([0-9a-f]{32})\b", lambda m: self._n("wkey", m[1], "ecdsa-p384:<wkey-{}>"), text)
        text = re.sub(r'(?<="created": ")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', "<time>", text)
        text = re.sub(r'(?<="hash": "sha256:)[0-9a-f]{64}\b', lambda m: self._n("hex", m[0], "<hex-{}>"), text)
        text = re.sub(rf"ed25519:({B64}{{43}}=)", lambda m: self._n("pub", m[1], "ed25519:<pub-{}>"), text)
        text = re.sub(r"g6-evidence/([0-9a-f]{16})\b", lambda m: self._n("log", m[1], "g6-evidence/<log-{}>"), text)
        # an Ed25519 key as a Multikey (base58btc, always z6Mk…): a did:key and its verification method
        text = re.sub(r"\bz6Mk([1-9A-HJ-NP-Za-km-z]{44})\b",
                      lambda m: self._n("mk", m[1], "z6Mk<multikey-{}>"), text)
        text = re.sub(rf"\+([0-9a-f]{{8}})\+({B64}{{44}})", lambda m: self._n("vkey", m[0], "+<vkey-{}>"), text)
        # content digests name bytes that do not change; other long hex or base64 values do
        text = re.sub(r"(?<![:0-9a-zA-Z_])[0-9a-f]{64}(?![0-9a-zA-Z])",
                      lambda m: self._n("hex", m[0], "<hex-{}>"), text)
        text = re.sub(rf"(?<![A-Za-z0-9+/:_.-])(?={B64}*[0-9+/]){B64}{{40,}}={{0,2}}(?![A-Za-z0-9+/=])",
                      lambda m: self._n("b64", m[0], "<b64-{}>"), text)
        return "\n".join(line.rstrip() for line in text.split("\n"))


# -- running a session -----------------------------------------------------------------------------
def _doc_to_real(command: str, ports: dict[int, int], folder: Path) -> str:
    """The pages show /tmp/ex and the usual ports of servers that pick theirs; the session has its own
    folder, and those servers their own ports."""
    command = re.sub(rf"{re.escape(SHOWN_FOLDER)}(?=/|\b)", str(folder), command)
    for real, shown in ports.items():
        if real != shown:
            command = re.sub(rf"(?<=[:/]){shown}\b|(?<=127\.0\.0\.[12]:){shown}\b", str(real), command)
    return command


def base_env(tmp: Path) -> dict[str, str]:
    """A reader's fresh shell: no venv on the PATH (the walkthrough activates it), no G6_* setting; TMPDIR
    is the session's own /tmp."""
    venv_bin = Path(sys.prefix) / "bin"
    path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
            if p and Path(p).resolve() != venv_bin.resolve()]
    return {"PATH": os.pathsep.join(path), "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "PYTHONUNBUFFERED": "1", "TERM": "dumb", "COLUMNS": "100", "TMPDIR": str(tmp),
            "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def checkout_stand_in(at: Path) -> set[str]:
    """A folder of links to this checkout's entries, where the reader stands: a walkthrough that writes into
    the checkout writes there, and is caught. ``.venv`` is the venv running this check."""
    if sys.prefix == sys.base_prefix:
        raise SystemExit("run the docs' examples with a venv's Python (.venv/bin/python): the walkthroughs "
                         "activate .venv")
    at.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name != ".venv":
            (at / entry.name).symlink_to(entry)
    (at / ".venv").symlink_to(sys.prefix)
    return {e.name for e in at.iterdir()}


@dataclass
class Run:
    """What one session printed, block by block, and what went wrong beyond its outputs."""

    outputs: dict[int, list[list[str]]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def run_session(name: str, blocks: list[Block], work: Path, given: dict[str, str], page: str = "") -> Run:
    """One walkthrough in its own namespaces: ``work`` holds its /tmp/ex (``ex``), /tmp (``tmp``), the
    checkout it starts from (``checkout``) and the shells' files (``ctl``)."""
    folder, tmp, checkout = work / "ex", work / "tmp", work / "checkout"
    tmp.mkdir(parents=True)
    if given:
        folder.mkdir(parents=True)
        for file_name, content in given.items():
            (folder / file_name).write_text(content, encoding="utf-8")
    linked = checkout_stand_in(checkout)
    ports = {p: p for p in FIXED_PORTS}
    norm = Normaliser({str(folder): SHOWN_FOLDER, str(tmp): "/tmp", str(checkout): SHOWN_CHECKOUT,
                       str(ROOT): SHOWN_CHECKOUT}, ports)
    run = Run()
    with Namespace(work / "ctl", base_env(tmp), checkout) as ns:
        try:
            _run_blocks(blocks, ns, norm, ports, folder, run, page)
        except SessionBroken as e:
            run.problems.append(f"{page} session {name}: {e}")
            ns.close(kill=True)
        else:
            ns.stop()
        run.problems += [f"{page} session {name}: {p}" for p in ns.problems]
    wrote = sorted({e.name for e in checkout.iterdir()} - linked)
    if wrote:
        run.problems.append(f"{page} session {name}: wrote {', '.join(wrote)} into the checkout (where the "
                            "reader starts): write under /tmp/ex")
    return run


def _run_blocks(blocks: list[Block], ns: Namespace, norm: Normaliser, ports: dict[int, int], folder: Path,
                run: Run, page: str) -> None:
    for block in blocks:
        results: list[list[str]] = []
        for cmd in block.commands:
            began = time.monotonic()
            try:
                rc, text, env = ns.shell(cmd.shell).run(_doc_to_real(cmd.text, ports, folder),
                                                          SETUP_TIMEOUT if cmd.setup else COMMAND_TIMEOUT)
            except SessionBroken as e:
                results.append([f"(docs_examples: {e}; the session stopped here)"])
                if block.kind == "console":
                    run.outputs[block.start] = results + [[] for _ in block.commands[len(results):]]
                raise SessionBroken(f"{block.page}:{block.start + 1}: {e}, at {cmd.text[:300]!r}") from None
            # bash names the sourced file in its own errors, where a terminal says `bash:`
            text = re.sub(rf"{re.escape(str(ns.ctl))}/cmd-[^:/]+\.sh: line \d+: ", "bash: ", text)
            for var, shown in SHOWN_PORTS.items():  # a server that picked its port: shown on its usual one
                m = re.search(r"(?:127\.0\.0\.1|localhost|@[^/]*?):(\d+)", env.get(var, ""))
                if m:
                    ports[int(m[1])] = shown
            if VERBOSE:
                print(f"{time.monotonic() - began:6.1f} s  {page}: {cmd.text[:100]!r}", file=sys.stderr)
            if cmd.setup and rc != 0:
                run.problems.append(f"{block.page}:{block.start + 1}: the ```sh block exited {rc}: "
                                    f"{norm(text).strip()[-2000:]}")
            results.append(norm(text.removesuffix("\n")).split("\n") if text.strip() else [])
        if block.kind == "console":
            run.outputs[block.start] = results


def render(text: str, blocks: list[Block], outputs: dict[int, list[list[str]]]) -> str:
    lines = text.split("\n")
    for block in sorted(blocks, key=lambda b: -b.start):
        if block.session is None or block.kind != "console":
            continue
        body: list[str] = []
        for cmd, printed in zip(block.commands, outputs[block.start], strict=True):
            body += cmd.lines + printed
        lines[block.start + 1:block.end] = body
    return "\n".join(lines)


TOOLS = ("bash", "jq", "sqlite3", "unzip", "wacz", "warcio")  # what the examples' commands call besides g6


@dataclass(frozen=True)
class Page:
    path: Path
    text: str

    @property
    def name(self) -> str:
        return page_name(self.path)

    @property
    def slug(self) -> str:
        """The page's folder name among the sessions' folders."""
        return re.sub(r"[^A-Za-z0-9]+", "_", self.name.removesuffix(".md")).strip("_")


def _selected(page: Page, session: str, only: set[str] | None) -> bool:
    """``--session NAME`` picks that session in every page given; ``--session PAGE:NAME`` in that page only."""
    return only is None or session in only or f"{page.name}:{session}" in only


def prelude(page: Page, blocks: list[Block], pages: list[Page]) -> list[Block]:
    """What a reader of the page ran before its first example: the page's own ``prelude`` blocks; for a
    page under docs/ without any, those of docs/commands/README.md (as given, or as on disk)."""
    own = [b for b in blocks if b.session == "prelude"]
    if own:
        return own
    try:
        page.path.resolve().relative_to(DOCS)
    except ValueError:
        return []
    text = next((p.text for p in pages if p.path.resolve() == PRELUDE_PAGE),
                PRELUDE_PAGE.read_text(encoding="utf-8"))
    return [b for b in parse(text, page_name(PRELUDE_PAGE)) if b.session == "prelude"]


def sessions_of(pages: list[Page], only: set[str] | None = None) -> dict[tuple[Page, str], list[Block]]:
    """Each selected session of each page: its prelude, then its blocks in page order."""
    sessions: dict[tuple[Page, str], list[Block]] = {}
    for page in pages:
        blocks = parse(page.text, page.name)
        for b in blocks:
            if b.session not in (None, "prelude") and _selected(page, b.session, only):
                if (page, b.session) not in sessions:
                    sessions[(page, b.session)] = list(prelude(page, blocks, pages))
                sessions[(page, b.session)].append(b)
    if only is not None:
        unknown = sorted(o for o in only if not any(_selected(page, name, {o}) for page, name in sessions))
        if unknown:
            raise SystemExit(f"no session named {', '.join(unknown)} in {', '.join(p.name for p in pages)}")
    return sessions


def regenerate_pages(pages: list[Page], *, jobs: int = 3, only: set[str] | None = None,
                     problems: list[str] | None = None) -> dict[Path, str]:
    """Every page's text with the output of its selected sessions' blocks replaced by a fresh run. What went
    wrong beyond the outputs (a setup block that failed, a server left running, a write into the checkout)
    is added to ``problems``; without that list, it ends the run (SystemExit naming each)."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        raise SystemExit(f"the docs' examples need {', '.join(missing)} on PATH (apt-get install jq sqlite3 "
                         "unzip; pip install -e '.[test]' for wacz and warcio)")
    sessions = sessions_of(pages, only)
    if not sessions:
        return {page.path: page.text for page in pages}
    work = Path(tempfile.mkdtemp(prefix="g6-docs-"))
    work.chmod(0o711)  # a server a page runs as its own user (PostgreSQL as `postgres`) reaches its folders
    outputs: dict[Path, dict[int, list[list[str]]]] = {page.path: {} for page in pages}
    found: list[str] = []
    try:
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(run_session, name, bs, work / page.slug / name, files(page.text, page.name),
                                   page.name): page for (page, name), bs in sessions.items()}
            for f, page in futures.items():
                run = f.result()
                outputs[page.path].update(run.outputs)
                found += run.problems
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if found and problems is None:
        raise SystemExit(said_wrong(found))
    if problems is not None:
        problems += found
    return {page.path: render(page.text, [b for b in parse(page.text, page.name) if b.start in outputs[page.path]],
                              outputs[page.path]) for page in pages}


def said_wrong(problems: list[str]) -> str:
    return "the walkthroughs did not run as a reader would:\n" + "\n".join(f"* {p}" for p in problems)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path, metavar="FILE",
                    help="the pages to check or rewrite (default: README.md and docs/**/*.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when a page differs")
    ap.add_argument("--list", action="store_true", help="list the blocks and exit")
    ap.add_argument("--session", action="append",
                    help="only this session: NAME in every page, or PAGE:NAME (repeatable)")
    ap.add_argument("--jobs", type=int, default=3, help="sessions run at once")
    ap.add_argument("--verbose", action="store_true", help="print each command's time on stderr")
    args = ap.parse_args(argv)
    global VERBOSE
    VERBOSE = args.verbose
    pages = [Page(path, path.read_text(encoding="utf-8")) for path in (args.files or doc_pages())]
    if args.list:
        for page in pages:
            for b in parse(page.text, page.name):
                what = b.session if b.session else f"NOT RUN ({b.reason})"
                print(f"{page.name}:{b.start + 1}: {b.kind}, {len(b.commands)} command(s): {what}")
        return 0
    problems: list[str] = []
    new = regenerate_pages(pages, jobs=args.jobs, only=set(args.session) if args.session else None,
                           problems=problems)
    changed = [page for page in pages if new[page.path] != page.text]
    if args.check or problems:  # a walkthrough that went wrong is shown as it ran, and nothing is rewritten
        for page in changed:
            sys.stdout.writelines(difflib.unified_diff(page.text.splitlines(True), new[page.path].splitlines(True),
                                                       f"{page.name} (as written)", f"{page.name} (as run)"))
        if problems:
            print(said_wrong(problems), file=sys.stderr)
        return 1 if changed or problems else 0
    for page in changed:
        page.path.write_text(new[page.path], encoding="utf-8")
        print(f"rewrote {page.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
