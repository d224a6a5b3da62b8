"""The transparency routes of ``g6 serve``: receipts, their tlog-proofs, and the published tiles.

* ``/receipt/{id}``: the signed receipt, the very bytes ``g6 receipt show`` prints (``Receipt.shown``).
* ``/receipt/{id}/proof``: a C2SP tlog-proof (https://c2sp.org/tlog-proof) of the receipt against the latest
  checkpoint the ledger issued, as ``g6 ledger prove`` writes it, but signing nothing: a receipt no
  checkpoint covers yet is a 404 saying so (the server never writes to the home).
* With ``tiles_dir`` (``g6 serve --tiles DIR``, a folder ``g6 ledger publish DIR`` writes): the C2SP
  tlog-tiles paths (https://c2sp.org/tlog-tiles) ``/checkpoint``, ``/tile/<L>/<N>[.p/<W>]`` and
  ``/tile/entries/<N>[.p/<W>]``, with the headers the spec asks (``publish_dest``'s, the ones publishing to
  S3 sets): the checkpoint ``text/plain; charset=utf-8`` and not cached; tiles and entry bundles
  ``application/octet-stream`` and immutable (a partial tile's bytes never change either: the spec calls
  every tile path immutable; what goes away is the file, once the full tile is there). Entry bundles go
  gzip-compressed to a client that accepts it, as the spec recommends.

A tile path is parsed by the tlog-tiles grammar and the file name rebuilt from the numbers (``Tile.path``),
so no request text ever reaches the file system: ``..``, encoded dots, absolute paths and anything else are
simply not tile paths (404). The file is then opened under the folder without following any symbolic
link below it (``g6.store.folder_files``, the blob store's own walk), so a link planted in the folder that
leads out of it is refused, not followed.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from g6.errors import G6Error, ProofNotCovered, ReceiptNotFound
from g6.ledger.transparency.tiles import MAX_LEVEL, WIDTH, Tile, decode_index
from g6.prove.proofs import prove_latest
from g6.prove.publish_dest import CHECKPOINT, CHECKPOINT_HEADERS, READ_MAX, TILE_HEADERS
from g6.serve.responses import SECURITY_HEADERS, bad_request, not_found, refusal
from g6.store.folder_files import LinkRefused, NotAFile, read_head

RECEIPT_ID = re.compile(r"rcpt_[0-9A-HJKMNP-TV-Z]{26}")  # what schemas/receipt.v1 allows
TILE_PATH = re.compile(r"(entries|0|[1-9][0-9]?)/((?:x[0-9]{3}/)*[0-9]{3})(?:\.p/([1-9][0-9]{0,2}))?")
NOT_CACHED = {"Cache-Control": "no-cache"}  # an answer that may change: a 404 tile can be published later
MAX_CHECKPOINT = 1 << 20  # a checkpoint with its cosignatures is a few KiB


def _receipt_id(request: Request) -> str | Response:
    rid = str(request.path_params["rid"])
    if not RECEIPT_ID.fullmatch(rid):
        return bad_request(request, f"{rid[:60]!r} is not a receipt id: rcpt_ and 26 characters of Crockford's "
                                    "base 32 (0-9, A-Z without I, L, O, U)")
    return rid


def routes(reader: Any, *, tiles_dir: str | Path | None = None, **options: Any) -> list[BaseRoute]:
    def receipt(request: Request) -> Response:
        rid = _receipt_id(request)
        if isinstance(rid, Response):
            return rid
        try:
            r = reader.home().ledger.get(rid)
        except ReceiptNotFound:
            return not_found(request, f"no receipt {rid} in this evidence home")
        return Response(r.shown().encode("utf-8"), media_type="application/json", headers=dict(SECURITY_HEADERS))

    def proof(request: Request) -> Response:
        rid = _receipt_id(request)
        if isinstance(rid, Response):
            return rid
        try:
            p = prove_latest(reader.home(), rid)
        except ReceiptNotFound:
            return not_found(request, f"no receipt {rid} in this evidence home")
        except ProofNotCovered as e:
            return not_found(request, str(e))
        except (G6Error, ValueError) as e:  # the ledger disagrees with its own checkpoint: said, never proven
            return refusal(request, 500, "ledger_mismatch", str(e))
        # against the latest checkpoint, so the next checkpoint changes it: not cached
        return Response(p.text().encode("utf-8"), media_type="text/plain; charset=utf-8",
                        headers={**SECURITY_HEADERS, **NOT_CACHED,
                                 "Content-Disposition": f'inline; filename="{rid}.tlog-proof"'})

    found = [Route("/receipt/{rid}", receipt), Route("/receipt/{rid}/proof", proof)]
    if tiles_dir is None:
        return found
    root = str(Path(tiles_dir))

    def read(rel: str, limit: int) -> bytes | None:
        try:
            return read_head(root, rel, limit + 1)
        except (FileNotFoundError, NotAFile, LinkRefused):
            return None

    def checkpoint(request: Request) -> Response:
        data = read(CHECKPOINT, MAX_CHECKPOINT)
        if data is None or len(data) > MAX_CHECKPOINT:
            return _not_cached(not_found(request, "no checkpoint has been published in the tiles folder"))
        return Response(data, headers={**SECURITY_HEADERS, **CHECKPOINT_HEADERS})

    def tile(request: Request) -> Response:
        path = str(request.path_params["path"])
        t = _tile(path)
        if t is None:
            return _not_cached(not_found(request, f"tile/{path[:80]} is not a C2SP tlog-tiles path "
                                                  "(tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])"))
        data = read(t.path, READ_MAX)
        if data is None or len(data) > READ_MAX:
            return _not_cached(not_found(request, f"{t.path} has not been published"))
        headers = {**SECURITY_HEADERS, **TILE_HEADERS}
        if t.level == -1:
            headers["Vary"] = "Accept-Encoding"
            if _accepts_gzip(request.headers.get("accept-encoding", "")):
                data = gzip.compress(data, compresslevel=6, mtime=0)
                headers["Content-Encoding"] = "gzip"
        return Response(data, headers=headers)

    return [*found, Route("/checkpoint", checkpoint), Route("/tile/{path:path}", tile)]


def _tile(path: str) -> Tile | None:
    """The tile a request path names, by the spec's grammar (no leading zeroes, levels 0-63, widths 1-255),
    or None."""
    m = TILE_PATH.fullmatch(path)
    if m is None:
        return None
    level = -1 if m.group(1) == "entries" else int(m.group(1))
    width = int(m.group(3)) if m.group(3) else WIDTH
    if level > MAX_LEVEL or (m.group(3) and width >= WIDTH):  # a partial tile is 1 to 255 wide
        return None
    try:
        index = decode_index(m.group(2))
    except ValueError:
        return None
    return Tile(level, index, width)


def _accepts_gzip(header: str) -> bool:
    """``gzip`` is among the codings the client accepts (``Accept-Encoding``: by name or ``*``, not ``q=0``)."""
    weights: dict[str, float] = {}
    for part in header.lower().split(","):
        name, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for p in params:
            key, _, value = p.partition("=")
            if key.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        weights[name] = q
    return weights.get("gzip", weights.get("*", 0.0)) > 0


def _not_cached(response: Response) -> Response:
    response.headers.update(NOT_CACHED)
    return response
