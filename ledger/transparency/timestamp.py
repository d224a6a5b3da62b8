"""RFC 3161 time-stamp tokens over checkpoints: the request g6 sends, and the offline check of a token.

A TSA (time-stamping authority) signs the SHA-256 of a checkpoint's note body (the signed note's text
without its signature lines) together with the time it saw it (``genTime``). Whoever pins the TSA's
root certificate can then check, offline, that the checkpoint (and so every receipt under it) existed
before ``genTime``, if the TSA is honest. It says nothing about when a read happened: only an upper bound.

:func:`verify_token` gives one verdict per check, never a bare bool, and fails closed (a check it could
not run is a failed check):

``status``                   a reply's PKIStatus is granted (0) or grantedWithMods (1); a bare token implies it
``format``                   a CMS SignedData whose content is a TSTInfo (version 1)
``imprint``                  the token's messageImprint is the SHA-256 of this note body
``nonce``                    the TSTInfo carries the request's nonce (only when the request is at hand:
                             when the token comes back, never offline)
``signer``                   exactly one SignerInfo, and its certificate is in the token
``cms_signature``            content-type and message-digest attributes right, the signature verifies (SHA-2)
``ess_signing_certificate``  the ESS signing-certificate(-v2) attribute is there and names the signer
                             certificate (RFC 3161 s2.4.1, RFC 5816; rfc3161-client does not check this)
``timestamping_eku``         extendedKeyUsage present, critical, timeStamping only; keyUsage (if any) signing
``gentime_in_validity``      genTime inside the signer certificate's validity
``chain``                    the signer certificate chains to a pinned root, valid at genTime (``cryptography``'s
                             path builder, CA rules of the WebPKI; the token's other certificates may serve as
                             intermediates). No root pinned: a failed check, never a pass.

A check that could not run (the token did not parse, its signer is missing) is listed as failed with
"not checked", so a report always holds every check and ``ok`` means each one ran and held.

**What is stamped.** The note body: the checkpoint's text (origin, size, root hash, extension lines)
without the signature lines, exactly the bytes the log's key signs (``Checkpoint.text()``,
``parse_note(note)[0]``). A witness adding its cosignature line does not change it, so a token stays
good for the checkpoint however many signatures are added; and a token cannot be moved to another
checkpoint, because another tree's root or size is other bytes.

Parsing is asn1crypto's; signatures and the path are checked with ``cryptography``. Nothing here
touches the network or the ledger (``g6.ledger.transparency.timestamped`` checks the tokens a ledger keeps;
``g6.prove.timestamp_client`` asks a TSA).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from asn1crypto import cms, core, tsp
from asn1crypto import x509 as ax509
from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa
from cryptography.x509 import verification
from cryptography.x509.oid import ExtendedKeyUsageOID

from g6.ledger.verdict import CheckVerdict

KIND = "rfc3161"  # what a token is kept beside a checkpoint as (``Ledger.keep_beside``)
MAX_TOKEN = 1 << 20  # a token is a few KiB; anything past this is refused unread
MAX_CERTS = 32
HASHES: dict[str, type[hashes.HashAlgorithm]] = {"sha256": hashes.SHA256, "sha384": hashes.SHA384,
                                                 "sha512": hashes.SHA512}
REQUIRED = ("status", "format", "imprint", "signer", "cms_signature", "ess_signing_certificate", "timestamping_eku",
            "gentime_in_validity", "chain")


class _Reply(core.Sequence):
    """TimeStampResp as RFC 3161 has it: the token is there only when granted (asn1crypto's
    ``tsp.TimeStampResp`` requires it, so a rejection would not parse)."""

    _fields = [("status", tsp.PKIStatusInfo), ("time_stamp_token", cms.ContentInfo, {"optional": True})]


class TimestampTokenError(ValueError):
    """A TSA reply that is not one (garbage), or one whose status is not granted."""


TokenCheck = CheckVerdict  # one verdict on a token: which check, whether it held, and why (or why not)


@dataclass(frozen=True, slots=True)
class TokenReport:
    """Every verdict on one token, and what the token says. ``gen_time`` is what the token claims:
    trust it only when ``ok`` (``existed_before`` is ``gen_time`` then, else None)."""

    checks: tuple[TokenCheck, ...]
    gen_time: datetime | None = None
    tsa: str = ""  # the TSTInfo's tsa name, else the signer certificate's subject
    signer: str = ""  # the signer certificate's subject (RFC 4514)
    serial: int | None = None
    policy: str = ""
    nonce: int | None = None
    accuracy: str = ""  # "1s", "500ms"…, empty when the token gives none
    # how much later than genTime the TSA's clock may have read: the token's accuracy; without one, a
    # genTime given to the second (no fraction) may have been cut down by up to 1 s
    margin: timedelta = timedelta(0)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Every required check ran and held, and so did every other one that ran (fail closed)."""
        names = {c.check for c in self.checks}
        return all(n in names for n in REQUIRED) and all(c.ok for c in self.checks)

    @property
    def existed_before(self) -> datetime | None:
        return self.gen_time if self.ok else None

    @property
    def latest(self) -> datetime | None:
        """genTime plus the margin: the latest time the token allows for what it stamps (when ``ok``)."""
        return self.gen_time + self.margin if self.ok and self.gen_time is not None else None

    def failed(self) -> tuple[TokenCheck, ...]:
        return tuple(c for c in self.checks if not c.ok)

    def without(self, *names: str) -> tuple[TokenCheck, ...]:
        """The verdicts other than ``names`` (a TSA's reply is judged before any root is at hand)."""
        return tuple(c for c in self.checks if c.check not in names)

    def summary(self) -> str:
        """One line: what the token proves, or which checks failed."""
        if self.ok and self.gen_time is not None:
            return f"existed before {iso(self.gen_time)} (TSA {self.tsa})"
        bad = [c for c in self.failed() if not c.detail.startswith("not checked")] or list(self.failed())
        return "; ".join(f"{c.check}: {c.detail}" for c in bad) or "not checked"

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "gen_time": iso(self.gen_time) if self.gen_time else None, "tsa": self.tsa,
                "signer": self.signer, "serial": self.serial, "policy": self.policy, "nonce": self.nonce,
                "accuracy": self.accuracy, "checks": [c.to_json() for c in self.checks]}


