"""The report check's texts cache (``g6.report.texts_cache``) keeps a page's texts under a hash of the code that
read them (``extractor()``): every g6 module whose code decides the texts must be in that hash, or a change to
it would leave rows of the old reading in use (a quote judged on text the new code hides)."""

from __future__ import annotations

from g6.report import texts_cache

DECIDING = ("g6.adapters.html.text", "g6.adapters.html.css", "g6.adapters.html.css_sheets",
            "g6.adapters.html.css_conditions", "g6.adapters.html.refresh", "g6.adapters.html.encoding",
            "g6.cite.page_text")


def test_every_module_that_decides_a_pages_texts_is_in_the_extractor_hash() -> None:
    missing = [m for m in DECIDING if m not in texts_cache._MODULES]
    assert not missing, missing


def test_every_module_in_the_extractor_hash_is_its_own_code_not_a_re_export() -> None:
    """The hash reads each module's source file: a name that is a kept import path (``g6.adapters.html_text``, a
    re-export of ``g6.adapters.html.text``) would hash the few lines of the re-export, and a change to the code
    that reads the texts would leave the key, and the old rows, as they were."""
    import importlib
    import inspect

    for name in texts_cache._MODULES:
        module = importlib.import_module(name)
        own = [obj for obj in vars(module).values()
               if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == name]
        assert own, f"{name} defines nothing of its own: hash the module that does"
