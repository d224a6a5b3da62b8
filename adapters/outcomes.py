"""Typed outcomes, their stable codes and the documents' ``status`` word: one vocabulary.

Every code is ``G6_E_<AREA>_<WHAT>``; the knowledge fetcher's and the Elasticsearch reader's own
documents name most of them (``G6_E_KNOWLEDGE_FETCHED``, ``G6_E_KNOWLEDGE_FETCH_BLOCKED``,
``G6_E_KNOWLEDGE_ELASTIC_SEARCHED``, ``G6_E_OUTSIDE_PROGRAM_MISSING`` …) and those are used exactly:
in ``--json``, MCP replies, receipts' ``outcome_code`` and exceptions' ``.code``. Every reply also
carries ``status``: ``qualified-draft`` for a result one may read (ok, empty, no match, partial)
and ``blocked-escalated`` for every failure and refusal. ``VOCABULARY`` lists every code with its
status; the table in docs/concepts.md is checked against it.

Each outcome also has a trust label saying what the result is evidence of:

* ``content`` — the source answered; the body is evidence of what it said (its text is still
  untrusted data, never instructions);
* ``explicit_empty`` — the source itself said there is nothing (e.g. OAI-PMH ``noRecordsMatch``);
* ``no_evidence`` — nothing can be concluded about the content: the read failed or was refused.
"""

from __future__ import annotations

from enum import StrEnum

QUALIFIED = "qualified-draft"
BLOCKED = "blocked-escalated"


class Outcome(StrEnum):
    OK = "ok"
    EMPTY = "empty"
    REFUSED = "refused"
    POLICY_DENIED = "policy_denied"
    ROBOTS_DISALLOWED = "robots_disallowed"
    BLOCKED = "blocked"
    NOT_FOUND = "not_found"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    HTTP_ERROR = "http_error"
    TOO_LARGE = "too_large"
    UNREACHABLE = "unreachable"
    PARSE_FAILED = "parse_failed"
    REJECTED = "rejected"
    PARTIAL = "partial"  # the source answered for only part of what was asked (shard failures, timed_out)

    @property
    def is_success(self) -> bool:
        return self in (Outcome.OK, Outcome.EMPTY)

    @property
    def status(self) -> str:
        """The documents' word for what a caller may do with the result."""
        return QUALIFIED if self in (Outcome.OK, Outcome.EMPTY, Outcome.PARTIAL) else BLOCKED

    @property
    def trust(self) -> str:
        if self is Outcome.OK:
            return "content"
        if self is Outcome.EMPTY:
            return "explicit_empty"
        return "no_evidence"

    def code(self, op: str = "fetch") -> str:
        """The code of this outcome for ``op``: ``fetch`` (a page or a paper search) or ``convert``."""
        area = _AREAS[op]
        if self is Outcome.OK:
            return f"G6_E_KNOWLEDGE_{_DONE[area]}"
        return f"G6_E_KNOWLEDGE_{area}_{self.name}"


# A paper search is the knowledge fetcher's ``fetch`` with a paper ``source``, so it shares its codes.
_AREAS = {"fetch": "FETCH", "search": "FETCH", "convert": "CONVERT"}
_DONE = {"FETCH": "FETCHED", "CONVERT": "CONVERTED"}
# The outcomes each area can end in (policy_denied: our allowlist; the document's list otherwise).
_FETCH_OUTCOMES = tuple(o for o in Outcome if o is not Outcome.PARTIAL)
_CONVERT_OUTCOMES = (Outcome.OK, Outcome.EMPTY, Outcome.PARSE_FAILED)


# -- the Elasticsearch reader's codes --------------------------------------------------------
ES_OK = {"search": "G6_E_KNOWLEDGE_ELASTIC_SEARCHED", "count": "G6_E_KNOWLEDGE_ELASTIC_COUNTED",
         "mapping": "G6_E_KNOWLEDGE_ELASTIC_MAPPING_READ", "get": "G6_E_KNOWLEDGE_ELASTIC_DOC_READ"}
