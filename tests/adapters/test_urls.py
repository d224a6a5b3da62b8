from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from g6.adapters.net.addresses import check_address
from g6.adapters.net.urls import URLError, host_matches, normalise_url, redact_url

LOOPBACK_FORMS = [
    "http://127.0.0.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.1/",
    "http://0177.0.0.1/",
    "http://0177.1/",
    "http://127.1/",
    "http://127.0.1/",
    "http://127.0.0.1./",
    "http://0x7F.0.0.0x1/",
    "http://017700000001/",
    "http://user:pass@127.0.0.1/",
    "http://public.example@127.0.0.1/",
    "http://１２７.０.０.１/",  # full-width digits (IDNA maps them)
]


@pytest.mark.parametrize("url", LOOPBACK_FORMS)
def test_every_ipv4_literal_form_of_loopback_normalises_to_127(url: str) -> None:
    n = normalise_url(url)
    assert n.ip is not None and n.ip.startswith("127.")
    assert not check_address(n.ip).allowed


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.ORG/a?b=1#frag", "http://example.org/a?b=1"),
        ("https://example.org.:443/", "https://example.org/"),
        ("https://example.org:8443", "https://example.org:8443/"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("http://[0:0:0:0:0:ffff:7f00:1]/", "http://[::ffff:7f00:1]/"),
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://user:secret@example.org/p", "http://example.org/p"),
        ("http://0/", "http://0.0.0.0/"),
    ],
)
def test_normal_forms(url: str, expected: str) -> None:
    assert normalise_url(url).url == expected


def test_userinfo_is_removed_and_noted() -> None:
    n = normalise_url("http://u:p@example.org/")
    assert n.userinfo_removed and "u:p" not in n.url


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "scheme"),
        ("gopher://example.org/", "scheme"),
        ("data:text/html,hi", "scheme"),
        ("ftp://example.org/", "scheme"),
        ("/relative", "scheme"),
        ("http://", "bad_host"),
        ("http://exa mple.org/", "bad_host"),
        ("http://[::1/", "bad_url"),
        ("http://[fe80::1%25eth0]/", "bad_host"),
        ("http://example.org:99999/", "bad_port"),
        ("http://example.org:-1/", "bad_port"),
        ("http://256.1.1.1/", "bad_host"),
        ("http://1.2.3.4.5/", "bad_host"),
        ("http://0x100000000/", "bad_host"),
        ("http://example.org/\r\nHost: evil", "bad_url"),
        ("", "bad_url"),
    ],
)
def test_unfetchable_urls_give_a_typed_reason(url: str, reason: str) -> None:
    with pytest.raises(URLError) as e:
        normalise_url(url)
    assert e.value.reason == reason


def test_allowlist_patterns() -> None:
    assert host_matches("example.org", "example.org")
    assert not host_matches("sub.example.org", "example.org")
    assert host_matches("sub.example.org", "*.example.org")
    assert host_matches("a.b.example.org", "*.example.org")
    assert not host_matches("example.org", "*.example.org")
    assert not host_matches("badexample.org", "*.example.org")


def test_redact_url() -> None:
    assert redact_url("https://u:p@api.example/x?q=1&api_key=SECRET&mailto=a@b") == \
        "https://api.example/x?q=1&api_key=REDACTED&mailto=a@b"
    assert redact_url("https://example.org/p") == "https://example.org/p"


@settings(max_examples=400)
@given(st.text(max_size=80))
def test_fuzz_any_text_normalises_or_gives_url_error(text: str) -> None:
    try:
        n = normalise_url(text)
    except URLError as e:
        assert e.reason
        return
    assert n.scheme in ("http", "https") and 0 < n.port < 65536
    again = normalise_url(n.url)
    assert again.url == n.url  # the normal form is a fixed point


@settings(max_examples=300)
@given(st.builds(lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
                 st.sampled_from(["http", "https", "HTTP"]),
                 st.one_of(st.from_regex(r"[a-z0-9.-]{1,20}", fullmatch=True),
                           st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
                           st.integers(0, 2**32 - 1).map(str)),
                 st.one_of(st.just(""), st.integers(0, 70000).map(lambda p: f":{p}")),
                 st.from_regex(r"(/[a-z0-9%._~-]{0,8}){0,3}", fullmatch=True)))
def test_fuzz_url_shaped_inputs(url: str) -> None:
    try:
        n = normalise_url(url)
    except URLError:
        return
    if n.ip:
        check_address(n.ip)  # always gives a verdict
    assert normalise_url(n.url) == n


def test_a_normal_form_is_kept_for_a_string_and_never_for_a_refusal_or_another_type() -> None:
    """``normalise_url`` keeps a string's answer (a fetch asks several times): the same answer, a refusal raised
    every time, a value that is not a string refused as before, a very long URL not kept."""
    from g6.adapters.net import urls

    urls._normalise_str.cache_clear()
    a = urls.normalise_url("HTTP://Example.COM:80/a?b#c")
    assert urls.normalise_url("HTTP://Example.COM:80/a?b#c") is a and a.url == "http://example.com/a?b"
    for _ in range(2):
        with pytest.raises(urls.URLError):
            urls.normalise_url("ftp://example.com/")
    for bad in (None, 42, ["http://e.com/"], {"u": 1}):
        with pytest.raises(urls.URLError):
            urls.normalise_url(bad)  # type: ignore[arg-type]
    long = "http://example.com/" + "a" * 5000
    before = urls._normalise_str.cache_info().currsize
    assert urls.normalise_url(long).url == long
    assert urls._normalise_str.cache_info().currsize == before
