"""g6's own citation manifest (``g6-manifest``, ``schemas/manifest.v1.schema.json``): each citation pins the
receipt it was made from (``receipt_id``), and its cited ``text`` is the quote. The source is the citation's
``source_url`` (a search citation's is the paper's own address). A manifest carries no claims: ``Report.text``
is empty and the claims are "". The manifest's signature is not checked here (``g6 manifest verify`` does);
reading it is parsing it with ``g6.cite.manifest``, whose refusals become ``ReportMalformed``.
"""

from __future__ import annotations

from collections.abc import Mapping

from g6.cite.manifest import Manifest
from g6.errors import InputError, ReportMalformed
from g6.report.build import ReportBuilder
from g6.report.model import Report

NAME = "g6-manifest"


def fits(obj: object) -> str | None:
    if isinstance(obj, Mapping) and obj.get("schema") == "g6.manifest.v1":
        return None
    return "no schema: g6.manifest.v1"


def read(obj: object, name: str, base: str | None = None) -> Report:
    if not isinstance(obj, Mapping):
        raise ReportMalformed(f"{name}: not a g6 manifest: the top is not an object")
    try:
        manifest = Manifest.from_json(obj)
    except InputError as e:
        raise ReportMalformed(f"{name}: not a g6 manifest: {e}") from None
    b = ReportBuilder(NAME, "", name, base=base)
    for i, c in enumerate(manifest.citations):
        b.cite(c.source_url, f"citations[{i}] ({c.citation_id})", quote=c.text, receipt_id=c.receipt_id)
    return b.build(count_uncited=False)