def iso(t: datetime) -> str:
    """A genTime as RFC 3339 UTC, with its fraction when it has one."""
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + (f".{t.microsecond:06d}".rstrip("0") if t.microsecond else "") + "Z"


def note_body_bytes(note_body: bytes | str) -> bytes:
    return note_body.encode("utf-8") if isinstance(note_body, str) else bytes(note_body)


# -- the request and the reply ----------------------------------------------------------------------------
def make_request(note_body: bytes | str) -> tuple[bytes, int]:
    """A DER TimeStampReq over SHA-256 of ``note_body``, with a fresh 64-bit nonce and certReq set
    (the TSA's certificate comes back in the token). Returns the request and its nonce."""
    nonce = secrets.randbits(64) | 1
    req = tsp.TimeStampReq({
        "version": "v1",
        "message_imprint": {"hash_algorithm": {"algorithm": "sha256"},
                            "hashed_message": hashlib.sha256(note_body_bytes(note_body)).digest()},
        "nonce": nonce,
        "cert_req": True,
    })
    return req.dump(), nonce


def _status_text(info: tsp.PKIStatusInfo) -> str:
    """``rejection (bad_alg): the TSA's words``."""
    out = str(info["status"].native)
    fail = info["fail_info"]
    if fail.native:
        out += " (" + ", ".join(sorted(str(f) for f in fail.native)) + ")"
    text = info["status_string"]
    if text.native:
        out += ": " + _short(" ".join(str(s) for s in text.native))
    return out


def token_from_reply(reply: bytes) -> bytes:
    """The DER TimeStampToken of a TSA's reply (a TimeStampResp). TimestampTokenError when the reply is
    not one or its status is not granted."""
    if len(reply) > MAX_TOKEN:
        raise TimestampTokenError(f"a reply of {len(reply)} bytes (at most {MAX_TOKEN})")
    try:
        resp = _Reply.load(reply, strict=True)
        info = resp["status"]
        status = info["status"].native
        token = resp["time_stamp_token"]
        if status not in ("granted", "granted_with_mods"):
            raise TimestampTokenError(f"status {_status_text(info)}")
        if isinstance(token, core.Void):
            raise TimestampTokenError(f"status {status} but no token")
        return token.dump()
    except (ValueError, TypeError, KeyError) as e:
        if isinstance(e, TimestampTokenError):
            raise
        raise TimestampTokenError(f"not an RFC 3161 TimeStampResp ({_short(e)})") from None


