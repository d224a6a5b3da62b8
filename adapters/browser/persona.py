"""What the capture's browser tells a page about itself: what a reader's Chromium of the same version tells it.

A page can show a headless, automated browser other words than a reader's (one line of script:
``navigator.webdriver || /Headless/.test(navigator.userAgent)``), and the capture would keep, signed, what no
reader saw. The two free signals are removed at launch: ``navigator.webdriver`` is false
(``--disable-blink-features=AutomationControlled``) and the user agent is Chromium's own for a window on Linux, of
the browser's own major version (``Chrome/156.0.0.0``, never ``HeadlessChrome``), set by ``--user-agent`` so that
every frame and worker has it and ``Browser.getVersion`` (what the capture receipt records as ``engine.user_agent``)
reports it. Detection cannot be ruled out: a page can look for other traces (with a user agent set this way the
client hints' full version list is empty, for one); the receipt says which browser it was.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

# Chromium's reduced user agent on Linux (its platform part frozen since the reduction): a window's, not headless
READER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{major}.0.0.0 Safari/537.36"
NOT_AUTOMATED = "--disable-blink-features=AutomationControlled"
_VERSION = re.compile(r"\b(\d{2,4})\.\d+\.\d+\.\d+\b")


@functools.lru_cache(maxsize=8)
def _major_version(executable: str, stamp: tuple[int, int]) -> int | None:
    """The browser's major version, from ``--version`` (which starts no browser); None when it will not say.
    ``stamp`` (the file's mtime and size) keys the cache: an upgraded browser is asked again."""
    try:
        out = subprocess.run([executable, "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=30, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = _VERSION.search(out)
    return int(m.group(1)) if m else None


def reader_user_agent(executable: str) -> str | None:
    """The user agent a reader's Chromium of ``executable``'s version sends; None when its version is unknown (the
    browser then keeps its own, and the receipt records that one)."""
    try:
        st = os.stat(executable)
    except OSError:
        return None
    major = _major_version(executable, (st.st_mtime_ns, st.st_size))
    return READER_UA.format(major=major) if major else None


def persona_flags(executable: str) -> list[str]:
    ua = reader_user_agent(executable)
    return [NOT_AUTOMATED, *([f"--user-agent={ua}"] if ua else [])]
