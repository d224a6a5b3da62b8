"""Perplexity Sonar (``perplexity``): an OpenAI-style chat completion whose ``choices[0].message.content`` carries
numbered markers (``[1]``, ``[2][3]``, ``[1, 2]``) and whose top level lists the sources: ``citations`` (URLs, in
marker order) and/or ``search_results`` (``{title, url, date}``, same order).

Marker ``[n]`` cites the n-th source (1-based); the source is ``citations[n-1]`` (or ``search_results[n-1].url``
when there is no ``citations``), its title the ``search_results`` entry with that URL. Markers are cut out of
``Report.text`` (with the spaces before them), and each marker's claim is the sentence it follows (``rose
12%.[1]`` and ``rose 12% [1].`` both cite "rose 12%"). A ``[n]`` followed by ``(`` is a Markdown link, not a
marker; a marker beyond the list of sources is kept as an unusable citation. A source listed but never marked
supports no claim and is not a citation. A reasoning model's ``<think>…</think>`` preamble is not the answer
and is left out of the text. Perplexity's ``date`` is the page's publication date, not when it was read: it
is not ``read_at``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from g6.report.build import Cut, ReportBuilder
from g6.report.formats.shape import Shape, at
from g6.report.model import Report

NAME = "perplexity"
_MARKER = re.compile(r"[ \t]*\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?!\()")  # [1], [1][2], [1, 2]
_THINK = re.compile(r"\s*<think>.*?</think>\s*", re.S)


def fits(obj: object) -> str | None:
    if not isinstance(obj, Mapping) or not isinstance(obj.get("choices"), list):
        return "no choices[] array"
    if "citations" in obj or "search_results" in obj:
        return None
    return "no top-level citations or search_results"


def _sources(shape: Shape, top: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The sources in marker order and the titles by URL."""
    results = shape.arr(top.get("search_results") or [], "search_results")
    titles: dict[str, str] = {}
    urls_from_results: list[str] = []
    for i, r in enumerate(results):
        w = at("search_results", i)
        ro = shape.obj(r, w)
        url = shape.text(shape.get(ro, w, "url"), at(w, "url")) or ""
        title = shape.text(ro.get("title"), at(w, "title"), optional=True)
        urls_from_results.append(url)
        if title:
            titles.setdefault(url, title)
    if top.get("citations") is None:
        return urls_from_results, titles
    cites = shape.arr(top["citations"], "citations")
    return [shape.text(c, at("citations", i)) or "" for i, c in enumerate(cites)], titles


def read(obj: object, name: str, base: str | None = None) -> Report:
    shape = Shape(name, NAME)
    top = shape.obj(obj, "")
    choices = shape.arr(shape.get(top, "", "choices"), "choices")
    if len(choices) != 1:
        raise shape.fail("choices", f"{len(choices)} choices: a report is one answer; keep the one to check")
    msg = shape.obj(shape.get(shape.obj(choices[0], "choices[0]"), "choices[0]", "message"), "choices[0].message")
    raw = shape.text(shape.get(msg, "choices[0].message", "content"), "choices[0].message.content") or ""
    sources, titles = _sources(shape, top)
    think = _THINK.match(raw)
    skip = [(0, think.end())] if think and raw.lstrip().startswith("<think>") else []
    markers = list(_MARKER.finditer(raw, skip[0][1] if skip else 0))
    cut = Cut(raw, skip + [m.span() for m in markers])
    b = ReportBuilder(NAME, cut.text, name, base=base)
    for k, m in enumerate(markers):
        claim = b.sentence_claim(cut.pos(m.start()))
        for num in m.group(1).split(","):
            n = int(num)
            where = f"choices[0].message.content marker {k + 1} [{n}]"
            if not 1 <= n <= len(sources):
                b.unusable_citation(f"[{n}]", f"marker [{n}], and the answer lists {len(sources)} sources", where,
                                    claim)
                continue
            b.cite(sources[n - 1], where, claim=claim, title=titles.get(sources[n - 1]))
    return b.build()
