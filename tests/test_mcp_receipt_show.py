"""MCP ``receipt_show`` answers with the receipt exactly as ``g6 receipt show --json`` prints it: the signed
object untouched (valid ``receipt.v1``, its Ed25519 signature verifying over it), the reply's status beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from g6.demo.site import LocalSite, Reply
from g6.ledger import VerifyKey
from g6.ledger.receipts import canonical_json
from g6.schemas import load

Site = Callable[..., LocalSite]


def _env(home: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    e.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0"})
    return e


def _g6(env: dict[str, str], *args: str) -> Any:
    r = subprocess.run([sys.executable, "-m", "g6", *args], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _receipt_show(env: dict[str, str], rid: str) -> Any:
    async def main() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "g6", "mcp"], env=env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await s.call_tool("receipt_show", {"receipt_id": rid})
    return anyio.run(main)


def test_receipt_show_is_the_signed_receipt_untouched(tmp_path: Path, site: Site) -> None:
    web = site({"/p": Reply(body=b"<html><body><p>A receipted page.</p></body></html>"),
                "/robots.txt": Reply(404, b"")})
    env = _env(tmp_path / "home")
    rid = _g6(env, "fetch", web.url("/p"), "--json")["receipt_id"]
    cli_json = _g6(env, "receipt", "show", rid, "--json")
    public_key = _g6(env, "keys", "show", "--json")["signing"]["public_key"]

    res = _receipt_show(env, rid)
    assert res.is_error is False
    reply = res.structured_content
    assert reply["status"] == "qualified-draft"
    receipt = reply["receipt"]
    assert receipt == cli_json
    jsonschema.Draft202012Validator(load("receipt.v1"), format_checker=jsonschema.FormatChecker()).validate(receipt)
    unsigned = canonical_json({k: v for k, v in receipt.items() if k != "signature"})
    import base64

    assert VerifyKey.from_text(public_key).verify(base64.b64decode(receipt["signature"]["value"]), unsigned)


def test_receipt_show_of_an_unknown_id_is_an_error_result(tmp_path: Path, site: Site) -> None:
    web = site({"/p": Reply(body=b"<html><body><p>One page.</p></body></html>"), "/robots.txt": Reply(404, b"")})
    env = _env(tmp_path / "home")
    _g6(env, "fetch", web.url("/p"), "--json")
    res = _receipt_show(env, "rcpt_" + "0" * 26)
    assert res.is_error is True
    assert res.structured_content["code"] == "G6_E_LEDGER_RECEIPT_NOT_FOUND"
    assert "receipt" not in res.structured_content
