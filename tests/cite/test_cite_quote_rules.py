"""``g6 cite --quote`` under the quote rules of ``g6.cite.passages`` (red-team findings 1-3): a quote too
short to be evidence is refused with its own code (exit 2, a refusal under ``--json``), a quote cut out of a
word is not on the page, a number written as a superscript is not its plain digits. Real home, a loopback
site, the real command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from g6.adapters import CheckedClient
from g6.cite.cite import cite_web
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError, QuoteTooShort
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from tests.conftest import validate

Site = Callable[..., LocalSite]
TEXT = "The treatment was ineffective in trials. About 10⁶ people were affected by the outage."


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def receipt_id(home: EvidenceHome, client: CheckedClient, site: Site) -> str:
    s = site({"/a": Reply(body=f"<html><body><p>{TEXT}</p></body></html>".encode()),
              "/robots.txt": Reply(404, b"")})
    r = fetch(home, client, s.url("/a"))
    assert r.outcome.value == "ok"
    return r.receipt_id


def test_a_quote_too_short_is_refused_with_its_code(home: EvidenceHome, receipt_id: str) -> None:
    with pytest.raises(QuoteTooShort) as e:
        cite_web(home, receipt_id, quote="the")
    assert e.value.code == "G6_E_CITE_QUOTE_TOO_SHORT" and "too short" in str(e.value)
    r = g6(home, "cite", receipt_id, "--quote", "was", "--json")
    assert r.returncode == 2, (r.stdout, r.stderr)
    refusal = json.loads(r.stdout)
    validate(refusal, "refusal.v1")
    assert refusal["code"] == "G6_E_CITE_QUOTE_TOO_SHORT" and refusal["outcome"] == "rejected", refusal
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("quote", ["effective in trials", "About 106 people were affected"])
def test_a_quote_cut_from_a_word_or_a_superscript_is_not_on_the_page(home: EvidenceHome, receipt_id: str,
                                                                     quote: str) -> None:
    with pytest.raises(InputError, match="not in the document"):
        cite_web(home, receipt_id, quote=quote)


def test_whole_words_and_the_number_as_written_are_cited(home: EvidenceHome, receipt_id: str) -> None:
    c = cite_web(home, receipt_id, quote="ineffective in trials")
    assert c.text == "ineffective in trials"
    c = cite_web(home, receipt_id, quote="about 10⁶ people were affected")
    assert c.text == "About 10⁶ people were affected"