def read_token(data: bytes) -> bytes:
    """A token as a file may hold it: DER TimeStampToken, DER TimeStampResp (what a TSA answers; its
    token is taken when granted), or either in base64. TimestampTokenError otherwise."""
    raw = bytes(data)  # DER as it is: its last bytes may well be 0x0a or 0x20, never strip them
    if raw[:1] != b"\x30":
        try:
            raw = base64.b64decode(b"".join(raw.split()), validate=True)
        except (binascii.Error, ValueError):
            raise TimestampTokenError("neither DER nor base64") from None
    try:
        first = raw[_header_len(raw)]  # TimeStampResp starts with PKIStatusInfo (a SEQUENCE), a token with an OID
    except (ValueError, IndexError):
        raise TimestampTokenError("not DER") from None
    return token_from_reply(raw) if first == 0x30 else raw


def _header_len(der: bytes) -> int:
    """The length of the tag and length octets of the first TLV in ``der`` (a SEQUENCE, low tag)."""
    if len(der) < 2 or der[0] != 0x30:
        raise ValueError("not a SEQUENCE")
    n = der[1]
    if n < 0x80:
        return 2
    k = n & 0x7F
    if k == 0 or k > 4:
        raise ValueError("bad length")
    return 2 + k


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:160] + ("…" if len(text) > 160 else "")


# -- checking a token -----------------------------------------------------------------------------------
def load_roots(pem: bytes) -> list[x509.Certificate]:
    """The certificates of a PEM file (one or more). ValueError when it holds none."""
    certs = x509.load_pem_x509_certificates(pem)
    if not certs:
        raise ValueError("no certificate in it")
    return certs


def _done(checks: list[TokenCheck], why: str = "", **info: Any) -> TokenReport:
    """The report, every required check in it: one that did not run is a failure saying why."""
    ran = {c.check for c in checks}
    why = why or next((c.detail for c in checks if not c.ok), "")
    missing = [TokenCheck(n, False, f"not checked ({why})" if why else "not checked") for n in REQUIRED
               if n not in ran]
    return TokenReport(tuple(checks) + tuple(missing), **info)


def verify_token(token: bytes, note_body: bytes | str, roots: Sequence[x509.Certificate], *,
                 nonce: int | None = None) -> TokenReport:
    """Check an RFC 3161 token (DER TimeStampToken, or a TimeStampResp) over ``note_body`` against the
    pinned TSA ``roots``, offline: a verdict per check (see the module). ``nonce``: the request's, when
    it is at hand. With no roots, ``chain`` fails: nothing was pinned to check it against."""
    checks: list[TokenCheck] = []
    try:
        if len(token) > MAX_TOKEN:
            raise TimestampTokenError(f"{len(token)} bytes (at most {MAX_TOKEN})")
        token = read_token(token)
    except TimestampTokenError as e:
        status_failed = str(e).startswith("status")
        checks.append(TokenCheck("status" if status_failed else "format", False, str(e)))
        return _done(checks, "the token could not be read")
    parsed = _parse(token, checks)
    if parsed is None:
        return _done(checks, "the token could not be read")
    checks.insert(0, TokenCheck("status", True, "granted (a token is there)"))
    sd, tst, econtent = parsed
    info = _token_info(tst)
    _check_imprint(tst, note_body_bytes(note_body), checks)
    if nonce is not None:
        got = tst["nonce"].native
        checks.append(TokenCheck("nonce", got == nonce, "the request's" if got == nonce else
                                 f"the token carries {got}, the request sent {nonce}"))
    signer = _signer(sd, checks)
    if signer is None:
        return _done(checks, "no signer certificate to check with", **info)
    si, cert_a, cert = signer
    info["signer"] = cert.subject.rfc4514_string()
    info["tsa"] = info["tsa"] or info["signer"]
    _check_signature(si, econtent, cert, checks)
    _check_ess(si, cert_a, checks)
    _check_usage(cert, checks)
    gen_time = info["gen_time"]
    _check_validity(cert, gen_time, checks)
    others = [c for c in _certs(sd) if c != cert]
    _check_chain(cert, others, roots, gen_time, checks)
    return _done(checks, **info)


