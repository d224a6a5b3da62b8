"""A run file (``g6.runs.RunState``) reads back every line it wrote, whatever the verdict's text holds: a line
ends at a newline only (U+2028, U+0085 and friends inside a string are not line ends), and what orjson cannot
write (a lone surrogate, an integer past 64 bits) is written by json and read back the same."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from g6.runs import RunState


@dataclass(frozen=True)
class Item:
    key: str
    text: Any

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "text": self.text}


def state(path: Path) -> RunState:
    return RunState(path, decode=lambda d: Item(d["key"], d["text"]), key=lambda i: i.key)


def test_every_line_reads_back_whatever_its_text_holds(tmp_path: Path) -> None:
    items = [Item("a", "line\u2028separator"), Item("b", "next\u0085line \x0b\x0c\x1c\x1d\x1e \u2029"),
             Item("c", "lone \ud800 surrogate"), Item("d", 2**70), Item("e", "plain"), Item("f", 1e-5)]
    s = state(tmp_path / "run.jsonl")
    s.add_many(items[:3])
    for i in items[3:]:
        s.add(i)
    assert state(tmp_path / "run.jsonl").load() == {i.key: i for i in items}


def test_a_torn_last_line_is_dropped_and_the_next_starts_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    s = state(path)
    s.add(Item("a", "kept"))
    with path.open("ab") as f:
        f.write(b'{"key": "b", "te')  # a crash in the middle of a line
    s.add(Item("c", "after the crash"))
    assert state(path).load() == {"a": Item("a", "kept"), "c": Item("c", "after the crash")}
