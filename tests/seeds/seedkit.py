"""Helpers for the documents' tests: the environment of a ``g6 mcp`` server, and ``g6_invoke`` calls
over a real stdio MCP session (the SDK's own client)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio


def env_for(home: Path, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", **extra})
    return e


def invoke_all(env: dict[str, str], calls: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """``g6_invoke`` calls over a real stdio MCP session (the SDK's own client) against ``g6 mcp``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def main() -> list[dict[str, Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "g6", "mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out = []
            for skill, op, args in calls:
                res = await s.call_tool("g6_invoke", {"skill": skill, "op": op, "args": args})
                r = res.structured_content
                assert r is not None, res.content
                # refusals and failures come back as error results (runx's fetch_result: by its decision)
                failed = r["decision"] in ("policy_denied", "provider_error") if "decision" in r \
                    else r["status"] == "blocked-escalated"
                assert res.is_error is failed, res.content
                out.append(r)
            return out
    return anyio.run(main)
