"""Re-check fidelity (issue 15): verdicts bounded by the read, alignment, normalisation, visible text."""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient
from g6.adapters.net.checked_client import FetchResponse
from g6.adapters.outcomes import Outcome
from g6.cite.cite import chunk_receipt, cite_web
from g6.cite.manifest import Citation, Manifest
from g6.cite.page_text import PageTexts, read_texts
from g6.cite.passages import align, find, normalise, text_hash
from g6.cite.recheck import CHANGED_THRESHOLD, judge, recheck
from g6.demo.site import LocalSite, Reply
from g6.errors import InputError
from g6.fetch.capture import fetch
from g6.home import EvidenceHome

Site = Callable[..., LocalSite]
LONG = ("The survey ran for six weeks in the spring. Researchers contacted households in four districts. "
        "Of those asked, 12% said they had changed energy supplier in the past year. "
        "Most of them cited price as the main reason. Others mentioned customer service or green tariffs. "
        "The response rate was lower in rural areas. A follow-up study is planned for next year.")
QUOTE = ("Of those asked, 12% said they had changed energy supplier in the past year. "
         "Most of them cited price as the main reason.")


def _citation(text: str) -> Citation:
    return Citation("c_" + "0" * 16, "web", "rcpt_x", "http://e.test/", "http://e.test/",
                    {"blake3": "blake3:" + "0" * 64, "sha256": "sha256:" + "0" * 64, "size": 1}, None,
                    text_hash(text), text, 0, len(text), text[:200])


def _judge_text(quote: str, page_text: str, **resp: object) -> str:
    r = FetchResponse("http://e.test/", Outcome.OK, final_url="http://e.test/", **resp)  # type: ignore[arg-type]
    return judge(_citation(quote), r, PageTexts(Outcome.OK, "", page_text, page_text, (), "text/plain")).verdict


# -- verdicts never stronger than the read ---------------------------------------------------
def test_truncated_read_is_not_gone_but_a_passage_inside_it_is_current() -> None:
    assert _judge_text(QUOTE, "Only the navigation was read before the cap.", truncated=True) == "truncated"
    assert _judge_text(QUOTE, LONG[:LONG.index("Others")], truncated=True) == "current"
    assert _judge_text(QUOTE, "Only the navigation was read before the cap.") == "gone"


