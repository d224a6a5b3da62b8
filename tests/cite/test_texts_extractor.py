"""The report check's texts cache (``g6.report.texts_cache``) keeps a page's texts under a hash of the code that
read them (``extractor()``): every g6 module whose code decides the texts must be in that hash, or a change to
it would leave rows of the old reading in use (a quote judged on text the new code hides)."""

from __future__ import annotations

from g6.report import texts_cache

DECIDING = ("g6.adapters.html_text", "g6.adapters.html_css", "g6.adapters.css_sheets", "g6.adapters.css_conditions",
            "g6.adapters.refresh", "g6.adapters.html_encoding", "g6.cite.page_text")


def test_every_module_that_decides_a_pages_texts_is_in_the_extractor_hash() -> None:
    missing = [m for m in DECIDING if m not in texts_cache._MODULES]
    assert not missing, missing