OUTSIDE_PROGRAM_MISSING = "G6_E_OUTSIDE_PROGRAM_MISSING"


def es_code(op: str, outcome: Outcome, reason: str = "") -> str:
    """The code of an Elasticsearch read: ``op`` is search, count, mapping or get."""
    if outcome is Outcome.OK:
        return ES_OK[op]
    if outcome is Outcome.EMPTY:
        return "G6_E_KNOWLEDGE_ELASTIC_NO_MATCH"
    if outcome is Outcome.PARTIAL:
        return "G6_E_KNOWLEDGE_ELASTIC_COUNT_PARTIAL" if op == "count" else "G6_E_KNOWLEDGE_ELASTIC_PARTIAL"
    if outcome is Outcome.UNREACHABLE:
        return "G6_E_KNOWLEDGE_ELASTIC_TIMEOUT" if reason == "timeout" else OUTSIDE_PROGRAM_MISSING
    if outcome is Outcome.REFUSED and reason == "redirect_not_followed":
        return "G6_E_KNOWLEDGE_ELASTIC_REDIRECTED"
    return f"G6_E_KNOWLEDGE_ELASTIC_{_ES_NAMES.get(outcome, outcome.name)}"


def es_status(op: str, outcome: Outcome) -> str:
    # a count whose shards did not all answer is refused (its number is not "the count")
    return BLOCKED if outcome is Outcome.PARTIAL and op == "count" else outcome.status


_ES_NAMES = {Outcome.BLOCKED: "DENIED"}
_ES_OUTCOMES = (
    ("search", Outcome.OK, "", "`search` answered in full"),
    ("count", Outcome.OK, "", "`count` answered in full"),
    ("mapping", Outcome.OK, "", "`mapping`: the index's fields and types were read"),
    ("get", Outcome.OK, "", "`get_doc`: one document's `_source` was read"),
    ("search", Outcome.EMPTY, "", "`search`: the server answered with no match"),
    ("search", Outcome.PARTIAL, "", "`search`: some shards failed or the search timed out on the server"),
    ("count", Outcome.PARTIAL, "", "`count`: shards did not all answer (their sum is in the receipt, never the count)"),
    ("search", Outcome.UNREACHABLE, "connect", "nothing answering at G6_ELASTIC_URL"),
    ("search", Outcome.UNREACHABLE, "timeout", "the server did not answer in time"),
    ("search", Outcome.REFUSED, "redirect_not_followed", "the server answered with a redirect (never followed)"),
    ("search", Outcome.BLOCKED, "", "401 or 403"),
    ("search", Outcome.NOT_FOUND, "", "no such index or document"),
    ("search", Outcome.REJECTED, "", "the server refused the request (400)"),
    ("search", Outcome.SERVER_ERROR, "", "5xx"),
    ("search", Outcome.PARSE_FAILED, "", "a reply that is not Elasticsearch's, or hits with none of the fields' text"),
    ("search", Outcome.RATE_LIMITED, "", "429"),
    ("search", Outcome.TOO_LARGE, "", "a reply over 64 MiB"),
    ("search", Outcome.HTTP_ERROR, "", "another error status or a broken reply"),
)

