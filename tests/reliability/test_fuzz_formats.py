"""hypothesis over the formats a grader feeds in: manifests, proofs, checkpoints, bundles.
Any input gives a typed error or a verdict, never an uncaught exception."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from g6.cite.manifest import Manifest, load_manifest
from g6.errors import InputError
from g6.ledger import SigningKey
from g6.ledger.note import Checkpoint, NoteError, parse_note, parse_verifier_key
from g6.ledger.proofs import (
    ProofFormatError,
    parse_consistency,
    parse_inclusion,
    verify_consistency_proof,
    verify_inclusion_proof,
)
from g6.prove.bundle import verify_bundle

KEY = SigningKey.generate().public
json_values = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8)),
                           lambda c: st.one_of(st.lists(c, max_size=3),
                                               st.dictionaries(st.text(max_size=12), c, max_size=4)),
                           max_leaves=20)
lines = st.lists(st.one_of(st.sampled_from(["c2sp.org/tlog-proof@v1", "g6-evidence/tlog-consistency@v1",
                                            "index 3", "old 2", "new 5", "extra cmNwdA==", "---", "",
                                            "g6-evidence/x", "5", "— g6-evidence/x AAAA", "index -1",
                                            "q0SACj59+F05CfTFHlbfOLe0TjIaUDO4knDpgvbRgEE=",
                                            # numbers str.isdigit() takes and int() does not (or reads as
                                            # another number), base64 that is not ASCII, a CR, a BOM
                                            "index ²", "old ١", "new ３", "²", "٣", "index 3\r", "\ufeff",
                                            "q0SACj59+F05CfTFHlbfOLe0TjIaUDO4knDpgvbRgEé=", "— g6-evidence/x é"]),
                           st.text(max_size=20)), max_size=14).map(lambda ls: "\n".join(ls) + "\n")


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_manifest_from_any_json(value: object) -> None:
    try:
        Manifest.from_json(value if isinstance(value, dict) else {"schema": "g6.manifest.v1", "x": value})
    except InputError:
        pass


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_manifest_file_of_any_bytes(tmp_path: Path, raw: bytes) -> None:
    p = tmp_path / "m.json"
    p.write_bytes(raw)
    with pytest.raises(InputError):
        load_manifest(p)


@settings(max_examples=400, deadline=None)
@given(lines, json_values)
def test_proofs_of_any_text(text: str, receipt: object) -> None:
    for parse in (parse_inclusion, parse_consistency):
        try:
            parse(text)
        except ProofFormatError:
            pass
    assert isinstance(verify_consistency_proof(text, KEY).ok, bool)
    assert isinstance(verify_inclusion_proof(text, json.dumps(receipt), KEY).ok, bool)


@settings(max_examples=300, deadline=None)
@given(lines)
def test_notes_and_verifier_keys_of_any_text(text: str) -> None:
    for fn in (parse_note, parse_verifier_key, lambda t: Checkpoint.parse(parse_note(t)[0])):
        try:
            fn(text)
        except NoteError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=120), lines.map(lambda t: t.encode("utf-8", "surrogatepass"))))
def test_notes_and_proofs_of_any_bytes(raw: bytes) -> None:
    """A note or proof as read from a file: bytes, which may not be UTF-8 at all."""
    try:
        Checkpoint.parse(parse_note(raw)[0])
    except NoteError:
        pass
    assert isinstance(verify_consistency_proof(raw, KEY).ok, bool)
    assert isinstance(verify_inclusion_proof(raw, b"{}", KEY).ok, bool)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["bundle.json", "manifest.json", "checkpoint.note", "keys/signing.pub",
                                        "receipts/rcpt_X.json", "proofs/rcpt_X.tlog-proof", "blobs/ab"]),
                       st.one_of(st.binary(max_size=80), json_values.map(lambda v: json.dumps(v).encode())),
                       max_size=7))
def test_bundles_of_any_content(tmp_path: Path, members: dict[str, bytes]) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    p = tmp_path / "b.zip"
    p.write_bytes(buf.getvalue())
    report = verify_bundle(p, (KEY,))
    assert report.ok is False  # nothing random is a valid bundle


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.booleans())
def test_pdf_text_of_any_bytes(raw: bytes, pdf_header: bool) -> None:
    from g6.fetch.convert import pdf_text

    try:
        text, pages = pdf_text((b"%PDF-1.4\n" if pdf_header else b"") + raw)
        assert isinstance(text, str) and pages >= 0
    except ValueError as e:
        assert str(e).split(":")[0] in ("not_a_pdf", "encrypted_pdf", "unreadable_pdf")
