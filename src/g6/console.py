"""The ``g6`` console script (and ``python -m g6``). Loading the commands' modules takes most of a second; a Ctrl-C
then ends as a Ctrl-C anywhere else in g6 does (``g6: interrupted`` on stderr, exit 130), never with a traceback.
This module must stay light: it is what runs before that loading."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from g6.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("g6: interrupted\n")
        sys.exit(130)
    run()
