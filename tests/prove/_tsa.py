"""Two independent RFC 3161 TSAs on loopback for the tests, and the two outside verifiers.

* ``openssl ts -reply`` behind a small HTTP wrapper (``openssl_tsa_server.py``) with a throwaway CA
  made here: an EC P-256 root and a TSA leaf whose extendedKeyUsage is timeStamping, critical. The
  config has no ``certs=`` line, so a token carries the signer certificate only.
* certomancer 0.16.0 (``certomancer --config X animate --port 0 --no-web-ui``, 127.0.0.1): its own
  root, a good TSA, one whose certificate has no extendedKeyUsage at all; its
  ``X-Certomancer-Fake-Time`` header sets genTime (``backdating_tsa`` sets it for a client that cannot:
  a TSA whose clock is behind).

Both are started on ports the system picks, waited for by reading what they print, and stopped by
PID. Every token is checked with ``rfc3161_client`` and ``openssl ts -verify -attime <genTime>`` too.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HERE = Path(__file__).resolve().parent
START_WITHIN = 60.0  # seconds a server may take to say it listens (a bound for a hung start, not a timing)


@dataclass
class Tsa:
    name: str
    base: str  # http://127.0.0.1:PORT
    root_pem: Path  # the root to pin
    pid: int

    def url(self, service: str) -> str:
        return f"{self.base}/{service}"


# -- a throwaway CA -------------------------------------------------------------------------------------
def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def make_root(d: Path, cn: str, stem: str = "root") -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    (d / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, d / f"{stem}.key")
    return cert, key


def make_leaf(d: Path, stem: str, cn: str, root: x509.Certificate, root_key: ec.EllipticCurvePrivateKey, *,
              eku: list[x509.ObjectIdentifier] | None = None, eku_critical: bool = True,
              valid: tuple[dt.datetime, dt.datetime] | None = None) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    nb, na = valid or (now - dt.timedelta(days=1), now + dt.timedelta(days=730))
    b = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(root.subject).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(nb).not_valid_after(na)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
         .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key()), critical=False))
    if eku is not None:
        b = b.add_extension(x509.ExtendedKeyUsage(eku), critical=eku_critical)
    cert = b.sign(root_key, hashes.SHA256())
    (d / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, d / f"{stem}.key")
    return cert


# -- the servers ------------------------------------------------------------------------------------------
def _wait_for_port(proc: subprocess.Popen[bytes], stream_path: Path | None, pattern: str) -> int:
    """The port a server prints, read from its stdout (or a log file), with a bound for a hung start."""
    deadline = time.monotonic() + START_WITHIN
    if stream_path is None:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        m = re.search(pattern, line)
        if not m:
            raise RuntimeError(f"the TSA did not start: {line!r} (exit {proc.poll()})")
        return int(m.group(1))
    while time.monotonic() < deadline:
        text = stream_path.read_text(errors="replace") if stream_path.exists() else ""
        m = re.search(pattern, text)
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            raise RuntimeError(f"the TSA exited ({proc.returncode}): {text[-2000:]}")
        time.sleep(0.05)
    raise RuntimeError(f"the TSA did not say it listens within {START_WITHIN}s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, 9)
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


OPENSSL_SECTION = """\
[ {section} ]
dir                    = {d}
serial                 = $dir/tsaserial
crypto_device          = builtin
signer_cert            = $dir/{signer}.pem
signer_key             = $dir/{signer}.key
signer_digest          = sha256
default_policy         = 1.3.6.1.4.1.99999.1.1
digests                = {digests}
accuracy               = secs:1
clock_precision_digits = 0
ordering               = no
tsa_name               = no
ess_cert_id_chain      = no
ess_cert_id_alg        = sha256
"""


def _openssl_config(d: Path) -> Path:
    # no `certs =` line: a token carries the signer certificate only
    parts = ["[ tsa ]\ndefault_tsa = tsa\n"]
    for section, signer, digests in (("tsa", "tsa", "sha256, sha384, sha512"),
                                     ("reject", "tsa", "sha384, sha512")):  # refuses our SHA-256 query: rejection
        parts.append(OPENSSL_SECTION.format(section=section, d=d, signer=signer, digests=digests))
    (d / "tsaserial").write_text("01\n")
    path = d / "tsa.cnf"
    path.write_text("\n".join(parts))
    return path


def make_openssl_tsa(d: Path, cn: str = "g6 test openssl TSA") -> Path:
    """A throwaway CA in ``d`` (``root.pem``, the root to pin) and a TSA certificate it issued, and the
    ``openssl ts`` config using them (returned): sections ``tsa`` (good) and ``reject`` (refuses SHA-256).
    Also what ``scripts/tsa.py`` serves."""
    d.mkdir(parents=True, exist_ok=True)
    root, root_key = make_root(d, f"{cn} root")
    make_leaf(d, "tsa", cn, root, root_key, eku=[ExtendedKeyUsageOID.TIME_STAMPING])
    return _openssl_config(d)


@contextmanager
def openssl_tsa(d: Path) -> Iterator[Tsa]:
    """``openssl ts -reply`` behind HTTP: POST /tsa (good), /reject (refuses SHA-256: status rejection)."""
    cnf = make_openssl_tsa(d)
    proc = subprocess.Popen([sys.executable, str(HERE / "openssl_tsa_server.py"), str(cnf)],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        port = _wait_for_port(proc, None, r"port (\d+)")
        yield Tsa("openssl", f"http://127.0.0.1:{port}", d / "root.pem", proc.pid)
    finally:
        _stop(proc)


CERTOMANCER_YML = """\
external-url-prefix: "http://127.0.0.1:9"
keysets:
  g6test:
    path-prefix: keys
    keys:
      root: {path: root.key.pem}
      tsa: {path: tsa.key.pem}
