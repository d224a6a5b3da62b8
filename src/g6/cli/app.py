"""The ``g6`` command: thin click commands over the library.

Results go to stdout (``--json`` for machines), diagnostics to stderr. Exit codes: 0 ok,
1 a check failed or a fetch did not succeed, 2 usage or input error, 70 an internal error (a bug:
one line saying where to report it; the traceback only under ``g6 --debug``).

This module is the machinery every command shares: the root group and its error handling, the
context (:class:`Ctx`: settings, the evidence home), progress bars and ``--quiet``, the ``g6:`` lines,
output path checks, and the few helpers several command groups use. The commands live in one module
per group (``g6.cli.keys``, ``g6.cli.ledger``…), each registering itself on :data:`cli`.
"""

# Imports: what g6.config loads anyway (the store, ledger and adapters) is imported here at the top;
# the app layers (g6.prove, g6.export, g6.compat, g6.fetch…) only inside the function that uses them,
# so that `g6 --help` and every command start without loading what they do not run.
from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import click

from g6 import __version__
from g6.adapters.net.redact import redact_text
from g6.config import Settings, load_settings
from g6.errors import ConfigError, G6Error, HomeError, InputError, LedgerError, StoreDiskFull
from g6.ledger import VerifyKey
from g6.ledger.note import parse_verifier_key
from g6.store.diskfull import is_disk_full

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERNAL = 70  # EX_SOFTWARE (sysexits.h): a bug in g6, not in what the user gave it
REPORT_AT = "the g6-evidence issue tracker (with the command and its `g6 --debug` output)"


def _obj() -> Ctx | None:
    ctx = click.get_current_context(silent=True)
    return ctx.find_object(Ctx) if ctx is not None else None


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False))
    obj = _obj()
    if obj is not None:
        obj.json_printed = True  # the command's one JSON document is out: a failure after it adds no second


def failure_json(message: str, exit_code: int, error_code: str, secrets: Any = ()) -> dict[str, Any]:
    """What a command given --json prints on stdout when it fails (schemas/refusal.v1): ``rejected`` for what
    the user gave (exit 2), ``failed`` for what went wrong on the way (exit 1: a backend down, a full disk…)."""
    return {"outcome": "rejected" if exit_code == EXIT_USAGE else "failed", "code": error_code,
            "status": "blocked-escalated", "message": redact_text(message, secrets) or error_code}


def end(obj: Ctx | None, message: str, exit_code: int, error_code: str | None = None) -> NoReturn:
    """Every failure of a command ends here: the ``g6:`` line on stderr and the exit code; under --json also
    the refusal object on stdout (unless the command printed its own JSON already), and the code on the line.

    ``error_code`` defaults to the code of the typed error being handled (``fail(str(e))`` in an ``except``
    block), else to the exit code's generic one."""
    if error_code is None:
        handled = sys.exc_info()[1]
        error_code = handled.code if isinstance(handled, G6Error) else \
            (InputError.code if exit_code == EXIT_USAGE else "G6_E_FAILED")
    if obj is not None and obj.as_json:
        secrets = obj._settings.secret_values() if obj._settings is not None else ()
        message = redact_text(one_line(message), secrets) or error_code  # the same words on both streams
        if not obj.json_printed:
            obj.json_printed = True
            emit_json(failure_json(message, exit_code, error_code))
        if error_code not in message:
            message = f"{message} [{error_code}]"
    click.echo(f"g6: {message}", err=True)
    sys.exit(exit_code)


def fail(message: str, code: int = EXIT_USAGE, *, error: str | None = None) -> NoReturn:
    """End the command with ``message`` and exit ``code``; ``error`` is the G6_E_* code under --json (default:
    the typed error being handled). See :func:`end`."""
    end(_obj(), message, code, error)


def fail_on(e: G6Error) -> NoReturn:
    """A library error ends the command: exit 2 when it is about what the user gave (InputError), else 1."""
    fail(str(e), EXIT_USAGE if isinstance(e, InputError) else EXIT_FAILED)


def finish(ok: bool) -> NoReturn:
    """The command's end: exit 0 when everything it checked or fetched held, else 1."""
    sys.exit(EXIT_OK if ok else EXIT_FAILED)


