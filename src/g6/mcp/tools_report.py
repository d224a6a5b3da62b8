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
                        "found citations, signed. Gated: runs only when the server is started with "
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
                     "Also write the signed result to this file on the server."))] = None,
                 base: Annotated[str | None, Field(description=(
                     "The http(s) URL the report's relative links resolve on (its own address); without it a "
                     "relative link is a citation that cannot be read."))] = None) -> dict[str, Any]:
    import hashlib
    import json

    from g6.report.run import CheckInputs, load_report, run_check

    if not isinstance(receipts_only, bool):
        raise InputError("receipts_only is true or false")
    if output is not None and (Path(output).is_dir() or not Path(output).parent.is_dir()):
        raise InputError(f"output {output[:200]} is a folder or in a folder that does not exist")
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
    inputs = CheckInputs(load_report(data, format, path.name, base), path.name,
                         "sha256:" + hashlib.sha256(data).hexdigest(), len(data), receipts_only, run_id=run_id,
                         documents=mapped)
    with ctx.home() as ev:
        result, _ = run_check(ev, inputs, client=lambda: ctx.client(ctx.policy()), sources=ctx.settings.sources())
    if output is not None:
        try:
            Path(output).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        except OSError as e:
            raise InputError(f"cannot write the result to {output[:200]}: {e.strerror or e}") from None
    return untrusted({"code": "G6_E_REPORT_CHECKED", **result})
