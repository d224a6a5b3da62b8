"""The gate of ``g6 mcp``: which ops are sensitive, what ``G6_MCP_SENSITIVE`` allows, and how a tool's
outcome becomes its reply (the status word on every reply; a refusal, a failure or a ``G6Error`` as an MCP
error result carrying the typed reply)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from g6.adapters.outcomes import BLOCKED, QUALIFIED, status_of
from g6.errors import G6Error

SENSITIVE = frozenset({"fetch", "search", "es_mapping", "es_search", "es_count", "es_get_doc", "cite", "recheck",
                       "report_check"})
OPEN = frozenset({"sources", "receipt_show", "ledger_verify", "verify_proof"})
# g6_invoke's skills and ops: True when the op is sensitive.
SKILLS: dict[str, dict[str, bool]] = {
    "knowledge_fetcher": {"fetch": True, "sources": False},
    "ctx_elastic": {"search": True, "get_doc": True, "count": True, "mapping": True},
    "web_fetch": {"fetch": True},
    "knowledge_chunker": {"chunk": True},
    "knowledge_converter": {"convert": True},
    "knowledge_manifest": {"record": True, "recheck": True},
}
SKILL_OPS = frozenset(f"{k}.{o}" for k, ops in SKILLS.items() for o, sens in ops.items() if sens)
# A typed tool runs when its own name, or the skill.op (or skill) it is the typed face of, is listed.
TYPED_AS = {"fetch": "knowledge_fetcher.fetch", "search": "knowledge_fetcher.fetch",
            "es_mapping": "ctx_elastic.mapping", "es_search": "ctx_elastic.search", "es_count": "ctx_elastic.count",
            "es_get_doc": "ctx_elastic.get_doc", "cite": "knowledge_manifest.record",
            "recheck": "knowledge_manifest.recheck"}


def allowed_ops(value: str | None) -> frozenset[str]:
    """The sensitive names ``G6_MCP_SENSITIVE`` allows: typed tool names and ``skill.op`` names."""
    names = {v.strip() for v in (value or "").split(",") if v.strip()}
    if "all" in names:
        return SENSITIVE | SKILL_OPS
    out: set[str] = set()
    unknown = []
    for n in names:
        if n in SKILLS:
            out |= {f"{n}.{o}" for o, sens in SKILLS[n].items() if sens}
        elif n in SKILL_OPS or n in SENSITIVE:
            out.add(n)
        elif n not in OPEN and n != "knowledge_fetcher.sources":
            unknown.append(n)
    if unknown:
        raise G6Error(f"G6_MCP_SENSITIVE names unknown ops: {sorted(unknown)}; known: skill.op "
                      f"({', '.join(sorted(SKILL_OPS))}), a skill ({', '.join(SKILLS)}), a typed tool "
                      f"({', '.join(sorted(SENSITIVE))}) or all")
    out |= {t for t, so in TYPED_AS.items() if so in out}
    return frozenset(out)


def refusal(op: str) -> dict[str, Any]:
    skill = op.split(".", 1)[0] if "." in op else None
    alts = f" (or {skill} for all its ops, or 'all')" if skill else " (or a comma-separated list, or 'all')"
    return {"outcome": "policy_denied", "code": "G6_E_MCP_OP_NOT_ALLOWED", "status": BLOCKED, "op": op,
            "add": op,
            "message": f"'{op}' reaches the network or reads stored data, so it runs only when the server's "
                       f"operator allows it: start the server with G6_MCP_SENSITIVE={op}{alts}. Nothing was sent."}


def gate_note(tool: str) -> str:
    """The sentence a sensitive tool's description ends with: that it is gated and how to allow it."""
    skill = TYPED_AS[tool].split(".", 1)[0]
    return (f"Gated: runs only when the server is started with G6_MCP_SENSITIVE listing {tool} (or "
            f"{TYPED_AS[tool]}, {skill}, or all); otherwise the call is refused with an error result "
            "naming what to add, and nothing is sent.")


def is_failure(reply: Mapping[str, Any]) -> bool:
    """A refusal or a failure: the ``blocked-escalated`` status word, or runx's own denial words."""
    if "decision" in reply and "provenance" in reply:  # runx's fetch_result has no status word
        return reply["decision"] in ("policy_denied", "provider_error")
    return reply.get("status") == BLOCKED