def check_home(path: Path, label: str) -> None:
    """A home must be a readable folder, or not exist yet under a folder (writing commands create it)."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return
        if probe.is_symlink():
            fail(f"{label} {path} is a dangling symbolic link")
        probe = probe.parent
    if not probe.is_dir():
        fail(f"{label} {path} is not a folder" + (f" ({probe} is a file)" if probe != path else ""))
    if not os.access(probe, os.R_OK | os.X_OK):
        fail(f"{label} {path} is not readable" + (f" ({probe} is not)" if probe != path else ""))


def home_option_path(home: str) -> Path:
    """The folder a ``--home`` option names (``g6 --home DIR``, ``g6 demo --home DIR``), checked."""
    if not home.strip():
        fail("--home is empty: give the evidence home's folder")
    path = Path(home).expanduser()
    check_home(path, "--home")
    return path


def check_out(path: Path, flag: str) -> None:
    """An output path must name a file in a folder that exists: said before any work is done."""
    if path.is_dir():
        fail(f"{flag} {path} is a folder; give a file name")
    if not path.parent.is_dir():
        fail(f"{flag} {path}: {path.parent} is a file, not a folder" if path.parent.exists() else
             f"{flag} {path}: folder {path.parent} does not exist")


def write_out(path: Path, text: str, flag: str) -> None:
    from g6.prove.proofs import write_note  # atomic: a temporary file beside it, then a rename

    try:
        write_note(path, text)
    except OSError as e:
        fail(f"cannot write {flag} {path}: {e.strerror or e}", EXIT_FAILED)
    info(f"wrote {path}")


def check_html_out(out: Path | None) -> None:
    """Refuse an HTML output path that cannot be written before any work is done."""
    if out is None:
        return
    if out.is_dir():
        fail(f"--html {out}: is a folder, not a file")
    check_out(out, "--html")


def write_html(out: Path, page: str) -> None:
    from g6.export.html_report import write_html as write_page

    try:
        write_page(out, page)
    except OSError as e:
        fail(f"--html {out}: cannot write: {e.strerror or e}")
    info(f"report: {out}")


# -- progress and --quiet ------------------------------------------------------------------
def _quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_object(Ctx) if ctx is not None else None
    return bool(obj is not None and obj.quiet)


def info(message: str) -> None:
    """A diagnostic that is neither an error nor a warning (what was written, receipt ids, run ids):
    on stderr, unless --quiet."""
    if not _quiet():
        click.echo(message, err=True)


class _Bar:
    """A click progress bar on stderr with counts, percent, ETA and a rate in ``unit``/s; a library
    loop calls it as ``progress(done, total)``. Drawn from the first call (a command that ends before
    its loop starts draws nothing), at most ten times a second, and always in its final state."""

    REDRAW = 0.1  # seconds: a loop over small items must not spend its time writing to the terminal

    def __init__(self, label: str, unit: str) -> None:
        self.label, self.unit = label, unit
        self._bar: Any = None
        self._start = self._drawn = 0.0
        self._stale = False  # a step not drawn yet (within REDRAW of the last drawing)

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self._bar is None:
            self._start = now
            self._bar = click.progressbar(length=max(total, done), label=self.label, file=sys.stderr,
                                          show_pos=True, show_percent=True, item_show_func=self._rate)
        bar = self._bar
        bar.length = max(total, done)
        if done >= bar.pos:
            bar.make_step(done - bar.pos)
        else:  # a check run again from the start (a writer came by): the bar goes back with it
            bar.pos, bar.finished = done, False
        self._stale = True
        if now - self._drawn >= self.REDRAW or done >= bar.length:
            self._drawn, self._stale = now, False
            bar.render_progress()

    def _rate(self, _item: object) -> str:
        elapsed = max(time.monotonic() - self._start, 1e-3)
        return f"{self._bar.pos / elapsed:,.0f} {self.unit}/s"

    def clear(self) -> None:
        """Take the bar off its line, so a result line written to the same terminal starts clean; the
        next call draws it again below."""
        if self._bar is not None:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._drawn = 0.0  # drawn again at the next step, whatever REDRAW says

    def close(self) -> None:
        if self._bar is not None:
            if self._stale:
                self._bar.render_progress()
            self._bar.render_finish()  # the newline after the bar, and the cursor shown again
            self._bar = None


@contextlib.contextmanager
def progress(label: str, unit: str) -> Iterator[_Bar | None]:
    """A progress callback for a library loop when stderr is a terminal and --quiet was not given,
    else None (the library then skips even counting its total). The bar is finished on the way out,
    before any result is printed, whether the block ends or fails."""
    if _quiet() or not sys.stderr.isatty():
        yield None
        return
    bar = _Bar(label, unit)
    try:
        yield bar
    finally:
        bar.close()


class Ctx:
    """What every command is handed (``pass_ctx``): the settings, read once, and the evidence home."""

    def __init__(self, home: Path | None, quiet: bool = False) -> None:
        self.home_override = home
        self._settings: Settings | None = None
        self.quiet = quiet
        self.as_json = False  # the running command was given --json (set by the option: g6.cli.options)
        self.json_printed = False  # its JSON document is on stdout already

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            if self.home_override is None and os.environ.get("G6_HOME"):
                check_home(Path(os.environ["G6_HOME"]).expanduser(), "G6_HOME")  # before its .env is read
            try:
                s = load_settings(home=self.home_override)
            except G6Error as e:
                fail(str(e))
            self._settings = s
        return self._settings

    def evidence(self, *, need_key: bool = False, write: bool = False) -> Any:
        """The evidence home. Commands that only read open it read-only (nothing is created); those
        that write (``write`` or ``need_key``) create it, and say so on stderr."""
        try:
            return self.settings.open_home(write=write, need_key=need_key, say=info)
        except OSError as e:  # a read-only mount, a folder we may not write, a full disk
            home = self.settings.home
            if is_disk_full(e):
                fail(f"disk full (or file-size limit reached) while setting up {home} [{StoreDiskFull.code}: {e}]",
                     EXIT_FAILED, error=StoreDiskFull.code)
            fail(f"cannot write the evidence home {home}: {e}", error=HomeError.code)
        except ConfigError as e:  # a bad G6_BLOB_COMPRESSION, a malformed G6_LEDGER_URL / G6_BLOB_URL: usage
            fail(str(e))

    def policy(self, allow: Sequence[str] = (), max_bytes: int | None = None) -> Any:
        """The checked client's policy (``--allow`` and ``--max-bytes`` over the settings); an impossible
        setting ends the command here, before anything is sent."""
        try:
            return self.settings.fetch_policy(allow, max_bytes)
        except ValueError as e:
            fail(f"bad fetch setting: {e}")

    def sources(self) -> Any:
        """The paper sources the settings configure."""
        try:
            return self.settings.sources()
        except G6Error as e:
            fail(str(e))


pass_ctx = click.make_pass_decorator(Ctx)


def one_line(text: str) -> str:
    return " ".join(text.split())


def shown(text: str) -> str:
    """Untrusted text (a page's words, a manifest's quote or URL, a verdict quoting bundle content) made safe
    for a terminal line: control and other non-printable characters (ANSI escapes, newlines, bidi overrides)
    are shown escaped."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


