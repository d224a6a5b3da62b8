"""Citing what was read, and re-checking it later.

``passages`` (normalisation, the chunker, alignment), ``page_text`` (a body's main and visible text),
``manifest`` (citations and their signed manifest), ``cite`` (``g6 chunk``, ``g6 cite``), ``recheck``
(``g6 recheck``: is each citation still current).
"""
