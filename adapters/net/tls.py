"""The server's own word: what a server presented over TLS, read from the connection a response came on.

For every hop of a read over https, the checked client keeps the certificate the server presented on
that hop's connection, as a blob (its DER bytes), and names it in the hop of the receipt with the
negotiated protocol and cipher and the address and port of the peer. Each hop's own: a redirect from
one https host to another keeps both servers' certificates, each beside the hop whose answer came on
that connection (the blobs are content-addressed, so a certificate seen a thousand times is kept once).

Where it is read: httpcore hands every response the network stream it came on
(``response.extensions["network_stream"]``), the stream of the very connection the status line and
headers were read from (a pooled connection too: the TLS state is the connection's, from its one
handshake). Its ``ssl_object`` is the connection's ``_ssl._SSLSocket``.

What the TLS stack gives, by Python version:

- the leaf certificate, ``getpeercert(True)`` (DER), on every version: from the session, so a resumed
  session gives it too;
- the chain as the server sent it, leaf first (``get_unverified_chain``), and the chain the client
  verified, up to the trusted root (``get_verified_chain``): public methods of ``ssl.SSLSocket`` and
  ``ssl.SSLObject`` from Python 3.13, which return DER bytes and are thin wrappers over methods of the
  ``_ssl`` object that Python 3.10 to 3.12 already have (returning certificate objects, whose PEM is
  turned into DER here). They are used when the object has them and left out otherwise (``chain`` and
  ``verified_chain`` are then absent from the receipt: not known, rather than empty). OpenSSL keeps
  neither chain with a session: on a resumed session they may be empty (``session_reused`` says so).
  OpenSSL bounds what a server may send (``max_cert_list``, 100 KiB by default).

How many certificates a receipt lists: at most ``MAX_LISTED_CERTS`` of each chain. 100 KiB holds some 200 small
certificates, and each one named costs a receipt about 170 bytes, on every hop: a hostile server presenting a long
chain on each hop of a redirect chain would make a receipt over 65,535 bytes (not appended: a read that was sent,
with no receipt). A longer chain lists its first ``MAX_LISTED_CERTS`` and adds ``chain_length`` (how many there
were) and ``chain_sha256`` (SHA-256 over the certificates' DER, concatenated in order: DER is self-delimiting, so
this commits to the chain presented, each certificate and its place), and ``verified_chain_length`` and
``verified_chain_sha256`` alike: the receipt still commits to the whole chain. Only the listed ones are kept as
blobs (only what a receipt names is checked by ``ledger verify`` and kept by ``blob gc``). Real chains are 2 to 4
certificates, so they are listed whole, and the new fields are absent (a chain without them is listed whole).

A hop over TLS whose transport gives no TLS connection to read (a test's ``httpx.MockTransport``) has no
``tls``; neither does a hop over plain http. A TLS failure (an untrusted root, a name the certificate
does not cover) ends the read before any response, as ``unreachable`` (reason ``tls``), and keeps no
certificate: the client refused the connection during the handshake, and Python gives no certificate
of a handshake it failed.
"""

from __future__ import annotations

import hashlib
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from g6.errors import ConfigError
from g6.store import BlobBackend, BlobRef

# Certificates listed per chain in a receipt: every real chain (leaf, one or two intermediates, a root) whole, and
# eleven hops (ten redirects, the default most) of hostile chains at the URL limits still under 65,535 bytes
# (tests/attack/test_receipt_bounds.py measures it)
MAX_LISTED_CERTS = 4


@dataclass(frozen=True, slots=True)
class Presented:
    """What one TLS connection showed: the peer, the negotiated parameters, and the certificates (DER)."""

    protocol: str | None  # "TLSv1.3"
    cipher: str | None  # OpenSSL's name: "TLS_AES_256_GCM_SHA384"
    cipher_bits: int | None
    alpn: str | None  # the application protocol agreed ("http/1.1"), or None
    server_name: str | None  # the name the certificate was checked against (and sent as SNI when a name)
    address: str | None  # the peer's address and port, of this connection's socket
    port: int | None
    session_reused: bool
    certificate: bytes  # the leaf, DER
    chain: tuple[bytes, ...] | None  # as sent, leaf first; None: this Python does not give it
    verified_chain: tuple[bytes, ...] | None  # as verified, up to the trust anchor; None: not given


def _der(cert: Any) -> bytes:
    """One certificate of a chain as DER: bytes as Python 3.13's public methods give them, or an
    ``_ssl.Certificate`` (3.10 to 3.12, and the ``_ssl`` object itself on 3.13) through its PEM."""
    if isinstance(cert, bytes | bytearray):
        return bytes(cert)
    return ssl.PEM_cert_to_DER_cert(cert.public_bytes())


