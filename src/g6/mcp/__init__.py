"""``g6 mcp``: the evidence home as an MCP server for agents.

``server`` builds and runs the server (``build_server``, ``serve``); ``gate`` decides which ops run
(``G6_MCP_SENSITIVE``) and shapes every reply; ``context`` holds what the tools share (``ToolContext``,
``ToolSet``). The tools, one function each: ``tools_fetch`` (``sources``, ``fetch``, ``search``),
``tools_elastic`` (``es_*``), ``tools_cite`` (``cite``, ``recheck``), ``tools_ledger`` (``receipt_show``,
``ledger_verify``, ``verify_proof``) and ``invoke`` (``g6_invoke`` and its skills); ``wire`` passes stdin and
stdout through pipes of its own and ``stop`` counts the stop signals from the command's start."""
