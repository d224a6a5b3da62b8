"""Reading is linear: a report of 10,000 citations builds in memory proportional to its size (measured in a
child process with tracemalloc, against one of 5,000; no wall time is asserted), a sentence cited 500 times
is one string, and the same URL cited 500 times stays 500 citations (the check dedupes the reads, not the
reader)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from g6.report.read import read_report
from g6.report.sentences import MAX_SENTENCE

CHILD = textwrap.dedent("""
    import json, sys, tracemalloc
    from g6.report.read import read_report
    fmt, n = sys.argv[1], int(sys.argv[2])
    if fmt == "markdown":
        data = "".join(f"Claim number {i} holds [src](http://127.0.0.{1 + i % 2}:8421/p{i % 400}). "
                       for i in range(n)).encode()
    else:
        parts, notes, at = [], [], 0
        for i in range(n):
            claim, link = f"Claim number {i} holds. ", f"([p{i}](http://127.0.0.1:8421/p{i % 400}))"
            notes.append({"type": "url_citation", "start_index": at + len(claim),
                          "end_index": at + len(claim) + len(link), "url": f"http://127.0.0.1:8421/p{i % 400}",
                          "title": "t"})
            parts.append(claim + link + " ")
            at += len(parts[-1])
        text = "".join(parts)
        data = json.dumps({"object": "response", "output": [{"type": "message", "content": [
            {"type": "output_text", "text": text, "annotations": notes}]}]}).encode()
    tracemalloc.start()
    r = read_report(data, format=fmt)
    peak = tracemalloc.get_traced_memory()[1]
    assert len(r.citations) == n, len(r.citations)
    print(json.dumps({"peak": peak, "size": len(data)}))
""")


def peak(fmt: str, n: int) -> dict[str, int]:
    out = subprocess.run([sys.executable, "-c", CHILD, fmt, str(n)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_ten_thousand_citations_read_in_memory_linear_in_the_report() -> None:
    for fmt in ("markdown", "openai-responses"):
        small, big = peak(fmt, 5_000), peak(fmt, 10_000)
        # everything the reader holds grows with the report: twice the citations, about twice the memory
        assert big["peak"] < 2.5 * small["peak"], (fmt, small, big)
        # and stays a bounded multiple of the report's bytes (a claim copied per citation over a long text would
        # be thousands of times the report)
        assert big["peak"] < 60 * big["size"], (fmt, big)


def test_one_long_sentence_cited_500_times_is_one_bounded_string() -> None:
    sentence = "word " * 20_000  # 100,000 characters with no sentence end: cut at MAX_SENTENCE
    data = (sentence + "".join(f"[{i}](http://127.0.0.1:8421/same) " for i in range(500))).encode()
    r = read_report(data, format="markdown")
    assert len(r.citations) == 500
    claims = {id(c.claim) for c in r.citations}
    assert len(claims) == 1 and 0 < len(r.citations[0].claim) <= MAX_SENTENCE


def test_the_same_url_cited_500_times_is_500_citations() -> None:
    content = " ".join(f"Claim {i} holds [1]." for i in range(500))
    data = json.dumps({"choices": [{"message": {"content": content}}],
                       "citations": ["http://127.0.0.1:8421/article"]}).encode()
    r = read_report(data)
    assert r.format == "perplexity"
    assert [c.n for c in r.citations] == list(range(1, 501))
    assert {c.source for c in r.citations} == {"http://127.0.0.1:8421/article"}
    assert len({c.claim for c in r.citations}) == 500
