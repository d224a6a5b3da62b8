"""runx web-fetch: one public URL through G6's checked fetch, answered as runx's ``fetch_result``.

    g6_invoke("web_fetch", "fetch", {"url": ..., "allowlist": [...], "extract": "text", "max_bytes": 200000})
    g6 fetch URL --as runx

The fetch is ``g6.fetch.capture.fetch`` (every hop's address and allowlist checked, ``max_bytes``, the
body kept by digest, a signed receipt): this module only shapes its answer. ``decision`` is
``ready``; ``policy_denied`` when the first host or a redirect leaves the allowlist (the first host
is checked before any network call, a redirect's partial body is discarded); ``needs_agent`` when
the page answered but holds nothing this fetch can extract (text only scripts draw, a binary
body), or answered with a wall in front of the page (a login, challenge or consent page:
``interstitial`` says which and what gave it away; ``extracted`` is the wall's text);
``provider_error`` for every other failure, with G6's typed ``outcome`` and ``code`` beside it.
``status`` is the HTTP status, as runx's document has it. ``allowlist`` defaults to ``["*"]``: any
public host (the address checks still apply). Every reply validates against
``schemas/fetch-result.runx.v1.schema.json``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from g6.adapters.html.page import EXTRACT_MODES
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy
from g6.adapters.net.urls import URLError, normalise_pattern
from g6.adapters.outcomes import Outcome
from g6.errors import WebFetchInputError
from g6.fetch.capture import FetchResult as PageResult
from g6.home import EvidenceHome

ANY_HOST = "*"
INPUTS = ("url", "allowlist", "extract", "max_bytes")
METADATA_KEYS = ("title", "description", "canonical", "language", "content_type")


def check_inputs(args: Mapping[str, Any]) -> tuple[str, tuple[str, ...], str, int | None]:
    """runx's runner preflight: the exact missing or bad input, before anything starts."""
    unknown = sorted(set(args) - set(INPUTS))
    if unknown:
        raise WebFetchInputError(f"web_fetch takes no input {', '.join(map(repr, unknown))}; inputs: "
                                 f"{', '.join(INPUTS)}")
    url = args.get("url")
    if not isinstance(url, str) or not url.strip():
        raise WebFetchInputError("missing required input: url (the single public HTTP(S) URL to fetch)")
    allow = args.get("allowlist")
    if allow is None:
        allow = [ANY_HOST]
    if isinstance(allow, str) or not isinstance(allow, Sequence) or not all(isinstance(a, str) for a in allow) \
            or not allow:
        raise WebFetchInputError("allowlist must be a non-empty list of hosts or host patterns")
    for pattern in allow:
        if pattern != ANY_HOST:
            try:
                normalise_pattern(pattern)
            except URLError as e:
                raise WebFetchInputError(f"allowlist: {e}") from None
    extract = args.get("extract") or "text"
    if extract not in EXTRACT_MODES:
        raise WebFetchInputError(f"extract must be one of {', '.join(EXTRACT_MODES)}, got {extract!r}")
    max_bytes = args.get("max_bytes")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0):
        raise WebFetchInputError("max_bytes must be a whole number of bytes, 0 or more")
    return url.strip(), tuple(allow), extract, max_bytes


def runx_args(url: str, allow: Sequence[str], extract: str, max_bytes: int | None) -> dict[str, Any]:
    """The web-fetch inputs of ``g6 fetch URL --as runx`` (``--allow`` is the allowlist)."""
    args: dict[str, Any] = {"url": url, "extract": extract}
    if allow:
        args["allowlist"] = list(allow)
    if max_bytes is not None:
        args["max_bytes"] = max_bytes
    return args


def policy_for(base: FetchPolicy, allowlist: tuple[str, ...], max_bytes: int | None) -> FetchPolicy:
    """``["*"]`` is any public host: no allowlist beyond the operator's own; else the caller's."""
    from dataclasses import replace

    narrowed = base.allowlist if ANY_HOST in allowlist else allowlist
    return replace(base, allowlist=narrowed, max_bytes=max_bytes if max_bytes is not None else base.max_bytes)


def _host(url: str | None) -> str | None:
    try:
        return urlsplit(url or "").hostname
    except ValueError:
        return None


def _extracted(result: PageResult, mode: str) -> Any:
    if not result.documents:
        return None
    doc = result.documents[0]
    if mode == "text":
        return doc.text
    if mode == "links":
        return list(doc.links or ())
    meta = {"title": doc.title, **{k: doc.metadata.get(k) for k in ("description", "canonical", "language")},
            "content_type": doc.content_type}
    return {k: meta.get(k) for k in METADATA_KEYS}


def fetch_result(result: PageResult, fetched_at: str, allowlist: tuple[str, ...], mode: str,
                 hops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """runx's ``fetch_result`` for one finished fetch (its receipt already sealed)."""
    o = result.outcome
    detail = dict(result.detail)
    if o is Outcome.POLICY_DENIED:
        decision = "policy_denied"
    elif result.interstitial is not None and result.status is not None:
        decision = "needs_agent"  # a login, challenge or consent wall answered: someone must act first
    elif o is Outcome.OK and result.documents:
        decision = "ready"
    elif o in (Outcome.OK, Outcome.EMPTY) and result.status is not None:
        decision = "needs_agent"  # the page answered, but holds nothing this fetch can extract
    else:
        decision = "provider_error"
    redirects = []
    for i, hop in enumerate(hops[:-1] if o is not Outcome.POLICY_DENIED else hops):
        nxt = hops[i + 1]["url"] if i + 1 < len(hops) else detail.get("url")
        denied = o is Outcome.POLICY_DENIED and i + 1 >= len(hops)
        redirects.append({"from": hop["url"], "to": nxt, "status": hop["status"], "host": _host(nxt),
                          "allowlist": "denied" if denied else "allowed"})
    denied = decision == "policy_denied"
    ready = decision in ("ready", "needs_agent")
    digest = (result.content or {}).get("sha256") if not denied else None
    out: dict[str, Any] = {
        "decision": decision,
        "final_url": result.final_url if not denied else None,
        "status": result.status,
        "content_digest": digest,
        "extract_mode": mode,
        "extracted": _extracted(result, mode) if ready else None,
        "provenance": {"fetched_at": fetched_at, "redirects": redirects,
                       "bytes": result.byte_count if not denied else 0, "truncated": result.truncated},
        "policy": {"allowlist_decision": "denied" if denied else "allowed",
                   "attempted_host": detail.get("host") or _host(result.requested_url) if denied else None,
                   "allowlist_checked": list(allowlist)},
        "outcome": o.value,
        "code": result.code,
        "reason": result.reason,
        "receipt_id": result.receipt_id,
    }
    if denied:
        out["policy"]["failed_hop"] = detail.get("hop", 0)
    if result.interstitial is not None:  # only when flagged, as in the receipt
        out["interstitial"] = dict(result.interstitial)
    return out


def web_fetch(home: EvidenceHome, client: CheckedClient, args: Mapping[str, Any]) -> dict[str, Any]:
    """Run one web-fetch: preflight, the checked fetch (receipt sealed), then ``fetch_result``."""
    from g6.fetch.capture import fetch

    url, allowlist, mode, max_bytes = check_inputs(args)
    pol = policy_for(client.policy, allowlist, max_bytes)
    result = fetch(home, client, url, extract=mode, policy=pol)
    receipt = home.ledger.get(result.receipt_id)
    hops = [h.to_json() for h in receipt.hops]
    return fetch_result(result, receipt.fetched_at, allowlist, mode, hops)
