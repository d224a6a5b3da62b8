"""Fetched text is data, never instructions: flag phrasing that tries to be instructions.

Flags are reported to the caller; nothing in g6 acts on fetched text. The patterns cover the
common prompt-injection shapes: "ignore previous instructions", role prompts, chat-template
tokens and tool-call lookalikes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ignore_instructions", re.compile(
        r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your)\b"
        r"[^.\n]{0,20}\b(instructions?|prompts?|rules|directions)\b", re.I)),
    ("new_instructions", re.compile(r"\b(new|updated|real)\s+(system\s+)?instructions\s*:", re.I)),
    ("role_prompt", re.compile(r"(^|\n)\s*(system|assistant|developer)\s*:\s*\S", re.I)),
    ("identity_override", re.compile(r"\byou are now\b|\bact as (an? )?(unrestricted|jailbroken)\b", re.I)),
    ("system_prompt_probe", re.compile(r"\b(reveal|print|show|repeat)\b[^.\n]{0,30}\bsystem prompt\b", re.I)),
    ("chat_template_token", re.compile(r"<\|(im_start|im_end|system|user|assistant|endoftext)\|>|\[/?INST\]",
                                       re.I)),
    ("tool_call_lookalike", re.compile(
        r"</?(tool_call|function_calls?|invoke|tool_use)\b|\"(tool|function)_?(name|call)\"\s*:", re.I)),
)


@dataclass(frozen=True, slots=True)
class InstructionFlag:
    kind: str
    start: int
    end: int
    excerpt: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "start": self.start, "end": self.end, "excerpt": self.excerpt}


def flag_instructions(text: str, *, limit: int = 50) -> tuple[InstructionFlag, ...]:
    flags: list[InstructionFlag] = []
    for kind, pat in _PATTERNS:
        for m in pat.finditer(text):
            flags.append(InstructionFlag(kind, m.start(), m.end(), text[m.start():m.end()][:120]))
            if len(flags) >= limit:
                return tuple(sorted(flags, key=lambda f: f.start))
    return tuple(sorted(flags, key=lambda f: f.start))
