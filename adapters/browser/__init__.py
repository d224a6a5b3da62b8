"""The browser at the network edge: a locked-down headless Chromium driven over the DevTools protocol on a
pipe, every request of every target answered by a callable the caller supplies (``g6.fetch.render``
gives it g6's checked client). ``cdp`` (the protocol), ``launch`` (the start and its lockdown),
``intercept`` (browser-wide interception), ``render`` (one page), ``page_js`` (the scripts run in it),
``pool`` (browsers at once), ``persona`` (what the browser tells a page about itself)."""

from g6.adapters.browser.cdp import BrowserError, BrowserGone, BrowserHung
from g6.adapters.browser.intercept import (
    FAIL_BLOCKED,
    FAIL_REFUSED,
    FAIL_TIMEOUT,
    FAIL_UNREACHABLE,
    RESTRICTING_HEADERS,
    SubFetch,
    SubRequest,
    SubResponse,
)
from g6.adapters.browser.launch import BrowserInfo, BrowserProcess, BrowserUnavailable, find_chromium
from g6.adapters.browser.render import ENDINGS, RenderLimits, RenderResult, prepare_browser, render

__all__ = ["ENDINGS", "FAIL_BLOCKED", "FAIL_REFUSED", "FAIL_TIMEOUT", "FAIL_UNREACHABLE", "RESTRICTING_HEADERS",
           "BrowserError", "BrowserGone", "BrowserHung", "BrowserInfo", "BrowserProcess", "BrowserUnavailable",
           "RenderLimits", "RenderResult", "SubFetch", "SubRequest", "SubResponse", "find_chromium", "prepare_browser",
           "render"]
