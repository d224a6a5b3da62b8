"""Run the console examples of README.md and docs/**/*.md and write what they print back into them (like cog).

    python scripts/docs_examples.py              # rewrite every example block from fresh runs
    python scripts/docs_examples.py --check      # exit 1 and print a diff when a page differs
    python scripts/docs_examples.py --list       # the blocks, their sessions, and the ones not run
    python scripts/docs_examples.py docs/commands/fetch.md --session fetch   # one page, one session

Without FILE arguments the pages are README.md and every docs/**/*.md. A console block is run when
the line before its opening fence is a marker::

    <!-- example: SESSION -->                 run it; blocks of one SESSION share one shell state
    <!-- example: not-run: REASON -->         shown as written, never run (the test counts these)
    <!-- example-file: NAME -->               (before any fenced block) its text is the file NAME in
                                              the folder of every session of that page, so a shown
                                              script is the one run

Sessions are per page: a session name used in two pages is two sessions, each with its own shell
state and folder.

Each ``$ `` line (with its ``\\``-continued lines) is a command; ``A$ `` runs it in shell ``A`` of the
session (its own exported variables and folder). Everything else in the block is output and is
replaced by what the command prints now, stdout and stderr together as a terminal shows them.
A command runs in bash with what it exported before, in the session's folder ``/tmp/ex`` (really a
fresh temporary folder) with ``G6_HOME=/tmp/ex/home``, after the fixture servers were started from
their documented commands:

* ``g6 demo --serve --port 0 --recorded fixtures/http``: the demo site and the recorded paper-source
  replies on 127.0.0.1 and 127.0.0.2; the settings it prints are exported, and its port is shown
  as 8421 (the default a reader gets);
* an Elasticsearch on loopback loaded with ``tests/elastic_setup.py``'s index (``G6_TEST_ELASTIC_URL``,
  or a noida-db started here), shown as 127.0.0.1:9200;
* PostgreSQL and SeaweedFS from ``tests/backends_setup.py`` (``G6_TEST_PG_URL`` and ``G6_TEST_S3_*``, or
  started here), exported as the ``G6_TEST_*`` settings that script prints;
* for a ``trust*`` session, a witness for its home and a TSA, from their documented commands
  ``scripts/witness.py --home … --print-env`` and ``scripts/tsa.py --print-env`` (their ``export …``
  lines are the session's; shown on ports 7380 and 3161), each stopped by its PID when the session ends.

What changes from run to run is replaced by stable placeholders, numbered by first appearance in a
session: receipt, manifest and run ids (``rcpt_<1>``), times (``<time>``), signing keys
(``ed25519:<key-1>``, ``ed25519:<pub-1>``), log ids (``g6-evidence/<log-1>``), verifier keys,
signatures, a TSA's genTime, tree hashes and other base64 or hex values that are not content digests, temporary
folder names and ports.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import difflib
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MARKER = re.compile(r"^<!-- example: (?P<spec>.+?) -->$")
FILE_MARKER = re.compile(r"^<!-- example-file: (?P<name>[A-Za-z0-9_.-]+) -->$")
PROMPT = re.compile(r"^(?P<shell>[A-Z]?)\$ (?P<cmd>.*)$")
SHOWN_FOLDER = "/tmp/ex"  # where the pages say the examples run
DOC_PORTS = {"site": 8421, "elastic": 9200, "postgres": 5432, "s3": 8333, "witness": 7380, "tsa": 3161}
COMMAND_TIMEOUT = 180
VERBOSE = False


# -- the pages' blocks -----------------------------------------------------------------------------
@dataclass
class Command:
    shell: str
    lines: list[str]  # as written, prompt included
    output: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
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


def parse(text: str, name: str = "README.md") -> list[Block]:
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        if i + 1 >= len(lines) or lines[i + 1] != "```console":
            raise SystemExit(f"{name}:{i + 1}: an example marker must be followed by a ```console block")
        start = i + 1
        end = start + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        spec = m["spec"].strip()
        session: str | None
        if spec.startswith("not-run:"):
            session, reason = None, spec.removeprefix("not-run:").strip()
            if not reason:
                raise SystemExit(f"{name}:{i + 1}: a not-run example needs its reason")
        elif re.fullmatch(r"[a-z0-9-]+", spec):
            session, reason = spec, ""
        else:
            raise SystemExit(f"{name}:{i + 1}: unknown marker {spec!r} (example: SESSION, or not-run: REASON)")
        commands: list[Command] = []
        body = lines[start + 1:end]
        j = 0
        while j < len(body):
            p = PROMPT.match(body[j])
            if p is None:
                if not commands:
                    raise SystemExit(f"{name}:{start + 2 + j}: a console block must start with a `$ ` command")
                commands[-1].output.append(body[j])
                j += 1
                continue
            cmd = [body[j]]
            while cmd[-1].endswith("\\") and j + 1 < len(body):
                j += 1
                cmd.append(body[j])
            commands.append(Command(p["shell"], cmd))
            j += 1
        blocks.append(Block(start, end, session, reason, commands))
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
        text = re.sub(r"(?<![A-Za-z0-9])(rcpt|mfst|run)_([0-9A-HJKMNP-TV-Z]{26})(?![A-Za-z0-9])",
                      lambda m: self._n(m[1], m[0], m[1] + "_<{}>"), text)
        # a citation id hashes its receipt id (a passage id hashes only its text, so it stays)
        text = re.sub(r"(?<![A-Za-z0-9])c_[0-9a-f]{16}(?![A-Za-z0-9])", lambda m: self._n("c", m[0], "c_<{}>"), text)
        # a time g6 took (with microseconds); a date read from a page or reply (seconds at most) stays
        text = re.sub(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d)", "<time>", text)
        # a TSA's genTime, to the second: the time it signed, not a date read from a page
        text = re.sub(r"(?:(?<=genTime )|(?<=before ))\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", "<time>", text)
        text = re.sub(r"\bg6-(demo|site|pg)-[a-z0-9_]{8}\b", lambda m: f"g6-{m[1]}-<tmp>", text)
        text = re.sub(r"ed25519:([0-9a-f]{32})\b", lambda m: self._n("key", m[1], "ed25519:<key-{}>"), text)
        # a signed WACZ: its P-384 key's id, and the time it was made and its package's hash (datapackage-digest.json)
        text = re.sub(r"ecdsa-p384:([0-9a-f]{32})\b", lambda m: self._n("wkey", m[1], "ecdsa-p384:<wkey-{}>"), text)
        text = re.sub(r'(?<="created": ")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', "<time>", text)
        text = re.sub(r'(?<="hash": "sha256:)[0-9a-f]{64}\b', lambda m: self._n("hex", m[0], "<hex-{}>"), text)
        text = re.sub(rf"ed25519:({B64}{{43}}=)", lambda m: self._n("pub", m[1], "ed25519:<pub-{}>"), text)
        text = re.sub(r"g6-evidence/([0-9a-f]{16})\b", lambda m: self._n("log", m[1], "g6-evidence/<log-{}>"), text)
        text = re.sub(rf"\+([0-9a-f]{{8}})\+({B64}{{44}})", lambda m: self._n("vkey", m[0], "+<vkey-{}>"), text)
        # content digests name bytes that do not change; other long hex or base64 values do
        text = re.sub(r"(?<![:0-9a-zA-Z_])[0-9a-f]{64}(?![0-9a-zA-Z])",
                      lambda m: self._n("hex", m[0], "<hex-{}>"), text)
        text = re.sub(rf"(?<![A-Za-z0-9+/:_.-])(?={B64}*[0-9+/]){B64}{{40,}}={{0,2}}(?![A-Za-z0-9+/=])",
                      lambda m: self._n("b64", m[0], "<b64-{}>"), text)
        return "\n".join(line.rstrip() for line in text.split("\n"))


# -- the fixture servers ---------------------------------------------------------------------------
@dataclass
class Servers:
    env: dict[str, str]
    ports: dict[int, int]  # real -> shown


def _wait_line(proc: subprocess.Popen[str], prefix: str, timeout: float) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line
        if not line and proc.poll() is not None:
            break
    raise SystemExit(f"the fixture server did not print {prefix!r} (exit {proc.poll()})")


@contextmanager
def servers(work: Path) -> Iterator[Servers]:
    env: dict[str, str] = {}
    ports: dict[int, int] = {}
    sys.path.insert(0, str(ROOT / "tests"))
    with ExitStack() as stack:
        # the demo site, from its one documented command
        site = subprocess.Popen([sys.executable, "-m", "g6", "demo", "--serve", "--port", "0",
                                 "--site-dir", str(work / "site"), "--recorded", str(ROOT / "fixtures" / "http")],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=work)

        def stop_site() -> None:
            site.terminate()
            site.wait(10)
        stack.callback(stop_site)
        exports = _wait_line(site, "export ", 60)
        for word in shlex.split(exports)[1:]:
            k, _, v = word.partition("=")
            env[k] = v
        port = int(re.search(r":(\d+)/", env["G6_ARXIV_URL"])[1])  # type: ignore[index]
        ports[port] = DOC_PORTS["site"]

        # Elasticsearch: CI's noida-db, or one started here
        import elastic_setup

        url = os.environ.get("G6_TEST_ELASTIC_URL")
        if not url:
            proc, url = elastic_setup.start_noida(Path(tempfile.mkdtemp(prefix="g6-noida-", dir=work)))

            def stop_noida() -> None:
                proc.terminate()
                proc.wait(10)
            stack.callback(stop_noida)
        elastic_setup.wait_ready(url)
        elastic_setup.load(url)
        env["G6_ELASTIC_URL"] = url.rstrip("/")
        ports[int(url.rstrip("/").rsplit(":", 1)[1])] = DOC_PORTS["elastic"]

        # PostgreSQL and SeaweedFS: CI's, or started here (the variables tests/backends_setup.py prints)
        backend = {k: v for k, v in os.environ.items() if k.startswith(("G6_TEST_PG_", "G6_TEST_S3_"))}
        if "G6_TEST_PG_URL" not in backend or "G6_TEST_S3_ENDPOINT" not in backend:
            import backends_setup

            if "G6_TEST_PG_URL" not in backend:
                pg = backends_setup.start_postgres(work / "pg")
                stack.callback(pg.stop)
                backend.update(pg.env)
            if "G6_TEST_S3_ENDPOINT" not in backend:
                s3 = backends_setup.start_seaweedfs(work / "s3")
                stack.callback(s3.stop)
                backend.update(s3.env)
        env.update({k: v for k, v in backend.items() if not k.endswith(("_PID", "_DIR"))})
        ports[int(re.search(r":(\d+)/", backend["G6_TEST_PG_URL"])[1])] = DOC_PORTS["postgres"]  # type: ignore[index]
        ports[int(backend["G6_TEST_S3_ENDPOINT"].rsplit(":", 1)[1])] = DOC_PORTS["s3"]
        yield Servers(env, ports)


# -- running a session -----------------------------------------------------------------------------
def _doc_to_real(command: str, ports: dict[int, int], folder: Path) -> str:
    """The pages show the documented ports and folder; the servers run on free ports, the session in a
    fresh folder."""
    command = re.sub(rf"{re.escape(SHOWN_FOLDER)}(?=/|\b)", str(folder), command)
    for real, shown in ports.items():
        command = re.sub(rf"(?<=[:/]){shown}\b|(?<=127\.0\.0\.[12]:){shown}\b", str(real), command)
    return command


def _wanted(session: str, setting: str) -> bool:
    """Each section's servers: Elasticsearch for `es*` and `mcp*` sessions, PostgreSQL and S3 for `pg*`."""
    if setting == "G6_ELASTIC_URL":
        return session.startswith(("es", "mcp"))
    if setting.startswith("G6_TEST_"):
        return session.startswith("pg")
    return True


