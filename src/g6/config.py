"""Settings from the environment and ``$G6_HOME/.env``, and the working objects they describe.

:func:`load_settings` reads them once; :class:`Settings` turns them into what the commands use:
``fetch_policy()`` (the checked client's policy), ``client()``, ``sources()`` (the paper sources) and
``open_home()`` (the one way to open the evidence home they name). The CLI, the MCP server and the
source documents' faces all go through here; the library below (store, ledger, adapters) is handed
these objects and never reads a setting itself.

| variable | meaning | default |
| --- | --- | --- |
| ``G6_HOME`` | the evidence home | ``~/.g6`` |
| ``G6_ALLOW_LOOPBACK`` | ``1`` lets fetches reach 127.0.0.0/8 and ::1 (local test servers, the demo) | off |
| ``G6_ALLOWLIST`` | comma-separated host patterns every fetch must match | none |
| ``G6_HOST_PAUSE`` | seconds between two requests to one host | ``1.0`` |
| ``G6_MAX_BYTES`` | stop reading a body here (``truncated``) | none |
| ``G6_HARD_CAP`` | a body past this is ``too_large`` | 67108864 |
| ``G6_TIMEOUT`` | total seconds for one fetch | ``120`` |
| ``G6_CA_BUNDLE`` | a PEM file of the root certificates https trusts instead of the default (certifi's) | none |
| ``G6_BLOB_COMPRESSION`` | ``zstd``: text bodies kept compressed at rest; ``off``: new bodies kept raw | ``zstd`` |
| ``G6_LEDGER_URL`` | ``sqlite:///path`` or ``postgresql://user:pass@host:port/db`` | the home's ``ledger.sqlite`` |
| ``G6_BLOB_URL`` | ``file:///path`` or ``s3://bucket/prefix`` | the home's ``knowledge/fetched`` |
| ``G6_S3_ENDPOINT`` | S3 endpoint for non-AWS stores (SeaweedFS, MinIO ...) | AWS |
| ``G6_ALLOW_OPEN_KEY`` | ``1`` signs with a ``keys/signing.key`` group or others may read (else refused) | off |
| ``G6_CHROMIUM`` | the browser ``--render`` starts (a path or a name on PATH) | ``chromium`` |
| ``G6_RENDER_TIMEOUT`` | seconds a render may load and scroll a page | ``30`` |
| ``G6_RENDER_MAX_REQUESTS`` | requests one render may make (at most 400) | ``300`` |
| ``G6_RENDER_MAX_BYTES`` | bytes of responses one render may take | 67108864 |
| ``G6_RENDER_BROWSERS`` | browsers running at once (one capture each) | ``2`` |

Values in the process environment win over ``$G6_HOME/.env``. API keys (``G6_*_API_KEY``) are
read from the same places and handed only to their own source.

Settings are checked when loaded, so nothing is sent under an impossible one: a timeout must be a
finite number of seconds above zero; byte limits must fit a receipt (RFC 8785 integers stop at
2^53); a secret (``G6_*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) with surrounding
whitespace, a non-ASCII or a control character is refused, naming the variable, never quoting it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.adapters.net.checked_client import CheckedClient, FetchPolicy
from g6.adapters.net.tls import trust_context
from g6.adapters.sources import build_sources
from g6.adapters.sources.arxiv import ArxivSource
from g6.adapters.sources.oaipmh import OaiPmhSource
from g6.adapters.sources.openalex import OpenAlexSource
from g6.adapters.sources.search import SourceRegistry
from g6.adapters.sources.semantic_scholar import SemanticScholarSource
from g6.errors import ConfigError
from g6.home import EvidenceHome
from g6.ledger import KeyDir
from g6.store.compression import parse_setting

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
MAX_RECEIPT_INT = 2**53  # the largest integer RFC 8785 (the receipts' canonical JSON) holds exactly
_SECRET_NAME = re.compile(r"^G6_[A-Z0-9_]*(API_KEY|TOKEN|SECRET|PASSWORD)$")


def is_secret_setting(name: str) -> bool:
    return bool(_SECRET_NAME.match(name))


def _check_secret(name: str, value: str) -> None:
    """A key that cannot be what its owner meant (pasted with a newline, a smart quote…) is refused
    here, before it is sent anywhere; the message names the variable and never quotes the value."""
    if value != value.strip():
        raise ConfigError(f"{name} has whitespace around its value (the value is not shown)")
    if not value.isascii():
        raise ConfigError(f"{name} holds a non-ASCII character (the value is not shown)")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ConfigError(f"{name} holds a control character (the value is not shown)")


MAX_DOTENV = 1 << 20  # a .env is a few NAME=value lines; more is not one


def read_dotenv(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        # a .env that is a device or a pipe (a link to /dev/zero) would be read forever: only a regular file,
        # and only so much of it
        if path.exists() and not path.is_file() and not path.is_dir():
            raise ConfigError(f"{path} is not a regular file; a .env holds NAME=value lines")
        with path.open("rb") as f:
            data = f.read(MAX_DOTENV + 1)
        if len(data) > MAX_DOTENV:
            raise ConfigError(f"{path} is larger than {MAX_DOTENV >> 20} MiB; a .env holds NAME=value lines")
        text = data.decode("utf-8")
    except FileNotFoundError:
        return out
    except UnicodeDecodeError as e:  # never quote the bytes: a .env holds secrets
        raise ConfigError(f"{path} is not UTF-8 text (byte {e.start}); a .env holds NAME=value lines") from None
    except OSError as e:  # a folder, unreadable: the settings cannot be known, so nothing runs
        raise ConfigError(f"cannot read {path}: {e.strerror or e}") from None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[7:].lstrip()
        name, eq, value = line.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"{path}:{lineno}: expected NAME=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[name.strip()] = value
    return out


@dataclass(frozen=True)
class Settings:
    home: Path
    allow_loopback: bool = False
    allowlist: tuple[str, ...] = ()
    host_pause: float = 1.0
    max_bytes: int | None = None
    hard_cap: int = 64 * 1024 * 1024
    total_timeout: float = 120.0
    ca_bundle: str | None = None  # G6_CA_BUNDLE: the roots https trusts instead of certifi's (a private CA)
    values: Mapping[str, str] = field(default_factory=dict, repr=False)  # never printed: may hold keys
    allow_open_key: bool = False  # G6_ALLOW_OPEN_KEY: sign with a key file group or others may read

    def __post_init__(self) -> None:
        if not (math.isfinite(self.total_timeout) and self.total_timeout > 0):
            raise ConfigError("G6_TIMEOUT must be a finite number of seconds above 0")
        if not math.isfinite(self.host_pause):
            raise ConfigError("G6_HOST_PAUSE must be a finite number of seconds")
        if self.max_bytes is not None and self.max_bytes > MAX_RECEIPT_INT:
            raise ConfigError(f"G6_MAX_BYTES must be at most 2^53 ({MAX_RECEIPT_INT}), what a receipt can hold")
        if not 0 < self.hard_cap <= MAX_RECEIPT_INT:
            raise ConfigError(f"G6_HARD_CAP must be between 1 and 2^53 ({MAX_RECEIPT_INT})")
        for name, value in self.values.items():
            if value and is_secret_setting(name):
                _check_secret(name, value)

    def secret(self, name: str) -> str | None:
        v = self.values.get(name)
        return v or None

    def secret_values(self) -> tuple[str, ...]:
        """Every configured secret value: what the redaction path must never let through."""
        return tuple(v for k, v in self.values.items() if v and is_secret_setting(k))

    def fetch_policy(self, allow: Sequence[str] = (), max_bytes: int | None = None) -> FetchPolicy:
        """The checked client's policy: ``allow`` (a command's ``--allow``) replaces ``G6_ALLOWLIST``,
        ``max_bytes`` replaces ``G6_MAX_BYTES``. A pattern the URL checks refuse raises ``ValueError``."""
        return FetchPolicy(allowlist=tuple(allow) or self.allowlist, allow_loopback=self.allow_loopback,
                           max_bytes=max_bytes if max_bytes is not None else self.max_bytes,
                           hard_cap=self.hard_cap, host_pause=self.host_pause, total_timeout=self.total_timeout,
                           ca_bundle=self.ca_bundle)

    def client(self, policy: FetchPolicy | None = None, **kw: object) -> CheckedClient:
        """A checked client under ``policy`` (default: :meth:`fetch_policy`) that keeps every configured
        secret out of what it returns."""
        return CheckedClient(policy or self.fetch_policy(), secrets=self.secret_values(), **kw)  # type: ignore[arg-type]

    def render_limits(self) -> RenderLimits:
        """The bounds of one render (``G6_RENDER_TIMEOUT``, ``G6_RENDER_MAX_REQUESTS``, ``G6_RENDER_MAX_BYTES``)."""
        v = self.values
        timeout = float(non_negative_number("G6_RENDER_TIMEOUT", v.get("G6_RENDER_TIMEOUT"), float, 30.0))  # type: ignore[arg-type]
        requests = int(non_negative_number("G6_RENDER_MAX_REQUESTS", v.get("G6_RENDER_MAX_REQUESTS"), int, 300))  # type: ignore[arg-type]
        size = int(non_negative_number("G6_RENDER_MAX_BYTES", v.get("G6_RENDER_MAX_BYTES"), int, 64 * 1024 * 1024))  # type: ignore[arg-type]
        if timeout <= 0:
            raise ConfigError("G6_RENDER_TIMEOUT must be a number of seconds above 0")
        if not 1 <= requests <= 400:
            raise ConfigError("G6_RENDER_MAX_REQUESTS must be between 1 and 400 (a capture receipt lists each one)")
        if not 1 <= size <= MAX_RECEIPT_INT:
            raise ConfigError(f"G6_RENDER_MAX_BYTES must be between 1 and 2^53 ({MAX_RECEIPT_INT})")
        return RenderLimits(deadline=timeout, max_requests=requests, max_bytes=size)

    def browser_pool(self) -> BrowserPool:
        """The browsers renders run in (``G6_RENDER_BROWSERS`` at once, ``G6_CHROMIUM``); started when first used."""
        n = int(non_negative_number("G6_RENDER_BROWSERS", self.values.get("G6_RENDER_BROWSERS"), int, 2))  # type: ignore[arg-type]
        if not 1 <= n <= 16:
            raise ConfigError("G6_RENDER_BROWSERS must be between 1 and 16")
        return BrowserPool(n, executable=self.values.get("G6_CHROMIUM") or None)

    def sources(self) -> SourceRegistry:
        """The paper sources as these settings configure them (see :func:`sources_from`)."""
        return sources_from(self.values)

    def blob_compression(self) -> str:
        return parse_setting(self.values.get("G6_BLOB_COMPRESSION", ""))

    def key_dir(self) -> KeyDir:
        """The home's key folder as these settings read it (``G6_ALLOW_OPEN_KEY``), without opening the home."""
        return KeyDir(self.home / "keys", allow_open_key=self.allow_open_key)

    def open_home(self, *, write: bool = False, need_key: bool = False,
                  say: Callable[[str], None] | None = None, **kw: object) -> EvidenceHome:
        """The evidence home these settings name, with its ledger and blobs where ``G6_LEDGER_URL`` and
        ``G6_BLOB_URL`` put them. Read-only (nothing created, a missing home is a failed check in
        verify) unless ``write`` or ``need_key``; then what is missing is created and ``say`` is told
        (the home, the signing key). A bad setting raises :class:`ConfigError` before anything opens."""
        kw.setdefault("blob_compression", self.blob_compression())
        if not (write or need_key):
            return EvidenceHome.from_settings(self, readonly=True, **kw)
        existed = (self.home / "knowledge").is_dir() or (self.home / "keys").is_dir()  # blobs/ledger may be elsewhere
        home = EvidenceHome.from_settings(self, **kw)
        if not existed and say is not None:
            say(f"g6: created evidence home {self.home}")
        if need_key:
            try:
                key, created = home.keys.ensure()  # processes racing on a fresh home end with one key
            except BaseException:
                home.close()
                raise
            if created and say is not None:
                say(f"g6: created signing key {key.key_id} in {home.keys.path}")
        return home


