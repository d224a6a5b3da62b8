"""``g6 serve``: the evidence home, read only, over HTTP (``g6.serve``), under uvicorn."""

# Imports: starlette, uvicorn and g6.serve only inside the command, so `g6 --help` does not load them.
from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

import click

from g6.cli.app import Ctx, cli, fail, info, pass_ctx


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 and ``localhost``: the addresses nobody else can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that ``--port 0`` can say which port it got before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        fail(f"cannot listen on {host} port {port}: {e.strerror or e}")
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def check_tiles(tiles: Path, origin: str) -> None:
    """``--tiles`` must be a folder, and the log published there this home's, not another's: served under
    this home's name, another log's checkpoint would mislead whoever audits it. A folder with no checkpoint
    yet is fine (its paths answer 404 until ``ledger publish`` writes one)."""
    from g6.ledger.note import Checkpoint, NoteError, parse_note
    from g6.store.folder_files import LinkRefused, NotAFile, read_head

    if not tiles.is_dir():
        fail(f"--tiles {tiles}: not a folder (give the folder `g6 ledger publish` wrote)")
    try:
        raw = read_head(str(tiles), "checkpoint", 1 << 20)  # as the server reads it: no link followed
    except (FileNotFoundError, NotAFile, LinkRefused):
        return
    except OSError as e:
        fail(f"--tiles {tiles}: cannot read its checkpoint: {e.strerror or e}")
    try:
        cp = Checkpoint.parse(parse_note(raw.decode("utf-8"))[0])
    except (NoteError, UnicodeDecodeError) as e:
        fail(f"--tiles {tiles}: its checkpoint is not a checkpoint ({e})")
    if cp.origin != origin:
        fail(f"--tiles {tiles} holds the log {cp.origin}, not this home's ({origin}): give the folder this "
             "home's `g6 ledger publish` wrote")


@cli.command("serve", short_help="Serve the evidence home read only over HTTP.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Loopback only unless --public is given.")
@click.option("--port", default=8426, show_default=True, type=click.IntRange(0, 65535),
              help="The port to listen on (0: any free port, printed on stderr).")
@click.option("--public", "public", is_flag=True,
              help="Allow listening on an address other people can reach (a warning is printed).")
@click.option("--tiles", "tiles", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="Also serve the log published to this folder (`g6 ledger publish DIR`) as C2SP tlog-tiles: "
                   "/checkpoint, /tile/<L>/<N>, /tile/entries/<N>.")
@click.option("--manifest", "manifests", multiple=True, type=click.Path(dir_okay=False),
              help="A citation manifest whose citations the pages highlight and whose verdicts they show "
                   "(repeatable; read at start).")
@pass_ctx
def serve_cmd(ctx: Ctx, host: str, port: int, public: bool, tiles: Path | None, manifests: tuple[str, ...]) -> None:
    """Serve the evidence home read only over HTTP: Memento (RFC 7089) TimeGate, TimeMaps and mementos
    under /web/, receipts and their proofs under /receipt/, the published tiles, a JSON API under /api/
    and pages for people. SIGINT (Ctrl-C) or SIGTERM (kill PID) stops it, exit 0."""
    import uvicorn

    from g6.serve import HomeReader, build_app
    from g6.serve.views import Manifests

    if host == "localhost":
        host = "127.0.0.1"  # one address, not whatever the resolver says localhost is today
    if not is_loopback_host(host):
        if not public:
            fail(f"--host {host} is not a loopback address: add --public to serve the home to other machines")
        click.echo(f"g6: warning: serving {ctx.settings.home} on {host}, reachable from other machines", err=True)
    settings = ctx.settings
    reader = HomeReader(settings)
    with reader.open() as ev:  # a home that cannot be opened is refused now, not on the first request
        origin = ev.ledger.origin
    if tiles is not None:
        check_tiles(tiles, origin)
    Manifests(manifests)  # so is a manifest that cannot be read (an InputError: exit 2, one line)
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    app = build_app(reader, manifests=manifests, verify_at_start=True, tiles_dir=tiles)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False))
    stop_on_signals(server)
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    info(f"g6: serving {settings.home} read only on http://{shown}:{bound}/ (Ctrl-C stops it, or "
         f"`kill {os.getpid()}` when it runs in the background)")
    server.run(sockets=[sock])


def stop_on_signals(server: Any) -> None:
    """SIGINT and SIGTERM stop ``server`` (a ``uvicorn.Server``) and the command ends with exit 0, whenever
    they come. uvicorn handles both only while it serves, then raises the signal again for the handlers it
    found: Python's own would make SIGINT a KeyboardInterrupt (exit 130) and leave SIGTERM to kill the
    process (exit -15), and one sent before it took over (just after the line above) would be lost if
    SIGINT was ignored (a CI runner or a shell's ``&`` starts it so) or kill it mid-start. These handlers,
    set before the line is printed, ask it to stop instead: it then shuts down once started, or at once."""
    import signal

    def stop(signum: int, frame: object) -> None:
        server.should_exit = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
