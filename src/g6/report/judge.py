"""The judge (``--judge CMD``): an outside program's opinion on each (claim, passage) pair, kept beside the
byte-level verdict and never in its place.

The program (an NLI model, an LLM, a person's script) is started once and handed one JSON line per pair on its
standard input::

    {"n": 3, "source": "https://…", "claim": "…", "passage": "…", "passage_is": "found", "quote": "…",
     "verdict": "quote_found"}

and answers each with one JSON line on its standard output: an object with a string ``label`` (its own words:
``supports``, ``contradicts``, ``neutral``…) and whatever else it wants to say (``score``, ``reason``…), kept as
given. ``passage_is`` says what the passage is: ``found`` (the span the quote was found at), ``closest`` (the
span most like a quote that was not found: a hint) or ``most_similar`` (the passage most like the claim of a
citation without a quote: a hint). Citations without a claim or without a passage (a source that failed) are
not judged.

The answer must be I-JSON (RFC 7493), as the signed result it goes into is RFC 8785 canonical JSON: no ``NaN``
or ``Infinity``, no number past a double's range, no integer past 2**53, no lone surrogate, nested at most
``MAX_DEPTH`` deep. An answer is bound to its pair: pairs are asked one at a time, an answer that echoes ``n``
(as a judge should) must echo its own pair's, and anything the program writes before a pair is sent (a second
line about the pair before) answers no pair: that pair is ``judge_garbage`` and the program is started again,
so one extra line never shifts the opinions onto the next citations. A judge that does not echo ``n`` is bound by
order alone: an extra line that comes only after the next pair was sent cannot be told from that pair's answer.

Whatever the program does, each pair gets an opinion or a typed error, never a crash of the check:
``judge_timeout`` (no answer line within the deadline: the program is stopped, and started again for the next
pair), ``judge_crashed`` (it ended before answering), ``judge_garbage`` (a line that is not an I-JSON object with
a string ``label``, longer than ``MAX_ANSWER`` bytes, another pair's answer, or written before its pair was sent),
``judge_not_started`` (it could not be started), and ``judge_gave_up`` (after ``GIVE_UP`` pairs in a row timed out
or crashed, the rest are not asked).
"""

from __future__ import annotations

import json
import math
import os
import selectors
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from g6.errors import InputError
from g6.report.check import CheckRun, iter_citations
from g6.report.verdicts import bounded

MAX_ANSWER = 64 * 1024  # bytes of an answer line
GIVE_UP = 3  # pairs in a row that timed out or crashed, after which the judge is not asked again
PAIR_CHARS = 4_000  # characters of a claim, passage or quote handed over
MAX_DEPTH = 32  # arrays and objects nested in an answer; deeper is garbage, well inside every encoder's recursion
SAFE_INT = 2**53 - 1  # I-JSON's integers (RFC 7493 2.2): what RFC 8785 signs exactly


