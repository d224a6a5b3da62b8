"""Ed25519 keys in pyca's shape, and the key folder under ``$G6_HOME/keys``.

A key id is ``ed25519:`` + the first 32 hex digits of sha256(raw public key). Several public keys
can be trusted at once, so receipts signed by a retired key still verify.

    keys/signing.key              PKCS#8 PEM, mode 0600 — the current signing key
    keys/trusted/<id>.pub         one line: ``ed25519:<base64 raw public key>``

The signing key is read as OpenSSH reads a private key: a file that group or others may read (or write,
or run) is refused, with the ``chmod`` that fixes it, unless the key folder is told otherwise
(``KeyDir(allow_open_key=True)``, which the settings set from ``G6_ALLOW_OPEN_KEY``; nothing here reads
the environment). A signing key that is a symbolic link, or not a regular file at all (a folder, a FIFO,
a device), is refused whatever that setting says.
"""

from __future__ import annotations

import base64
import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

import base58
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from g6.errors import SigningKeyError

_PREFIX = "ed25519:"
# multicodec ``ed25519-pub`` (0xed) as its unsigned varint: what a Multikey's publicKeyMultibase starts with
_ED25519_PUB_CODEC = b"\xed\x01"
MAX_KEY_FILE = 1 << 16  # a PKCS#8 PEM Ed25519 key is 119 bytes; a file past this is not one


def _key_id(raw_public: bytes) -> str:
    return _PREFIX + hashlib.sha256(raw_public).hexdigest()[:32]


@dataclass(frozen=True)
class VerifyKey:
    raw: bytes

    def __post_init__(self) -> None:
        if len(self.raw) != 32:
            raise SigningKeyError("an Ed25519 public key is 32 bytes")

    @property
    def key_id(self) -> str:
        return _key_id(self.raw)

    def to_text(self) -> str:
        return _PREFIX + base64.b64encode(self.raw).decode()

    @property
    def multikey(self) -> str:
        """The key as a W3C Multikey's ``publicKeyMultibase`` (Controlled Identifiers 1.0): multibase
        base58btc (``z``) of the multicodec ``ed25519-pub`` prefix and the raw key, so always ``z6Mk…``."""
        return "z" + base58.b58encode(_ED25519_PUB_CODEC + self.raw).decode("ascii")

    @property
    def did_key(self) -> str:
        """The key as a ``did:key`` DID (the did:key method: ``did:key:`` + its Multikey), which a verifier
        resolves offline from the DID itself."""
        return "did:key:" + self.multikey

    @property
    def did_key_method(self) -> str:
        """The DID URL of the key's verification method in its own did:key document (``did:key:z6Mk…#z6Mk…``)."""
        return f"{self.did_key}#{self.multikey}"

    @classmethod
    def from_text(cls, text: str) -> VerifyKey:
        text = text.strip()
        if not text.startswith(_PREFIX):
            raise SigningKeyError(f"a public key reads 'ed25519:<base64>', got {text[:40]!r}")
        try:
            raw = base64.b64decode(text[len(_PREFIX):], validate=True)
        except ValueError as e:
            raise SigningKeyError(f"public key is not base64: {e}") from None
        return cls(raw)

    def verify(self, signature: bytes, message: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, message)
        except InvalidSignature:
            return False
        return True


