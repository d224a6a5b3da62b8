"""The judge: an outside program's opinion beside each verdict, never in its place; a judge that hangs, crashes
or answers garbage gives a typed error per pair, never a crash of the check."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.adapters import CheckedClient
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.home import EvidenceHome
from g6.report.check import CheckRun
from g6.report.judge import GIVE_UP, MAX_ANSWER, ask_judge, judge_argv, pairs
from tests.report.check_helpers import QUOTE, article, check, cite, report_of

Site = Callable[..., LocalSite]
SCRIPT = str(Path(__file__).resolve().parent / "judge_script.py")


def judge(*mode: str) -> list[str]:
    return [sys.executable, SCRIPT, *mode]


@pytest.fixture
def run(home: EvidenceHome, client: CheckedClient, site: Site) -> CheckRun:
    s = site({"/a": Reply(body=article(QUOTE, "Water prices were flat.")), "/gone": Reply(404, b"no"),
              "/robots.txt": Reply(404)})
    return check(home, report_of(
        cite(s.url("/a"), QUOTE, "Household bills rose by 12% over the quarter."),   # 1 found: supports
        cite(s.url("/a"), "Bills fell sharply.", "Bills fell sharply this quarter."),  # 2 not found: the closest
        cite(s.url("/a"), None, "Water prices were flat."),                          # 3 no quote: the most similar
        cite(s.url("/gone"), QUOTE),                                                 # 4 source failed: no pair
        cite(s.url("/a"), QUOTE, ""),                                                # 5 no claim: no pair
    ), client)


def test_each_pair_gets_the_judges_opinion_beside_the_verdict(run: CheckRun) -> None:
    items = pairs(run)
    assert [p["n"] for _, p in items] == [1, 2, 3]
    assert [p["passage_is"] for _, p in items] == ["found", "closest", "most_similar"]
    before = [v.verdict for v in run.verdicts]
    got = ask_judge(judge("words"), items, timeout=30)
    assert {i: o.answer["label"] for i, o in got.items()} == {0: "supports", 1: "neutral", 2: "supports"}
    assert all(o.error is None for o in got.values())
    assert [v.verdict for v in run.verdicts] == before  # an opinion, never the verdict
    assert got[0].to_json("j")["note"] == "an outside program's opinion, not the verdict"


def test_a_judge_that_blocks_forever_times_out_pair_by_pair_then_is_given_up(run: CheckRun) -> None:
    items = [(k, p) for k, (_, p) in enumerate(pairs(run) * 2)]  # six pairs
    # the deadline is the test's: every pair asked ends as judge_timeout, the rest are not asked
    got = ask_judge(judge("hang"), items, timeout=0.2)
    assert [got[k].error for k in range(len(items))] == \
        ["judge_timeout"] * GIVE_UP + ["judge_gave_up"] * (len(items) - GIVE_UP)
    assert all(o.answer is None for o in got.values())


def test_a_judge_that_hangs_or_crashes_on_one_pair_is_started_again_for_the_next(run: CheckRun) -> None:
    items = pairs(run)
    hung = ask_judge(judge("hang-on", "2"), items, timeout=0.3)
    assert [hung[i].error for i, _ in items] == [None, "judge_timeout", None]
    assert hung[2].answer["label"] == "supports"
    crashed = ask_judge(judge("crash-on", "1"), items, timeout=30)
    assert crashed[0].error == "judge_crashed" and "exit 3" in crashed[0].message
    assert crashed[1].answer is not None and crashed[2].answer is not None


@pytest.mark.parametrize(("mode", "words"), [("garbage", "not JSON"), ("no-label", "string label"),
                                              ("endless", f"{MAX_ANSWER:,} bytes")])
def test_a_judge_that_answers_garbage_gives_a_typed_error_per_pair(run: CheckRun, mode: str, words: str) -> None:
    got = ask_judge(judge(mode), pairs(run), timeout=30)
    assert len(got) == 3
    for o in got.values():
        assert o.error == "judge_garbage" and words in o.message and o.answer is None


def test_a_judge_that_cannot_be_started(run: CheckRun, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no program"):
        judge_argv(str(tmp_path / "no-such-judge"))
    with pytest.raises(InputError, match="empty"):
        judge_argv("  ")
    not_run = tmp_path / "not-executable"
    not_run.write_text("#!/bin/sh\n")
    got = ask_judge([str(not_run)], [(k, p) for k, (_, p) in enumerate(pairs(run) * 2)], timeout=30)
    assert [got[k].error for k in range(6)] == ["judge_not_started"] * GIVE_UP + ["judge_gave_up"] * (6 - GIVE_UP)
    assert "ermission" in got[0].message or "xec" in got[0].message


def test_a_judge_that_closes_its_output_and_lives_on_is_crashed_not_waited_for(run: CheckRun) -> None:
    got = ask_judge(judge("close"), [(k, p) for k, (_, p) in enumerate(pairs(run) * 2)], timeout=0.3)
    assert [got[k].error for k in range(6)] == ["judge_crashed"] * GIVE_UP + ["judge_gave_up"] * (6 - GIVE_UP)
    assert "closed its output" in got[0].message
