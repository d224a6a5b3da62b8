"""What a judge's answer line must be to be kept: I-JSON (it goes into a result signed over RFC 8785 canonical
JSON), bound to its own pair. Real judge processes (small Python scripts), no mocks."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.demo.site import LocalSite, Reply
from g6.ledger.receipts import canonical_json
from g6.report.judge import MAX_DEPTH, ask_judge
from tests.report.check_helpers import QUOTE, article, cite, g6, report_of, write_report


def _pairs(n: int) -> list[tuple[int, dict[str, object]]]:
    return [(i, {"n": i + 1, "claim": f"claim {i + 1}", "passage": "p", "passage_is": "found"}) for i in range(n)]


def _fixed(tmp: Path, answer: str) -> list[str]:
    """A judge that answers every pair with the line ``answer``, byte for byte."""
    p = tmp / "fixed.py"
    p.write_text("import sys\nfor line in sys.stdin:\n    sys.stdout.write(" + repr(answer + "\n")
                 + ")\n    sys.stdout.flush()\n")
    return [sys.executable, str(p)]


def _nested(depth: int) -> str:
    return '{"label": "supports", "x": ' + "[" * depth + "1" + "]" * depth + "}"


@pytest.mark.parametrize("answer", [
    '{"label": "supports", "score": 1e400}', '{"label": "supports", "score": -1e400}',
    '{"label": "supports", "score": -Infinity}', '{"label": "supports", "n": -9007199254740992}',
    '{"label": "supports", "\\udc00": 1}', '{"label": "supports", "why": ["ok", "\\udfff"]}',
    _nested(MAX_DEPTH + 1)],
    ids=["overflow", "negative_overflow", "minus_infinity", "below_minus_2_53", "surrogate_key", "nested_surrogate",
         "too_deep"])
def test_an_answer_that_is_not_i_json_is_judge_garbage(tmp_path: Path, answer: str) -> None:
    (got,) = ask_judge(_fixed(tmp_path, answer), _pairs(1), 30).values()
    assert got.error == "judge_garbage" and ("I-JSON" in got.message or "not JSON" in got.message), got
    assert got.answer is None


@pytest.mark.parametrize("answer", [
    '{"label": "supports", "k": 9007199254740991, "m": -9007199254740991}', '{"label": "supports", "score": 0.5}',
    '{"label": "supports", "score": -0.0, "big": 1.7e308}', '{"label": "caf\\u00e9 \\ud83d\\ude00"}',
    _nested(MAX_DEPTH - 1)], ids=["2_53", "float", "edge_floats", "surrogate_pair", "deep_enough"])
def test_an_i_json_answer_is_kept_and_can_be_signed(tmp_path: Path, answer: str) -> None:
    (got,) = ask_judge(_fixed(tmp_path, answer), _pairs(1), 30).values()
    assert got.error is None and got.answer == json.loads(answer)
    assert canonical_json(got.to_json("judge"))  # what the result's signature covers


def _script(tmp: Path, body: str) -> list[str]:
    p = tmp / "judge.py"
    p.write_text("import json, os, sys\nfor line in sys.stdin:\n    n = json.loads(line)['n']\n" + body)
    return [sys.executable, str(p)]


def test_two_lines_for_one_pair_answer_it_once_and_the_next_pair_is_not_shifted(tmp_path: Path) -> None:
    """A judge that does not echo ``n`` writes two lines for each pair in one write (so both are there when
    the first is read): the first answers the pair, the second is waiting when the next pair would be sent, so
    that pair is ``judge_garbage`` (never the line about the pair before) and a new judge answers the one
    after."""
    argv = _script(tmp_path, "    os.write(1, (json.dumps({'label': 'supports', 'about': n}) + '\\n'\n"
                             "                 + json.dumps({'label': 'neutral', 'about': n}) + '\\n').encode())\n")
    got = ask_judge(argv, _pairs(4), 30)
    assert [o.answer["about"] if o.answer else o.error for o in got.values()] == \
        [1, "judge_garbage", 3, "judge_garbage"]
    assert "before this pair was sent" in got[1].message


def test_an_answer_that_echoes_another_pairs_n_answers_no_pair(tmp_path: Path) -> None:
    """A judge whose answer echoes another pair's ``n`` (or an ``n`` that is not the number) is
    ``judge_garbage`` for that pair; an answer that echoes its own is kept."""
    argv = _script(tmp_path, "    said = {1: 1, 2: 3, 3: '3', 4: True}.get(n, n)\n"
                             "    print(json.dumps({'label': 'supports', 'n': said}), flush=True)\n")
    got = ask_judge(argv, _pairs(5), 30)
    assert [o.answer["n"] if o.answer else o.error for o in got.values()] == \
        [1, "judge_garbage", "judge_garbage", "judge_garbage", 5]
    assert "not this pair's n=2" in got[1].message


def test_a_file_name_or_judge_argument_that_is_not_utf8_is_shown_escaped_and_the_result_signed(
        tmp_path: Path, site: Callable[..., LocalSite]) -> None:
    """A report whose file name has a byte that is not UTF-8, and a judge given such an argument: Python reads
    each as a lone surrogate, which RFC 8785 cannot sign (internal error, exit 70, the result lost, before the
    fix). The result shows them escaped, is signed, and verifies."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    name = os.fsdecode(b"r\xff.json")
    write_report(tmp_path / name, report_of(cite(s.url("/a"), QUOTE)))
    argv = _script(tmp_path, "    print(json.dumps({'label': 'supports', 'n': n}), flush=True)\n")
    judge = " ".join([*argv, os.fsdecode(b"\xfe")])
    r = g6(tmp_path / "home", "report", "check", name, "--judge", judge, "-o", "result.json", "--json")
    assert r.returncode == 0, r.stderr[-300:]
    result = json.loads(r.stdout)
    assert result["report"]["name"] == "r\\udcff.json" and result["judge"]["command"].endswith("\\udcfe")
    assert result["citations"][0]["judge"]["opinion"]["label"] == "supports"
    assert g6(tmp_path / "home", "report", "verify", "result.json").returncode == 0
