"""``report_check``: a research report's citations checked against the bytes, as ``g6 report check --json``
answers (the signed result); no judge over MCP (an agent may not have the server run programs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from g6.errors import InputError
from g6.mcp.context import ToolContext, ToolSet, untrusted

TOOLS = ToolSet()
MAX_REPORT = 256 * 1024 * 1024


@TOOLS.tool(title="Check a report",
            description="Check every citation of a report file on the server against the bytes: each rests on a "
                        "receipt in the home (the one the report pins, else the newest ok read of its URL) or a "
                        "fetch now; one verdict each (quote_found, quote_not_found, no_quote, source_failed, "
                        "redirected_elsewhere) with its reason and receipt, the figures, and the manifest of the "
                        "found citations, signed. `output` is a file name, not a path: the result is also "
                        "written, whole, to $G6_HOME/knowledge/reports/results/<output> (the reply's output_path), "
                        "never anywhere else. Gated: runs only when the server is started with "
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
                     "relative link is a citation that cannot be read."))] = None) -> dict[str, Any]:
    import hashlib
    import json

    from g6.report.run import CheckInputs, load_report, run_check

    if not isinstance(receipts_only, bool):
        raise InputError("receipts_only is true or false")
    target = _output_path(ctx, output) if output is not None else None  # refused before anything is read
    path = Path(report)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_REPORT + 1)
    except OSError as e:
        raise InputError(f"cannot read the report {report[:200]}: {e.strerror or e}") from None
    if len(data) > MAX_REPORT:
        raise InputError(f"the report {report[:200]} is over {MAX_REPORT:,} bytes")
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
    inputs = CheckInputs(load_report(data, format, name, base), name,
                         "sha256:" + hashlib.sha256(data).hexdigest(), len(data), receipts_only, run_id=run_id,
                         documents=mapped)
    with ctx.home() as ev:
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
