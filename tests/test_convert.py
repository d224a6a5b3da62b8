"""A fetched PDF is kept by digest with no documents; `g6 convert` turns it into receipted text."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from g6.adapters import CheckedClient, FetchPolicy, Outcome
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.fetch.convert import convert
from g6.home import EvidenceHome


def make_pdf(text: str) -> bytes:
    """A one-page PDF with ``text`` in Helvetica, xref offsets computed."""
    stream = f"BT /F1 18 Tf 20 100 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_fetch_keeps_a_pdf_and_convert_reads_it(home: EvidenceHome, site: Callable[..., LocalSite]) -> None:
    pdf = make_pdf("Receipts survive in a PDF too")
    s = site({"/paper.pdf": Reply(body=pdf, content_type="application/pdf"), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/paper.pdf"))
    assert r.outcome is Outcome.OK and r.documents == () and r.detail["kept_as"] == "application/pdf"
    out = convert(home, r.content["sha256"])
    assert out.outcome is Outcome.OK and out.pages == 1 and "Receipts survive in a PDF too" in out.text
    receipt = home.ledger.get(out.receipt_id)
    assert receipt.kind == "convert" and receipt.links["from"]["blake3"] == r.content["blake3"]
    assert home.store.read(receipt.content["blake3"]).decode() == out.text
    assert home.verify().ok


def test_convert_refuses_what_is_not_a_pdf(home: EvidenceHome, tmp_path: Path) -> None:
    not_pdf = home.store.put(b"<html>not a pdf</html>")
    out = convert(home, not_pdf.blake3)
    assert out.outcome is Outcome.PARSE_FAILED and out.reason == "not_a_pdf"
    broken = home.store.put(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF")
    assert convert(home, broken.blake3).outcome in (Outcome.PARSE_FAILED, Outcome.EMPTY)
    r = subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), "convert", "blake3:" + "0" * 64],
                       capture_output=True)
    assert r.returncode == 1
    ok = subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), "convert",
                         home.store.put(make_pdf("CLI text")).blake3, "--json"], capture_output=True)
    assert ok.returncode == 0 and "CLI text" in json.loads(ok.stdout)["text"]
