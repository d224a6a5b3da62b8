"""runx web-fetch: ``g6_invoke("web_fetch", "fetch", …)`` over a real MCP session and ``g6 fetch URL --as runx``,
against the local site; every reply validated against ``schemas/fetch-result.runx.v1.schema.json``."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from seedkit import env_for, invoke_all

from g6.demo.site import Reply
from g6.home import EvidenceHome
from g6.schemas import load

SCHEMA = jsonschema.Draft202012Validator(load("fetch-result.runx.v1"), format_checker=jsonschema.FormatChecker())
SIZE = 184302  # the worked example's byte count


def rfc_page() -> bytes:
    head = b"<!doctype html><html><head><title>RFC 9110: HTTP Semantics</title></head><body><p>"
    tail = b"</p></body></html>"
    filler = b"HTTP is a family of stateless request/response protocols. "
    body = (filler * (SIZE // len(filler) + 1))[: SIZE - len(head) - len(tail)]
    page = head + body + tail
    assert len(page) == SIZE
    return page


def receipts(home: Path) -> list[dict[str, Any]]:
    with EvidenceHome(home) as ev:
        return [e.receipt.to_json() for e in ev.ledger.entries()]


def test_web_fetch_over_mcp(tmp_path: Path, site: Any) -> None:
    page = rfc_page()
    second = site({"/rfc9110": Reply(body=page, headers=(("X-Secret", "s3cr3t-header-value"),)),
                   "/robots.txt": Reply(404, b"")}, host="127.0.0.2")
    first = site({
        "/rfc9110": Reply(body=page, headers=(("X-Secret", "s3cr3t-header-value"),)),
        "/robots.txt": Reply(404, b""),
        "/moved": Reply(301, b"", headers=(("Location", second.url("/rfc9110")),)),
        "/away": Reply(302, b"partial body of the redirect", headers=(("Location", "http://127.0.0.3:9/x"),)),
        "/scripted": Reply(body=b"<html><body><div id=app></div><script>app.textContent='hi'</script></body></html>"),
        "/gone": Reply(404, b"<h1>gone</h1>"),
    })
    allow = ["127.0.0.1", "127.0.0.2"]  # the worked example's two hosts, on loopback
    home = tmp_path / "home"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("web_fetch", "fetch", {"url": first.url("/rfc9110"), "allowlist": allow, "extract": "text",
                                "max_bytes": 200000}),
        ("web_fetch", "fetch", {"url": first.url("/rfc9110"), "allowlist": allow, "max_bytes": 1000}),
        ("web_fetch", "fetch", {"url": first.url("/moved"), "allowlist": allow, "extract": "metadata"}),
        ("web_fetch", "fetch", {"url": first.url("/away"), "allowlist": allow}),
        ("web_fetch", "fetch", {"url": second.url("/rfc9110"), "allowlist": ["127.0.0.1"]}),
        ("web_fetch", "fetch", {"url": first.url("/scripted")}),
        ("web_fetch", "fetch", {"url": first.url("/gone"), "extract": "links"}),
        ("web_fetch", "fetch", {"allowlist": allow}),
        ("web_fetch", "fetch", {"url": "file:///etc/passwd"}),
    ]
    out = invoke_all(env_for(home, G6_MCP_SENSITIVE="web_fetch.fetch"), calls)
    worked, clipped, redirected, off_redirect, off_first, scripted, gone, no_url, bad_scheme = out
    for r in out:
        if r.get("code") != "G6_E_WEB_FETCH_INPUT":
            SCHEMA.validate(r)

    # the worked example: ready, host matched before the request left, no redirects, 200, digest, text
    assert worked["decision"] == "ready" and worked["status"] == 200 and worked["final_url"] == first.url("/rfc9110")
    assert worked["content_digest"] == "sha256:" + hashlib.sha256(page).hexdigest()
    assert worked["extract_mode"] == "text" and worked["extracted"].startswith("HTTP is a family")
    assert worked["provenance"]["redirects"] == [] and worked["provenance"]["bytes"] == SIZE
    assert worked["provenance"]["truncated"] is False and worked["provenance"]["fetched_at"]
    assert worked["policy"] == {"allowlist_decision": "allowed", "attempted_host": None, "allowlist_checked": allow}
    # a clipped read says so; the digest is over the bytes actually read
    assert clipped["provenance"] == {**clipped["provenance"], "bytes": 1000, "truncated": True}
    assert clipped["content_digest"] == "sha256:" + hashlib.sha256(page[:1000]).hexdigest()
    # a redirect to the other allowed host: every hop listed and re-checked
    assert redirected["decision"] == "ready" and redirected["final_url"] == second.url("/rfc9110")
    assert redirected["provenance"]["redirects"] == [{"from": first.url("/moved"), "to": second.url("/rfc9110"),
                                                      "status": 301, "host": "127.0.0.2", "allowlist": "allowed"}]
    assert redirected["extracted"]["title"] == "RFC 9110: HTTP Semantics"
    # a redirect off the allowlist: halted, the failing hop named, the partial body discarded
    assert off_redirect["decision"] == "policy_denied" and off_redirect["content_digest"] is None
    assert off_redirect["extracted"] is None and off_redirect["provenance"]["bytes"] == 0
    assert off_redirect["policy"]["attempted_host"] == "127.0.0.3" and off_redirect["policy"]["failed_hop"] == 1
    assert off_redirect["provenance"]["redirects"][-1]["allowlist"] == "denied"
    # the first host off the allowlist: denied before any network call
    assert off_first["decision"] == "policy_denied" and off_first["policy"]["attempted_host"] == "127.0.0.2"
    assert off_first["status"] is None and off_first["provenance"]["redirects"] == []
    assert [q.path for q in second.requests] == ["/robots.txt", "/rfc9110"]  # only the allowed redirect reached it
    # a page whose text only scripts draw: needs an agent
    assert scripted["decision"] == "needs_agent" and scripted["status"] == 200 and scripted["outcome"] == "empty"
    # every other failure: provider_error with G6's typed outcome beside it
    assert gone["decision"] == "provider_error" and gone["status"] == 404 and gone["outcome"] == "not_found"
    assert gone["code"] == "G6_E_KNOWLEDGE_FETCH_NOT_FOUND" and gone["extracted"] is None
    assert bad_scheme["decision"] == "provider_error" and bad_scheme["outcome"] == "refused"
    # a missing url fails before anything starts and seals nothing
    assert no_url["code"] == "G6_E_WEB_FETCH_INPUT" and no_url["status"] == "blocked-escalated"
    assert "missing required input: url" in no_url["message"]
    sealed = receipts(home)
    assert len(sealed) == len(calls) - 1
    # the receipt carries the final URL, status, digest, byte count, redirect chain, allowlist decision;
    # no header value
    r0 = next(r for r in sealed if r["receipt_id"] == worked["receipt_id"])
    assert r0["final_url"] == worked["final_url"] and r0["http_status"] == 200 and r0["byte_count"] == SIZE
    assert r0["content"]["sha256"] == worked["content_digest"] and r0["allowlist"]["decision"] == "allowed"
    assert "s3cr3t-header-value" not in json.dumps(sealed)


def test_g6_fetch_as_runx(tmp_path: Path, site: Any) -> None:
    page = rfc_page()
    s = site({"/rfc9110": Reply(body=page), "/robots.txt": Reply(404, b"")})
    env = env_for(tmp_path)
    cmd = [sys.executable, "-m", "g6", "fetch", s.url("/rfc9110"), "--as", "runx", "--allow", "127.0.0.1",
           "--allow", "localhost", "--max-bytes", "200000"]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    SCHEMA.validate(out)
    assert out["decision"] == "ready" and out["provenance"]["bytes"] == SIZE
    assert out["policy"]["allowlist_checked"] == ["127.0.0.1", "localhost"]
    denied = subprocess.run([*cmd[:5], "--as", "runx", "--allow", "example.org"], env=env, capture_output=True,
                            timeout=60)
    assert denied.returncode == 1 and json.loads(denied.stdout)["decision"] == "policy_denied"
    assert len(s.requests) == 2  # robots.txt and the page, once: the denied run sent nothing


@pytest.mark.parametrize("args", [{}, {"url": ""}, {"url": "http://x", "extract": "html"},
                                  {"url": "http://x", "max_bytes": -1}, {"url": "http://x", "allowlist": "x"},
                                  {"url": "http://x", "headers": {"Authorization": "t"}},
                                  {"url": "http://x", "allowlist": ["exa mple.org"]}])
def test_preflight_refuses_bad_inputs(args: dict[str, Any]) -> None:
    from g6.knowledge.web_fetch import WebFetchInputError, check_inputs

    with pytest.raises(WebFetchInputError) as e:
        check_inputs(args)
    assert e.value.code == "G6_E_WEB_FETCH_INPUT"
