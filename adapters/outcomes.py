"""Typed outcomes with stable codes. A failure is never read as "nothing there".

Each outcome has a stable code per operation (``G6_E_KNOWLEDGE_FETCH_BLOCKED``,
``G6_E_KNOWLEDGE_SEARCH_RATE_LIMITED``…) and a trust label saying what the result is evidence of:

* ``content`` — the source answered; the body is evidence of what it said (its text is still
  untrusted data, never instructions);
* ``explicit_empty`` — the source itself said there is nothing (e.g. OAI-PMH ``noRecordsMatch``);
* ``no_evidence`` — nothing can be concluded about the content: the read failed or was refused.
"""

from __future__ import annotations

from enum import StrEnum


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
    def trust(self) -> str:
        if self is Outcome.OK:
            return "content"
        if self is Outcome.EMPTY:
            return "explicit_empty"
        return "no_evidence"

    def code(self, op: str = "fetch") -> str:
        op = op.upper()
        if self is Outcome.OK:
            return f"G6_OK_KNOWLEDGE_{op}"
        if self is Outcome.EMPTY:
            return f"G6_OK_KNOWLEDGE_{op}_EMPTY"
        return f"G6_E_KNOWLEDGE_{op}_{self.name}"


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
