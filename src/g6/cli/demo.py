"""``g6 demo``: a local fixture site fetched, kept, receipted and verified; ``--serve`` serves the site."""

# Imports: g6.demo (the fixture site and the demo run) and shlex only inside the command, so `g6 --help` does
# not load them.
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from g6.cli.app import EXIT_OK, Ctx, cli, emit_json, fail, finish, home_option_path, info, pass_ctx
from g6.cli.options import json_option
from g6.cli.words import counted


@cli.command("demo", short_help="Fetch, keep, receipt and verify a local fixture site.")
@click.option("--home", "demo_home", type=str, default=None,
              help="Evidence home for the demo (as `g6 --home DIR demo`); default: a new temporary folder.")
@json_option("demo.v1", help="Print what the demo did and each verdict (pages, ledger, bundle) as JSON")
@click.option("--serve", is_flag=True,
              help="Do not run the demo: serve its site (the README's examples' pages) on 127.0.0.1 and "
                   "127.0.0.2 until Ctrl-C or SIGTERM (`kill PID`, `kill %1` for a job), and print the "
                   "settings to export.")
@click.option("--port", type=click.IntRange(0, 65535), default=8421, show_default=True,
              help="With --serve: the port on both addresses (0: a free one).")
@click.option("--site-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="With --serve: the folder the pages are served from, read again on every request (edit "
                   "them to change the site); filled with the demo's pages when they are missing. "
                   "Default: a new temporary folder.")
@click.option("--recorded", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="With --serve: a checkout's fixtures/http folder, to serve the recorded arXiv, OAI-PMH, "
                   "OpenAlex and Semantic Scholar replies on the same port.")
@pass_ctx
def demo_cmd(c: Ctx, as_json: bool, demo_home: str | None, serve: bool, port: int, site_dir: Path | None,
             recorded: Path | None) -> None:
    """Fetch a local fixture site on loopback, keep and receipt every read, verify the ledger.

    Uses --home (before or after `demo`) when given, else a new temporary evidence home (never ~/.g6).
    With --serve, serves the site instead, for the README's examples.
    """
    from g6.demo.run import run_demo

    if serve:
        _serve(port, site_dir, recorded)
    home = c.home_override if demo_home is None else home_option_path(demo_home)
    run = run_demo(home)
    if as_json:
        emit_json({"home": str(run.home), "site": run.site, "ok": run.ok,
                   "results": [{"path": p, "expected": want, "as_expected": r.outcome.value == want, **r.to_json()}
                               for p, want, r in run.results],
                   "verify": run.verify.to_json(), "bundle_path": str(run.bundle_path),
                   "bundle": run.bundle.to_json()})
    else:
        info(f"evidence home: {run.home}")
        info(f"fixture site:  {run.site} (loopback, allowed for the demo only)")
        info("each read: ok when its outcome is the one the demo expects of that page (a page robots.txt forbids, "
             "a missing page: a failed read, as expected), !! when not; the outcome, its code, bytes, receipt id")
        for path, want, r in run.results:
            mark = "ok " if r.outcome.value == want else "!! "
            click.echo(f"{mark}{path:<15} {r.outcome.value:<18} {r.code:<40} {r.byte_count:>6} B  {r.receipt_id}")
        v = run.verify.to_json()
        checks = ", ".join(f"{k} {'ok' if x['ok'] else 'FAILED'} ({x['checked']})" for k, x in v["checks"].items())
        click.echo(f"ledger verify: {'ok' if run.verify.ok else 'FAILED'}: {checks}")
        b = run.bundle
        click.echo(f"bundle verify: {'ok' if b.ok else 'FAILED'}: {run.bundle_path.name}, "
                   f"{counted(len(b.citations), 'citation')}, checks "
                   + ", ".join(f"{x.check} {'ok' if x.ok else 'FAILED'}" for x in b.bundle_checks))
        click.echo(try_line(run.home, run.bundle_path), err=True)
    finish(run.ok)


def try_line(home: Path, bundle: Path) -> str:
    """What to run next, pasteable into a POSIX shell: the bundle verified as a grader does, pinning the
    checkpoint verifier key (the one key every verify command's --key takes, named as `g6 keys show` names it)."""
    import shlex

    g6, h, b = this_g6(), shlex.quote(str(home)), shlex.quote(str(bundle))
    return (f"try: {g6} --home {h} ledger list; {g6} --home {h} bundle verify {b} "
            f"--key \"$({g6} --home {h} keys show --json | jq -r {PINNED_FIELD})\"")


def this_g6() -> str:
    """This g6 as the shell it was started from can run it again: ``g6`` when the PATH finds this very
    program, else the path it was started by (``.venv/bin/g6`` in a venv not activated: a bare ``g6`` would
    be "command not found"), else this Python with ``-m g6``."""
    import shlex
    import shutil

    started = sys.argv[0]
    if os.path.basename(started) == "g6" and os.path.isfile(started):
        found = shutil.which("g6")
        if found is not None and os.path.samefile(found, started):
            return "g6"
        return shlex.quote(os.path.abspath(started))
    return f"{shlex.quote(sys.executable)} -m g6"


# the JSON field of `g6 keys show --json` a grader pins with --key (see docs/commands/keys.md)
PINNED_FIELD = ".signing.checkpoint_verifier_key"


def _serve(port: int, site_dir: Path | None, recorded: Path | None) -> NoReturn:
    """``g6 demo --serve``: the demo's site on loopback until SIGINT (Ctrl-C) or SIGTERM (``kill PID``), then
    exit 0. Both are handled from before the site starts, whatever the parent left them at: a SIGINT
    inherited as ignored (a CI runner, a shell's ``&``) would leave ``kill -INT`` no way to stop it, and
    SIGTERM's default would kill it (exit -15) instead of stopping it."""
    import shlex

    from g6.demo.run import ServedSite

    class Stop(Exception):
        """Raised by the first signal, out of the wait below (or out of the start, if it comes then)."""

    asked: list[int] = []

    def stop(signum: int, frame: object) -> None:
        if not asked:  # once: a second signal while the site stops is not a second exception
            asked.append(signum)
            raise Stop

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    site = ServedSite(port=port, site_dir=site_dir, recorded=recorded)
    try:
        try:
            site.start()
        except OSError as e:
            fail(f"cannot serve the demo site on port {port}: {e.strerror or e}")
        click.echo(f"serving the demo site on {' and '.join(site.urls())} (pages read from {site.site_dir} "
                   f"on every request); Ctrl-C stops it, or `kill {os.getpid()}` (its PID) when it runs in the "
                   "background", err=True)
        click.echo("export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in site.exports().items()))
        while True:
            time.sleep(3600)
    except Stop:
        pass
    finally:
        site.stop()
    sys.exit(EXIT_OK)
