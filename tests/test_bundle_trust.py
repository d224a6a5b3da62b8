"""Bundles a grader can trust: a signed manifest, verdicts built only from what verified, and a zip
read as hostile input (names, zip bombs, bit flips, lying sizes, wrong JSON types) within a memory bound."""

from __future__ import annotations

import bz2
import hashlib
import json
import struct
import subprocess
import sys
import textwrap
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.adapters import CheckedClient, FetchPolicy
from g6.cite.cite import cite_web
from g6.cite.manifest import Manifest, save_manifest
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger.note import verifier_key
from g6.prove.bundle import MAX_INDEX, MAX_PARSED_BODY, SCHEMA, BundleError, PinnedKey, build_bundle, verify_bundle

Site = Callable[..., LocalSite]
TEXT = "The cited sentence stays in the stored bytes, and the bundle proves it offline."
GiB = 1 << 30


@pytest.fixture
def made(home: EvidenceHome, site: Site, tmp_path: Path) -> dict[str, Any]:
    s = site({"/a": Reply(body=f"<html><body><p>{TEXT}</p><p>Second paragraph.</p></body></html>".encode()),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/a"))
    m = Manifest.new().with_citation(cite_web(home, r.receipt_id, quote="stays in the stored bytes"))
    save_manifest(m.signed(home.signing_key()), tmp_path / "signed.json")
    save_manifest(m, tmp_path / "unsigned.json")
    build_bundle(home, tmp_path / "signed.json", tmp_path / "signed.zip")
    build_bundle(home, tmp_path / "unsigned.json", tmp_path / "unsigned.zip")
    return {"key": home.signing_key().public, "signed": tmp_path / "signed.zip", "unsigned": tmp_path / "unsigned.zip",
            "url": s.url("/a"), "receipt_id": r.receipt_id, "tmp": tmp_path, "home": home}


def members(zpath: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zpath) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def index_for(files: dict[str, bytes], **extra: Any) -> bytes:
    base = {"schema": SCHEMA, "manifest_id": "m", "created_at": "2026-01-01T00:00:00Z", "origin": extra.pop("origin")}
    base["files"] = {n: {"sha256": "sha256:" + hashlib.sha256(d).hexdigest(), "size": len(d)}
                     for n, d in files.items() if n != "bundle.json"}
    base.update(extra)
    return json.dumps(base).encode()


def repack(src: Path, dst: Path, change: Callable[[dict[str, bytes]], None]) -> Path:
    """Change the members, then declare them consistently in bundle.json, as an attacker who knows
    the format would, so the check under test is what catches it."""
    files = members(src)
    origin = json.loads(files["bundle.json"])["origin"]
    change(files)
    files["bundle.json"] = index_for(files, origin=origin)
    with zipfile.ZipFile(dst, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return dst


def raw_zip(entries: list[tuple[str, bytes, int, int, int, int]]) -> bytes:
    """A zip written byte by byte: (name, compressed data, method, crc, declared compressed size,
    declared size) per member, so sizes and CRCs can lie."""
    out = bytearray()
    central = bytearray()
    for name, data, method, crc, csize, usize in entries:
        offset = len(out)
        n = name.encode()
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, csize, usize, len(n), 0) + n
        out += data
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, csize, usize, len(n),
                               0, 0, 0, 0, 0, offset) + n
    cd_offset = len(out)
    out += central
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), len(central), cd_offset, 0)
    return bytes(out)


def deflated(data: bytes) -> tuple[bytes, int, int, int]:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = c.compress(data) + c.flush()
    return body, zlib.crc32(data), len(body), len(data)


