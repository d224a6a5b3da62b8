"""Citations from annotations (``g6 cite --annotation FILE``): a W3C Web Annotation export (JSON-LD: one
annotation, a list, a page or a collection with its first page embedded; Hypothesis's W3C export, g6's own
``manifest export --format annotation``) or Hypothesis's own JSON (its API's ``rows[]``, its client's
``annotations[]``), read by the report reader of the ``annotation`` format (``g6.report.formats.annotation``,
the one parser of annotations), each target's ``TextQuoteSelector`` then cited as ``g6 cite --quote`` cites.

Which read each quote is checked against: the receipt given, for every annotation (refused for an annotation
whose source is not a URL that read was of); without one, the newest good read of the annotation's source URL
in the home (``g6.cite.by_url``). The quote's ``exact`` must be in the page's text, as for ``--quote``
(``prefix`` and ``suffix`` are hints the model gives to tell occurrences apart; the first occurrence is cited).

Nothing is lost when one annotation cannot be cited: each is cited or refused on its own, with the reason
(no quote, no read of that URL, a failed read, a quote not on the page...), in the order of the file.
"""

from __future__ import annotations

from dataclasses import dataclass

from g6.cite.by_url import is_read_of, newest_reads
from g6.cite.cite import cite_web
from g6.cite.manifest import Citation
from g6.errors import G6Error, InputError
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt
from g6.report.model import ReportCitation, source_kind
from g6.report.read import read_report


@dataclass(frozen=True, slots=True)
class Refused:
    """An annotation target that was not cited, and why."""

    where: str  # in the file: "first.items[2].target[0]"
    source: str
    quote: str | None
    reason: str

    def to_json(self) -> dict[str, str | None]:
        return {"where": self.where, "source": self.source, "quote": self.quote, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class AnnotationCites:
    cited: tuple[tuple[str, Citation], ...]  # (where in the file, the citation), in the file's order
    refused: tuple[Refused, ...]


def _read_for(c: ReportCitation, given: Receipt | None, newest: dict[str, Receipt]) -> Receipt | str:
    """The read to check ``c`` against, or why there is none."""
    if given is not None:
        if not is_read_of(given, c.source):
            return (f"the annotation is about {c.source[:200]}; receipt {given.receipt_id} read "
                    f"{given.final_url[:200]}")
        return given
    r = newest.get(c.source)
    if r is None:
        return f"no good read of {c.source[:200]} in this home (fetch it first: g6 fetch URL)"
    return r


def cite_annotations(home: EvidenceHome, data: bytes, *, name: str = "ANNOTATIONS", receipt_id: str | None = None,
                     allow_failed_read: bool = False) -> AnnotationCites:
    """Cite every target of the annotations in ``data``. A file that is not annotations is a ``ReportError``
    (exit 2); so is an unknown ``receipt_id`` (``ReceiptNotFound``, exit 1)."""
    report = read_report(data, format="annotation", name=name)
    refused = [(u.n, Refused(u.where, u.written, None, u.reason)) for u in report.unusable]
    given = home.ledger.get(receipt_id) if receipt_id is not None else None
    urls = [c.source for c in report.citations if source_kind(c.source) == "url"]
    newest = newest_reads(home, urls) if given is None else {}
    cited: list[tuple[str, Citation]] = []
    for c in report.citations:
        if source_kind(c.source) != "url":
            refused.append((c.n, Refused(c.where, c.source, c.quote, "its source is not a web page g6 can have read")))
            continue
        if not c.quote or not c.quote.strip():
            refused.append((c.n, Refused(c.where, c.source, c.quote, "no TextQuoteSelector: no quote to cite")))
            continue
        read = _read_for(c, given, newest)
        if isinstance(read, str):
            refused.append((c.n, Refused(c.where, c.source, c.quote, read)))
            continue
        try:
            cited.append((c.where, cite_web(home, read.receipt_id, quote=c.quote,
                                            allow_failed_read=allow_failed_read)))
        except InputError as e:
            refused.append((c.n, Refused(c.where, c.source, c.quote, str(e))))
        except G6Error as e:  # a blob missing or corrupt: said for this one, the others still cited
            refused.append((c.n, Refused(c.where, c.source, c.quote, f"{type(e).__name__}: {e}")))
    return AnnotationCites(tuple(cited), tuple(r for _, r in sorted(refused, key=lambda x: x[0])))
