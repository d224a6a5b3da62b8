"""A small deterministic judge for the tests: reads one JSON pair a line, answers one JSON line a pair.

    judge_script.py words          supports when most of the claim's words are in the passage, else neutral
    judge_script.py hang           reads a pair and never answers (blocks forever)
    judge_script.py hang-on N      answers, except for citation N: blocks forever
    judge_script.py crash-on N     answers, except for citation N: exits 3 without answering
    judge_script.py garbage        answers every pair with a line that is not JSON
    judge_script.py no-label       answers every pair with a JSON object without a label
    judge_script.py endless        answers with one line that never ends
    judge_script.py close          closes its output, then blocks forever
"""

from __future__ import annotations

import json
import re
import sys
import threading

mode = sys.argv[1]
arg = int(sys.argv[2]) if len(sys.argv) > 2 else None


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9%]+", text.lower()))


def answer(pair: dict) -> dict:
    claim, passage = words(pair["claim"]), words(pair["passage"])
    share = len(claim & passage) / max(len(claim), 1)
    return {"label": "supports" if share >= 0.6 else "neutral", "score": round(share, 3), "n": pair["n"]}


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


for raw in sys.stdin:
    pair = json.loads(raw)
    if mode == "hang" or (mode == "hang-on" and pair["n"] == arg):
        threading.Event().wait()  # blocks forever: the check's deadline must end it
    if mode == "close":
        sys.stdout.close()
        import os

        os.close(1)
        threading.Event().wait()
    if mode == "crash-on" and pair["n"] == arg:
        sys.exit(3)
    if mode == "garbage":
        out("this is not json")
    elif mode == "no-label":
        out(json.dumps({"score": 1}))
    elif mode == "endless":
        while True:
            sys.stdout.write("x" * 65536)
            sys.stdout.flush()
    else:
        out(json.dumps(answer(pair)))