def deflate_bomb(mib: int = 1024) -> bytes:
    """About a KiB of raw deflate per MiB of zeros it inflates to (1 GiB by default): a full-flushed
    segment of 1 MiB of zeros compresses to the same bytes every time, so it is repeated, not recomputed."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    seg = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return seg * mib + c.flush()


def hostile_from(src: Path, dst: Path, replace: dict[str, tuple[bytes, int, int, int, int]]) -> Path:
    """``src`` rewritten byte by byte, with some members replaced by (data, method, crc, csize, usize)."""
    entries = []
    for name, data in members(src).items():
        if name in replace:
            entries.append((name, *replace[name]))
        else:
            entries.append((name, *_entry(data)))
    dst.write_bytes(raw_zip(entries))
    return dst


def _entry(data: bytes) -> tuple[bytes, int, int, int, int]:
    body, crc, csize, usize = deflated(data)
    return body, zipfile.ZIP_DEFLATED, crc, csize, usize


def failed(report: Any) -> dict[str, str]:
    out = {c.check: c.detail for c in report.bundle_checks if not c.ok}
    for v in report.citations:
        out.update({c.check: c.detail for c in v.checks if not c.ok})
    return out


def g6(home: EvidenceHome, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "g6", "--home", str(home.root), *args],
                          capture_output=True, text=True, timeout=120)


# --- a signed manifest, or an explicit --allow-unsigned ------------------------------------------------


def test_an_unsigned_manifest_does_not_hold(made: dict[str, Any]) -> None:
    key = made["key"]
    assert verify_bundle(made["signed"], (key,)).ok
    report = verify_bundle(made["unsigned"], (key,))
    assert not report.ok and failed(report) == {"manifest_signature": "missing"}
    assert report.manifest_id is None and report.manifest_signed is False
    allowed = verify_bundle(made["unsigned"], (key,), allow_unsigned=True)
    assert allowed.ok and allowed.manifest_signed is False


def test_unsigned_cli_verdict_and_summary(made: dict[str, Any]) -> None:
    key = made["key"].to_text()
    out = g6(made["home"], "bundle", "verify", str(made["unsigned"]), "--key", key)
    assert out.returncode == 1, out.stderr
    assert "manifest_signature     FAILED: missing" in out.stdout
    assert out.stdout.splitlines()[-1].startswith("bundle FAILED")
    ok = g6(made["home"], "bundle", "verify", str(made["unsigned"]), "--key", key, "--allow-unsigned")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "manifest is UNSIGNED" in ok.stdout.splitlines()[-1]
    signed = g6(made["home"], "bundle", "verify", str(made["signed"]), "--key", key)
    assert signed.returncode == 0 and "manifest signed by a pinned key" in signed.stdout
    made_unsigned = g6(made["home"], "bundle", str(made["tmp"] / "unsigned.json"), "-o", str(made["tmp"] / "u2.zip"))
    assert made_unsigned.returncode == 0 and "the manifest is not signed" in made_unsigned.stderr
    made_signed = g6(made["home"], "bundle", str(made["tmp"] / "signed.json"), "-o", str(made["tmp"] / "s2.zip"))
    assert made_signed.returncode == 0 and made_signed.stderr == ""
    missing = g6(made["home"], "bundle", "verify", str(made["tmp"] / "nothing.zip"), "--key", key)
    assert missing.returncode == 2 and missing.stderr.startswith("g6: no bundle file at")
    badkey = g6(made["home"], "bundle", "verify", str(made["signed"]), "--key", "ed25519:notbase64!")
    assert badkey.returncode == 2 and badkey.stderr.startswith("g6: bad --key") and "Traceback" not in badkey.stderr


def test_a_stripped_signature_with_a_forged_quote_fails(made: dict[str, Any]) -> None:
    """The attack the issue names: strip the manifest's signature, forge what it says."""
    def forge(files: dict[str, bytes]) -> None:
        m = json.loads(files["manifest.json"])
        m.pop("signature")
        c = m["citations"][0]
        c["quote"] = "the forged words nobody wrote"
        c["source_url"] = "https://forged.example/claim"
        c["citation_id"] = "c_" + "0f" * 8  # well formed, not this citation's id
        files["manifest.json"] = json.dumps(m).encode()

    bad = repack(made["signed"], made["tmp"] / "forged.zip", forge)
    key = made["key"]
    assert "manifest_signature" in failed(verify_bundle(bad, (key,)))
    report = verify_bundle(bad, (key,), allow_unsigned=True)
    why = failed(report)
    assert not report.ok and "quote" in why and "citation_fields" in why
    out = g6(made["home"], "bundle", "verify", str(bad), "--key", key.to_text(), "--allow-unsigned")
    js = g6(made["home"], "bundle", "verify", str(bad), "--key", key.to_text(), "--allow-unsigned", "--json")
    assert out.returncode == 1 and js.returncode == 1
    for text in (out.stdout, js.stdout):
        assert "forged" not in text  # nothing unverified is ever shown
    (v,) = json.loads(js.stdout)["citations"]
    # what is shown was recomputed from the verified receipt and body
    assert v["receipt_id"] == made["receipt_id"] and v["url"] == made["url"]
    assert v["quote"] == "stays in the stored bytes" and v["citation_id"].startswith("c_")