# Refusals before anything is sent (exceptions carry these as ``.code``).
REFUSALS: dict[str, str] = {
    "G6_E_KNOWLEDGE_UNKNOWN_SOURCE": "a source that is not registered",
    "G6_E_KNOWLEDGE_FETCH_INPUT": "no url or query, a malformed arXiv category, another bad fetch argument",
    "G6_E_KNOWLEDGE_FETCH_ADAPTER": "a registered source adapter that raised",
    "G6_E_KNOWLEDGE_ELASTIC_INPUT": "an index name that is a pattern, a list, a path or a hidden index; a bad argument",
    "G6_E_KNOWLEDGE_FIELD_NOT_IN_MAPPING": "a field the index does not hold (the reason lists what it holds)",
    "G6_E_KNOWLEDGE_FILTER_ON_TEXT": "an exact filter on analysed text",
    "G6_E_KNOWLEDGE_NESTED_FIELD": "a field inside a nested object",
    "G6_E_KNOWLEDGE_NO_TEXT_FIELDS": "words to search in an index with no text fields",
    "G6_E_MCP_OP_NOT_ALLOWED": "a sensitive MCP op the server's operator did not list in G6_MCP_SENSITIVE",
    "G6_E_MCP_UNKNOWN_OP": "a g6_invoke skill or op that does not exist",
    "G6_E_WEB_FETCH_INPUT": "a web_fetch call without a url (nothing starts, nothing is sealed)",
    "G6_E_INPUT": "another bad input (a URL, a flag, a file)",
    "G6_E_CONFIG": "a bad setting in the environment or $G6_HOME/.env",
    "G6_E_HOME": "a `--home` that is a file, unreadable, or an empty path",
    "G6_E_CITE_INTERSTITIAL": ("a citation of a read that met a login, challenge or consent wall (the receipt's "
                               "`interstitial`): its words are the wall's"),
    "G6_E_CITE_QUOTE_TOO_SHORT": ("a quote with fewer than 8 letters or digits (an ideograph, kana or Hangul syllable "
                                  "counts 2): a letter, a stop word, a bare figure is on most pages, so it is no "
                                  "evidence; nothing was looked for"),
    "G6_E_STORE_BLOB_NOT_FOUND": "a digest the store does not hold",
    "G6_E_STORE_BAD_DIGEST": "a digest string that is not algo:hex",
    "G6_E_STORE_BLOB_REDACTED": "bytes a redaction entry took out of the home (the message names its seq and reason): "
                                "never served or read again; the receipts that read them stay",
    "G6_E_STORE_BLOB_CORRUPT": "bytes that do not hash to the digest they are kept or asked under (nothing served)",
    "G6_E_STORE_DISK_FULL": "the disk ran out while writing a blob; nothing half-written is visible",
    "G6_E_STORE_BACKEND": "the blob store (S3) is down or refuses; the message names it and what to check",
    "G6_E_LEDGER_KEY": "no signing key, or an unreadable or unknown key",
    "G6_E_LEDGER_RECEIPT_NOT_FOUND": "a receipt id the ledger does not hold",
    "G6_E_LEDGER_RECEIPT_UNVERIFIED": "a receipt whose signature does not verify with a trusted key: `g6 receipt "
                                      "export` does not sign it again as an attestation or a credential",
    "G6_E_LEDGER_DISK_FULL": "the disk ran out while appending; the transaction was rolled back",
    "G6_E_LEDGER_BACKEND": "the ledger database (PostgreSQL) is down or refuses; the message says what to check",
    "G6_E_LEDGER_RECEIPT_TOO_LARGE": "a receipt over 65,535 bytes of canonical JSON (more than an entry of a "
                                     "published log holds); nothing of its batch was appended",
    "G6_E_LEDGER_PROOF_NOT_COVERED": "a receipt no checkpoint covers yet, asked of a home that may not sign one "
                                     "(read only, as `g6 serve` opens it): its owner runs `g6 ledger checkpoint`",
    "G6_E_LEDGER": "another ledger error (a broken chain or database)",
    "G6_E_STORE": "another blob store error",
    "G6_E_PUBLISH": "a log that cannot be published where asked (the destination cannot be written, holds "
                    "another log, or is ahead)",
    "G6_E_PUBLISH_CONFLICT": "the destination holds another history: a full tile, an entry bundle or the "
                             "checkpoint there differs from the ledger (nothing overwritten)",
    "G6_E_MONITOR_STATE": "a `g6 monitor --state` folder whose state file is not a monitor's, is garbled, or is of "
                          "another log or key (nothing fetched, the file left as it is)",
    "G6_E_MONITOR_UNREACHABLE": "`g6 monitor`: the log's checkpoint could not be fetched (no answer, a status "
                                "other than 200, or past the note limit); nothing checked",
    "G6_E_PROOF_FORMAT": "a proof that is not a transparency-log proof",
    "G6_E_REPORT": "a report `g6 report check` cannot read (another reason); the message says where",
    "G6_E_REPORT_FORMAT": "an unknown report `--format`, or a report whose format could not be told (none fits, "
                          "or several do): the message lists the formats tried",
    "G6_E_REPORT_MALFORMED": "a report that is malformed JSON, Markdown that is not text, or JSON not of its "
                             "format's shape; the message names the field",
    "G6_E_REPORT_ENCODING": "report bytes that are not UTF-8 (nor UTF-16/32 with a BOM); the message names the "
                            "first byte that does not decode",
    "G6_E_REPORT_OFFSET": "a report citation whose offsets fall outside the text or inside a UTF-8 sequence",
    "G6_E_REPORT_TOO_LARGE": "a report, a quote or a citation count over its limit (docs/commands/report.md)",
    "G6_E_REPORT_REPLAY": "`g6 report check --replay RESULT` with a result of other report bytes, or of the "
                          "report read another way (another count of citations); nothing checked",
    "G6_E_REPORT_REPLAY_UNVERIFIED": "`g6 report check --replay RESULT` whose result does not verify (its "
                                     "signature, figures or manifest); nothing checked",
    "G6_E_BUNDLE": "a bundle that cannot be written or read",
    "G6_E_BUNDLE_MEMBER": "a bundle member that is unsafe or not what bundle.json declares for it",
    "G6_E_WACZ_UNAVAILABLE": "g6 export wacz without the optional wacz package",
    "G6_E_WACZ": "a WACZ that could not be written or did not validate",
    "G6_E_WORKER_LOST": "a URL of `g6 fetch --input` whose worker process ended before reporting it (no receipt: "
                        "a resumed run fetches it again)",
    "G6_E_MCP_STOPPING": "a tool call that reached `g6 mcp` after SIGINT or SIGTERM: not run (the calls under way "
                         "finish first)",
    "G6_E_POLICY": "a witness policy file (C2SP tlog-policy) that cannot be read or is not valid; the message names "
                   "the line",
    "G6_E_WITNESS": "a tlog witness did not cosign a checkpoint (another reason); the message names the witness and "
                    "its URL",
    "G6_E_WITNESS_UNREACHABLE": "a tlog witness that did not answer, or answered past 64 KiB",
    "G6_E_WITNESS_UNKNOWN_LOG": "a tlog witness that does not know the log's origin (404, or 403 `unknown log`)",
    "G6_E_WITNESS_SIGNATURE": "a tlog witness that trusts another key for the log (403), or returned a cosignature "
                              "that does not verify",
    "G6_E_WITNESS_INCONSISTENT": "a tlog witness that refused the checkpoint as inconsistent with what it cosigned "
                                 "(422: a fork?)",
    "G6_E_WITNESS_CONFLICT": "a tlog witness whose size moved again after the retry, or is past the checkpoint's (409)",
    "G6_E_WITNESS_BAD_REQUEST": "a tlog witness that refused the request (400, another status) or answered without its "
                                "cosignature",
    "G6_E_TSA": "an RFC 3161 time-stamping authority that could not be reached, answered otherwise, refused, or "
                "sent a token that does not hold; the message names the TSA",
    "G6_E_BLOB_REDACTION": "`g6 blob redact|hold|release|expire` refused (another reason); nothing was appended or "
                           "removed",
    "G6_E_BLOB_UNREFERENCED": "a digest, receipt or URL no read of this ledger names (or whose reads kept no body): "
                              "there are no bytes a redaction or hold would cover",
    "G6_E_BLOB_ALREADY_REDACTED": "a body a redaction entry already covers (the message names its seq and reason); "
                                  "nothing was appended",
    "G6_E_BLOB_ON_HOLD": "a body under a legal hold: `g6 blob redact` refuses it until `g6 blob release` (the "
                         "message names the hold's seq)",
    "G6_E_BLOB_NOT_HELD": "a release of bodies no hold covers",
    "G6_E_FAILED": "a command that failed (exit 1) for a reason no more precise code names; under `--json` the "
                   "refusal object carries it",
    "G6_E_INTERNAL": "an error g6 raised on purpose without a more precise code",
}
# Results of the composed ops that are not an Outcome.
DONE: dict[str, str] = {
    "G6_E_KNOWLEDGE_SOURCES_LISTED": "the registered sources (nothing fetched)",
    "G6_E_KNOWLEDGE_CHUNKED": "a stored document cut into passages",
    "G6_E_KNOWLEDGE_MANIFEST_RECORDED": "a citation added to a manifest",
    "G6_E_KNOWLEDGE_MANIFEST_RECHECKED": "every citation of a manifest re-checked (verdicts per citation)",
    "G6_E_REPORT_CHECKED": "every citation of a report checked against the bytes (a verdict per citation, the "
                           "signed result)",
    "G6_E_LEDGER_KEY_ADDED": "a key entry: a writer key added to the log (signed by a key valid there)",
    "G6_E_LEDGER_KEY_RETIRED": "a key entry: a key retired in the log; nothing it signs after counts",
    "G6_E_BLOB_REDACTED": "a redaction entry: bodies (and the copies derived from them) taken out of the store, with "
                          "the reason, the note and the receipts that read them; readers say redacted",
    "G6_E_BLOB_HOLD": "a hold entry: bodies put under a legal hold (redact, expire and gc leave them)",
    "G6_E_BLOB_HOLD_RELEASED": "a hold entry: a legal hold lifted",
    "G6_E_LEDGER_WACZ_KEY_ADDED": "a WACZ key entry: the P-384 key that signs WACZ exports, bound to the log",
    "G6_E_LEDGER_WACZ_KEY_RETIRED": "a WACZ key entry: a WACZ signing key retired; WACZ files it signs after "
                                    "are not vouched for",
}


