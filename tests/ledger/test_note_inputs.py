"""Notes and proofs as the hostile input they may be (issue 27).

* Every number a note or a proof holds (a checkpoint's size, a proof's ``index``, ``old`` and ``new``)
  is ASCII decimal, ``0|[1-9][0-9]*``, at most 19 digits and below 2^63: ``str.isdigit()`` took Unicode
  digits ('²' then crashed ``int()``, exit 70; '٣' was read as 3, so a note g6 never writes verified).
* A note is UTF-8 text with LF line endings, read as bytes: a CR (a CRLF copy, a lone CR), a BOM, a NUL
  or bytes that are not UTF-8 are refused with the same message by every command that reads one
  (``ledger verify --checkpoint``, ``ledger verify --since FILE``, ``verify-proof``, ``bundle verify``).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from g6.cli import cli
from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.note import Checkpoint, NoteError, parse_note, sign_note
from g6.ledger.proofs import ProofFormatError, parse_consistency, parse_inclusion
from g6.prove.proofs import checkpoint, consistency, note_verifier_key, prove

# the one message every reader gives for a CR in a note or a proof, whichever command read it
CR_MESSAGE = ("it holds a carriage return (CR); C2SP notes and proofs end every line with LF alone "
              "(a copy saved with CRLF line endings?)")
BOM_MESSAGE = "it holds a byte order mark (U+FEFF); C2SP notes and proofs are UTF-8 text without one"
NUL_MESSAGE = "it holds a NUL character"
BAD_NUMBERS = ["١٢", "²", "１２", "٣", "3\u0663", "+3", " 3", "3 ", "0x3", "03", "00", "-1", "3_0", "",
               str(2**63), "9" * 20]


def g6(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--home", str(home), *args])


def no_crash(r: Any) -> None:
    assert r.exit_code in (1, 2), (r.exit_code, r.output)
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output


@pytest.fixture
def kit(home: EvidenceHome, tmp_path: Path) -> dict[str, Any]:
    """A ledger of three receipts, its checkpoint note, an inclusion and a consistency proof, as files."""
    rs = [home.record(Receipt(kind="fetch", source="web", request={"url": f"https://e.org/{i}"}, outcome="ok",
                              outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=i)) for i in range(3)]
    _, note2 = checkpoint(home)  # size 3
    proof, _ = prove(home, rs[1].receipt_id)
    home.record(Receipt(kind="fetch", source="web", request={"url": "https://e.org/x"}, outcome="ok",
                        outcome_code="G6_E_KNOWLEDGE_FETCHED", byte_count=9))
    checkpoint(home)  # size 4
    cons = consistency(home, 3, 4)
    files = {"note": note2, "proof": proof.text(), "cons": cons.text()}
    out: dict[str, Any] = {"home": home.root, "ev": home, "vkey": note_verifier_key(home), "key": home.signing_key(),
                           "origin": home.ledger.origin, "receipt": tmp_path / "r.json", "tmp": tmp_path}
    out["receipt"].write_text(json.dumps(rs[1].to_json()))
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode())
        out[name] = text
    return out


# -- 1. numbers are ASCII decimal only ------------------------------------------------------------------
@pytest.mark.parametrize("size", BAD_NUMBERS)
def test_a_checkpoint_size_is_ascii_decimal_only(size: str) -> None:
    with pytest.raises(NoteError):
        Checkpoint.parse(f"g6-evidence/x\n{size}\n{'A' * 43}=\n")


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_proof_numbers_are_ascii_decimal_only(kit: dict[str, Any], value: str) -> None:
    with pytest.raises(ProofFormatError):
        parse_inclusion(kit["proof"].replace("\nindex 1\n", f"\nindex {value}\n", 1))
    for word in ("old 3", "new 4"):
        with pytest.raises(ProofFormatError):
            parse_consistency(kit["cons"].replace(f"\n{word}\n", f"\n{word.split()[0]} {value}\n", 1))


@pytest.mark.parametrize("where", ["root", "signature"])
def test_non_ascii_base64_in_a_note_is_a_note_error(kit: dict[str, Any], where: str) -> None:
    """base64's ``validate=True`` raises a plain ValueError (not binascii.Error) on a non-ASCII str."""
    lines = kit["note"].split("\n")
    if where == "root":
        lines[2] = "é" + lines[2][1:]
    else:
        lines[4] = lines[4][:-2] + "é="
    with pytest.raises(NoteError):
        Checkpoint.parse(parse_note("\n".join(lines))[0])


@pytest.mark.parametrize("line", ["extra", "hash"])
def test_non_ascii_base64_in_a_proof_is_a_format_error(kit: dict[str, Any], line: str) -> None:
    lines = kit["proof"].split("\n")
    i = 1 if line == "extra" else 3
    lines[i] = lines[i][:-2] + "é="
    with pytest.raises(ProofFormatError):
        parse_inclusion("\n".join(lines))


def _with_size(kit: dict[str, Any], size: str) -> str:
    """The kit's checkpoint note with its size line replaced, signed again with the home's own key (as
    only its holder could, or g6 itself if it ever wrote such a number)."""
    text, _ = parse_note(kit["note"])
    lines = text.split("\n")
    lines[1] = size
    return sign_note("\n".join(lines), kit["origin"], kit["key"])