def as_result(reply: dict[str, Any]) -> Any:
    """A refusal or failure goes back as an MCP error result (``isError``) so a client cannot take it for
    an answer; its structured content is the same typed reply, so the code and message stay readable."""
    if not is_failure(reply):
        return reply
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(reply, ensure_ascii=False))],
                          structured_content=reply, is_error=True)


MAX_MESSAGE = 1000  # a message quotes inputs in part only: a 60 MB argument is never sent back (twice)
_NOT_FOUND = re.compile(r"(no receipt .*?) in \S.*", re.DOTALL)  # the ledger: a file or a database URL


def bounded(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + f"… ({len(message):,} characters)"


def input_error(e: G6Error) -> dict[str, Any]:
    code = getattr(e, "code", "G6_E_INPUT")
    message = str(e)
    if code == "G6_E_LEDGER_RECEIPT_NOT_FOUND":  # the ledger's message names its file: not the agent's business
        message = _NOT_FOUND.sub(r"\1 in this server's ledger", message)
    d = {"outcome": "rejected", "code": code, "status": BLOCKED, "message": bounded(message)}
    if getattr(e, "detail", None):
        d["detail"] = e.detail  # type: ignore[attr-defined]
    return d


def failed_check(d: Mapping[str, Any]) -> bool:
    """A check that ran and did not hold: ``report_check``'s or ``recheck``'s nonzero ``exit_code`` (a quote not
    found, a changed page, a citation that could not be checked), or a verification's ``ok: false``. Its code says
    the check was done; the reply is still a failure, so that an agent reading only ``isError`` is not misled."""
    code = d.get("exit_code")
    if isinstance(code, int) and not isinstance(code, bool):
        return code != 0
    return "code" not in d and d.get("ok", True) is False  # ledger_verify, verify_proof: the CLI's objects


def with_status(d: dict[str, Any]) -> dict[str, Any]:
    """Every reply carries the status word (from its code, else from its ``ok``), ``blocked-escalated`` for a
    failed check whatever its code, and a failure carries a top-level ``message``; runx's ``fetch_result``
    keeps ``status`` as the HTTP status, as its document has it."""
    if "decision" in d and "provenance" in d:
        return d
    if "status" not in d or not isinstance(d["status"], str):
        if "status" in d:
            d["http_status"] = d.pop("status")
        d["status"] = status_of(d["code"]) if "code" in d else QUALIFIED
    if failed_check(d):
        d["status"] = BLOCKED
    if d["status"] == BLOCKED and not isinstance(d.get("message"), str):
        d["message"] = _failure_message(d)
    return d


def _failure_message(d: Mapping[str, Any]) -> str:
    """A one-line message for a failure whose reply had none (a failed read says ``reason``, a check its figures)."""
    detail = d.get("detail")
    if isinstance(detail, Mapping) and isinstance(detail.get("message"), str) and detail["message"]:
        return bounded(detail["message"])
    if "exit_code" in d:
        return f"the check did not hold (exit code {d['exit_code']}): see the verdicts"
    if "ok" in d:
        checks = d.get("checks")
        failed = ([str(c.get("check")) for c in checks if isinstance(c, Mapping) and c.get("ok") is False]
                  if isinstance(checks, list) else
                  [str(k) for k, c in checks.items() if isinstance(c, Mapping) and c.get("ok") is False]
                  if isinstance(checks, Mapping) else [])
        return bounded(f"the verification failed: {', '.join(failed)} did not hold" if failed else
                       "the verification failed: see its checks")
    what = d.get("outcome") or "failed"
    reason = d.get("reason")
    return bounded(f"{what}: {reason}" if isinstance(reason, str) and reason else str(what))


def gated(allowed: frozenset[str], op: str, run: Callable[[], dict[str, Any]]) -> Any:
    """``run()``'s reply, or the refusal naming ``op`` when it is sensitive and not in ``allowed`` (then
    ``run`` is never called, so nothing is sent). A ``G6Error`` or ``ValueError`` from ``run`` is a typed
    rejection, not a protocol error."""
    if (op in SENSITIVE or op in SKILL_OPS) and op not in allowed:
        return as_result(refusal(op))
    try:
        return as_result(with_status(run()))
    except G6Error as e:
        return as_result(input_error(e))
    except ValueError as e:
        return as_result({"outcome": "rejected", "code": "G6_E_INPUT", "status": BLOCKED, "message": bounded(str(e))})