def test_a_signed_manifest_whose_quote_is_not_in_the_text_fails(made: dict[str, Any]) -> None:
    home: EvidenceHome = made["home"]
    m = json.loads(members(made["signed"])["manifest.json"])
    m.pop("signature")
    m["citations"][0]["quote"] = "words that are not on the page"
    mm = Manifest.from_json(m).signed(home.signing_key())
    save_manifest(mm, made["tmp"] / "wrongquote.json")
    build_bundle(home, made["tmp"] / "wrongquote.json", made["tmp"] / "wrongquote.zip")
    report = verify_bundle(made["tmp"] / "wrongquote.zip", (made["key"],))
    assert report.manifest_signed and failed(report) == {"quote": "the manifest's quote is not in the verified text"}


def test_verdicts_show_only_verified_fields(made: dict[str, Any]) -> None:
    out = g6(made["home"], "bundle", "verify", str(made["signed"]), "--key", made["key"].to_text())
    line = next(x for x in out.stdout.splitlines() if " holds  " in x)
    assert made["receipt_id"] in line and made["url"] in line and '"stays in the stored bytes"' in line


# --- the verifier key's origin, as verify-proof checks it ---------------------------------------------


def test_the_verifier_keys_origin_must_be_the_checkpoints(made: dict[str, Any]) -> None:
    home: EvidenceHome = made["home"]
    key = made["key"]
    right = verifier_key(home.ledger.origin, key)
    other = verifier_key("g6-evidence/someotherlog", key)  # the same key, another log
    report = verify_bundle(made["signed"], (PinnedKey(key, "g6-evidence/someotherlog"),))
    assert "checkpoint_signature" in failed(report) and "someotherlog" in failed(report)["checkpoint_signature"]
    assert not verify_bundle(made["signed"], (key,), origin="g6-evidence/someotherlog").ok
    assert verify_bundle(made["signed"], (PinnedKey(key, home.ledger.origin),)).ok
    zp = str(made["signed"])
    assert g6(home, "bundle", "verify", zp, "--key", other).returncode == 1
    ok = g6(home, "bundle", "verify", zp, "--key", right)
    assert ok.returncode == 0 and "the origin is pinned by the verifier key" in ok.stdout
    # and the same with verify-proof, for the record: both refuse the other log
    proof = made["tmp"] / "r.proof"
    proof.write_bytes(members(made["signed"])[f"proofs/{made['receipt_id']}.tlog-proof"])
    receipt = made["tmp"] / "r.json"
    receipt.write_bytes(members(made["signed"])[f"receipts/{made['receipt_id']}.json"])
    assert g6(home, "verify-proof", str(proof), "--receipt", str(receipt), "--key", other).returncode == 1
    clash = g6(home, "bundle", "verify", zp, "--key", right, "--origin", "g6-evidence/someotherlog")
    assert clash.returncode == 2 and clash.stderr.startswith("g6: --origin")


# --- bundle.json and member names are untrusted -------------------------------------------------------


@pytest.mark.parametrize("name", ["/etc/g6-absolute", "../g6-escaped.txt", "keys/../../g6-escaped.txt",
                                  "C:/g6-drive", "keys\\..\\g6-backslash", "notes.txt", "blobs/./x"])
def test_bad_member_names_fail_the_index(made: dict[str, Any], name: str, tmp_path: Path) -> None:
    def add(files: dict[str, bytes]) -> None:
        files[name] = b"planted"
    bad = repack(made["signed"], made["tmp"] / "named.zip", add)
    before = sorted(p.name for p in made["tmp"].parent.iterdir())
    report = verify_bundle(bad, (made["key"],))
    assert not report.ok and "index" in failed(report), report.to_json()
    assert sorted(p.name for p in made["tmp"].parent.iterdir()) == before  # nothing extracted anywhere
    assert not Path("/etc/g6-absolute").exists() and not (Path.cwd().parent / "g6-escaped.txt").exists()