def run_session(name: str, blocks: list[Block], folder: Path, srv: Servers,
                given: dict[str, str]) -> dict[int, list[list[str]]]:
    """One session of one page, in its own fresh folder (shown as /tmp/ex)."""
    (folder / "home").mkdir(parents=True)
    for file_name, content in given.items():
        (folder / file_name).write_text(content, encoding="utf-8")
    start_env = {k: v for k, v in srv.env.items() if _wanted(name, k)} | {"G6_HOME": str(folder / "home")}
    shown = {str(folder): SHOWN_FOLDER, srv.env["G6_DEMO_SITE"]: f"{SHOWN_FOLDER}/site"}
    ports = dict(srv.ports)
    with ExitStack() as stack:
        if name.startswith("pg"):
            start_env |= _fresh_backends(srv.env, shown, stack)
        if name.startswith("trust"):
            start_env |= _trust_servers(folder, ports, stack)
        return _run_blocks(blocks, folder, base_env(), start_env, Normaliser(shown, ports), ports)


def _trust_servers(folder: Path, ports: dict[int, int], stack: ExitStack) -> dict[str, str]:
    """A `trust*` session's witness and TSA, each from its one documented command (scripts/witness.py for
    the session's home, scripts/tsa.py), on ports the system picks, shown as 7380 and 3161; the
    ``export …`` lines they print are the session's, and each is stopped by its PID when it ends."""
    env: dict[str, str] = {}
    for script, args, kind, url_var in (
            ("witness.py", ["--home", str(folder / "home"), "--state", str(folder / "w")], "witness",
             "G6_WITNESS_URL"),
            ("tsa.py", ["--state", str(folder / "tsa")], "tsa", "G6_TSA_URL")):
        proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / script), *args, "--port", "0", "--print-env"],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=folder,
                                stdin=subprocess.DEVNULL)

        def stop(proc: subprocess.Popen[str] = proc) -> None:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        stack.callback(stop)
        for word in shlex.split(_wait_line(proc, "export ", 180))[1:]:
            k, _, v = word.partition("=")
            env[k] = v
        ports[int(re.search(r":(\d+)", env[url_var].split("//", 1)[1])[1])] = DOC_PORTS[kind]  # type: ignore[index]
    return env


