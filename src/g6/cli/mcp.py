"""``g6 mcp``: the g6 ops as MCP tools over stdio."""

# Imports: the MCP server (and the optional mcp package under it) only inside the command, so `g6 --help`
# does not load it and a g6 without the mcp extra still runs every other command.
from __future__ import annotations

from g6.cli.app import Ctx, cli, fail, pass_ctx
from g6.errors import G6Error


@cli.command("mcp", short_help="Serve the g6 ops as MCP tools over stdio.")
@pass_ctx
def mcp_cmd(c: Ctx) -> None:
    """Serve the g6 ops as MCP tools over stdio. Sensitive ops run only if G6_MCP_SENSITIVE lists them."""
    from g6.mcp.stop import installed

    # counted since the console script started (or from now): a stop during the seconds of loading ends it, exit 0
    stops = installed()
    try:
        from g6.mcp.server import allowed_ops, serve
    except ImportError as e:  # pragma: no cover - the optional extra is missing
        missing = f"the package {e.name!r} is not installed" if e.name else str(e)
        fail(f"the MCP server needs the mcp extra, and {missing}: pip install 'g6-evidence[mcp]'")
    try:
        allowed_ops(c.settings.values.get("G6_MCP_SENSITIVE"))
    except G6Error as e:
        fail(str(e))
    serve(c.settings, stops)