# -- helpers of several command groups -------------------------------------------------------
def knowledge_reply(ev: Any, result: Any) -> dict[str, Any]:
    """The knowledge fetcher's reply (status word, http_status, documents' sources) for --json."""
    from g6.compat.knowledge_fetcher import page_result, search_result
    from g6.fetch.capture import SearchResult

    return (search_result if isinstance(result, SearchResult) else page_result)(ev, result).to_json()


def refusal_json(e: G6Error, secrets: Any = ()) -> dict[str, Any]:
    return {"outcome": "rejected", "code": e.code, "status": "blocked-escalated",
            "message": redact_text(str(e), secrets)}


def read_kept_notes(paths: Sequence[Path], errors: str) -> list[tuple[str, str]]:
    """(path, text) of each --checkpoint file: one that cannot be read is an input error (exit 2); what it
    holds, however malformed, is judged by the check (a failed verdict, exit 1). Read bounded (a note is
    small, whatever file is given) and decoded with ``errors`` ("surrogateescape" keeps bytes that are not
    UTF-8 for the note reader to refuse in its own words)."""
    from g6.ledger.note import MAX_NOTE

    notes = []
    for path in paths:
        try:
            with path.open("rb") as f:
                raw = f.read(MAX_NOTE + 1)
        except OSError as e:
            fail(f"cannot read --checkpoint {path}: {e.strerror or e}")
        notes.append((str(path), raw.decode("utf-8", errors=errors)))
    return notes


