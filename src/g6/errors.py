"""The whole exception tree of g6, in one place.

    G6Error
    ├── StoreError
    │   ├── BlobNotFound
    │   │   └── BlobRedacted     (bytes a redaction entry took out of the home: never served again, ``.seq``)
    │   ├── BadDigest            (a digest string that is not ``algo:hex`` of the right length)
    │   ├── StoreDiskFull        (the disk ran out while writing a blob; nothing half-written shows)
    │   ├── BlobCorrupt          (bytes that do not hash to the digest they are kept or asked under)
    │   └── StoreBackendError    (the object store is down or refuses: names it and what to check)
    ├── LedgerError
    │   ├── SigningKeyError      (no signing key, an unreadable or unknown key)
    │   ├── ReceiptNotFound
    │   ├── ReceiptUnverified    (a receipt whose signature fails: not exported in a form g6 signs again)
    │   ├── LedgerDiskFull       (the disk ran out while appending; the transaction rolled back)
    │   ├── ReceiptTooLarge      (a receipt over 65,535 bytes: more than a published log's entry holds)
    │   └── LedgerBackendError   (the ledger database is down or refuses: names it and what to check)
    ├── PublishError             (a log that cannot be published where asked: the destination refuses)
    │   └── PublishConflict      (the destination holds another history: a tile or checkpoint differs)
    ├── MonitorUnreachable       (``g6 monitor``: the log's checkpoint could not be fetched)
    ├── ConfigError              (a bad setting in the environment or ``$G6_HOME/.env``)
    ├── InputError               (bad input from a caller: a URL, a flag, a file)
    │   ├── FetchInputError      (a knowledge-fetcher request that cannot be sent: no url or query…)
    │   │   ├── UnknownSourceError
    │   │   └── SearchInputError (a paper search that cannot be sent as asked: nothing was sent)
    │   ├── ElasticInputError    (an Elasticsearch read refused before anything was sent; a G6_E_KNOWLEDGE_* code)
    │   ├── WebFetchInputError   (a runx web-fetch call that cannot start)
    │   ├── HomeError            (a home that is a file, unreadable, or an empty path)
    │   ├── FailedReadError      (a citation of a read that failed, not asked for: ``.outcome``, ``.http_status``)
    │   ├── InterstitialReadError (a citation of a read that met a login, challenge or consent wall: ``.interstitial``)
    │   ├── QuoteTooShort        (a quote with too few letters or digits to be evidence of anything: ``g6 cite``)
    │   ├── ReportError          (a report ``g6 report check`` cannot read: ``.where`` names the place)
    │   │   ├── ReportFormatError    (an unknown format name; detection that failed or was ambiguous: ``.tried``)
    │   │   ├── ReportMalformed      (malformed JSON or Markdown, or a shape that is not its format's)
    │   │   ├── ReportEncodingError  (bytes that are not UTF-8, nor UTF-16/32 with a BOM: ``.offset``)
    │   │   ├── ReportOffsetError    (offsets outside the text, or inside a UTF-8 sequence)
    │   │   └── ReportTooLarge       (a report, a quote or a citation count over its documented limit)
    │   ├── BundleError          (a bundle that cannot be made or read)
    │   │   └── BundleMemberError (a member that is unsafe or not what bundle.json declares)
    │   ├── MonitorStateError    (a ``g6 monitor --state`` folder whose state file is not ours or is garbled)
    │   ├── WaczUnavailable      (export wacz without the wacz package)
    │   ├── RedactionRefused     (``g6 blob redact|hold|release|expire`` refused before anything was appended)
    │   │   ├── BlobUnreferenced     (a digest no receipt of this ledger names)
    │   │   ├── BlobAlreadyRedacted  (a digest a redaction entry already covers: ``.seq``)
    │   │   ├── BlobOnHold           (a digest under a legal hold: ``.seq`` of the hold)
    │   │   └── BlobNotHeld          (a release of a digest no hold covers)
    │   └── WaczError            (a WACZ that could not be written or did not validate)
    ├── FetchAdapterError        (a registered source adapter that raised)
    ├── ElasticReadError         (an ``EsIndex.find`` the server did not answer in full; ``.answer``)
    ├── ElasticError             (a refusal or failure of the document-shaped Elasticsearch reader)
    ├── ProgramMissing           (nothing answers where an outside program should listen)
    ├── ProgramTimeout           (the outside program did not answer in time)
    ├── TimestampAuthorityError  (an RFC 3161 TSA that did not answer with a good token: ``.tsa`` names it)
    ├── WorkerLost               (a batch's or re-check's worker process ended before reporting a URL it had)
    ├── EvidenceRefused          (evidence a report check may not rest on: a bundle whose own checks fail)
    └── WitnessError             (a tlog witness did not cosign a checkpoint: ``.witness``, ``.url``, ``.status``)
        ├── WitnessUnreachable   (no answer, or an answer that is not the protocol's)
        ├── WitnessUnknownLog    (404, or 403 "unknown log": the witness does not know the log's origin)
        ├── WitnessRefusedSignature (403: no signature by a log key the witness trusts for the origin)
        ├── WitnessInconsistent  (422: the checkpoint does not extend what the witness cosigned: a fork?)
        ├── WitnessConflict      (409 after the retry: the witness's size moved again, or is past ours)
        └── WitnessBadRequest    (400, or any other status)

Fetch failures are *not* exceptions: a fetch always returns a typed outcome (see
``g6.adapters.outcomes``), because a failure is evidence too and gets a receipt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Status words of the source documents (``g6.adapters.outcomes`` holds them all; this module imports
# nothing of ours, so the two it needs are repeated here and a test keeps them equal).
BLOCKED = "blocked-escalated"
OUTSIDE_PROGRAM_MISSING = "G6_E_OUTSIDE_PROGRAM_MISSING"


class G6Error(Exception):
    """Base of every error g6 raises on purpose."""

    code = "G6_E_INTERNAL"


class StoreError(G6Error):
    code = "G6_E_STORE"


class BlobNotFound(StoreError):
    code = "G6_E_STORE_BLOB_NOT_FOUND"


class BlobRedacted(BlobNotFound):
    """Bytes a redaction entry took out of the home (``seq``: that entry's): never served again, whether or not
    a copy is still in the store; the receipts that read them still prove they were read."""

    code = "G6_E_STORE_BLOB_REDACTED"

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class BadDigest(StoreError):
    code = "G6_E_STORE_BAD_DIGEST"


class StoreBackendError(StoreError):
    code = "G6_E_STORE_BACKEND"


class LedgerError(G6Error):
    code = "G6_E_LEDGER"


class LedgerBackendError(LedgerError):
    code = "G6_E_LEDGER_BACKEND"


class SigningKeyError(LedgerError):
    code = "G6_E_LEDGER_KEY"


class ReceiptNotFound(LedgerError):
    code = "G6_E_LEDGER_RECEIPT_NOT_FOUND"


class ReceiptUnverified(LedgerError):
    """A receipt whose signature does not verify with a key the home trusts: ``g6 receipt export`` will not
    sign it again as an attestation or a credential."""

    code = "G6_E_LEDGER_RECEIPT_UNVERIFIED"


class ReceiptTooLarge(LedgerError):
    """A receipt whose signed canonical JSON is over 65,535 bytes: more than an entry of a published log
    (a C2SP tlog-tiles entry bundle) holds. Refused at append; nothing of its batch is appended."""

    code = "G6_E_LEDGER_RECEIPT_TOO_LARGE"


class ProofNotCovered(LedgerError):
    """No checkpoint the ledger issued covers the receipt yet, and the caller may not sign one (a read-only
    home, as ``g6 serve`` opens it)."""

    code = "G6_E_LEDGER_PROOF_NOT_COVERED"


class PublishError(G6Error):
    """The log cannot be published where asked: the destination cannot be read or written, holds another
    log, or is ahead of what would be published."""

    code = "G6_E_PUBLISH"


class PublishConflict(PublishError):
    """The destination holds another history: a full tile, an entry bundle or the checkpoint there differs
    from what this ledger says (someone rewrote the log or the destination). Nothing there is overwritten."""

    code = "G6_E_PUBLISH_CONFLICT"


class ConfigError(G6Error):
    code = "G6_E_CONFIG"


class InputError(G6Error):
    code = "G6_E_INPUT"


class MonitorStateError(InputError):
    """``g6 monitor --state DIR`` holds a state file that is not a monitor's state, is garbled, or is the state
    of another log or key: nothing is fetched, and the file is left as it is."""

    code = "G6_E_MONITOR_STATE"


class MonitorUnreachable(G6Error):
    """``g6 monitor``: the log's checkpoint could not be fetched (no answer, a status other than 200, or an
    answer past the note limit). Nothing was checked and the state is unchanged."""

    code = "G6_E_MONITOR_UNREACHABLE"


class FetchInputError(InputError):
    code = "G6_E_KNOWLEDGE_FETCH_INPUT"


class UnknownSourceError(FetchInputError):
    code = "G6_E_KNOWLEDGE_UNKNOWN_SOURCE"


class FetchAdapterError(G6Error):
    """A source adapter (built in or registered) raised: refused around it, never a traceback."""

    code = "G6_E_KNOWLEDGE_FETCH_ADAPTER"


class StoreDiskFull(StoreError):
    """The disk (or a file-size limit) ran out while writing a blob; nothing half-written is visible."""

    code = "G6_E_STORE_DISK_FULL"


class BlobCorrupt(StoreError):
    """A blob's bytes do not hash to the digest it is kept (or was asked for) under."""

    code = "G6_E_STORE_BLOB_CORRUPT"


