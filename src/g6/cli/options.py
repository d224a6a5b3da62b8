"""Options several commands share: ``--json`` (:func:`json_option`, which knows the schemas of what the
command prints) and ``-q/--quiet`` after a command (:func:`quiet_option`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from g6.cli.app import Ctx
from g6.cli.words import counted

_F = TypeVar("_F", bound=Callable[..., Any])


def schema_file(name: str) -> str:
    """Where the schema ``name`` (``ledger-verify.v1``) is, as a help text names it."""
    return f"schemas/{name}.schema.json"


def _note_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """Tell the context the command runs under --json: then every way it can fail (``g6.cli.app.end``)
    prints the refusal object (schemas/refusal.v1) on stdout too. One mechanism for every command."""
    obj = ctx.find_object(Ctx)
    if value and obj is not None:
        obj.as_json = True
    return value


class JsonOption(click.Option):
    """``--json``, with the schemas of what the command prints under it (one per shape it can print). Eager, so
    that a failure while the rest of the command line is read (a bad value, a missing argument) is JSON too."""

    def __init__(self, *args: Any, schemas: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, is_eager=True, callback=_note_json, **kwargs)
        self.schemas = schemas


def json_option(*schemas: str, help: str = "Print the result as JSON") -> Callable[[_F], _F]:
    """``--json`` (the ``as_json`` flag): print the result as JSON, as ``schemas`` describe it (names in
    schemas/, e.g. ``"ledger-verify.v1"``; one per shape the command can print, the usual one first).

    ``help`` says what is printed, without a final full stop. Each ``{}`` in it is filled with the next
    schema's file, in order (to say which shape is which); without any, the files are named at the end in
    parentheses. The schemas are kept on the option: :func:`json_schemas` reads them back from a command.
    """
    if not schemas:
        raise TypeError("json_option: name the schema of what --json prints (one or more)")
    files = [schema_file(s) for s in schemas]
    slots = help.count("{}")
    if slots not in (0, len(files)):
        raise TypeError(f"json_option: {slots} {{}} in the help for {counted(len(files), 'schema')}")
    text = help.format(*files) if slots else f"{help} ({'; '.join(files)})"
    return click.option("--json", "as_json", is_flag=True, cls=JsonOption, schemas=schemas, help=f"{text}.")


def json_schemas(cmd: click.Command) -> tuple[str, ...]:
    """The schemas a command's ``--json`` declares (through :func:`json_option`); () for a command without."""
    return next((p.schemas for p in cmd.params if isinstance(p, JsonOption)), ())


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    obj = ctx.find_object(Ctx)
    if value and obj is not None:
        obj.quiet = True


def quiet_option(f: _F) -> _F:
    """``-q/--quiet`` after a command too (``g6 ledger verify -q``), as ``g6 -q ledger verify``."""
    return click.option("-q", "--quiet", is_flag=True, expose_value=False, callback=_set_quiet,
                        help="No progress bar and no notes on stderr; errors and warnings still shown.")(f)


class RenderMode(click.Choice):
    """``--render``'s mode. ``g6 fetch --render URL`` gives the URL as the mode (the option takes a value, and
    ``--render`` alone means ``always`` only where no value follows it): said in those words, not as a bad choice."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value not in self.choices and ("://" in value or value.startswith("www.")):
            self.fail(f"{value[:80]!r} is a URL, not a mode: --render takes always, auto or off; write "
                      f"`g6 fetch URL --render`, `--render always URL` or `--render=always`", param, ctx)
        return super().convert(value, param, ctx)