def read_tsa_roots(paths: Sequence[Path]) -> list[Any]:
    """The certificates of every ``--tsa-root`` file (PEM): one that cannot be read or holds none is a
    usage error (exit 2), in one line."""
    from g6.ledger.transparency.timestamp import load_roots

    limit = 1 << 20
    roots = []
    for path in paths:
        try:
            with Path(path).open("rb") as f:
                data = f.read(limit + 1)
        except OSError as e:
            fail(f"cannot read --tsa-root {path}: {e.strerror or e}")
        if len(data) > limit:
            fail(f"--tsa-root {path} is larger than {limit} bytes; it is not a root certificate")
        try:
            roots += load_roots(data)
        except ValueError as e:
            fail(f"bad --tsa-root {path}: not a PEM certificate ({str(e)[:120]})")
    return roots


def read_key(text: str) -> tuple[Any, str | None]:
    """A public key given as 'ed25519:<b64>', a C2SP verifier key, or a file holding either."""
    if not text.strip():  # often a `$(g6 keys show …)` run where there is no key: an auditor's empty folder
        raise InputError("the key is empty: give the log's verifier key as its publisher gives it (their `g6 keys "
                         "show` prints it), or a file holding it")
    p = Path(text)
    if "+" not in text and not text.startswith("ed25519:") and ("/" in text or p.suffix) and not p.exists():
        raise InputError(f"no key file at {text[:200]} (nor is it a key: a key reads ed25519:<base64>, or "
                         "<name>+<key id>+<base64 key> as `g6 keys show` prints a verifier key)")
    if len(text) < 4096 and p.is_file():
        try:
            text = p.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError:
            raise InputError(f"{p} is not a key file (not UTF-8 text)") from None
        except OSError as e:
            raise InputError(f"cannot read the key file {p}: {e.strerror or e}") from None
    if text.startswith("ed25519:"):
        return VerifyKey.from_text(text), None
    name, key = parse_verifier_key(text)
    return key, name


# -- the root group ----------------------------------------------------------------------------
def _internal_summary(e: BaseException, obj: Any) -> str:
    """``Type: message`` on one line, with URL passwords, secret parameters and the settings' secret values
    taken out: the line is meant to be pasted into a bug report."""
    secrets = obj._settings.secret_values() if isinstance(obj, Ctx) and obj._settings is not None else ()
    message = redact_text(one_line(str(e)), secrets)
    return f"{type(e).__name__}: {message}" if message else type(e).__name__


