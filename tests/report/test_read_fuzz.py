"""Any bytes give a Report or a ReportError, never another exception; and every Report read keeps the readers'
rules (claims are the text at their offsets, sources are of a kind g6 reads, numbers are in order). Fuzzed:
raw bytes, Markdown-ish text, and each JSON fixture with one node replaced by any JSON value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.errors import ReportError
from g6.report.model import SOURCE_KINDS, Report, source_kind
from g6.report.read import FORMATS, read_report

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reports"
JSON_FIXTURES = sorted(p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".jsonld"))
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20)


def holds(r: Report) -> None:
    ns = [c.n for c in r.citations] + [u.n for u in r.unusable]
    assert len(ns) == len(set(ns)) and all(n >= 1 for n in ns)
    assert [c.n for c in r.citations] == sorted(c.n for c in r.citations)
    for c in r.citations:
        assert source_kind(c.source) in SOURCE_KINDS
        if c.claim_start is not None:
            assert c.claim_end is not None and r.text[c.claim_start:c.claim_end] == c.claim
        else:
            assert c.claim == "" or r.format in ("annotation",)
    for claim in r.uncited_claims:
        assert claim in r.text


def read_any(data: bytes, fmt: str | None = None) -> None:
    try:
        r = read_report(data, format=fmt)
    except ReportError as e:
        assert str(e) and "\n" not in str(e)[:200]
        return
    holds(r)


@SETTINGS
@given(st.binary(max_size=2000), st.sampled_from([None, *FORMATS]))
def test_any_bytes(data: bytes, fmt: str | None) -> None:
    read_any(data, fmt)


markdownish = st.lists(st.sampled_from(list("ab .,:;?!\"“”'()[]<>^*#>-|`\n\t0123456789é’\u200b") +
                                      ["http://a.example/x", "https://doi.org/10.1000/x", "doi:10.1/y",
                                       "arXiv:2401.01234", "[^1]", "[^1]: ", "> ", "— ", "javascript:", "\r\n",
                                       "[a](", "](#x)", "![i](http://i.example/)", "\n\n", "```\n"]),
                       max_size=200).map("".join)


@SETTINGS
@given(markdownish)
def test_any_markdown(text: str) -> None:
    read_any(text.encode(), "markdown")
    read_any(text.encode())


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*at, i))
    return out


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    node = copy
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = new
    return copy


@SETTINGS
@given(st.sampled_from(JSON_FIXTURES), st.data())
def test_each_json_fixture_with_one_node_replaced(name: str, data: st.DataObject) -> None:
    value = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    path = data.draw(st.sampled_from(_paths(value)))
    mutated = _replaced(value, path, data.draw(json_values))
    raw = json.dumps(mutated, ensure_ascii=False).encode()
    read_any(raw)
    read_any(raw, data.draw(st.sampled_from(FORMATS)))


@SETTINGS
@given(st.sampled_from(JSON_FIXTURES), st.data())
def test_each_json_fixture_with_one_string_or_number_nudged(name: str, data: st.DataObject) -> None:
    """Offsets one off, strings cut or grown: the places readers go wrong."""
    value = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    leaves = [p for p in _paths(value) if p and isinstance(_at(value, p), (int, str)) and not isinstance(
        _at(value, p), bool)]
    path = data.draw(st.sampled_from(leaves))
    old = _at(value, path)
    new = old + data.draw(st.integers(-3, 3)) if isinstance(old, int) else data.draw(
        st.sampled_from([old[:-1], old + "é", "", old[::-1], "javascript:" + old]))
    read_any(json.dumps(_replaced(value, path, new), ensure_ascii=False).encode())


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        value = value[k]
    return value