def _parse(token: bytes, checks: list[TokenCheck]) -> tuple[cms.SignedData, tsp.TSTInfo, bytes] | None:
    try:
        ci = cms.ContentInfo.load(token, strict=True)
        if ci["content_type"].native != "signed_data":
            raise ValueError(f"content type {ci['content_type'].native}, not signed data")
        sd = ci["content"]
        encap = sd["encap_content_info"]
        if encap["content_type"].native != "tst_info":
            raise ValueError(f"encapsulated content {encap['content_type'].native}, not a TSTInfo")
        content = encap["content"]
        if content.method != 0:
            raise ValueError("the TSTInfo is not a DER (primitive) OCTET STRING")
        econtent = content.contents
        tst = tsp.TSTInfo.load(econtent, strict=True)
        if tst["version"].native != "v1":
            raise ValueError(f"TSTInfo version {tst['version'].native}")
        tst.native  # noqa: B018 - parse every field now, so a broken one is a format failure here
        if not isinstance(tst["gen_time"].native, datetime):
            raise ValueError("no genTime")
        if len(sd["certificates"]) > MAX_CERTS:
            raise ValueError(f"{len(sd['certificates'])} certificates (at most {MAX_CERTS})")
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        checks.append(TokenCheck("format", False, f"not an RFC 3161 token: {_short(e)}"))
        return None
    checks.append(TokenCheck("format", True, "CMS SignedData holding a TSTInfo"))
    return sd, tst, econtent


def _token_info(tst: tsp.TSTInfo) -> dict[str, Any]:
    acc = tst["accuracy"].native or {}
    parts = [f"{v}{unit}" for unit, v in (("s", acc.get("seconds")), ("ms", acc.get("millis")),
                                          ("us", acc.get("micros"))) if v]
    tsa_name = tst["tsa"]
    name = ""
    if tsa_name.native is not None:
        chosen = tsa_name.chosen
        name = chosen.human_friendly if isinstance(chosen, ax509.Name) else str(tsa_name.native)
    gen = tst["gen_time"].native
    if acc:
        margin = timedelta(seconds=acc.get("seconds") or 0, milliseconds=acc.get("millis") or 0,
                           microseconds=acc.get("micros") or 0)
    else:
        margin = timedelta(seconds=1) if gen.microsecond == 0 else timedelta(0)
    return {"gen_time": gen.astimezone(UTC), "tsa": name, "serial": tst["serial_number"].native,
            "policy": tst["policy"].dotted, "nonce": tst["nonce"].native, "accuracy": "".join(parts),
            "margin": margin}


def _check_imprint(tst: tsp.TSTInfo, body: bytes, checks: list[TokenCheck]) -> None:
    imprint = tst["message_imprint"]
    algo = imprint["hash_algorithm"]["algorithm"].native
    if algo != "sha256":
        checks.append(TokenCheck("imprint", False, f"the token hashes with {algo}; g6 asks for SHA-256"))
        return
    ok = imprint["hashed_message"].native == hashlib.sha256(body).digest()
    checks.append(TokenCheck("imprint", ok, "the SHA-256 of this checkpoint's note body" if ok else
                             "the token is over other bytes (another or an altered checkpoint)"))


def _certs(sd: cms.SignedData) -> list[x509.Certificate]:
    out = []
    for choice in sd["certificates"]:
        if choice.name == "certificate":
            try:
                out.append(x509.load_der_x509_certificate(choice.chosen.dump()))
            except ValueError:
                continue  # an unreadable extra certificate serves no path; the signer's is checked below
    return out


def _signer(sd: cms.SignedData, checks: list[TokenCheck]
            ) -> tuple[cms.SignerInfo, ax509.Certificate, x509.Certificate] | None:
    infos = sd["signer_infos"]
    if len(infos) != 1:
        checks.append(TokenCheck("signer", False, f"{len(infos)} signers; a token carries the TSA's signature only"))
        return None
    si = infos[0]
    sid = si["sid"]
    for choice in sd["certificates"]:
        if choice.name != "certificate":
            continue
        c = choice.chosen
        if sid.name == "issuer_and_serial_number":
            hit = c.issuer == sid.chosen["issuer"] and c.serial_number == sid.chosen["serial_number"].native
        else:
            hit = c.key_identifier is not None and c.key_identifier == sid.chosen.native
        if hit:
            try:
                cert = x509.load_der_x509_certificate(c.dump())
            except ValueError as e:
                checks.append(TokenCheck("signer", False, f"the signer certificate is unreadable: {_short(e)}"))
                return None
            checks.append(TokenCheck("signer", True, f"one signer: {cert.subject.rfc4514_string()}"))
            return si, c, cert
    checks.append(TokenCheck("signer", False, "the signer certificate is not in the token (it was asked for: certReq)"))
    return None