def _home_after_command(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """``g6 ledger verify --home DIR`` as ``g6 --home DIR ledger verify``: the same home, or a usage error
    when both are given and name different folders."""
    obj = ctx.find_object(Ctx)
    if value is None or obj is None:
        return
    path = home_option_path(value)
    if obj.home_override is not None and obj.home_override.resolve() != path.resolve():
        raise click.UsageError(f"--home given twice with different folders ({obj.home_override} and {path}): "
                               "give it once, before or after the command")
    if obj._settings is not None and obj.home_override is None:  # never silently the other home (fails closed)
        raise click.UsageError("--home after this command comes too late: give it before, `g6 --home DIR …`")
    obj.home_override = path


class _HomeCommand(click.Command):
    """A command that takes ``--home DIR`` after its name too, unless it has a ``--home`` of its own
    (``g6 demo``). One mechanism for every command: the groups below make their commands of this class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not any("--home" in p.opts for p in self.params):
            self.params.append(click.Option(["--home"], type=str, default=None, expose_value=False,
                                            is_eager=True, callback=_home_after_command,
                                            help="Evidence home, as `g6 --home DIR` before the command."))


class _SubGroup(click.Group):
    """``g6 ledger``, ``g6 keys``…: their commands take ``--home`` after their name too."""

    command_class = _HomeCommand


_SubGroup.group_class = _SubGroup

# `g6 --help` lists the commands by task, as `git --help` does; every command is in exactly one section
# (tests/cli/test_help_groups.py fails on a command left out). A name not registered is not shown.
COMMAND_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Start here", ("demo", "fetch", "cite", "recheck", "bundle", "report")),
    ("The ledger, its keys and proofs", ("ledger", "keys", "receipt", "manifest", "verify-proof")),
    ("The kept bodies and archives", ("blob", "export", "convert", "chunk")),
    ("Serving the evidence", ("serve", "mcp")),
    ("Other sources and logs", ("search", "sources", "es", "monitor")),
)


class _G6Group(click.Group):
    """The top group: whatever goes wrong becomes one ``g6:`` line on stderr and an exit code, never a
    traceback (unless ``--debug`` asks for it)."""

    command_class = _HomeCommand
    group_class = _SubGroup

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands in the sections of :data:`COMMAND_SECTIONS`; one not placed there (a bug the tests
        catch) is still listed, under "Other commands"."""
        commands = {n: c for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) and not c.hidden}
        if not commands:
            return
        placed = {n for _, names in COMMAND_SECTIONS for n in names}
        sections = [*COMMAND_SECTIONS, ("Other commands", tuple(n for n in commands if n not in placed))]
        width = max(len(n) for n in commands)
        limit = formatter.width - 6 - width
        for title, names in sections:
            # names padded to one width, so that the sections' descriptions line up as one column
            rows = [(n.ljust(width), commands[n].get_short_help_str(limit)) for n in names if n in commands]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, KeyboardInterrupt, BrokenPipeError):
            raise  # click's own (a closed pipe too, as in `g6 ledger list | head -1`): handled in main()
        except (InputError, ConfigError) as e:  # what the user gave (an argument, a setting, a URL) is wrong
            fail(str(e), EXIT_USAGE)
        except G6Error as e:
            fail(str(e), EXIT_FAILED)
        except sqlite3.DatabaseError as e:  # a ledger damaged past what the read paths check
            fail(f"ledger database error: {e}; run `g6 ledger verify`", EXIT_FAILED, error=LedgerError.code)
        except Exception as e:  # a bug: say so in one line, and where to report it
            line = f"internal error: {_internal_summary(e, ctx.obj)}; please report it at {REPORT_AT}"
            obj = ctx.obj if isinstance(ctx.obj, Ctx) else None
            if ctx.params.get("debug"):  # the traceback instead of the line; under --json stdout still gets the object
                traceback.print_exc()
                if obj is not None and obj.as_json and not obj.json_printed:
                    emit_json(failure_json(line, EXIT_INTERNAL, G6Error.code))
                sys.exit(EXIT_INTERNAL)
            end(obj, line, EXIT_INTERNAL, G6Error.code)

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `g6` or `g6 ledger`: the help, as click shows it
            e.show()
            sys.exit(e.exit_code)
        except click.UsageError as e:
            hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
            # a command line parsed as far as --json (a bad value, a missing argument) fails as JSON too
            end(e.ctx.find_object(Ctx) if e.ctx is not None else None, f"{one_line(e.format_message())}{hint}",
                e.exit_code, InputError.code)
        except click.ClickException as e:
            click.echo(f"g6: {one_line(e.format_message())}", err=True)
            sys.exit(e.exit_code)
        except click.Abort:  # Ctrl-C, or EOF at a prompt
            click.echo("g6: interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else EXIT_OK)  # an int is click's Exit code (e.g. after --help)


@click.group(cls=_G6Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=str, default=None,
              help="Evidence home (default: $G6_HOME or ~/.g6); its .env is read as for G6_HOME.")
@click.option("--debug", is_flag=True,
              help="On an internal error (exit 70) print the Python traceback instead of one line.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress bars and no notes on stderr (written files, receipt and run ids); errors and "
                   "warnings still shown. Progress is drawn only when stderr is a terminal.")
@click.version_option(__version__, prog_name="g6")
@click.pass_context
def cli(ctx: click.Context, home: str | None, debug: bool, quiet: bool = False) -> None:
    """g6-evidence: fetch, keep and prove what every read returned."""
    ctx.obj = Ctx(None if home is None else home_option_path(home), quiet)


def main() -> None:
    # trafilatura logs page-level chatter as warnings; our outcome already says what happened
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    import signal

    if hasattr(signal, "SIGXFSZ"):
        # past a file-size limit a write then fails with EFBIG (a typed "disk full" error), instead
        # of the signal killing the process in the middle of it
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    cli.main(prog_name="g6")
