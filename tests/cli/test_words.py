"""Counts read as English: "1 citation", "2 citations", never "1 citations" or "citation(s)"."""

from __future__ import annotations

import re
from pathlib import Path

from g6.cli.words import counted

CLI = Path(__file__).resolve().parents[2] / "src" / "g6" / "cli"


def test_counted_takes_the_number_of_its_noun() -> None:
    assert [counted(n, "citation") for n in (0, 1, 2)] == ["0 citations", "1 citation", "2 citations"]
    assert counted(1, "entry", "entries") == "1 entry" and counted(3, "entry", "entries") == "3 entries"


def test_no_command_prints_a_count_beside_a_fixed_plural() -> None:
    """A number put straight before a plural noun in an f-string ("{n} citations") says "1 citations" when
    n is 1; each goes through counted(). The nouns are those the commands count."""
    nouns = r"(?:receipts|citations|files|blobs|entries|pages|tiles|checkpoints|trusted keys|URLs|responses|" \
            r"proofs|passages|records|requests|redirects|revisits|conversions|cosignatures|bundles)(?![=\w])"
    found = []
    for path in sorted(CLI.glob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\{[^{}]+\} (?:new |temp |full |metadata |inclusion |index )?" + nouns + r"\b",
                         line) or re.search(r"\"[^\"]*[a-z]\(s\)[^\"]*\"", line):
                found.append(f"{path.name}:{i}: {line.strip()}")
    assert found == [], "\n".join(found)
