"""The citation tools: ``cite`` adds a citation of a receipt to a manifest file on the server and
``recheck`` re-reads every citation of one. ``g6_invoke``'s ``knowledge_manifest`` ops (``record``,
``recheck``) call these same functions with the op's arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from g6.errors import InputError
from g6.mcp.context import ReceiptId, ToolContext, ToolSet, receipt_id_of, untrusted
from g6.mcp.gate import gate_note

TOOLS = ToolSet()

ManifestPath = Annotated[str, Field(min_length=1, description=(
    "Path of the citation manifest (JSON) on the server's filesystem, absolute or relative to the "
    "server's working directory."))]


def manifest_path(manifest: str) -> Path:
    """The manifest ``cite`` writes: a file in a folder that exists, as ``g6 cite --manifest`` requires (a
    missing folder is a mistyped path more often than a wish to make one); refused before any work is done."""
    path = Path(manifest)
    shown = manifest[:200] + ("…" if len(manifest) > 200 else "")
    if path.is_dir():
        raise InputError(f"manifest {shown} is a folder; give a file name")
    if not path.parent.is_dir():
        why = "it is in a file, not a folder" if path.parent.exists() else "its folder does not exist"
        raise InputError(f"manifest {shown}: {why}")
    return path


@TOOLS.tool(title="Cite", description="Add a citation (a passage id, an exact quote, or paper N of a search page) "
                                      "to a manifest file on the server, created when missing (its folder must "
                                      "exist). A receipt whose read failed (a 403 or 404 page) is refused unless "
                                      "allow_failed_read. " + gate_note("cite"))
def cite(ctx: ToolContext, receipt_id: ReceiptId, manifest: ManifestPath,
         passage_id: Annotated[str | None, Field(description=(
             "A passage id (p_…): a passages[].passage_id of g6_invoke knowledge_chunker chunk with the "
             "receipt's receipt_id (give exactly one of passage_id, quote, paper)."))]
         = None,
         quote: Annotated[str | None, Field(description=(
             "An exact quote that must occur in the kept document (give exactly one of passage_id, quote, "
             "paper)."))] = None,
         paper: Annotated[int | None, Field(ge=1, description=(
             "For a search receipt: the paper's number on that page, from 1 (give exactly one of passage_id, "
             "quote, paper)."))] = None,
         allow_failed_read: Annotated[bool, Field(description=(
             "Cite a receipt whose read failed (a 403 or 404 page…) anyway; the manifest records it as a failed "
             "read. Without it such a receipt is refused: its body is an error page, not evidence of the page's "
             "words."))] = False) -> dict[str, Any]:
    from g6.cite.cite import cite_paper, cite_web
    from g6.cite.manifest import Manifest, load_manifest, save_manifest

    if sum(x is not None for x in (passage_id, quote, paper)) != 1:
        raise InputError("give exactly one of passage_id, quote or paper")
    # the schema checks paper for the typed tool; g6_invoke's record passes its args unchecked
    if paper is not None and (not isinstance(paper, int) or isinstance(paper, bool) or paper < 1):
        raise InputError("paper is a number from 1")
    if not isinstance(allow_failed_read, bool):
        raise InputError("allow_failed_read is true or false")
    receipt_id = receipt_id_of(receipt_id)
    path = manifest_path(manifest)
    with ctx.home() as ev:
        c = cite_paper(ev, receipt_id, paper, allow_failed_read=allow_failed_read) if paper is not None else \
            cite_web(ev, receipt_id, passage=passage_id, quote=quote, allow_failed_read=allow_failed_read)
    m = (load_manifest(path) if path.exists() else Manifest.new()).with_citation(c)
    save_manifest(m, path)
    return untrusted({"outcome": "ok", "code": "G6_E_KNOWLEDGE_MANIFEST_RECORDED", "manifest": str(path),
                      "citations": len(m.citations), "citation": c.to_json()})


@TOOLS.tool(title="Re-check a manifest",
            description="Re-read every citation of a manifest file on the server; one verdict per citation. "
                        + gate_note("recheck"),
            open_world=True)
def recheck(ctx: ToolContext, manifest: ManifestPath,
            run_id: Annotated[str | None, Field(description=(
                "Resume this run (run_ plus letters, digits, _ or -, as a previous reply's run_id gives it): "
                "citations it already checked are skipped. Default: a new run."))] = None,
            ) -> dict[str, Any]:
    from g6.cite.manifest import load_manifest
    from g6.cite.recheck import recheck as do_recheck

    m = load_manifest(manifest)
    with ctx.home() as ev, ctx.client(ctx.policy()) as c:
        report = do_recheck(ev, c, m, run_id=run_id, sources=ctx.settings.sources())
    return untrusted({"code": "G6_E_KNOWLEDGE_MANIFEST_RECHECKED", **report.to_json()})
