"""The ``g6`` command (see :mod:`g6.cli.app`)."""

from g6.cli.app import EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, REPORT_AT, cli, keys, main

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "REPORT_AT", "cli", "keys", "main"]
