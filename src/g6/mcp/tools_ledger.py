"""The ledger tools, none of them gated and none of them writing: ``receipt_show`` (one receipt),
``ledger_verify`` (the whole ledger) and ``verify_proof`` (a proof checked with a public key only)."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field

from g6.adapters.outcomes import QUALIFIED
from g6.errors import InputError
from g6.mcp.context import ReceiptId, ToolContext, ToolSet, receipt_id_of

TOOLS = ToolSet()


@TOOLS.tool(title="Show a receipt",
            description="One receipt, signature included, under `receipt`: exactly as `g6 receipt show --json` "
                        "prints it (receipt.v1), so its signature verifies over it. Not gated.", read_only=True)
def receipt_show(ctx: ToolContext, receipt_id: ReceiptId) -> dict[str, Any]:
    receipt_id = receipt_id_of(receipt_id)
    with ctx.home(need_key=False) as ev:
        receipt = ev.ledger.get(receipt_id).to_json()
    # The status word sits beside the receipt, never in it: a key added to the signed object would break its
    # schema and its signature (as cite's reply keeps its `citation` beside its code).
    return {"status": QUALIFIED, "receipt": receipt}


@TOOLS.tool(title="Verify the ledger",
            description="Check every signature, chain link, blob and checkpoint of the server's ledger; a failed "
                        "check is an error result carrying the verdicts. Not gated.",
            read_only=True)
def ledger_verify(ctx: ToolContext) -> dict[str, Any]:
    with ctx.home(need_key=False) as ev:
        # in the server's process, on this thread (as `g6 serve`'s verify): a pool of worker processes would be cut
        # by the server's stop, which never waits for a tool call, and leave its semaphore named on stderr
        return ev.verify(workers=1).to_json()


@TOOLS.tool(title="Verify a proof",
            description="Check an inclusion proof (with its receipt) or a consistency proof with a public key only; "
                        "reads nothing on the server. Not gated.",
            read_only=True)
def verify_proof(
    ctx: ToolContext,
    proof: Annotated[str, Field(min_length=1, description=(
        "The proof's text as `g6 ledger prove` or `g6 ledger consistency` writes it (not a path)."))],
    key: Annotated[str, Field(min_length=1, description=(
        "The ledger's public key: 'ed25519:<base64>' or a signed-note verifier key 'origin+hash+base64'."))],
    receipt: Annotated[dict[str, Any] | None, Field(description=(
        "For an inclusion proof: the receipt JSON object it proves (receipt_show's `receipt`)."))] = None,
) -> dict[str, Any]:
    from g6.ledger import VerifyKey
    from g6.ledger.note import parse_verifier_key
    from g6.ledger.proofs import CONSISTENCY_HEADER, verify_consistency_proof, verify_inclusion_proof

    if key.startswith("ed25519:"):
        vkey, origin = VerifyKey.from_text(key), None
    else:
        origin, vkey = parse_verifier_key(key)
    if proof.startswith(CONSISTENCY_HEADER):
        return verify_consistency_proof(proof, vkey, origin).to_json()
    if receipt is None:
        raise InputError("an inclusion proof needs the receipt")
    return verify_inclusion_proof(proof, json.dumps(receipt), vkey, origin).to_json()