def _attrs(si: cms.SignerInfo) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for a in si["signed_attrs"]:
        out.setdefault(a["type"].native, []).append(a["values"])
    return out


def _check_signature(si: cms.SignerInfo, econtent: bytes, cert: x509.Certificate, checks: list[TokenCheck]) -> None:
    try:
        digest = si["digest_algorithm"]["algorithm"].native
        if digest not in HASHES:
            raise ValueError(f"digest {digest}: only SHA-256, SHA-384 and SHA-512 are accepted")
        if not si["signed_attrs"].native:
            raise ValueError("no signed attributes (RFC 3161 tokens sign the ESS attribute)")
        attrs = _attrs(si)
        if any(len(v) != 1 or len(v[0]) != 1 for v in attrs.values()):
            raise ValueError("a signed attribute appears twice or with several values")
        if attrs.get("content_type", [[None]])[0][0].native != "tst_info":
            raise ValueError("the content-type attribute is not id-ct-TSTInfo")
        want = hashlib.new(digest, econtent).digest()
        if "message_digest" not in attrs or attrs["message_digest"][0][0].native != want:
            raise ValueError("the message-digest attribute does not match the TSTInfo")
        signed = bytearray(si["signed_attrs"].dump())
        signed[0] = 0x31  # signed as an explicit SET OF (RFC 5652 s5.4), sent as [0] IMPLICIT
        _verify_sig(cert.public_key(), si["signature_algorithm"], digest, si["signature"].native, bytes(signed))
    except InvalidSignature:
        checks.append(TokenCheck("cms_signature", False, "the signature does not verify with the signer certificate"))
        return
    except (ValueError, TypeError, KeyError, UnsupportedAlgorithm) as e:
        checks.append(TokenCheck("cms_signature", False, _short(e)))
        return
    checks.append(TokenCheck("cms_signature", True, f"{si['signature_algorithm'].signature_algo} over {digest}"))