def _bool(name: str, v: str) -> bool:
    low = v.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ConfigError(f"{name} must be 1/0/true/false, got {v!r}")


def non_negative_number(name: str, v: str | None, kind: type, default: object) -> object:
    """The setting ``name`` as ``kind`` (int or float), ``default`` when unset; ConfigError otherwise."""
    if v is None or v.strip() == "":
        return default
    try:
        n = kind(v)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {v[:40]!r}") from None
    if not math.isfinite(n):
        raise ConfigError(f"{name} must be a finite number")
    if n < 0:
        raise ConfigError(f"{name} must not be negative")
    return n


def _pause(values: Mapping[str, str], name: str, default: float) -> float:
    setting = f"G6_{name.upper()}_PAUSE"
    return float(non_negative_number(setting, values.get(setting), float, default))  # type: ignore[arg-type]


def sources_from(values: Mapping[str, str]) -> SourceRegistry:
    """The built-in paper sources configured by ``values``: ``G6_ARXIV_URL``, ``G6_OPENALEX_URL`` and
    ``G6_SEMANTIC_SCHOLAR_URL`` point a source at another base URL (a mirror, or a local server in
    tests); ``G6_<SOURCE>_PAUSE`` changes its pause; ``G6_OPENALEX_MAILTO`` is sent only when set;
    ``G6_OPENALEX_API_KEY`` and ``G6_SEMANTIC_SCHOLAR_API_KEY`` go to their own source only."""
    v = values
    arxiv, oai, oa, s2 = ArxivSource(), OaiPmhSource(), OpenAlexSource(), SemanticScholarSource()
    return build_sources(
        ArxivSource(base_url=v.get("G6_ARXIV_URL") or arxiv.base_url, pause=_pause(v, "arxiv", arxiv.pause)),
        OaiPmhSource(pause=_pause(v, "oai_pmh", oai.pause)),
        OpenAlexSource(base_url=v.get("G6_OPENALEX_URL") or oa.base_url, mailto=v.get("G6_OPENALEX_MAILTO") or None,
                       api_key=v.get("G6_OPENALEX_API_KEY") or None, pause=_pause(v, "openalex", oa.pause)),
        SemanticScholarSource(base_url=v.get("G6_SEMANTIC_SCHOLAR_URL") or s2.base_url,
                              api_key=v.get("G6_SEMANTIC_SCHOLAR_API_KEY") or None,
                              pause=_pause(v, "semantic_scholar", s2.pause)),
    )