@pytest.mark.parametrize("size", ["²", "٣", "3\u0663", "３"])
def test_a_unicode_digit_in_a_kept_checkpoint_is_a_failed_verdict(kit: dict[str, Any], size: str) -> None:
    """Was exit 70 ('²': int() raised ValueError) or ok ('٣' read as 3: a note g6 never writes verified)."""
    note = kit["tmp"] / "odd.note"
    note.write_bytes(_with_size(kit, size).encode())
    r = g6(kit["home"], "ledger", "verify", "--checkpoint", str(note), "--json")
    no_crash(r)
    assert r.exit_code == 1
    kept = json.loads(r.output)["checks"]["kept_checkpoint"]
    assert not kept["ok"] and "bad tree size" in kept["failures"][0]["detail"], kept


@pytest.mark.parametrize("size", ["²", "٣"])
def test_a_unicode_digit_in_a_since_checkpoint_is_an_input_error(kit: dict[str, Any], size: str) -> None:
    note = kit["tmp"] / "odd.note"
    note.write_bytes(_with_size(kit, size).encode())
    r = g6(kit["home"], "ledger", "verify", "--since", str(note))
    no_crash(r)
    assert r.exit_code == 2 and "bad tree size" in r.output, r.output


@pytest.mark.parametrize("value", ["²", "٣", "１"])
@pytest.mark.parametrize("where", ["index", "checkpoint size", "old", "new"])
def test_a_unicode_digit_in_a_proof_fails_verify_proof_on_format(kit: dict[str, Any], where: str,
                                                                 value: str) -> None:
    if where == "index":
        text, args = kit["proof"].replace("\nindex 1\n", f"\nindex {value}\n", 1), ["--receipt", str(kit["receipt"])]
    elif where == "checkpoint size":
        text = kit["proof"].replace(kit["note"], _with_size(kit, value))
        args = ["--receipt", str(kit["receipt"])]
    else:
        n = 3 if where == "old" else 4
        text, args = kit["cons"].replace(f"\n{where} {n}\n", f"\n{where} {value}\n", 1), []
    p = kit["tmp"] / "odd.proof"
    p.write_bytes(text.encode())
    r = g6(kit["home"], "verify-proof", str(p), "--key", kit["vkey"], *args, "--json")
    no_crash(r)
    assert r.exit_code == 1
    checks = {c["check"]: c for c in json.loads(r.output)["checks"]}
    assert not checks["format"]["ok"], checks


# -- 2. a CR (BOM, NUL, non-UTF-8) is refused alike, with one message -------------------------------------
def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


SPOIL = {
    "crlf": (crlf, CR_MESSAGE),
    "lone CR": (lambda t: t.replace("\n", "\r\n", 1).encode(), CR_MESSAGE),
    "CR at the end": (lambda t: (t + "\r").encode(), CR_MESSAGE),
    "bom": (lambda t: b"\xef\xbb\xbf" + t.encode(), BOM_MESSAGE),
    "nul": (lambda t: t.replace("\n\n", "\n\n\x00", 1).encode(), NUL_MESSAGE),
    "latin-1": (lambda t: t.encode() + b"\xe9", "it is not UTF-8 text"),
}


@pytest.mark.parametrize("spoil", SPOIL)
def test_ledger_verify_checkpoint_refuses_a_spoilt_copy(kit: dict[str, Any], spoil: str) -> None:
    fn, message = SPOIL[spoil]
    p = kit["tmp"] / "spoilt.note"
    p.write_bytes(fn(kit["note"]))
    r = g6(kit["home"], "ledger", "verify", "--checkpoint", str(p), "--json")
    no_crash(r)
    assert r.exit_code == 1
    kept = json.loads(r.output)["checks"]["kept_checkpoint"]
    assert not kept["ok"] and message in kept["failures"][0]["detail"], kept
    assert g6(kit["home"], "ledger", "verify", "--checkpoint", str(kit["tmp"] / "note")).exit_code == 0


@pytest.mark.parametrize("spoil", SPOIL)
def test_ledger_verify_since_refuses_a_spoilt_copy(kit: dict[str, Any], spoil: str) -> None:
    """Was ok for a CRLF copy: ``read_text`` turned its CRLF into LF."""
    fn, message = SPOIL[spoil]
    p = kit["tmp"] / "spoilt.note"
    p.write_bytes(fn(kit["note"]))
    r = g6(kit["home"], "ledger", "verify", "--since", str(p))
    no_crash(r)
    assert r.exit_code == 2 and message in r.output and len(r.output.splitlines()) == 1, r.output
    assert g6(kit["home"], "ledger", "verify", "--since", str(kit["tmp"] / "note")).exit_code == 0