def test_empty_reads_cannot_be_checked(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    page = f"<html><body><nav>Home</nav><p>{LONG}</p></body></html>".encode()
    s = site({"/a": Reply(body=page), "/b": Reply(body=page), "/c": Reply(body=page), "/robots.txt": Reply(404)})
    cites = [cite_web(home, fetch(home, client, s.url(p)).receipt_id, quote=QUOTE) for p in ("/a", "/b", "/c")]
    s.routes = {"/a": Reply(body=b""), "/b": Reply(body=b"<html><body><script>draw()</script></body></html>"),
                "/c": Reply(body=b"   \n", content_type="text/plain"), "/robots.txt": Reply(404)}
    report = recheck(home, client, Manifest("mfst_empty", "2026-12-03T00:00:00Z", tuple(cites)))
    assert [(v.verdict, v.detail["reason"]) for v in report.verdicts] == [
        ("empty", "no_body"), ("empty", "no_text_without_scripts"), ("empty", "no_text")]
    assert report.exit_code == 3


# -- alignment independent of paragraph length ---------------------------------------------
@pytest.mark.parametrize("sentences_around", [0, 5, 40])
def test_one_number_edit_scores_the_same_in_any_paragraph(sentences_around: int) -> None:
    filler = " ".join(f"Filler sentence {i} says nothing new." for i in range(sentences_around))
    page = f"{filler} {LONG.replace('12%', '21%')} {filler}".strip()
    a = align(QUOTE, page)
    assert a is not None
    assert a.similarity == align(QUOTE, QUOTE.replace("12%", "21%")).similarity  # type: ignore[union-attr]
    assert a.similarity >= CHANGED_THRESHOLD
    assert a.text == QUOTE.replace("12%", "21%") and page[a.start:a.end] == a.text
    assert (a.removed, a.added) == (("12%",), ("21%",))
    assert _judge_text(QUOTE, page) == "changed"


def test_an_insertion_widens_the_span_and_the_diff_says_so() -> None:
    page = LONG.replace("cited price", "cited the rising price")
    a = align(QUOTE, page)
    assert a is not None and a.text == QUOTE.replace("cited price", "cited the rising price")
    assert (a.removed, a.added) == ((), ("the", "rising"))


def test_an_unrelated_page_is_gone() -> None:
    page = " ".join(["The harbour festival returns in June with concerts and boat races."] * 50)
    assert _judge_text(QUOTE, page) == "gone"


# -- normalisation over whole strings --------------------------------------------------------
def test_nfc_and_nfd_spellings_are_equal() -> None:
    for s in ("Renée", "Ångström", "naïve café", "Hà Nội"):
        assert normalise(unicodedata.normalize("NFD", s)) == normalise(unicodedata.normalize("NFC", s))
    page = unicodedata.normalize("NFC", "said Renée Dubois, who led it")
    span = find(unicodedata.normalize("NFD", "Renée Dubois"), page)
    assert span is not None and page[span[0]:span[1]] == "Renée Dubois"
    nfd_page = unicodedata.normalize("NFD", page)
    span = find("Renée", nfd_page)
    assert span is not None and nfd_page[span[0]:span[1]] == unicodedata.normalize("NFD", "Renée")


def test_cite_a_quote_typed_in_nfd_against_an_nfc_page(home: EvidenceHome, client: CheckedClient,
                                                      site: Site) -> None:
    text = "“We expected people to stay put,” said Renée Dubois, who led the study."
    s = site({"/p": Reply(body=text.encode(), content_type="text/plain; charset=utf-8"), "/robots.txt": Reply(404)})
    r = fetch(home, client, s.url("/p"))
    c = cite_web(home, r.receipt_id, quote=unicodedata.normalize("NFD", '"we expected people to stay put," said Renée'))
    assert c.text == "“We expected people to stay put,” said Renée"


_ALPHABET = list("abcdefg XYZ 0123 .,;:!? \n") + list("éèüñçÅßœ") + ["’", "“", "”", "'", '"']
_SWAP = str.maketrans({"'": "’", "’": "'", '"': "“", "“": '"', "”": '"'})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from(_ALPHABET), min_size=1, max_size=80), st.data())
def test_property_normalisation_preserving_rewrites_keep_current(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    quote = text[i:j]
    assume(normalise(quote) and find(quote, text) is not None)  # a quote that could be cited: whole words
    page = text
    if data.draw(st.booleans()):
        page = page.translate(_SWAP)
    if data.draw(st.booleans()):  # soft hyphens and zero-width characters between characters
        chars = list(page)
        for k in sorted(data.draw(st.lists(st.integers(0, len(chars)), max_size=6)), reverse=True):
            chars.insert(k, data.draw(st.sampled_from(["\u00ad", "\u200b", "\u200d", "\ufeff"])))
        page = "".join(chars)
    if data.draw(st.booleans()):  # any run of whitespace for any other
        parts = page.split()
        seps = [data.draw(st.sampled_from([" ", "  ", "\n", "\t ", "\u00a0", "\r\n  "])) for _ in parts]
        page = seps[0] * data.draw(st.booleans()) + "".join(p + s for p, s in zip(parts, seps, strict=True))
    page = unicodedata.normalize(data.draw(st.sampled_from(["NFD", "NFC", "NFKD"])), page)
    if data.draw(st.booleans()):
        assert _judge_text(quote, page) == "current"
    else:  # the same text served as an HTML page and read as a re-check reads it
        body = f"<html><body><p>{html.escape(page, quote=False)}</p></body></html>".encode()
        texts = read_texts(body, "http://e.test/", "text/html; charset=utf-8")
        resp = FetchResponse("http://e.test/", Outcome.OK, final_url="http://e.test/")
        assert judge(_citation(quote), resp, texts).verdict == "current"


# -- the whole reader-visible text --------------------------------------------------------------
ARTICLE = ("<html><head><title>T</title><style>.promo { display: none } #x[data-k='1'] { visibility: hidden }"
           "</style></head><body><nav><a href='/'>Home</a> <a href='/local'>Local news desk</a></nav>"
           "<main><article><h1>Households switch supplier</h1>"
           f"<p>{LONG}</p><p>The council published its figures on Monday morning.</p>"
           "<figure><img src='c.png'><figcaption>Figure 1: share of households by district</figcaption></figure>"
           "<table><tr><td>North district: 14.5% switched</td><td>of those asked</td></tr></table>"
           "</article><aside><p>Most read: the new cycle lanes on Harbour Road open on Monday.</p></aside></main>"
           "<p class='promo'>Secret promotion text</p><p id='x' data-k='1'>Invisible by id rule</p>"
           "<p style='display:none'>Inline hidden words</p><div hidden>Attribute hidden words</div>"
           "<script>var tracking = 'script words here';</script><template><p>Template words here</p></template>"
           "<footer>© 2026 Harbour Gazette</footer></body></html>")


@pytest.fixture
def article(home: EvidenceHome, client: CheckedClient, site: Site) -> str:
    s = site({"/a": Reply(body=ARTICLE.encode()), "/robots.txt": Reply(404)})
    return fetch(home, client, s.url("/a")).receipt_id


@pytest.mark.parametrize("quote", ["Local news desk", "Most read: the new cycle lanes",
                                   "Figure 1: share of households by district", "North district: 14.5% switched",
                                   "© 2026 Harbour Gazette"])
def test_any_visible_text_can_be_cited(home: EvidenceHome, article: str, quote: str) -> None:
    c = cite_web(home, article, quote=quote)
    assert normalise(c.text) == normalise(quote)
    assert c.text_source in ("main", "visible")


def test_main_text_stays_available_and_the_citation_says_which_text(home: EvidenceHome, article: str) -> None:
    main = cite_web(home, article, quote="12% said they had changed energy supplier")
    nav = cite_web(home, article, quote="Local news desk")
    assert (main.text_source, nav.text_source) == ("main", "visible")
    _, visible = chunk_receipt(home, article, "visible")
    assert nav.start is not None and any(p.start <= nav.start and nav.end <= p.end for p in visible)
    _, main_passages = chunk_receipt(home, article, "main")
    assert all("Local news desk" not in p.text for p in main_passages)
    assert nav.to_json()["text_source"] == "visible"


@pytest.mark.parametrize(("quote", "why"), [
    ("Secret promotion text", 'hidden from readers (display:none from the <style> rule ".promo")'),
    ("Invisible by id rule", "hidden from readers (visibility:hidden from the <style> rule"),
    ("Inline hidden words", "hidden from readers (display:none from an inline style)"),
    ("Attribute hidden words", "hidden from readers (the hidden attribute)"),
    ("script words here", "inside a <script> element"),
    ("Template words here", "inside a <template> element"),
    ("words that are nowhere", "not on the page, visible or hidden"),
])
def test_a_quote_that_cannot_be_cited_says_why(home: EvidenceHome, article: str, quote: str, why: str) -> None:
    with pytest.raises(InputError) as e:
        cite_web(home, article, quote=quote)
    assert why in str(e.value)


def test_cited_text_gives_the_text_a_citation_points_into(home: EvidenceHome, article: str) -> None:
    from g6.cite.page_text import cited_text

    r = home.ledger.get(article)
    assert r.content is not None
    body = home.store.read(str(r.content["blake3"]))
    for quote in ("Local news desk", "12% said they had changed"):
        c = cite_web(home, article, quote=quote)
        text = cited_text(body, r.final_url or "", r.detail.get("content_type"), c.text_source)
        assert text is not None and c.start is not None and text_hash(text[c.start:c.end]) == c.text_hash
    assert cited_text(b"", "http://e.test/", "text/html", "main") is None


def test_hidden_old_words_beside_an_edited_visible_span_is_changed() -> None:
    from g6.adapters.html.text import HiddenText

    body = (f"<html><body><p>{LONG.replace('12%', '21%')}</p>"
            f"<p style='display:none'>{QUOTE}</p></body></html>").encode()
    texts = read_texts(body, "http://e.test/", "text/html")
    assert texts.hidden and isinstance(texts.hidden[0], HiddenText)
    v = judge(_citation(QUOTE), FetchResponse("http://e.test/", Outcome.OK), texts)
    assert v.verdict == "changed" and v.detail["hidden"] == "display:none from an inline style"
    only_hidden = read_texts(f"<html><body><p>Other words entirely.</p><p hidden>{QUOTE}</p></body></html>".encode(),
                             "http://e.test/", "text/html")
    v = judge(_citation(QUOTE), FetchResponse("http://e.test/", Outcome.OK), only_hidden)
    assert v.verdict == "gone" and v.detail["hidden"] == "the hidden attribute"
