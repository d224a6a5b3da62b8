"""Citations as Robust Links (``g6 manifest export --format robust-links``): one HTML anchor per citation.

Robust Links (https://robustlinks.mementoweb.org/spec/, and its revision at https://robustlinks.org/spec/,
§3 "Robust Links attributes") decorate a link with ``data-originalurl`` (the resource that motivates the
link), ``data-versiondate`` (the intended date of linking) and ``data-versionurl`` (the URIs of snapshots of
it, space-separated). Each anchor here is the revision's Example 1, "linking to a live web resource": ``href``
and ``data-originalurl`` are the cited page's URL, ``data-versiondate`` is when g6 read it
(``YYYY-MM-DDThh:mm:ssZ``, UTC: the ISO 8601 datetime form of the revision's ABNF), and ``data-versionurl``
lists the memento in the ``g6 serve`` at ``--base-url`` first (the URI that serves the very bytes g6 read, see
``g6.export.citations``), then each ``--archive``'s URI in the order given. The revision lets a snapshot URI be
followed by its own datetime; none is written: the other archives' snapshot times are not known here, and
without them an attribute that holds one URI stays a plain URI for readers of the first spec (the
``robustlinks.js`` of the Robust Links project reads the attribute whole).

The page is one ``<ol>``: per citation an ``<li id="CITATION_ID">`` with the quote in ``<q>`` and the anchor.
Everything is escaped as HTML; no script, no style.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from g6.cite.manifest import Manifest
from g6.export.citations import Exported, iso_second

FORMAT = "robust-links"


def anchor(e: Exported) -> str:
    """The ``<a>`` of one citation."""
    url = e.citation.source_url
    attrs = [("href", url), ("data-originalurl", url), ("data-versiondate", iso_second(e.read_at))]
    if e.versions:
        attrs.append(("data-versionurl", " ".join(v.uri for v in e.versions)))
    text = " ".join(f'{k}="{html.escape(v, quote=True)}"' for k, v in attrs)
    return f"<a {text}>{html.escape(url)}</a>"


def render(manifest: Manifest, exported: Sequence[Exported]) -> str:
    """The HTML page of a manifest's citations as Robust Links."""
    items = []
    for e in exported:
        c = e.citation
        items.append(f'<li id="{html.escape(c.citation_id)}"><q>{html.escape(c.quote)}</q> {anchor(e)}</li>')
    title = f"Citations of {manifest.manifest_id} as Robust Links"
    return ("<!doctype html>\n<html lang=\"en\">\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<h1>{html.escape(title)}</h1>\n<ol>\n"
            + "".join(f"{li}\n" for li in items) + "</ol>\n</html>\n")