def _check_url(name: str, value: str) -> None:
    """A URL setting the URL parser refuses (a bad IPv6 host, a port that is not a number) is a config error
    here, once, not a ValueError deep in whichever backend parses it first. The value may hold a password:
    it is not quoted."""
    if not value:
        return
    try:
        urlsplit(value).port  # noqa: B018 - parsing the port is the check
    except ValueError as e:
        raise ConfigError(f"{name} is not a valid URL ({e})") from None


def load_settings(environ: Mapping[str, str] | None = None, *, home: Path | None = None) -> Settings:
    """``home`` (the CLI's ``--home``) wins over ``G6_HOME``; its ``.env`` is read the same way."""
    env = dict(os.environ if environ is None else environ)
    home = Path(home if home is not None else env.get("G6_HOME") or Path.home() / ".g6").expanduser()
    values = {**read_dotenv(home / ".env"), **{k: v for k, v in env.items() if k.startswith("G6_")}}
    allowlist = tuple(p.strip() for p in values.get("G6_ALLOWLIST", "").split(",") if p.strip())
    for name in ("G6_LEDGER_URL", "G6_BLOB_URL", "G6_ELASTIC_URL"):
        _check_url(name, values.get(name, ""))
    ca_bundle = values.get("G6_CA_BUNDLE", "").strip() or None
    if ca_bundle is not None:
        trust_context(ca_bundle)  # read once now: a bundle that cannot be used stops the command before any read
    return Settings(
        home=home,
        allow_loopback=_bool("G6_ALLOW_LOOPBACK", values.get("G6_ALLOW_LOOPBACK", "")),
        allowlist=allowlist,
        host_pause=float(non_negative_number("G6_HOST_PAUSE", values.get("G6_HOST_PAUSE"), float, 1.0)),  # type: ignore[arg-type]
        max_bytes=non_negative_number("G6_MAX_BYTES", values.get("G6_MAX_BYTES"), int, None),  # type: ignore[arg-type]
        hard_cap=int(non_negative_number("G6_HARD_CAP", values.get("G6_HARD_CAP"), int, 64 * 1024 * 1024)),  # type: ignore[arg-type]
        total_timeout=float(non_negative_number("G6_TIMEOUT", values.get("G6_TIMEOUT"), float, 120.0)),  # type: ignore[arg-type]
        ca_bundle=ca_bundle,
        values=values,
        allow_open_key=_bool("G6_ALLOW_OPEN_KEY", values.get("G6_ALLOW_OPEN_KEY", "")),
    )