def _chain(ssl_object: Any, method: str) -> tuple[bytes, ...] | None:
    get: Callable[[], Any] | None = getattr(ssl_object, method, None)
    if get is None:
        return None
    certs = get()
    return tuple(_der(c) for c in certs or ())


def presented(response: Any) -> Presented | None:
    """What the server presented on the connection ``response`` (an ``httpx.Response``, headers read)
    came on, or None when it did not come over TLS (or the transport gives no connection to read)."""
    stream = response.extensions.get("network_stream")
    if stream is None:
        return None
    ssl_object = stream.get_extra_info("ssl_object")
    if ssl_object is None:
        return None
    leaf = ssl_object.getpeercert(True)
    if not leaf:
        return None  # no certificate: impossible with verification on, which the client never turns off
    peer = stream.get_extra_info("server_addr")
    cipher = ssl_object.cipher()
    return Presented(
        protocol=ssl_object.version(),
        cipher=str(cipher[0]) if cipher else None,
        cipher_bits=int(cipher[2]) if cipher and cipher[2] is not None else None,
        alpn=ssl_object.selected_alpn_protocol(),
        server_name=getattr(ssl_object, "server_hostname", None),
        address=str(peer[0]) if peer else None,
        port=int(peer[1]) if peer else None,
        session_reused=bool(getattr(ssl_object, "session_reused", False)),
        certificate=bytes(leaf),
        chain=_chain(ssl_object, "get_unverified_chain"),
        verified_chain=_chain(ssl_object, "get_verified_chain"),
    )


def tls_block(p: Presented, store: BlobBackend) -> dict[str, Any]:
    """Put the certificates into ``store`` and give the hop's ``tls`` block that names them: the
    receipt's record of what the server presented (schemas/receipt.v1, ``hops[].tls``). Each chain lists
    at most ``MAX_LISTED_CERTS`` (a longer one: its length and digest beside them)."""
    kept: dict[bytes, BlobRef] = {}

    def ref(der: bytes) -> dict[str, object]:
        if der not in kept:
            kept[der] = store.put(der)
        return kept[der].to_json()

    out: dict[str, Any] = {
        "protocol": p.protocol, "cipher": p.cipher, "cipher_bits": p.cipher_bits, "alpn": p.alpn,
        "server_name": p.server_name, "address": p.address, "port": p.port, "session_reused": p.session_reused,
        "certificate": ref(p.certificate),
    }
    for member, chain in (("chain", p.chain), ("verified_chain", p.verified_chain)):
        if chain is None:
            continue  # this Python does not give it: absent (not known), not empty
        out[member] = [ref(c) for c in chain[:MAX_LISTED_CERTS]]
        if len(chain) > MAX_LISTED_CERTS:  # cut: how many, and a digest over all, so the receipt commits to each
            out[f"{member}_length"] = len(chain)
            out[f"{member}_sha256"] = "sha256:" + hashlib.sha256(b"".join(chain)).hexdigest()
    return out


class TrustedRoots:
    """The roots a client's https transports trust: the default (certifi's, httpx's own choice) or a CA
    bundle's, each bundle read once into one context its transports share."""

    def __init__(self) -> None:
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def transport_kwargs(self, ca_bundle: str | None) -> dict[str, Any]:
        """What a transport factory is called with: nothing for the default roots, ``verify=`` the
        bundle's context otherwise (ConfigError when the bundle cannot be used)."""
        if ca_bundle is None:
            return {}
        with self._lock:
            ctx = self._contexts.get(ca_bundle)
            if ctx is None:
                ctx = self._contexts[ca_bundle] = trust_context(ca_bundle)
        return {"verify": ctx}


def trust_context(ca_bundle: str) -> ssl.SSLContext:
    """A client TLS context that trusts the roots in the PEM file ``ca_bundle`` instead of the default
    ones (certifi's): hostname checked, certificates required, as httpx's default. ConfigError, naming
    the file, when it is not a readable regular file holding at least one certificate (a FIFO or a
    device is refused before it is opened: it could be read forever)."""
    path = Path(ca_bundle)
    try:
        if not path.is_file():
            raise ConfigError(f"the CA bundle {ca_bundle} is not a file (a PEM file of trusted root certificates)")
        return ssl.create_default_context(cafile=str(path))
    except ssl.SSLError as e:
        raise ConfigError(f"the CA bundle {ca_bundle} holds no PEM certificate OpenSSL reads ({e.reason or e})") \
            from None
    except OSError as e:
        raise ConfigError(f"cannot read the CA bundle {ca_bundle}: {e.strerror or e}") from None
