"""``g6 mcp``: the evidence home as an MCP server for agents (``server``)."""
