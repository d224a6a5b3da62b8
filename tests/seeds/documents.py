"""The three source documents (copies in ./documents) and the examples they hold.

The pages were copied with their line breaks collapsed, so a Python block is kept here with its
lines restored (``examples/``) and checked to be the document's block word for word.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DOCS = HERE / "documents"
FETCHER = DOCS / "g6-knowledge-fetcher.SKILL.txt"
ELASTIC = DOCS / "g6-ctx-elastic.SKILL.txt"
RUNX = DOCS / "runx-web-fetch.SKILL.txt"
SKILL_OF = {FETCHER.name: "knowledge_fetcher", ELASTIC.name: "ctx_elastic"}
PYTHON_EXAMPLES = {FETCHER.name: HERE / "examples" / "knowledge_fetcher_blocked.py",
                   ELASTIC.name: HERE / "examples" / "ctx_elastic_field_not_in_mapping.py"}


@dataclass(frozen=True)
class Example:
    document: str
    skill: str
    op: str
    args: dict[str, Any]

    @property
    def id(self) -> str:
        return f"{self.skill}.{self.op}:{json.dumps(self.args, sort_keys=True)[:40]}"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def g6_examples(path: Path) -> list[Example]:
    """Every ```g6-example op=OP {json}``` block of a document."""
    s = text(path)
    out = []
    for m in re.finditer(r"```g6-example op=(\w+)\s*", s):
        args, _ = json.JSONDecoder().raw_decode(s, m.end())
        out.append(Example(path.name, SKILL_OF[path.name], m.group(1), args))
    return out


def inline_invocations(path: Path) -> list[Example]:
    """Every ``g6_invoke("skill", "op", {json})`` written inline in a document's prose."""
    s = text(path)
    out = []
    for m in re.finditer(r'g6_invoke\("(\w+)", "(\w+)", ', s):
        try:
            args, _ = json.JSONDecoder().raw_decode(s, m.end())
        except json.JSONDecodeError:
            continue  # runx's `{"url", "allowlist", ...}`: a list of input names, not a call
        out.append(Example(path.name, m.group(1), m.group(2), args))
    return out


def python_blocks(path: Path) -> list[str]:
    return [m.group(1) for m in re.finditer(r"```python (.*?)```", text(path), re.S)]


def words(code: str) -> str:
    return " ".join(code.split())


def codes_named(path: Path) -> set[str]:
    """Every code a document names: whole ``G6_E_…`` words and ``_SUFFIX`` shorthands of the one before."""
    s = text(path)
    out: set[str] = set()
    last_family = ""
    for m in re.finditer(r"`(G6_E_[A-Z_]+|_[A-Z_]+)`", s):
        tok = m.group(1)
        if tok.startswith("G6_E_"):
            if tok.endswith("_"):
                continue  # "G6_E_KNOWLEDGE_FETCH_ and the outcome": the family, spelled out below
            out.add(tok)
            if tok.startswith("G6_E_KNOWLEDGE_ELASTIC_"):
                last_family = "G6_E_KNOWLEDGE_ELASTIC"
        elif last_family:
            out.add(last_family + tok)
    if "`G6_E_KNOWLEDGE_FETCH_` and the outcome" in s:
        failures = s[s.index("Every failure is"):s.index("Only a source's own explicit empty")]
        for word in re.findall(r"`([a-z_]+)`", failures):
            out.add(f"G6_E_KNOWLEDGE_FETCH_{word.upper()}")
    return out
