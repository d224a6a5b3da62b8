"""The one redaction path: every URL and free-text message on its way to a receipt or an output.

Three things are removed wherever they occur, in URLs and in prose alike (an httpx error message
can quote a URL, a server can echo a key in a Location header or an error page's JSON):

* URL userinfo (``https://user:pass@host``);
* the value of every query or form parameter whose name says it is a secret (``api_key=…``,
  ``token=…``…), also when it appears outside a URL (``GET /x?token=…`` in a message);
* every configured secret value (the ``G6_*_API_KEY`` settings, the header values a source sends,
  the userinfo and secret parameter values of the URLs of this very call), also percent-encoded.

Text is also made storable: lone surrogates (which UTF-8 cannot hold) are escaped.
Values shorter than ``MIN_SECRET`` characters are not searched for: they would match ordinary text
everywhere (configured keys that short are refused when settings are loaded).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus

MARK = "REDACTED"
MIN_SECRET = 4
SECRET_PARAMS = frozenset({
    "api_key", "apikey", "api-key", "x-api-key", "key", "access_token", "refresh_token", "id_token", "token",
    "auth", "auth_token", "authorization", "secret", "client_secret", "password", "passwd", "pwd",
    "sessionid", "sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
})
# Every pattern starts only at a word boundary (the lookbehind) and bounds its leading run, so a
# hostile 20,000-character URL costs linear time, not a scan from every position (quadratic).
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^/?#\s@]*)@")
_URL = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>`]+")
_PARAM = re.compile(r"(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{1,64})=(?P<value>[^&#;\s'\"<>]*)")


def _is_secret_name(name: str) -> bool:
    return name.lower() in SECRET_PARAMS


def storable(text: str) -> str:
    """``text`` with lone surrogates escaped, so UTF-8 (SQLite, RFC 8785, a terminal) can hold it."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def secrets_in_url(url: str) -> set[str]:
    """The secret values a URL carries: its userinfo parts and its secret-named parameter values."""
    found: set[str] = set()
    if not isinstance(url, str):
        return found
    for m in _USERINFO.finditer(url):
        user, _, password = m.group(2).partition(":")
        found.update(v for v in (user, password, unquote_plus(user), unquote_plus(password)) if v)
    for m in _PARAM.finditer(url):
        if _is_secret_name(m.group("name")) and m.group("value"):
            found.update({m.group("value"), unquote_plus(m.group("value"))})
    return {s for s in found if len(s) >= MIN_SECRET and s != MARK}


def redact_url(url: str) -> str:
    """The URL fit for a receipt or a log: no userinfo, secret parameter values replaced by ``REDACTED``."""
    return redact_text(url)


def _redact_params(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        return f"{m.group('name')}={MARK}" if _is_secret_name(m.group("name")) and m.group("value") else m.group(0)

    return _PARAM.sub(one, text)


def _variants(secret: str) -> set[str]:
    return {v for v in (secret, quote(secret, safe=""), quote_plus(secret), quote(secret)) if v}


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with userinfo, secret parameter values and every value in ``secrets`` removed."""
    if not isinstance(text, str):
        return text
    out = text
    if "@" in text or "=" in text:  # userinfo needs an "@", a parameter an "=": else nothing matches
        out = _USERINFO.sub(r"\1", out)
        out = _URL.sub(lambda m: _redact_params(m.group(0)), out)
        out = _redact_params(out)
    values = {v for secret in secrets if secret and len(secret) >= MIN_SECRET for v in _variants(secret)}
    for v in sorted(values, key=len, reverse=True):
        out = out.replace(v, MARK)
    return storable(out)


def redact_json(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Every string in a JSON-like value (keys too) passed through ``redact_text``."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {redact_text(str(k), secrets): redact_json(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v, secrets) for v in value]
    if isinstance(value, bytes):
        return value  # bodies are evidence (only the internal robots body travels this way)
    return value