def vocabulary() -> dict[str, tuple[str, str]]:
    """Every code g6 answers with: code -> (status, what it means). docs/concepts.md's table lists the same."""
    out: dict[str, tuple[str, str]] = {}
    for o in _FETCH_OUTCOMES:
        out[o.code("fetch")] = (o.status, f"knowledge fetcher `fetch`: {o.value}")
    for o in _CONVERT_OUTCOMES:
        out[o.code("convert")] = (o.status, f"knowledge converter `convert`: {o.value}")
    for op, o, reason, what in _ES_OUTCOMES:
        out[es_code(op, o, reason)] = (es_status(op, o), f"Elasticsearch reader: {what}")
    for code, what in REFUSALS.items():
        out[code] = (BLOCKED, what)
    for code, what in DONE.items():
        out[code] = (QUALIFIED, what)
    return out


def status_of(code: str) -> str:
    """The status a code carries (an unknown code is a failure, never a result)."""
    return vocabulary().get(code, (BLOCKED, ""))[0]


def outcome_for_status(status: int) -> Outcome:
    """The outcome an HTTP status alone implies (2xx is decided by the body, not here)."""
    if 200 <= status < 300:
        return Outcome.OK
    if status in (401, 403, 407, 451):
        return Outcome.BLOCKED
    if status in (404, 410):
        return Outcome.NOT_FOUND
    if status == 429:
        return Outcome.RATE_LIMITED
    if 500 <= status < 600:
        return Outcome.SERVER_ERROR
    return Outcome.HTTP_ERROR