@pytest.mark.parametrize("spoil", SPOIL)
@pytest.mark.parametrize("what", ["proof", "cons"])
def test_verify_proof_refuses_a_spoilt_copy_on_format(kit: dict[str, Any], spoil: str, what: str) -> None:
    """Was ok for a CRLF copy of either proof: ``read_text`` turned its CRLF into LF."""
    fn, message = SPOIL[spoil]
    p = kit["tmp"] / "spoilt.proof"
    p.write_bytes(fn(kit[what]))
    args = ["--receipt", str(kit["receipt"])] if what == "proof" else []
    r = g6(kit["home"], "verify-proof", str(p), "--key", kit["vkey"], *args)
    no_crash(r)
    assert r.exit_code == 1 and f"format                     FAILED: {message}" in r.output, r.output
    ok = g6(kit["home"], "verify-proof", str(kit["tmp"] / what), "--key", kit["vkey"], *args)
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("spoil", ["crlf", "lone CR"])
def test_a_cr_in_the_note_inside_a_proof_is_the_same_refusal(kit: dict[str, Any], spoil: str) -> None:
    fn, message = SPOIL[spoil]
    text = kit["proof"].replace(kit["note"], fn(kit["note"]).decode())
    p = kit["tmp"] / "spoilt.proof"
    p.write_bytes(text.encode())
    r = g6(kit["home"], "verify-proof", str(p), "--key", kit["vkey"], "--receipt", str(kit["receipt"]))
    no_crash(r)
    assert r.exit_code == 1 and f"format                     FAILED: {message}" in r.output, r.output


# -- bundle verify: the checkpoint.note and a proof member ------------------------------------------------
def _members(zpath: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zpath) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _repack(src: Path, dst: Path, name: str, data: bytes) -> Path:
    """``src`` with one member replaced and declared again in bundle.json, as an attacker who knows the
    format would, so the note check is what catches it."""
    import hashlib

    files = _members(src)
    files[name] = data
    index = json.loads(files["bundle.json"])
    index["files"][name] = {"sha256": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}
    files["bundle.json"] = json.dumps(index).encode()
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    return dst


@pytest.fixture
def bundle(kit: dict[str, Any], site: Any) -> Path:
    from g6.adapters import CheckedClient, FetchPolicy
    from g6.cite.cite import cite_web
    from g6.cite.manifest import Manifest, save_manifest
    from g6.demo.site import Reply
    from g6.fetch.capture import fetch
    from g6.prove.bundle import build_bundle

    home: EvidenceHome = kit["ev"]
    s = site({"/a": Reply(body=b"<html><body><p>The cited sentence stays in the bytes.</p></body></html>"),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/a"))
    m = Manifest.new().with_citation(cite_web(home, r.receipt_id, quote="stays in the bytes"))
    save_manifest(m.signed(home.signing_key()), kit["tmp"] / "m.json")
    out = kit["tmp"] / "b.zip"
    build_bundle(home, kit["tmp"] / "m.json", out)
    kit["bundle_rid"] = r.receipt_id
    return out


@pytest.mark.parametrize("spoil", ["crlf", "lone CR", "bom", "nul"])
def test_bundle_verify_refuses_a_spoilt_checkpoint_note(kit: dict[str, Any], bundle: Path, spoil: str) -> None:
    fn, message = SPOIL[spoil]
    ok = g6(kit["home"], "bundle", "verify", str(bundle), "--key", kit["vkey"])
    assert ok.exit_code == 0, ok.output
    note = _members(bundle)["checkpoint.note"].decode()
    bad = _repack(bundle, kit["tmp"] / "bad.zip", "checkpoint.note", fn(note))
    r = g6(kit["home"], "bundle", "verify", str(bad), "--key", kit["vkey"], "--json")
    no_crash(r)
    checks = {c["check"]: c for c in json.loads(r.output)["bundle_checks"]}
    assert not checks["checkpoint_signature"]["ok"] and message in checks["checkpoint_signature"]["detail"], checks


def test_bundle_verify_refuses_a_crlf_proof_member(kit: dict[str, Any], bundle: Path) -> None:
    name = f"proofs/{kit['bundle_rid']}.tlog-proof"
    proof = _members(bundle)[name].decode()
    bad = _repack(bundle, kit["tmp"] / "bad.zip", name, crlf(proof))
    r = g6(kit["home"], "bundle", "verify", str(bad), "--key", kit["vkey"], "--json")
    no_crash(r)
    assert CR_MESSAGE in r.output, r.output


@pytest.mark.parametrize("mangle", [
    lambda n, h, k: f"{n}\udcff+{h}+{k}",  # a name that came from a command line that was not UTF-8
    lambda n, h, k: f"{n}+{h[:2]} {h[2:]}+{k}",  # bytes.fromhex takes spaces; a key id is 8 hex digits
    lambda n, h, k: f"{n}+{h[:7]}+{k}",
    lambda n, h, k: f"{n}+{h}+{k[:-2]}é=",  # base64 that is not ASCII
])
def test_a_mangled_verifier_key_is_a_note_error(kit: dict[str, Any], mangle: Any) -> None:
    from g6.ledger.note import parse_verifier_key

    name, hexid, b64 = kit["vkey"].split("+", 2)
    with pytest.raises(NoteError):
        parse_verifier_key(mangle(name, hexid, b64))
