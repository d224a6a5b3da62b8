"""The ``g6`` command: :data:`cli` (the root click group) and :func:`main` (the console script).

:mod:`g6.cli.app` holds what every command shares, :mod:`g6.cli.options` the shared options; each other
module is one command group and registers its commands on :data:`cli` when imported, as below.
"""

from g6.cli import (  # noqa: F401 (registers)
    blob,
    blob_redact,
    bundle,
    cite,
    demo,
    es,
    export,
    fetch,
    keys,
    ledger,
    mcp,
    monitor,
    receipt,
    report,
    search,
    serve,
)
from g6.cli.app import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, REPORT_AT, cli, main

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "REPORT_AT", "cli", "main"]