def _verify_sig(key: Any, alg: Any, digest: str, sig: bytes, data: bytes) -> None:
    kind = alg.signature_algo
    try:
        named = alg.hash_algo
    except ValueError:
        named = digest  # rsaEncryption / plain ecdsa: the SignerInfo's digest algorithm says which
    if named not in HASHES:
        raise ValueError(f"signature hash {named}: only SHA-2 is accepted")
    h = HASHES[named]()
    if kind == "rsassa_pkcs1v15" and isinstance(key, rsa.RSAPublicKey):
        key.verify(sig, data, padding.PKCS1v15(), h)
    elif kind == "rsassa_pss" and isinstance(key, rsa.RSAPublicKey):
        params = alg["parameters"]
        mgf_hash = params["mask_gen_algorithm"]["parameters"]["algorithm"].native
        if mgf_hash not in HASHES:
            raise ValueError(f"PSS mask hash {mgf_hash}")
        key.verify(sig, data, padding.PSS(padding.MGF1(HASHES[mgf_hash]()), params["salt_length"].native), h)
    elif kind == "ecdsa" and isinstance(key, ec.EllipticCurvePublicKey):
        key.verify(sig, data, ec.ECDSA(h))
    elif kind in ("ed25519", "ed448") and isinstance(key, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        key.verify(sig, data)
    else:
        raise ValueError(f"a {kind} signature from a {type(key).__name__.removesuffix('PublicKey')} key")


def _check_ess(si: cms.SignerInfo, cert: ax509.Certificate, checks: list[TokenCheck]) -> None:
    """RFC 3161 s2.4.1 / RFC 5816: the ESS signing-certificate attribute (v1: SHA-1 ESSCertID; v2: any
    hash, SHA-256 by default) is signed, and its first ESSCertID names the signer certificate."""
    try:
        attrs = _attrs(si)
    except (ValueError, TypeError):
        checks.append(TokenCheck("ess_signing_certificate", False, "the signed attributes are unreadable"))
        return
    found = []
    der = cert.dump()
    try:
        for name, algo_of in (("signing_certificate", lambda _i: "sha1"),
                              ("signing_certificate_v2", lambda i: i["hash_algorithm"]["algorithm"].native)):
            for values in attrs.get(name, []):
                ids = values[0]["certs"]
                if len(ids) == 0:
                    raise ValueError(f"{name} names no certificate")
                first = ids[0]
                algo = algo_of(first)
                if algo not in ("sha1", *HASHES):
                    raise ValueError(f"{name} hashes with {algo}")
                if first["cert_hash"].native != hashlib.new(algo, der).digest():
                    raise ValueError(f"{name} names another certificate than the signer's ({algo} differs)")
                serial = first["issuer_serial"]
                if serial.native is not None and not _issuer_serial_matches(serial, cert):
                    raise ValueError(f"{name}'s issuerSerial is not the signer certificate's")
                found.append(f"{'signingCertificateV2' if name.endswith('v2') else 'signingCertificate'} ({algo})")
    except (ValueError, TypeError, KeyError) as e:
        checks.append(TokenCheck("ess_signing_certificate", False, _short(e)))
        return
    if not found:
        checks.append(TokenCheck("ess_signing_certificate", False,
                                 "no ESS signing-certificate attribute (RFC 3161 s2.4.1 requires one)"))
        return
    checks.append(TokenCheck("ess_signing_certificate", True, " and ".join(found) + " names the signer certificate"))


def _issuer_serial_matches(serial: tsp.IssuerSerial, cert: ax509.Certificate) -> bool:
    names = [g.chosen for g in serial["issuer"] if g.name == "directory_name"]
    return serial["serial_number"].native == cert.serial_number and any(n == cert.issuer for n in names)


def _check_usage(cert: x509.Certificate, checks: list[TokenCheck]) -> None:
    """RFC 3161 s2.3: exactly one extendedKeyUsage, id-kp-timeStamping, and the extension critical
    (as OpenSSL's timestamp-signing purpose: a keyUsage, if any, allows signing and nothing else)."""
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        checks.append(TokenCheck("timestamping_eku", False,
                                 "the signer certificate has no extendedKeyUsage (timeStamping)"))
        return
    except ValueError as e:
        checks.append(TokenCheck("timestamping_eku", False,
                                 f"the signer certificate's extensions are unreadable: {_short(e)}"))
        return
    problems = []
    if list(eku.value) != [ExtendedKeyUsageOID.TIME_STAMPING]:
        problems.append("extendedKeyUsage is not timeStamping alone: "
                        + ", ".join(getattr(o, "_name", o.dotted_string) for o in eku.value))
    if not eku.critical:
        problems.append("extendedKeyUsage timeStamping is not critical")
    try:
        ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        if not (ku.digital_signature or ku.content_commitment) or ku.key_cert_sign or ku.crl_sign:
            problems.append("keyUsage does not limit the key to signing")
    except x509.ExtensionNotFound:
        pass
    checks.append(TokenCheck("timestamping_eku", not problems, "; ".join(problems) if problems else
                             "critical extendedKeyUsage timeStamping"))


def _check_validity(cert: x509.Certificate, gen_time: datetime, checks: list[TokenCheck]) -> None:
    nb, na = cert.not_valid_before_utc, cert.not_valid_after_utc
    ok = nb <= gen_time <= na
    checks.append(TokenCheck("gentime_in_validity", ok,
                             f"genTime {iso(gen_time)} inside {iso(nb)} .. {iso(na)}" if ok else
                             f"genTime {iso(gen_time)} is outside the signer certificate's validity "
                             f"{iso(nb)} .. {iso(na)}"))


def _check_chain(cert: x509.Certificate, others: list[x509.Certificate], roots: Sequence[x509.Certificate],
                 gen_time: datetime, checks: list[TokenCheck]) -> None:
    if not roots:
        checks.append(TokenCheck("chain", False, "no TSA root pinned (--tsa-root): nothing to check the chain against"))
        return
    try:
        verifier = (verification.PolicyBuilder().store(verification.Store(list(roots))).time(gen_time)
                    .max_chain_depth(8)
                    .extension_policies(ca_policy=verification.ExtensionPolicy.webpki_defaults_ca(),
                                        ee_policy=verification.ExtensionPolicy.permit_all())
                    .build_client_verifier())
        verified = verifier.verify(cert, others)
    except (verification.VerificationError, ValueError, TypeError) as e:
        checks.append(TokenCheck("chain", False, f"no path to a pinned root valid at genTime {iso(gen_time)}: "
                                 f"{_short(e)}"))
        return
    top = verified.chain[-1]
    checks.append(TokenCheck("chain", True, f"to the pinned root {top.subject.rfc4514_string()}, valid at genTime"))