pki-architectures:
  g6test:
    keyset: g6test
    entity-defaults:
      organization-name: g6 test
    entities:
      root: {common-name: g6 test certomancer root}
      tsa: {common-name: g6 test certomancer TSA}
      tsa-noeku: {common-name: g6 test certomancer TSA (no EKU)}
    certs:
      root:
        subject: root
        issuer: root
        validity: {valid-from: "2000-01-01T00:00:00+0000", valid-to: "2500-01-01T00:00:00+0000"}
        extensions:
          - {id: basic_constraints, critical: true, value: {ca: true}}
          - id: key_usage
            critical: true
            smart-value: {schema: key-usage, params: [key_cert_sign, crl_sign]}
      tsa:
        subject: tsa
        subject-key: tsa
        issuer: root
        validity: {valid-from: "2020-01-01T00:00:00+0000", valid-to: "2400-01-01T00:00:00+0000"}
        extensions:
          - id: key_usage
            critical: true
            smart-value: {schema: key-usage, params: [digital_signature]}
          - {id: extended_key_usage, critical: true, value: [time_stamping]}
      tsa-noeku:
        subject: tsa-noeku
        subject-key: tsa
        issuer: root
        validity: {valid-from: "2020-01-01T00:00:00+0000", valid-to: "2400-01-01T00:00:00+0000"}
        extensions:
          - id: key_usage
            critical: true
            smart-value: {schema: key-usage, params: [digital_signature]}
    services:
      time-stamping:
        tsa: {signing-key: tsa, signing-cert: tsa}
        tsa-noeku: {signing-key: tsa, signing-cert: tsa-noeku}
"""


@contextmanager
def certomancer_tsa(d: Path) -> Iterator[Tsa]:
    """certomancer's TSA: POST /g6test/tsa/tsa (good), /g6test/tsa/tsa-noeku (no extendedKeyUsage)."""
    exe = shutil.which("certomancer", path=str(Path(sys.executable).parent)) or shutil.which("certomancer")
    assert exe, "certomancer is not installed: pip install 'certomancer[web-api]==0.16.0'"
    (d / "keys").mkdir(parents=True, exist_ok=True)
    for k in ("root", "tsa"):
        _write_key(ec.generate_private_key(ec.SECP256R1()), d / "keys" / f"{k}.key.pem")
    (d / "certomancer.yml").write_text(CERTOMANCER_YML)
    subprocess.run([exe, "--config", "certomancer.yml", "summon", "g6test", "root", str(d / "root.pem")],
                   cwd=d, check=True, capture_output=True)
    log = d / "animate.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([exe, "--config", "certomancer.yml", "animate", "--port", "0", "--no-web-ui"],
                                cwd=d, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        port = _wait_for_port(proc, log, r"Running on http://127\.0\.0\.1:(\d+)")
        yield Tsa("certomancer", f"http://127.0.0.1:{port}/g6test/tsa", d / "root.pem", proc.pid)
    finally:
        _stop(proc)


@contextmanager
def backdating_tsa(upstream: str, gen_time: str) -> Iterator[str]:
    """A TSA whose clock reads ``gen_time`` (``2021-06-01T00:00:00+0000``): certomancer's TSA at ``upstream``,
    asked through a front on 127.0.0.1 (a port the system picks) that sets its ``X-Certomancer-Fake-Time``
    header, so a process that cannot set the header (``g6 ledger checkpoint --tsa URL``) gets a real token
    with that genTime. Yields the URL to give ``--tsa``; stopped on exit."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    class Front(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            query = self.rfile.read(min(int(self.headers.get("Content-Length") or 0), 1 << 16))
            r = httpx.post(upstream, content=query, timeout=30, headers={
                "Content-Type": self.headers.get("Content-Type", ""), "X-Certomancer-Fake-Time": gen_time})
            self.send_response(r.status_code)
            self.send_header("Content-Type", r.headers.get("content-type", ""))
            self.send_header("Content-Length", str(len(r.content)))
            self.end_headers()
            self.wfile.write(r.content)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Front)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/tsa"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- the outside verifiers -------------------------------------------------------------------------------------
def rfc3161_client_verify(token: bytes, data: bytes, root_pem: Path, nonce: int | None = None) -> None:
    """Raises rfc3161_client.VerificationError unless the token holds for ``data`` under ``root_pem``.
    ``token`` is a bare TimeStampToken; rfc3161-client reads replies, so it is wrapped in a granted one."""
    from asn1crypto import cms, tsp
    from rfc3161_client import VerifierBuilder, decode_timestamp_response

    reply = tsp.TimeStampResp({"status": {"status": "granted"},
                               "time_stamp_token": cms.ContentInfo.load(token)}).dump()
    resp = decode_timestamp_response(reply)
    b = VerifierBuilder().add_root_certificate(x509.load_pem_x509_certificate(root_pem.read_bytes()))
    if nonce is not None:
        b = b.nonce(nonce)
    b.build().verify_message(resp, data)


def openssl_verify(token: bytes, data: bytes, root_pem: Path, gen_time: dt.datetime, d: Path) -> tuple[bool, str]:
    """``openssl ts -verify -digest … -token_in -attime <genTime>``: (verified, its output)."""
    tok = d / f"token-{hashlib.sha256(token).hexdigest()[:12]}.der"
    tok.write_bytes(token)
    run = subprocess.run(["openssl", "ts", "-verify", "-digest", hashlib.sha256(data).hexdigest(), "-token_in",
                          "-in", str(tok), "-CAfile", str(root_pem), "-attime", str(int(gen_time.timestamp()))],
                         capture_output=True, text=True, timeout=60)
    out = run.stdout + run.stderr
    return run.returncode == 0 and "Verification: OK" in out, out