class SigningKey:
    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.public = VerifyKey(raw)

    @classmethod
    def generate(cls) -> SigningKey:
        return cls(Ed25519PrivateKey.generate())

    @property
    def key_id(self) -> str:
        return self.public.key_id

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)

    def derived_key(self, label: bytes) -> bytes:
        """A 32-byte secret for one use named by ``label`` (an HMAC key): a hash of this key's (deterministic)
        Ed25519 signature over the label, so it takes the signing key to make one, and a new key makes another."""
        return hashlib.sha256(self.sign(label)).digest()

    def to_pem(self) -> bytes:
        return self._private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )

    @classmethod
    def from_pem(cls, data: bytes) -> SigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise SigningKeyError(f"not a PEM private key: {e}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("the signing key must be Ed25519")
        return cls(key)


class KeyDir:
    """The key folder of one ``$G6_HOME``. ``allow_open_key``: use a signing key that group or others may
    read (``G6_ALLOW_OPEN_KEY=1``); by default such a key is refused, as OpenSSH refuses it."""

    def __init__(self, path: str | os.PathLike[str], *, allow_open_key: bool = False) -> None:
        self.path = Path(path)
        self.signing_path = self.path / "signing.key"
        self.trusted_dir = self.path / "trusted"
        self.allow_open_key = allow_open_key

    def exists(self) -> bool:
        """Whether anything is at the signing key's path (a link or an odd file too: it is refused when
        read, never replaced by a new key)."""
        return os.path.lexists(self.signing_path)

    def init(self, *, force: bool = False, key: SigningKey | None = None) -> SigningKey:
        """Create a signing key (0600; ``key``: install that one). With ``force``, the old key is replaced;
        its public key stays trusted here (its receipts still verify).

        Without ``force`` the key is published with ``link(2)``, which fails if the file exists:
        of several processes creating the first key at once exactly one wins, the others get
        SigningKeyError (``ensure`` then loads the winner's key)."""
        if self.exists() and not force:
            raise SigningKeyError(f"a signing key exists already at {self.signing_path}")
        key = key or SigningKey.generate()
        publish_key_file(self.signing_path, key.to_pem(), force=force, what="signing key")
        self.trust(key.public)
        return key

    def ensure(self) -> tuple[SigningKey, bool]:
        """The signing key, created if there is none; (key, whether this call created it). Safe
        when several processes start on a fresh home at once: all end up with the one key."""
        try:
            return self.load_signing(), False
        except SigningKeyError:
            if self.exists():
                # another process may have published its key after our read failed: read once more;
                # a key that is there and still unreadable is never replaced silently
                return self.load_signing(), False
        try:
            return self.init(), True
        except SigningKeyError:
            if not self.exists():
                raise
        key = self.load_signing()  # another process won the race
        self.trust(key.public)  # idempotent; covers a winner stopped before it trusted its key
        return key, False

    def load_signing(self) -> SigningKey:
        """The signing key, read from a regular file only its owner may use (see the module's docstring)."""
        return SigningKey.from_pem(self._read_signing())

    def _read_signing(self) -> bytes:
        return read_key_file(self.signing_path, allow_open_key=self.allow_open_key, what="signing key",
                             remake="run `g6 keys init --force` for a new key")

    def trust(self, key: VerifyKey) -> Path:
        self.trusted_dir.mkdir(parents=True, exist_ok=True)
        p = self.trusted_dir / (key.key_id.replace(":", "_") + ".pub")
        # temp + rename: a reader running at the same moment never sees a half-written key file
        tmp = self.trusted_dir / f".{p.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            tmp.write_text(key.to_text() + "\n")
            os.replace(tmp, p)
        finally:
            tmp.unlink(missing_ok=True)
        return p

    def trusted(self) -> dict[str, VerifyKey]:
        keys: dict[str, VerifyKey] = {}
        if self.trusted_dir.is_dir():
            for p in sorted(self.trusted_dir.glob("*.pub")):
                try:
                    fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # a FIFO is never waited on
                    try:
                        if not stat.S_ISREG(os.fstat(fd).st_mode):
                            raise SigningKeyError(f"the trusted key {p} is not a regular file")
                        text = os.read(fd, MAX_KEY_FILE).decode("utf-8")  # bounded: a public key is one line
                    finally:
                        os.close(fd)
                except (OSError, UnicodeDecodeError) as e:  # unreadable, not text: one typed line
                    why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
                    raise SigningKeyError(f"cannot read the trusted key {p}: {why or e}") from None
                k = VerifyKey.from_text(text)
                keys[k.key_id] = k
        return keys


def publish_key_file(path: Path, pem: bytes, *, force: bool, what: str) -> None:
    """Write a private key at ``path`` (mode 0600, its folder 0700), whole or not at all. Without ``force``
    it is published with ``link(2)``, which never replaces a file there (``SigningKeyError`` when one is: of
    several processes creating the first key at once exactly one wins); with ``force`` it replaces what is
    there by rename (a link there is replaced, never written through)."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    # a private temp name per process: two creators never write into each other's file
    tmp = folder / f".{path.stem}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        if force:
            try:
                os.replace(tmp, path)
            except OSError as e:  # a folder there
                raise SigningKeyError(f"cannot put the new {what} at {path}: {e.strerror or e}; move what is "
                                      "there away") from None
        else:
            try:
                os.link(tmp, path)  # whole file or nothing, and never over another key
            except FileExistsError:
                raise SigningKeyError(f"a {what} exists already at {path}") from None
            except OSError:  # a filesystem without hard links: exclusive create, still never over a key
                _create_exclusive(path, pem, what)
    finally:
        tmp.unlink(missing_ok=True)


def _create_exclusive(path: Path, pem: bytes, what: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningKeyError(f"a {what} exists already at {path}") from None
    with os.fdopen(fd, "wb") as f:
        f.write(pem)
        f.flush()
        os.fsync(f.fileno())


def read_key_file(path: Path, *, allow_open_key: bool, what: str, remake: str,
                  missing: str = "run `g6 keys init`") -> bytes:
    """A private key file's bytes, read as OpenSSH reads a private key: from a regular file only its owner
    may use (unless ``allow_open_key``), never through a symbolic link, never waiting on a FIFO, at most
    ``MAX_KEY_FILE`` bytes; ``SigningKeyError`` saying what is wrong otherwise (``missing``: what to do when
    there is none; ``remake``: how to get a new key, for a path that holds something else than a file)."""
    try:
        # O_NOFOLLOW: a link is refused, not followed; O_NONBLOCK: a FIFO there is never waited on
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise SigningKeyError(f"no {what} at {path}; {missing}") from None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK) or os.path.islink(path):
            raise SigningKeyError(f"the {what} {path} is a symbolic link; g6 reads only the key file "
                                  "itself: put the key there (keeping its mode 0600)") from None
        raise SigningKeyError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SigningKeyError(f"the {what} {path} is not a regular file; {remake}, or put the key file "
                                  "there")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077 and os.name == "posix" and not allow_open_key:
            raise SigningKeyError(f"permissions {mode:04o} for {path} are too open: a {what} must not be "
                                  f"usable by group or others; run `chmod 600 {path}`")
        data = os.read(fd, MAX_KEY_FILE + 1)
    except OSError as e:
        raise SigningKeyError(f"cannot read the {what} {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE:
        raise SigningKeyError(f"the {what} {path} is larger than {MAX_KEY_FILE} bytes: not a PEM key")
    return data
