"""The check's result (``schemas/report-check.v1.schema.json``): every citation's verdict and the read it rests
on, the figures, the manifest of the citations whose quotes were found, the judge's opinions beside the
verdicts, signed with the home's Ed25519 key over RFC 8785 canonical JSON of the result without its
``signature``, as a manifest is (:mod:`g6.cite.manifest`). ``verify_result`` checks one offline and fails
closed: unsigned, a key not pinned or trusted, a figure that is not what the citations add up to, or a
manifest that is not the found citations', each fails the result.

What a result shows of the report's own words is bounded (a quote or a claim: its first ``MAX_SHOWN``
characters, with the whole one's length and sha256), so a report of hostile size gives a result of bounded
size per citation.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from g6 import TOOL_NAME, __version__
from g6.cite.manifest import Manifest
from g6.errors import InputError
from g6.ledger.keys import SigningKey, VerifyKey
from g6.ledger.receipts import (
    RepeatedKey,
    Signature,
    _plain_dumps,
    _plain_json,
    canonical_json,
    check_signature,
    new_receipt_id,
    refuse_repeated_keys,
    utc_now,
)
from g6.ledger.verdict import CheckVerdict
from g6.prove.bundle_report import PINNED, SHIPPED
from g6.report.check import CheckRun, iter_citations
from g6.report.model import ReportCitation
from g6.report.verdicts import VERDICTS, Verdict, bounded, sha256_text

SCHEMA = "g6.report-check.v1"
MAX_RESULT = 512 * 1024 * 1024  # bytes of a result `g6 report verify` reads
# exit codes of `g6 report check`, the project's (docs/commands/README.md): 0 every citation's quote was found,
# 1 anything else: the check fails closed, so a citation that could not be checked is a failure, not a pass
EXIT_FOUND, EXIT_FAILED = 0, 1


def found_manifest(run: CheckRun) -> Manifest | None:
    """The manifest of the citations whose quotes were found in a page (a citation of a PDF's converted text is
    not one a manifest can hold), each once (``Manifest.with_citation``'s rule, by citation id); None when there
    is none."""
    unique = {v.citation.citation_id: v.citation for v in run.verdicts if v.citation is not None}
    return replace(Manifest.new(), citations=tuple(unique.values())) if unique else None


def figures(run: CheckRun) -> dict[str, Any]:
    counts = Counter(v.verdict for v in run.verdicts)
    n = len(run.verdicts)
    failed_sources = {c.source for c, v in iter_citations(run) if v.verdict == "source_failed"}
    return {"citations": n, **{k: counts.get(k, 0) for k in VERDICTS},
            "quote_found_share": round(counts.get("quote_found", 0) / n, 4) if n else 0.0,
            "sources": len({c.source for c in run.report.citations}), "sources_failed": len(failed_sources),
            "claims_without_citations": len(run.report.uncited_claims)}


def exit_code(counts: Mapping[str, int]) -> int:
    """0 only when there is a citation and every citation's quote was found; 1 otherwise: a quote not found, a
    read that ended on another page, a source that failed or could not be read, a citation with no quote, or a
    report with no citation at all (nothing was shown to hold)."""
    n = counts.get("citations", 0)
    return EXIT_FOUND if n and counts.get("quote_found", 0) == n else EXIT_FAILED


def _words(text: str | None, name: str) -> dict[str, Any]:
    """``text`` as a result shows it: whole, or its first characters with the whole one's length and sha256."""
    if text is None:
        return {name: None}
    out: dict[str, Any] = {name: bounded(text)}
    if out[name] != text:
        out[f"{name}_chars"], out[f"{name}_sha256"] = len(text), sha256_text(text)
    return out


def citation_json(c: ReportCitation, v: Verdict, opinion: Mapping[str, Any] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"n": c.n, "where": c.where, "source": bounded(c.source, 2000), "title": c.title,
                         **_words(c.claim, "claim"), "claim_start": c.claim_start, "claim_end": c.claim_end,
                         **_words(c.quote, "quote"), **v.to_json()}
    # what else the report says of the source, when it says it: the link as written (when it was read as a paper
    # id or resolved on a base), where in the source (a document's characters or pages), when its author read it
    # and the archived copy it points at: shown, never evidence (a copy elsewhere is another read)
    for name in ("address", "locator", "read_at", "cached"):
        value = getattr(c, name)
        if value is not None:
            d[name] = bounded(value, 2000)
    if opinion is not None:
        d["judge"] = dict(opinion)
    return d


@dataclass(frozen=True, slots=True)
class ResultInputs:
    """What a result says besides the verdicts: the report as given, the evidence, the judge."""

    report_name: str
    report_sha256: str
    report_size: int
    evidence: Mapping[str, Any]  # {"source": home|bundle, "origin", "receipts_only", "bundle"?}
    judge: Mapping[str, Any] | None = None  # {"command", "timeout", "pairs", "answered", "errors"}
    opinions: Mapping[int, Mapping[str, Any]] | None = None  # citation place -> the judge's opinion


def build_result(run: CheckRun, inputs: ResultInputs, manifest: Manifest | None) -> dict[str, Any]:
    """The result, unsigned (``manifest``: the found citations' manifest, signed already, or None)."""
    opinions = inputs.opinions or {}
    return {
        "schema": SCHEMA, "result_id": "rchk_" + new_receipt_id().removeprefix("rcpt_"), "created_at": utc_now(),
        "tool": {"name": TOOL_NAME, "version": __version__}, "run_id": run.run_id,
        "report": {"name": inputs.report_name, "format": run.report.format, "sha256": inputs.report_sha256,
                   "size": inputs.report_size, "citations": len(run.report.citations),
                   "uncited_claims": [bounded(u, 500) for u in run.report.uncited_claims[:1000]]},
        "evidence": dict(inputs.evidence), "figures": (figs := figures(run)), "exit_code": exit_code(figs),
        "judge": dict(inputs.judge) if inputs.judge is not None else None,
        "manifest": manifest.to_json() if manifest is not None else None,
        "citations": [citation_json(c, v, opinions.get(i)) for i, (c, v) in enumerate(iter_citations(run))],
    }


def _citations_json(citations: list[Any]) -> bytes:
    """The citations' canonical JSON: in one orjson call when they are all plain JSON (the usual case; a call a
    citation costs several times more), else a citation at a time, so a float costs only where it is."""
    if _plain_json(citations):
        with contextlib.suppress(UnicodeEncodeError):  # a lone surrogate: refused below, in rfc8785's words
            return _plain_dumps(citations)
    return b"[" + b",".join(canonical_json(c) for c in citations) + b"]"


def canonical(result: Mapping[str, Any]) -> bytes:
    """RFC 8785 canonical JSON of the result without ``signature``, made a citation at a time: a value that is
    not plain JSON (a float: a similarity, a share) sends ``canonical_json`` to rfc8785's per-character path,
    which then costs only for the parts that hold one. The keys here are ASCII, so code-point order is RFC
    8785's UTF-16 order; a property test holds this equal to ``canonical_json`` of the whole."""
    parts = []
    for k in sorted(k for k in result if k != "signature"):
        if not k.isascii():
            return canonical_json({k: v for k, v in result.items() if k != "signature"})
        v = result[k]
        value = _citations_json(v) if k == "citations" and isinstance(v, list) else canonical_json(v)
        parts.append(canonical_json(k) + b":" + value)
    return b"{" + b",".join(parts) + b"}"


def sign_result(result: Mapping[str, Any], key: SigningKey) -> dict[str, Any]:
    sig = Signature("ed25519", key.key_id, base64.b64encode(key.sign(canonical(result))).decode())
    return {**{k: v for k, v in result.items() if k != "signature"}, "signature": sig.to_json()}


# -- verifying ----------------------------------------------------------------------------------------
Check = CheckVerdict  # one verdict of verify_result (not g6.ledger.chain.Check, a row's)


def load_result(data: bytes) -> dict[str, Any]:
    """A result's JSON; an InputError when it is not one (exit 2), before anything is judged."""
    if len(data) > MAX_RESULT:
        raise InputError(f"the result is {len(data):,} bytes; at most {MAX_RESULT:,} are read")
    try:
        d = json.loads(data, parse_constant=_no_constant, object_pairs_hook=refuse_repeated_keys)
    except RepeatedKey as e:
        raise InputError(f"the result repeats the key {str(e)[:80]!r} in an object: not the JSON it was signed "
                         "as (RFC 8785 signs I-JSON)") from None
    except (ValueError, RecursionError) as e:
        raise InputError(f"the result is not JSON: {str(e)[:200]}") from None
    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise InputError(f"not a {SCHEMA} result (schema={str(d.get('schema') if isinstance(d, dict) else None)[:40]})")
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _shape(d: Mapping[str, Any]) -> str | None:
    """What is wrong with the result's shape, or None: every field the checks below read is of its type, so a
    hostile result fails a check and never crashes one."""
    cites = d.get("citations")
    if not isinstance(cites, list) or not all(isinstance(c, dict) for c in cites):
        return "citations is not a list of objects"
    for i, c in enumerate(cites):
        if not isinstance(c.get("verdict"), str) or c["verdict"] not in VERDICTS:
            return f"citation {i} has no known verdict"
        if not isinstance(c.get("citation_id"), str | None):
            return f"citation {i}'s citation_id is not a string"
    if not isinstance(d.get("figures"), dict) or not isinstance(d.get("result_id"), str):
        return "figures or result_id missing"
    if not isinstance(d.get("manifest"), dict | None) or not isinstance(d.get("signature"), dict | None):
        return "manifest or signature is not an object"
    return None


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    """``check()``, or its failure when the result holds what it cannot read (a value RFC 8785 cannot put in
    canonical JSON, nesting past the recursion limit, a field of another type): fails closed, never a crash."""
    try:
        return check()
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        return Check(name, False, f"unreadable: {type(e).__name__}: {str(e)[:160]}")


def _figures_check(d: Mapping[str, Any]) -> Check:
    cites = d["citations"]
    counts = Counter(c["verdict"] for c in cites)
    want = {"citations": len(cites), **{k: counts.get(k, 0) for k in VERDICTS}}
    got = {k: d["figures"].get(k) for k in want}
    if got != want:
        return Check("figures", False, f"the figures say {got}, the citations add up to {want}")
    if d.get("exit_code") != exit_code(want):
        return Check("figures", False, f"exit_code {d.get('exit_code')!r} is not what the verdicts give "
                                       f"({exit_code(want)})")
    return Check("figures", True, f"{len(cites)} citations: " + ", ".join(f"{k} {n}" for k, n in counts.items()))


def _manifest_check(d: Mapping[str, Any], keys: Mapping[str, VerifyKey]) -> Check:
    found = sorted({c["citation_id"] for c in d["citations"] if c.get("citation_id")})
    m = d.get("manifest")
    if m is None:
        ok = not found
        return Check("manifest", ok, "no quote found in a page, no manifest" if ok else
                     "citations name manifest citations but the result holds no manifest")
    try:
        manifest = Manifest.from_json(m)
    except InputError as e:
        return Check("manifest", False, str(e))
    ok, why = manifest.verify_signature(keys)
    if not ok:
        return Check("manifest", False, f"the manifest's signature: {why}")
    if sorted(c.citation_id for c in manifest.citations) != found:
        return Check("manifest", False, "the manifest's citations are not the citations whose quotes were found")
    signer = manifest.signature.key_id if manifest.signature is not None else ""
    return Check("manifest", True, f"{manifest.manifest_id}: {len(found)} citations, signed by {signer}")


def verify_result(d: Mapping[str, Any], keys: Mapping[str, VerifyKey], said: str) -> list[Check]:
    """Every check of a result against ``keys`` (``said``: where they came from, for the words)."""
    shape = _shape(d)
    if shape is not None:
        return [Check("shape", False, shape)]
    return [Check("shape", True, ""), _guarded("signature", lambda: _signature_check(d, keys, said)),
            _guarded("figures", lambda: _figures_check(d)), _guarded("manifest", lambda: _manifest_check(d, keys)),
            _guarded("evidence", lambda: _evidence_check(d))]


def _evidence_check(d: Mapping[str, Any]) -> Check:
    """What the verdicts rest on, said: the home's own receipts, or a bundle and how its keys were trusted. A
    bundle's keys pinned with --key are the publisher's; keys the bundle ships (--trust-bundle-keys) vouch for
    themselves, which holds but is said. A bundle whose trust the result does not record, or records against
    its keys, fails: nothing says the evidence was the publisher's."""
    ev = d.get("evidence")
    if not isinstance(ev, dict) or ev.get("source") not in ("home", "bundle"):
        return Check("evidence", False, "the result does not say where its evidence came from")
    if ev["source"] == "home":
        log = f" (log {str(ev['origin'])[:200]})" if ev.get("origin") else ""
        return Check("evidence", True, f"the receipts of the home that signed it{log}")
    b = ev.get("bundle")
    keys = b.get("keys") if isinstance(b, dict) else None
    if not isinstance(keys, list) or not keys or not all(
            isinstance(k, dict) and isinstance(k.get("key_id"), str) and k.get("source") in (PINNED, SHIPPED)
            for k in keys):
        return Check("evidence", False, "a bundle whose keys the result does not name: how they were trusted is "
                                        "not recorded")
    trust, sources = b.get("trust"), {k["source"] for k in keys}
    ids = ", ".join(str(k["key_id"])[:100] for k in keys[:8])
    where = f"a bundle (sha256 {str(b.get('sha256'))[:80]}" + (f", log {str(ev['origin'])[:200]})" if
                                                                ev.get("origin") else ")")
    if trust == "pinned" and sources == {PINNED}:
        return Check("evidence", True, f"{where} verified with {ids} {PINNED}")
    if trust == "shipped" and sources == {SHIPPED}:
        return Check("evidence", True, f"{where} verified only with {ids} {SHIPPED} (--trust-bundle-keys): anyone "
                                       "can make a bundle that holds with the keys it ships")
    return Check("evidence", False, f"{where}: its trust {str(trust)[:40]!r} is not what its keys say")


def _signature_check(d: Mapping[str, Any], keys: Mapping[str, VerifyKey], said: str) -> Check:
    sig = d.get("signature")
    try:
        signature = Signature(sig["alg"], sig["key_id"], sig["value"]) if sig is not None else None
        ok, why = check_signature(signature, keys, canonical(d), "result")
    except (KeyError, TypeError, ValueError) as e:
        ok, why = False, f"unreadable signature: {str(e)[:120]}"
    if ok and signature is not None:
        why = f"signed by {signature.key_id} ({said})"
    elif not keys:
        why = f"{why}; no key to check it with ({said})"
    return Check("signature", ok, why)
