"""The rule ``--render auto`` renders by (``g6.fetch.shell``), on both sides of each of its parts."""

from __future__ import annotations

import pytest

from g6.adapters.net.checked_client import FetchResponse
from g6.adapters.outcomes import Outcome
from g6.fetch.shell import BIG_PAGE, MIN_TEXT, shell_verdict

HTML = "text/html; charset=utf-8"


def resp(outcome: Outcome = Outcome.OK, status: int = 200, ctype: str | None = HTML) -> FetchResponse:
    return FetchResponse("https://site.example/", outcome, final_url="https://site.example/", status=status,
                         content_type=ctype)


def page(text: str, script: bool = True, extra: str = "") -> bytes:
    return (f"<html><head><title>A title that does not count as text at all</title></head><body><p>{text}</p>"
            f"{extra}{'<script src=/app.js></script>' if script else ''}</body></html>").encode()


def test_little_text_and_a_script_is_a_shell_and_just_enough_text_is_not() -> None:
    short, enough = "x" * (MIN_TEXT - 1), "x" * MIN_TEXT
    assert shell_verdict(resp(), page(short)).shell
    assert not shell_verdict(resp(), page(enough)).shell


def test_without_a_script_nothing_is_a_shell() -> None:
    v = shell_verdict(resp(), page(""), )
    assert v.shell
    v = shell_verdict(resp(), page("", script=False))
    assert not v.shell and "no script" in v.why


def test_a_big_page_of_scripts_with_text_under_one_percent_is_a_shell() -> None:
    inline = "<script>var data = '" + "d" * 3 * BIG_PAGE + "';</script>"
    text = "w" * 250  # over MIN_TEXT
    assert shell_verdict(resp(), page(text, extra=inline)).shell  # 250 characters in > 60,000 bytes
    assert not shell_verdict(resp(), page("w" * 1000, extra=inline)).shell  # 1,000 characters: over 1 %
    assert not shell_verdict(resp(), page(text, extra="<script>var d = 1;</script>")).shell  # a small page


@pytest.mark.parametrize("notice", ["Please enable JavaScript to view this site.", "JavaScript is required.",
                                    "This app requires JavaScript", "You need to turn on JavaScript.",
                                    "JavaScript is disabled in your browser."])
def test_a_page_asking_for_javascript_is_a_shell_even_with_text(notice: str) -> None:
    body = page("y " * 400, extra=f"<noscript>{notice}</noscript>")
    v = shell_verdict(resp(), body)
    assert v.shell and v.why == "the page asks for JavaScript"
    assert not shell_verdict(resp(), page("y " * 400, extra="<noscript>A plain note.</noscript>")).shell


@pytest.mark.parametrize(("r", "why"), [(resp(Outcome.NOT_FOUND, 404), "not a successful read"),
                                        (resp(ctype="application/json"), "not HTML"),
                                        (resp(status=302), "not a successful read")])
def test_failed_reads_and_other_media_are_never_rendered(r: FetchResponse, why: str) -> None:
    v = shell_verdict(r, page(""))
    assert not v.shell and why in v.why


def test_a_wall_is_not_rendered_around() -> None:
    v = shell_verdict(resp(), page(""), walled=True)
    assert not v.shell and "wall" in v.why


def test_a_pages_address_is_redacted_and_bounded_in_the_capture_receipt() -> None:
    from g6.fetch.render import MAX_SHOWN_URL, shown_url

    assert shown_url("https://a.example/p?api_key=sekrit") == "https://a.example/p?api_key=REDACTED"
    long = shown_url("data:text/html," + "x" * 100_000)
    assert long is not None and len(long) == MAX_SHOWN_URL and long.endswith("…")
    assert shown_url(None) is None