def judge_argv(command: str) -> list[str]:
    """The judge's command line, split as a shell would (no shell runs it); an InputError, before any work,
    when it is empty or names no program that can be run."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise InputError(f"--judge {command[:80]!r}: {e}") from None
    if not argv:
        raise InputError("--judge is empty: give the judge's command")
    if shutil.which(argv[0]) is None:
        raise InputError(f"--judge: no program {argv[0][:80]!r} to run (not found, or not executable)")
    return argv


def pairs(run: CheckRun) -> list[tuple[int, dict[str, Any]]]:
    """(citation place, the pair's JSON) for every citation there is something to judge."""
    out = []
    for i, (c, v) in enumerate(iter_citations(run)):
        if not c.claim.strip():
            continue
        if v.found is not None:
            passage, what = str(v.found.get("text", "")), "found"
        elif v.hints:
            passage, what = str(v.hints[0].get("text", "")), "closest" if v.verdict == "quote_not_found" \
                else "most_similar"
        else:
            continue
        out.append((i, {"n": c.n, "source": bounded(c.source, 2000), "claim": bounded(c.claim, PAIR_CHARS),
                        "passage": bounded(passage, PAIR_CHARS), "passage_is": what,
                        "quote": bounded(c.quote, PAIR_CHARS) if c.quote is not None else None,
                        "verdict": v.verdict}))
    return out


@dataclass(frozen=True, slots=True)
class Opinion:
    answer: Mapping[str, Any] | None = None
    error: str | None = None  # judge_timeout, judge_crashed, judge_garbage, judge_not_started, judge_gave_up
    message: str = ""

    def to_json(self, command: str) -> dict[str, Any]:
        d: dict[str, Any] = {"judge": command, "note": "an outside program's opinion, not the verdict"}
        if self.answer is not None:
            d["opinion"] = dict(self.answer)
        else:
            d["error"] = {"code": self.error, "message": self.message}
        return d


class _Process:
    """One run of the judge program, asked one pair at a time."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
                                     start_new_session=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.out, self.inp = self.proc.stdout.fileno(), self.proc.stdin.fileno()
        os.set_blocking(self.out, False)
        os.set_blocking(self.inp, False)
        self.buffer = b""
        self.out_of_step = False  # it said something no pair asked for: its next line may not be the next answer

    def ask(self, line: bytes, n: Any, deadline: float) -> Opinion:
        """The answer to the pair ``line`` (whose number is ``n``), bound to it: output already waiting before
        the pair is sent, or an answer that echoes another pair's ``n``, answers no pair."""
        if self._waiting():
            self.out_of_step = True
            return Opinion(error="judge_garbage", message="the judge wrote before this pair was sent (more than one "
                                                          "line for an earlier pair): that line answers no pair")
        sel = selectors.DefaultSelector()
        try:
            got = self._ask(sel, line, deadline)
        finally:
            sel.close()
        said = got.answer.get("n", n) if got.answer is not None else n
        if type(said) is not type(n) or said != n:
            self.out_of_step = True
            return Opinion(error="judge_garbage", message=f"the answer is for n={str(said)[:40]}, not this pair's "
                                                          f"n={n}: it answers no pair")
        return got

    def _waiting(self) -> bool:
        """Whether the program wrote anything before the next pair is sent (read without waiting)."""
        while len(self.buffer) <= MAX_ANSWER:
            try:
                chunk = os.read(self.out, 65536)
            except BlockingIOError:
                break
            if not chunk:  # it closed its output: the ask says so
                break
            self.buffer += chunk
        return bool(self.buffer)

    def _ask(self, sel: selectors.BaseSelector, line: bytes, deadline: float) -> Opinion:
        todo = memoryview(line)
        sel.register(self.inp, selectors.EVENT_WRITE)
        sel.register(self.out, selectors.EVENT_READ)
        while True:
            if b"\n" in self.buffer:
                answer, self.buffer = self.buffer.split(b"\n", 1)
                return _answer(answer)
            if len(self.buffer) > MAX_ANSWER:
                return Opinion(error="judge_garbage", message=f"an answer line over {MAX_ANSWER:,} bytes")
            left = deadline - time.monotonic()
            if left <= 0:
                return Opinion(error="judge_timeout", message="no answer line before the deadline")
            for key, _ in sel.select(left):
                if key.fd == self.inp:
                    try:
                        todo = todo[os.write(self.inp, todo):]
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, OSError):
                        todo = memoryview(b"")  # it closed its input: its output says the rest
                    if not todo:
                        sel.unregister(self.inp)
                    continue
                try:
                    chunk = os.read(self.out, 65536)
                except BlockingIOError:
                    continue
                if not chunk:  # it closed its output: it ended, or will never answer again
                    try:
                        code = self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        return Opinion(error="judge_crashed", message="the judge closed its output without answering")
                    return Opinion(error="judge_crashed", message=f"the judge ended (exit {code}) before answering")
                self.buffer += chunk

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _not_i_json(value: Any, depth: int = 0) -> str | None:
    """What keeps ``value`` (as ``json.loads`` gave it) from being I-JSON, which the signed result's canonical
    JSON (RFC 8785) requires, or None. Python's reader takes what RFC 8785 refuses: a number that is no double
    (``1e400`` read as infinity), an integer past 2**53, a ``\\ud800`` escape read as a lone surrogate."""
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} deep"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string with a lone surrogate"
        return None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return None if -SAFE_INT <= value <= SAFE_INT else "an integer past 2**53"
    if isinstance(value, float):
        return None if math.isfinite(value) else "a number past the largest double"
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    for k, v in items:
        why = (_not_i_json(k, depth + 1) if k is not None else None) or _not_i_json(v, depth + 1)
        if why is not None:
            return why
    return None


def _answer(line: bytes) -> Opinion:
    try:
        d = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        return Opinion(error="judge_garbage", message=f"not JSON ({str(e)[:80]}): {line[:80]!r}")
    if not isinstance(d, dict) or not isinstance(d.get("label"), str):
        return Opinion(error="judge_garbage", message="not a JSON object with a string label")
    why = _not_i_json(d)
    if why is not None:  # it could not be signed in the result: the pair's error, never the check's crash
        return Opinion(error="judge_garbage", message=f"not I-JSON (RFC 7493): {why}")
    return Opinion(answer=d)


def ask_judge(argv: list[str], items: list[tuple[int, dict[str, Any]]], timeout: float,
              on_answer: Callable[[int, int], None] | None = None) -> dict[int, Opinion]:
    """Each pair's opinion (by citation place); ``timeout`` seconds for each answer."""
    opinions: dict[int, Opinion] = {}
    proc: _Process | None = None
    in_a_row = 0
    try:
        for k, (i, pair) in enumerate(items, 1):
            if in_a_row >= GIVE_UP:
                opinions[i] = Opinion(error="judge_gave_up", message=f"the judge failed {GIVE_UP} pairs in a row "
                                                                     "(no answer, or it ended): not asked again")
                continue
            if proc is None:
                try:
                    proc = _Process(argv)
                except OSError as e:
                    opinions[i] = Opinion(error="judge_not_started", message=str(e)[:200])
                    in_a_row += 1
                    continue
            line = json.dumps(pair, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"
            got = proc.ask(line, pair.get("n"), time.monotonic() + timeout)
            if got.error in ("judge_timeout", "judge_crashed") or proc.out_of_step or \
                    (got.error == "judge_garbage" and proc.buffer):
                proc.stop()  # out of step with its answers, or not answering: a new one for the next pair
                proc = None
            in_a_row = in_a_row + 1 if got.error in ("judge_timeout", "judge_crashed") else 0
            opinions[i] = got
            if on_answer is not None:
                on_answer(k, len(items))
    finally:
        if proc is not None:
            proc.stop()
    return opinions


def judge_summary(command: str, timeout: float, opinions: Mapping[int, Opinion]) -> dict[str, Any]:
    errors: dict[str, int] = {}
    for o in opinions.values():
        if o.error is not None:
            errors[o.error] = errors.get(o.error, 0) + 1
    return {"command": command, "timeout": timeout, "pairs": len(opinions),
            "answered": sum(1 for o in opinions.values() if o.answer is not None), "errors": errors}