def test_repeated_member_names_fail_the_index(made: dict[str, Any]) -> None:
    files = members(made["signed"])
    entries = [(n, *_entry(d)) for n, d in files.items()]
    entries.append(("keys/signing.pub", *_entry(files["keys/signing.pub"])))  # the same name, same bytes
    bad = made["tmp"] / "repeat.zip"
    bad.write_bytes(raw_zip(entries))
    report = verify_bundle(bad, (made["key"],))
    assert "more than once" in failed(report)["index"]


def test_repeated_keys_in_bundle_json_fail_the_index(made: dict[str, Any]) -> None:
    files = members(made["signed"])
    text = files["bundle.json"].decode()
    # a second "files" table after the first: json.loads would silently keep the last
    files["bundle.json"] = (text.rstrip().rstrip("}") + ', "files": {}}').encode()
    bad = made["tmp"] / "dupkey.zip"
    bad.write_bytes(raw_zip([(n, *_entry(d)) for n, d in files.items()]))
    report = verify_bundle(bad, (made["key"],))
    assert "repeats the key" in failed(report)["index"]


# --- bounded reading -----------------------------------------------------------------------------------


def test_a_bit_flip_in_compressed_data_is_a_verdict(made: dict[str, Any]) -> None:
    files = members(made["signed"])
    blob = next(n for n in files if n.startswith("blobs/"))
    body, crc, csize, usize = deflated(files[blob])
    flipped = bytearray(body)
    flipped[len(flipped) // 2] ^= 0x10
    bad = hostile_from(made["signed"], made["tmp"] / "flip.zip",
                       {blob: (bytes(flipped), zipfile.ZIP_DEFLATED, crc, csize, usize)})
    report = verify_bundle(bad, (made["key"],))
    why = failed(report)
    assert "blob_digests" in why and "index" in why and not report.ok


def test_a_member_whose_declared_size_lies_is_a_verdict(made: dict[str, Any]) -> None:
    files = members(made["signed"])
    blob = next(n for n in files if n.startswith("blobs/"))
    data = files[blob]
    body, crc, csize, usize = deflated(data)
    for lie in (usize - 10, usize + 10):  # the zip's header says less, or more, than the stream holds
        bad = hostile_from(made["signed"], made["tmp"] / "lie.zip",
                           {blob: (body, zipfile.ZIP_DEFLATED, crc, csize, lie)})
        report = verify_bundle(bad, (made["key"],))
        assert "blob_digests" in failed(report) and "index" in failed(report)
    # bundle.json lies about a record's size (and its digest is right): refused, never read past it
    p = made["tmp"] / "shrink.zip"
    index = json.loads(files["bundle.json"])
    rid = next(n for n in files if n.startswith("receipts/"))
    index["files"][rid]["size"] -= 1
    files["bundle.json"] = json.dumps(index).encode()
    p.write_bytes(raw_zip([(n, *_entry(d)) for n, d in files.items()]))
    report = verify_bundle(p, (made["key"],))
    assert "receipt" in failed(report) and "the zip says" in failed(report)["receipt"]


@pytest.mark.parametrize("value", [[1, 2, 3], "a string", 42, None])
def test_a_receipt_of_the_wrong_json_type_is_a_verdict(made: dict[str, Any], value: object) -> None:
    def swap(files: dict[str, bytes]) -> None:
        name = next(n for n in files if n.startswith("receipts/"))
        files[name] = json.dumps(value).encode()
    report = verify_bundle(repack(made["signed"], made["tmp"] / "type.zip", swap), (made["key"],))
    assert "receipt" in failed(report) and not report.ok


@pytest.mark.parametrize("field,value", [("detail", [1]), ("content", "blake3:x"), ("hops", 5), ("byte_count", "NaN"),
                                         ("request", []), ("signature", "abc")])
def test_receipt_fields_of_the_wrong_type_are_verdicts(made: dict[str, Any], field: str, value: object) -> None:
    def swap(files: dict[str, bytes]) -> None:
        name = next(n for n in files if n.startswith("receipts/"))
        d = json.loads(files[name])
        d[field] = value
        raw = json.dumps(d)
        files[name] = (raw.replace('"NaN"', "NaN")).encode()
    report = verify_bundle(repack(made["signed"], made["tmp"] / "field.zip", swap), (made["key"],))
    assert not report.ok and {"receipt", "receipt_signature"} & set(failed(report))
    assert report.to_json()["citations"][0]["quote"] is None


def test_the_manifest_has_a_size_limit(made: dict[str, Any]) -> None:
    big = made["tmp"] / "big-manifest.json"
    big.write_bytes((made["tmp"] / "signed.json").read_bytes() + b" " * MAX_INDEX)
    with pytest.raises(BundleError, match="at most"):
        build_bundle(made["home"], big, made["tmp"] / "never.zip")
    assert not (made["tmp"] / "never.zip").exists()

    def pad(files: dict[str, bytes]) -> None:
        files["manifest.json"] = files["manifest.json"] + b" " * (5 << 20)  # still the signed JSON
    report = verify_bundle(repack(made["signed"], made["tmp"] / "big.zip", pad), (made["key"],))
    assert "manifest" in failed(report) and "over the" in failed(report)["manifest"]


def test_too_many_entries_is_refused_before_parsing(made: dict[str, Any]) -> None:
    entries = [(f"x/{i}", b"", zipfile.ZIP_STORED, 0, 0, 0) for i in range(12_000)]
    bad = made["tmp"] / "many.zip"
    bad.write_bytes(raw_zip(entries))
    report = verify_bundle(bad, (made["key"],))
    assert [c.check for c in report.bundle_checks] == ["zip"] and "entries" in report.bundle_checks[0].detail


@pytest.fixture(scope="module")
def bz2_bomb() -> bytes:
    """About a KiB of bzip2 that inflates to 1 GiB."""
    c = bz2.BZ2Compressor(9)
    zero = bytes(1 << 20)
    out = b"".join(c.compress(zero) for _ in range(1024)) + c.flush()
    assert len(out) < 8192
    return out


def _bombs(made: dict[str, Any], bz2_bomb: bytes) -> dict[str, Path]:
    files = members(made["signed"])
    blob = next(n for n in files if n.startswith("blobs/"))
    tmp: Path = made["tmp"]
    bomb = deflate_bomb()
    out = {
        # the blob's stream inflates to 1 GiB while the zip says it is the real blob's size
        "deflate_lying": hostile_from(made["signed"], tmp / "b1.zip",
                                      {blob: (bomb, zipfile.ZIP_DEFLATED, zlib.crc32(files[blob]), len(bomb),
                                              len(files[blob]))}),
        # 1 GiB declared honestly, as a record: over its limit, never inflated
        "deflate_record": hostile_from(made["signed"], tmp / "b2.zip",
                                       {"keys/signing.pub": (bomb, zipfile.ZIP_DEFLATED, 0, len(bomb), GiB)}),
        # a few KiB of bzip2 to 1 GiB: bzip2 members are never opened
        "bzip2": hostile_from(made["signed"], tmp / "b3.zip",
                              {blob: (bz2_bomb, zipfile.ZIP_BZIP2, 0, len(bz2_bomb), len(files[blob]))}),
        "bzip2_manifest": hostile_from(made["signed"], tmp / "b4.zip",
                                       {"manifest.json": (bz2_bomb, zipfile.ZIP_BZIP2, 0, len(bz2_bomb), 100)}),
    }
    # an extra blob, listed in bundle.json with its true size (256 MiB) and digest: hashed streaming
    honest, size = deflate_bomb(256), 256 << 20
    sha = hashlib.sha256()
    zero = bytes(1 << 20)
    for _ in range(256):
        sha.update(zero)
    index = json.loads(files["bundle.json"])
    extra = "blobs/" + "0" * 64
    index["files"][extra] = {"sha256": "sha256:" + sha.hexdigest(), "size": size}
    entries = [(n, *_entry(json.dumps(index).encode() if n == "bundle.json" else d)) for n, d in files.items()]
    entries.append((extra, honest, zipfile.ZIP_DEFLATED, _crc_zeros(size), len(honest), size))
    out["declared_large"] = tmp / "b5.zip"
    out["declared_large"].write_bytes(raw_zip(entries))
    return out


LAUNCH = "import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))"


def _crc_zeros(n: int) -> int:
    crc, zero = 0, bytes(1 << 20)
    for _ in range(n >> 20):
        crc = zlib.crc32(zero, crc)
    return crc


def test_zip_bombs_are_verdicts_under_128_mib(made: dict[str, Any], bz2_bomb: bytes, site: Site) -> None:
    bombs = _bombs(made, bz2_bomb)
    # a legitimate bundle whose page is as large as verify re-reads, to bound the honest path too
    home: EvidenceHome = made["home"]
    cell = "<div><h2>Part</h2><p>" + "word and <a href='/x'>a link</a> " * 20 + "</p></div>\n"
    page = "<html><body><p>" + TEXT + "</p>" + cell * ((MAX_PARSED_BODY - 2048) // len(cell)) + "</body></html>"
    s = site({"/big": Reply(body=page.encode()), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as c:
        r = fetch(home, c, s.url("/big"))
    # ... cited over and over, by a manifest as large as verify reads (a manifest costs memory per citation)
    c1 = cite_web(home, r.receipt_id, quote="stays in the stored bytes")
    n = 100
    for _ in range(2):
        save_manifest(Manifest("mfst_big", "2026-01-01T00:00:00Z", (c1,) * n).signed(home.signing_key()),
                      made["tmp"] / "big.json")
        n = int(n * (MAX_INDEX - 8192) / (made["tmp"] / "big.json").stat().st_size)
    assert MAX_INDEX // 2 < (made["tmp"] / "big.json").stat().st_size <= MAX_INDEX
    build_bundle(home, made["tmp"] / "big.json", made["tmp"] / "bigpage.zip")
    paths = {**bombs, "big_page": made["tmp"] / "bigpage.zip"}
    # One fresh process per bundle: the bound is on verifying any one bundle. It is started through a
    # small launcher because Linux carries the starting process's peak RSS (this pytest's) into
    # ru_maxrss across vfork+exec; a grandchild of a small process reports only its own.
    script = textwrap.dedent("""
        import json, resource, sys
        from g6.prove.bundle import verify_bundle
        from g6.ledger import VerifyKey
        out = verify_bundle(sys.argv[2], (VerifyKey.from_text(sys.argv[1]),)).to_json()
        out["peak_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps(out))
    """)
    out = {}
    for label, path in paths.items():
        run = subprocess.run([sys.executable, "-c", LAUNCH, sys.executable, "-c", script, made["key"].to_text(),
                              str(path)],
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        out[label] = json.loads(run.stdout)
        assert out[label].pop("peak_kib") < 128 * 1024, f"verifying {label} took 128 MiB or more"
    big = out.pop("big_page")
    assert big["ok"] is True and len(big["citations"]) > 1000
    # an unreferenced 256 MiB blob declared honestly is read once, streaming, to its declared end
    honest = out.pop("declared_large")
    assert 256 << 20 < honest["inflated_bytes"] <= honest["declared_bytes"]
    for label, report in out.items():
        assert report["ok"] is False, label
        assert report["inflated_bytes"] <= report["declared_bytes"], label
        assert report["inflated_bytes"] < 1 << 20, label  # the bombs were never inflated
    assert "compression method 12" in json.dumps(out["bzip2"])
    assert "compression method 12" in json.dumps(out["bzip2_manifest"])


def test_a_search_citation_shows_the_verified_paper(made: dict[str, Any], site: Site) -> None:
    from g6.adapters.sources.arxiv import ArxivSource
    from g6.adapters.sources.search import SearchRequest
    from g6.cite.cite import cite_paper
    from g6.fetch.capture import search

    home: EvidenceHome = made["home"]
    fix = Path(__file__).resolve().parent.parent / "fixtures" / "http" / "arxiv" / "id_list_1605.08386_status200.xml"
    s = site({"/api/query": Reply(body=fix.read_bytes(), content_type="application/atom+xml"),
              "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        result = search(home, client, ArxivSource(base_url=s.url("/api/query"), pause=0), SearchRequest("markov"))
    c = cite_paper(home, result.receipt_ids[0], 1)
    m = Manifest.new().with_citation(c)
    save_manifest(m.signed(home.signing_key()), made["tmp"] / "paper.json")
    build_bundle(home, made["tmp"] / "paper.json", made["tmp"] / "paper.zip")
    report = verify_bundle(made["tmp"] / "paper.zip", (made["key"],))
    assert report.ok, report.to_json()
    (v,) = report.citations
    assert v.quote == "Heat-bath random walks with Markov bases" and v.url == c.source_url
    assert v.citation_id == c.citation_id and v.receipt_id == c.receipt_id

    def retitle(files: dict[str, bytes]) -> None:
        d = json.loads(files["manifest.json"])
        d.pop("signature")
        d["citations"][0]["text"] = d["citations"][0]["quote"] = "A paper that was never on the page"
        d["citations"][0]["text_hash"] = "sha256:" + hashlib.sha256(b"a paper that was never on the page").hexdigest()
        files["manifest.json"] = json.dumps(d).encode()
    forged = verify_bundle(repack(made["tmp"] / "paper.zip", made["tmp"] / "paper2.zip", retitle), (made["key"],),
                           allow_unsigned=True)
    assert failed(forged) == {"cited_text": "the paper is not on the cited search page"}
    assert forged.citations[0].quote is None


def test_many_citations_of_one_body_parse_it_once(made: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import g6.prove.bundle_citations

    calls = []
    real = g6.prove.bundle_citations.cited_text
    monkeypatch.setattr(g6.prove.bundle_citations, "cited_text", lambda *a, **k: calls.append(1) or real(*a, **k))

    def many(files: dict[str, bytes]) -> None:
        d = json.loads(files["manifest.json"])
        d.pop("signature")
        d["citations"] = d["citations"] * 50
        files["manifest.json"] = json.dumps(d).encode()
    report = verify_bundle(repack(made["signed"], made["tmp"] / "many.zip", many), (made["key"],),
                           allow_unsigned=True)
    assert report.ok and len(report.citations) == 50 and len(calls) == 1


_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                                 st.text(max_size=12)),
                       lambda c: st.one_of(st.lists(c, max_size=3),
                                           st.dictionaries(st.text(max_size=8), c, max_size=3)),
                       max_leaves=8)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(member=st.sampled_from(["manifest.json", "receipt", "bundle.json"]), pick=st.integers(min_value=0),
       value=_values, reindex=st.booleans())
def test_any_edit_of_any_record_is_a_verdict(made: dict[str, Any], member: str, pick: int, value: Any,
                                             reindex: bool) -> None:
    """Replace any one JSON value in a record with any JSON value: a report, never an exception, and
    never 'holds' unless the edit changed nothing."""
    files = members(made["signed"])
    name = next(n for n in files if n.startswith("receipts/")) if member == "receipt" else member
    doc = json.loads(files[name])
    paths = _paths(doc)
    path = paths[pick % len(paths)]
    if not path:
        doc = value
    else:
        target = doc
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
    files[name] = json.dumps(doc).encode()
    if reindex and name != "bundle.json":
        files["bundle.json"] = index_for(files, origin=json.loads(files["bundle.json"])["origin"])
    out = made["tmp"] / "edited.zip"
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in files.items():
            z.writestr(n, d)
    report = verify_bundle(out, (made["key"],))
    if report.ok:  # only an edit that left the signed content as it was may hold
        assert name == "bundle.json" or json.loads(files[name]) == json.loads(members(made["signed"])[name])


@pytest.mark.parametrize("content", [{"blake3": 5, "sha256": "x", "size": 1}, {"blake3": "blake3:zz"}, {}])
def test_a_signed_receipt_with_malformed_digests_is_a_verdict(made: dict[str, Any], content: object) -> None:
    """Even what the pinned key signed is typed before use: a verdict, never a traceback."""
    from g6.ledger.receipts import Receipt

    home: EvidenceHome = made["home"]

    def resign(files: dict[str, bytes]) -> None:
        name = next(n for n in files if n.startswith("receipts/"))
        d = json.loads(files[name])
        d["content"] = content
        d.pop("signature")
        r = Receipt.from_json(d).signed(home.signing_key())
        files[name] = json.dumps(r.to_json()).encode()
    report = verify_bundle(repack(made["signed"], made["tmp"] / "resigned.zip", resign), (made["key"],))
    assert not report.ok and "blob_digests" in failed(report)


def test_a_citation_of_the_visible_text_verifies_against_that_text(made: dict[str, Any], site: Site) -> None:
    """A citation cut from the page's visible text (``text_source: visible``) is checked at its offsets
    in the visible text, and its id carries the text it came from; claiming main text for it fails."""
    home, tmp = made["home"], made["tmp"]
    body = (b"<html><body><nav><a href='/x'>Menu link one</a></nav><article><p>"
            + b"The main article body says something long enough to be the main text of this page. " * 5
            + b"</p></article><footer>Footer words only a reader sees.</footer></body></html>")
    s = site({"/v": Reply(body=body), "/robots.txt": Reply(404, b"")})
    with CheckedClient(FetchPolicy(allow_loopback=True, host_pause=0)) as client:
        r = fetch(home, client, s.url("/v"))
    c = cite_web(home, r.receipt_id, quote="Footer words only a reader sees.")
    assert c.text_source == "visible"
    save_manifest(Manifest.new().with_citation(c).signed(home.signing_key()), tmp / "visible.json")
    build_bundle(home, tmp / "visible.json", tmp / "visible.zip")
    report = verify_bundle(tmp / "visible.zip", (made["key"],))
    assert report.ok, failed(report)

    def as_main(files: dict[str, bytes]) -> None:
        d = json.loads(files["manifest.json"])
        d.pop("signature")
        d["citations"][0]["text_source"] = "main"
        files["manifest.json"] = json.dumps(d).encode()
    claimed = verify_bundle(repack(tmp / "visible.zip", tmp / "as-main.zip", as_main), (made["key"],),
                            allow_unsigned=True)
    assert not claimed.ok and "cited_text" in failed(claimed)


# --- where each key came from: never "pinned" for a key the bundle shipped -------------------------------


def test_trust_bundle_keys_never_says_pinned(made: dict[str, Any]) -> None:
    """--trust-bundle-keys takes the keys the bundle ships: every line says so, none reads as pinned."""
    kid = made["key"].key_id
    out = g6(made["home"], "bundle", "verify", str(made["signed"]), "--trust-bundle-keys")
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    for line in lines:  # "not pinned" is the only way the word appears
        assert "pinned" not in line.replace("not pinned", ""), line
    assert f"bundle_keys            ok: {kid} shipped inside the bundle, not pinned (--trust-bundle-keys): " \
           "anyone can make a bundle that holds with the keys it ships" in lines
    cp = next(x for x in lines if x.startswith("checkpoint_signature"))
    assert f" signed by {kid} (shipped inside the bundle, not pinned); " in cp
    assert f"manifest_signature     ok: signed by {kid} (shipped inside the bundle, not pinned)" in lines
    assert lines[-1] == (f"bundle holds only against keys shipped inside the bundle, not pinned: 1 citation, "
                         f"manifest signed by {kid} (shipped inside the bundle, not pinned); pin the publisher's "
                         "checkpoint verifier key with --key to know who made it")
    report = verify_bundle(made["signed"], trust_bundle_keys=True)
    assert report.to_json()["keys"] == [{"key_id": kid, "source": "shipped inside the bundle, not pinned"}]


def test_pinned_keys_say_they_were_pinned_with_key(made: dict[str, Any]) -> None:
    kid = made["key"].key_id
    out = g6(made["home"], "bundle", "verify", str(made["signed"]), "--key", made["key"].to_text())
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert f"key_pinned             ok: pinned {kid} with --key" in lines
    assert f" signed by {kid} (pinned with --key); " in next(x for x in lines if x.startswith("checkpoint_signature"))
    assert f"manifest_signature     ok: signed by {kid} (pinned with --key)" in lines
    assert lines[-1] == f"bundle holds: 1 citation, manifest signed by a pinned key ({kid}, pinned with --key)"
    report = verify_bundle(made["signed"], (made["key"],))
    assert report.to_json()["keys"] == [{"key_id": kid, "source": "pinned with --key"}]
    # no key at all: the bundle's own keys were used to say what they could, and every line says so
    bare = g6(made["home"], "bundle", "verify", str(made["signed"]))
    assert bare.returncode == 1
    for line in bare.stdout.splitlines():
        assert "pinned" not in line.replace("not pinned", "").replace("key_pinned", "").replace(
            "pin the publisher's", ""), line