class LedgerDiskFull(LedgerError):
    """The disk (or a file-size limit) ran out while writing the ledger; the transaction was rolled back."""

    code = "G6_E_LEDGER_DISK_FULL"


class HomeError(InputError):
    """An evidence home that is not a usable folder (a file, unreadable, an empty path)."""

    code = "G6_E_HOME"


class FailedReadError(InputError):
    """A citation asked of a receipt whose read failed (a 403 or 404 page…) without saying so explicitly:
    its body is an error page, not evidence of the page's words."""

    def __init__(self, message: str, outcome: object = None, http_status: object = None) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.http_status = http_status


class InterstitialReadError(InputError):
    """A citation asked of a receipt whose 2xx read met a wall (a login, challenge or consent page): its
    words are the wall's, not the page's. ``.interstitial`` is the receipt's ``{kind, evidence}``."""

    code = "G6_E_CITE_INTERSTITIAL"

    def __init__(self, message: str, interstitial: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.interstitial = dict(interstitial or {})


class QuoteTooShort(InputError):
    """A quote too short to be evidence of anything (``g6.cite.passages.quote_too_short``): a letter, a stop
    word, a bare figure is on most pages. Nothing was looked for."""

    code = "G6_E_CITE_QUOTE_TOO_SHORT"


class ReportError(InputError):
    """A report that cannot be read (``g6.report.read``): the message starts with the report's name and says
    where (``output[1].content[0].annotations[3]``, ``line 12``) and what would be read instead. Nothing of the
    report is checked when its reading fails: a report is read whole or not at all."""

    code = "G6_E_REPORT"

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class ReplayRefused(InputError):
    """``g6 report check --replay RESULT`` given a result of other report bytes, or read another way: exit 2."""

    code = "G6_E_REPORT_REPLAY"


class ReplayUnverified(G6Error):
    """``--replay RESULT`` whose result does not verify (signature, figures, manifest): a failed check, exit 1."""

    code = "G6_E_REPORT_REPLAY_UNVERIFIED"


class ReportFormatError(ReportError):
    """An unknown ``--format`` name, or a report whose format could not be told: none of the formats fits, or
    more than one does. ``.tried`` lists the formats tried, each with why it did not fit."""

    code = "G6_E_REPORT_FORMAT"

    def __init__(self, message: str, tried: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.tried = tried


class ReportMalformed(ReportError):
    """Malformed JSON, Markdown that is not text, or JSON whose shape is not its format's (a field missing or of
    the wrong type): the message names the field."""

    code = "G6_E_REPORT_MALFORMED"


class ReportEncodingError(ReportError):
    """Report bytes that are not UTF-8 (nor UTF-16 or UTF-32 with a byte order mark): ``.offset`` is the first
    byte that does not decode. Legacy encodings (Latin-1, Windows-1252) are never guessed."""

    code = "G6_E_REPORT_ENCODING"

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message, f"byte {offset}")
        self.offset = offset


class ReportOffsetError(ReportError):
    """A citation whose offsets fall outside the report's text, end before they start, or (for a format that
    counts UTF-8 bytes) fall inside a character's byte sequence."""

    code = "G6_E_REPORT_OFFSET"


class ReportTooLarge(ReportError):
    """A report over its byte limit, a quote over its character limit, or more citations than a report may hold
    (the limits are in ``g6.report.read`` and docs/commands/report.md)."""

    code = "G6_E_REPORT_TOO_LARGE"


class BundleError(InputError):
    """A bundle that cannot be made or read: a bad manifest given to ``g6 bundle``, an unreadable zip."""

    code = "G6_E_BUNDLE"


class BundleMemberError(BundleError):
    """One member of a bundle is unsafe or does not match what ``bundle.json`` declares for it."""

    code = "G6_E_BUNDLE_MEMBER"


class WaczUnavailable(InputError):
    """``g6 export wacz`` without the optional ``wacz`` package installed."""

    code = "G6_E_WACZ_UNAVAILABLE"


class WaczError(InputError):
    """A WACZ that could not be written (the wacz tool failed, or its output did not validate)."""

    code = "G6_E_WACZ"


class RedactionRefused(InputError):
    """A redaction, hold, release or expiry refused before anything was appended or removed."""

    code = "G6_E_BLOB_REDACTION"


class BlobUnreferenced(RedactionRefused):
    """A digest no receipt of this ledger names: there is no read whose bytes a redaction would cover."""

    code = "G6_E_BLOB_UNREFERENCED"


class BlobAlreadyRedacted(RedactionRefused):
    """A digest a redaction entry already covers (``seq``: that entry's)."""

    code = "G6_E_BLOB_ALREADY_REDACTED"

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class BlobOnHold(RedactionRefused):
    """A digest under a legal hold (``seq``: the hold entry's): redact and gc leave it until it is released."""

    code = "G6_E_BLOB_ON_HOLD"

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.seq = seq


class BlobNotHeld(RedactionRefused):
    """A release of a digest no hold covers (or a hold of one already redacted)."""

    code = "G6_E_BLOB_NOT_HELD"


class WorkerLost(G6Error):
    """A worker process of a batch (``g6 fetch --input`` on several cores) ended before it reported a
    URL it was given: that URL is settled as an error with no receipt, so a resumed run fetches it again.
    A re-check (``g6 recheck`` on several cores) ends with it; its run file resumes with ``--run``."""

    code = "G6_E_WORKER_LOST"


class EvidenceRefused(G6Error):
    """Evidence ``g6 report check`` may not rest on: a bundle whose own checks fail (a failed check, exit 1)."""

    code = "G6_E_FAILED"


class WebFetchInputError(InputError):
    """A web-fetch call that cannot start (no url, a bad input): nothing is fetched or sealed."""

    code = "G6_E_WEB_FETCH_INPUT"


class ElasticError(G6Error):
    """A refusal or failure of the Elasticsearch reader: ``.code``, ``.reason``, ``.reply``."""

    def __init__(self, code: str, reason: str, reply: Mapping[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
        self.reply = dict(reply or {"outcome": "rejected", "code": code, "status": BLOCKED, "message": reason})

    @property
    def receipt_ids(self) -> list[str]:
        return list(self.reply.get("receipt_ids", []))


class ProgramMissing(G6Error):
    """Nothing answers where the program should listen."""

    code = OUTSIDE_PROGRAM_MISSING


class ProgramTimeout(G6Error):
    """The program took the connection but did not answer in time."""

    code = "G6_E_KNOWLEDGE_ELASTIC_TIMEOUT"


class TimestampAuthorityError(G6Error):
    """A time-stamping authority (RFC 3161) that could not be reached, answered other than 200 with an
    ``application/timestamp-reply``, refused the request, or sent a token that does not hold. ``tsa``
    is the name (or URL) it was asked under; the message starts with it."""

    code = "G6_E_TSA"

    def __init__(self, tsa: str, message: str) -> None:
        super().__init__(f"TSA {tsa}: {message}")
        self.tsa = tsa


class SearchInputError(FetchInputError):
    """A search that cannot be sent as asked (unknown category, bad date…). Nothing was sent."""


class ElasticInputError(InputError):
    """Refused before anything was sent. ``code`` is one of the stable G6_E_KNOWLEDGE_* codes."""

    def __init__(self, code: str, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail

    @property
    def reason(self) -> str:
        """The documents' name for the message: what was refused and what would work."""
        return str(self)

    def to_json(self) -> dict[str, Any]:
        return {"outcome": "rejected", "code": self.code, "status": BLOCKED, "message": str(self),
                "detail": self.detail}


class ElasticReadError(G6Error):
    """A read that did not succeed; ``answer.result`` holds the typed outcome, ``answer.receipt_ids`` its receipts."""

    def __init__(self, answer: Any) -> None:
        super().__init__(f"{answer.result.code}: {answer.result.reason} {answer.result.detail.get('message', '')}")
        self.code = answer.result.code
        self.reason = f"{answer.result.reason} {answer.result.detail.get('message', '')}".strip()
        self.answer = answer


class WitnessError(G6Error):
    """A tlog witness (https://c2sp.org/tlog-witness) did not cosign a checkpoint. The message names the
    witness, its URL and the HTTP status; ``.witness``, ``.url``, ``.status`` (None: no HTTP answer)."""

    code = "G6_E_WITNESS"

    def __init__(self, message: str, witness: str = "", url: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.witness = witness
        self.url = url
        self.status = status


class WitnessUnreachable(WitnessError):
    code = "G6_E_WITNESS_UNREACHABLE"


class WitnessUnknownLog(WitnessError):
    code = "G6_E_WITNESS_UNKNOWN_LOG"


class WitnessRefusedSignature(WitnessError):
    code = "G6_E_WITNESS_SIGNATURE"


class WitnessInconsistent(WitnessError):
    code = "G6_E_WITNESS_INCONSISTENT"


class WitnessConflict(WitnessError):
    code = "G6_E_WITNESS_CONFLICT"


class WitnessBadRequest(WitnessError):
    code = "G6_E_WITNESS_BAD_REQUEST"