def _fresh_backends(env: dict[str, str], shown: dict[str, str], stack: ExitStack) -> dict[str, str]:
    """A new database and bucket on the PostgreSQL and S3 servers, so that a session starts as on servers
    just started by tests/backends_setup.py; shown under the names that script gives."""
    import boto3
    import psycopg

    token = secrets.token_hex(6)
    db, bucket = f"readme_{token}", f"readme-{token}"
    admin = env["G6_TEST_PG_URL"]
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    stack.callback(drop)
    s3 = boto3.client("s3", endpoint_url=env["G6_TEST_S3_ENDPOINT"], aws_access_key_id=env["G6_TEST_S3_ACCESS_KEY"],
                      aws_secret_access_key=env["G6_TEST_S3_SECRET_KEY"], region_name="us-east-1")
    s3.create_bucket(Bucket=bucket)
    shown |= {db: admin.rsplit("/", 1)[1], bucket: env["G6_TEST_S3_BUCKET"]}
    return {"G6_TEST_PG_URL": f"{admin.rsplit('/', 1)[0]}/{db}", "G6_TEST_S3_BUCKET": bucket}


def base_env() -> dict[str, str]:
    """What every command starts from, before the session's exports: a plain shell with this Python first."""
    return {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "PYTHONUNBUFFERED": "1", "TERM": "dumb", "COLUMNS": "100", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


def _run_blocks(blocks: list[Block], folder: Path, base: dict[str, str], start_env: dict[str, str],
                norm: Normaliser, ports: dict[int, int]) -> dict[int, list[list[str]]]:
    shells: dict[str, tuple[Path, Path, int]] = {}  # shell -> (exports file, folder file, last exit code)
    out: dict[int, list[list[str]]] = {}
    for block in blocks:
        results: list[list[str]] = []
        for cmd in block.commands:
            if cmd.shell not in shells:
                state = folder / f".shell{cmd.shell or '_'}"
                state.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in start_env.items()))
                (folder / f".cwd{cmd.shell or '_'}").write_text(str(folder))
                shells[cmd.shell] = (state, folder / f".cwd{cmd.shell or '_'}", 0)
            state, cwdf, rc = shells[cmd.shell]
            # set -a: a variable the command sets is exported, so the session's next commands see it
            script = (f"set -a; . {shlex.quote(str(state))}; cd {shlex.quote(cwdf.read_text().strip())}\n"
                      f"(exit {rc})\n"
                      f"{_doc_to_real(cmd.text, ports, folder)}\n"
                      f"__rc=$?; export -p > {shlex.quote(str(state))}; pwd > {shlex.quote(str(cwdf))}; exit $__rc\n")
            began = time.monotonic()
            try:
                r = subprocess.run(["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=base, cwd=folder, timeout=COMMAND_TIMEOUT, stdin=subprocess.DEVNULL)
                text, rc = r.stdout.decode("utf-8", "replace"), r.returncode
            except subprocess.TimeoutExpired:
                text, rc = f"(docs_examples: timed out after {COMMAND_TIMEOUT} s)\n", 124
            shells[cmd.shell] = (state, cwdf, rc)
            if VERBOSE:
                print(f"{time.monotonic() - began:6.1f} s  {folder.parent.name}/{folder.name}: {cmd.text[:100]}",
                      file=sys.stderr)
            results.append(norm(text.removesuffix("\n")).split("\n") if text.strip() else [])
        out[block.start] = results
    return out


def render(text: str, blocks: list[Block], outputs: dict[int, list[list[str]]]) -> str:
    lines = text.split("\n")
    for block in sorted(blocks, key=lambda b: -b.start):
        if block.session is None:
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


def regenerate_pages(pages: list[Page], *, jobs: int = 3, only: set[str] | None = None) -> dict[Path, str]:
    """Every page's text with the output of its selected sessions' blocks replaced by a fresh run."""
    path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    missing = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if missing:
        raise SystemExit(f"the docs' examples need {', '.join(missing)} on PATH (apt-get install jq sqlite3 "
                         "unzip; pip install -e '.[test]' for wacz and warcio)")
    parsed = {page.path: parse(page.text, page.name) for page in pages}
    given = {page.path: files(page.text, page.name) for page in pages}
    sessions: dict[tuple[Page, str], list[Block]] = {}
    for page in pages:
        for b in parsed[page.path]:
            if b.session is not None and _selected(page, b.session, only):
                sessions.setdefault((page, b.session), []).append(b)
    if only is not None:
        unknown = sorted(o for o in only if not any(_selected(page, name, {o}) for page, name in sessions))
        if unknown:
            raise SystemExit(f"no session named {', '.join(unknown)} in {', '.join(p.name for p in pages)}")
    if not sessions:
        return {page.path: page.text for page in pages}
    work = Path(tempfile.mkdtemp(prefix="g6-docs-"))
    outputs: dict[Path, dict[int, list[list[str]]]] = {page.path: {} for page in pages}
    try:
        with servers(work) as srv, concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            futures = {pool.submit(run_session, name, bs, work / "pages" / page.slug / name, srv,
                                   given[page.path]): page for (page, name), bs in sessions.items()}
            for f, page in futures.items():
                outputs[page.path].update(f.result())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {page.path: render(page.text, [b for b in parsed[page.path] if b.start in outputs[page.path]],
                              outputs[page.path]) for page in pages}


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
                print(f"{page.name}:{b.start + 1}: {len(b.commands)} command(s): {what}")
        return 0
    new = regenerate_pages(pages, jobs=args.jobs, only=set(args.session) if args.session else None)
    changed = [page for page in pages if new[page.path] != page.text]
    if args.check:
        for page in changed:
            sys.stdout.writelines(difflib.unified_diff(page.text.splitlines(True), new[page.path].splitlines(True),
                                                       f"{page.name} (as written)", f"{page.name} (as run)"))
        return 1 if changed else 0
    for page in changed:
        page.path.write_text(new[page.path], encoding="utf-8")
        print(f"rewrote {page.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
