"""``report_check``: a research report's citations checked against the bytes, as ``g6 report check --json``
answers (the signed result); no judge over MCP (an agent may not have the server run programs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from g6.adapters.outcomes import BLOCKED
from g6.errors import InputError
from g6.mcp.context import ToolContext, ToolSet, untrusted

TOOLS = ToolSet()
MAX_REPORT = 256 * 1024 * 1024


@TOOLS.tool(title="Check a report",
            description="Check every citation of a report file on the server against the bytes: each rests on a "
                        "receipt in the home (the one the report pins, else the newest ok read of its URL) or a "
                        "fetch now; one verdict each (quote_found, quote_not_found, no_quote, source_failed, "
                        "redirected_elsewhere) with its reason and receipt, the figures, and the manifest of the "
                        "found citations, signed. With `replay` (an earlier signed result of the same report), each "
                        "citation rests on the receipt that result named. `output` is a file name, not a path: "
                        "the result is also written, whole, to $G6_HOME/knowledge/reports/results/<output> (the "
                        "reply's output_path), never anywhere else. Gated: runs only when the server is started with "
                        "G6_MCP_SENSITIVE listing report_check (or all); otherwise the call is refused with an "
                        "error result naming what to add, and nothing is sent.",
            open_world=True)
def report_check(ctx: ToolContext,
                 report: Annotated[str, Field(min_length=1, description=(
                     "Path of the report on the server's filesystem, absolute or relative to the server's working "
                     "directory."))],
                 format: Annotated[str | None, Field(description=(  # noqa: A002 - the CLI's --format
                     "The report's format; default: detected."))] = None,
                 receipts_only: Annotated[bool, Field(description=(
                     "Fetch nothing: every citation rests on a receipt already in the home."))] = False,
                 run_id: Annotated[str | None, Field(description=(
                     "Resume this run (as a previous reply's run_id gives it): no URL it read is read "
                     "again."))] = None,
                 documents: Annotated[dict[str, str] | None, Field(description=(
                     "document:N sources of the report mapped to a URL or a receipt id: {\"1\": \"https://…\"}."
                 ))] = None,
                 output: Annotated[str | None, Field(description=(
                     "Also write the signed result to this file name (letters, digits, '.', '_', '-', ending "
                     ".json; no folder) in the home's knowledge/reports/results/ folder on the server: never a "
                     "path, never elsewhere; a file of that name there is replaced whole."))] = None,
                 base: Annotated[str | None, Field(description=(
                     "The http(s) URL the report's relative links resolve on (its own address); without it a "
                     "relative link is a citation that cannot be read."))] = None,
                 replay: Annotated[str | None, Field(min_length=1, description=(
                     "Path on the server's filesystem of an earlier signed result of this same report (an "
                     "output_path, or a `g6 report check -o` file): each citation rests on the receipt that result "
                     "rested it on, so a page read again since changes nothing (g6 report check --replay). It must "
                     "verify with a key this server's home trusts and be a check of these very report bytes."
                 ))] = None) -> dict[str, Any]:
    import hashlib
    import json

    from g6.report.run import CheckInputs, load_report, run_check

    if not isinstance(receipts_only, bool):
        raise InputError("receipts_only is true or false")
    target = _output_path(ctx, output) if output is not None else None  # refused before anything is read
    path = Path(report)
    data = _read(report, "the report", MAX_REPORT)
    earlier = _earlier_result(replay) if replay is not None else None  # a bad one refused before the home opens
    mapped: dict[int, str] = {}
    for k, v in (documents or {}).items():
        if not str(k).isdigit() or not isinstance(v, str) or not v:
            raise InputError("documents maps a document number to a URL or a receipt id")
        mapped[int(k)] = v
    if base is not None:
        from g6.report.model import source_kind
        from g6.report.sources import Unusable, normalise_source

        got = normalise_source(base)
        if isinstance(got, Unusable) or source_kind(got.source) != "url":
            raise InputError(f"base {base[:80]!r} is not an http(s) URL")
    name = path.name.encode("utf-8", "backslashreplace").decode("utf-8")  # no lone surrogate in a signed result
    loaded, sha256 = load_report(data, format, name, base), "sha256:" + hashlib.sha256(data).hexdigest()
    with ctx.home() as ev:
        if earlier is not None:
            loaded, unverified = _replayed(ev, loaded, sha256, earlier)
            if unverified is not None:
                return unverified
        inputs = CheckInputs(loaded, name, sha256, len(data), receipts_only, run_id=run_id, documents=mapped)
        result, _ = run_check(ev, inputs, client=lambda: ctx.client(ctx.policy()), sources=ctx.settings.sources())
    written = {}
    if target is not None:
        from g6.report.outputs import write_output

        try:
            write_output(target, json.dumps(result, indent=2, ensure_ascii=False) + "\n", _elsewhere(ctx), "output")
        except OSError as e:
            raise InputError(f"cannot write the result to {target}: {e.strerror or e}") from None
        written["output_path"] = str(target)
    return untrusted({"code": "G6_E_REPORT_CHECKED", **result, **written})


def _read(path: str, what: str, limit: int) -> bytes:
    """A file the tool was given, bounded: one it cannot read, or a longer one, is an input error."""
    try:
        with Path(path).open("rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(f"cannot read {what} {path[:200]}: {e.strerror or e}") from None
    if len(data) > limit:
        raise InputError(f"{what} {path[:200]} is over {limit:,} bytes")
    return data


def _earlier_result(replay: str) -> dict[str, Any]:
    """``replay``'s result, read as ``g6 report check --replay`` reads it: not a result is an input error."""
    from g6.report.result import MAX_RESULT, load_result

    try:
        return load_result(_read(replay, "the replay result", MAX_RESULT))
    except InputError as e:
        raise InputError(f"replay {replay[:200]}: {e}") from None


def _replayed(ev: Any, report: Any, sha256: str, earlier: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    """``report`` pinned as ``earlier``'s check rested it (``g6.report.replay``, verified with the keys this home
    trusts, as the CLI verifies it). A result of other report bytes is an input error (``ReplayRefused``); one that
    does not verify is a failed check (the reply given back, an error result), as the CLI exits 1 on it."""
    from g6.errors import ReplayRefused, ReplayUnverified
    from g6.report.replay import pinned_by_home

    try:
        return pinned_by_home(ev, report, sha256, earlier)[0], None
    except ReplayRefused as e:  # the library's words name the CLI's option; here the argument is `replay`
        raise ReplayRefused(str(e).replace("--replay:", "replay:", 1)) from None
    except ReplayUnverified as e:
        return report, {"outcome": "failed", "code": e.code, "status": BLOCKED,
                        "message": str(e).replace("--replay:", "replay:", 1)}


def _elsewhere(ctx: ToolContext) -> tuple[Path, ...]:
    """The ledger file and blob folder the settings put outside the home: never written over either."""
    from g6.report.outputs import home_paths

    return home_paths(ctx.settings.home, ctx.settings.values)[1:]


def _output_path(ctx: ToolContext, name: str) -> Path:
    """Where ``output`` goes: the file ``name`` in the home's results folder, checked as the CLI checks an
    output (a file name only; never over what is not a regular file)."""
    from g6.report.outputs import check_output, mcp_output

    path = mcp_output(ctx.settings.home, name)
    check_output(path, _elsewhere(ctx), "output")
    return path
