"""What the receipt-export tests share: a home with a read that kept a body, a read refused before anything was
sent (no body), and a receipt whose strings and keys test canonical JSON (RFC 8785) at its edges; and the outside
verifiers, found where ``scripts/run_tests.py`` installs them (skipped when missing, failed when
``G6_REQUIRE_TOOLS`` is set, as CI sets it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from g6.adapters import CheckedClient, FetchPolicy
from g6.demo.site import LocalSite, Reply
from g6.fetch.capture import fetch
from g6.home import EvidenceHome
from g6.ledger import Receipt

ROOT = Path(__file__).resolve().parents[2]
NODE_VC_SPEC = ROOT / "tests" / "peers" / "node-vc"  # package.json, package-lock.json, verify.mjs
PAGE = "<html><head><title>Attested</title></head><body><p>A page whose receipt other tools check.</p></body></html>"
# strings where RFC 8785 implementations part ways if one is wrong: escapes, U+2028, a lone high-plane character,
# and keys that sort differently by UTF-16 code unit (RFC 8785) than by code point
EDGES = {"\U0001f600 grin": "a\u2028b\u007fc\"d\\e\n\tf", "\ue000 private": "é€", "plain": "x",
         "ctl": "\u0001\u001f", "big": 2**53 - 1}


def require_tool(what: str, hint: str) -> None:
    """Skip the test, or fail it under ``G6_REQUIRE_TOOLS`` (CI): an outside verifier is missing."""
    message = f"{what} is not installed: {hint}"
    if os.environ.get("G6_REQUIRE_TOOLS"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class World:
    home: EvidenceHome
    ok: Receipt  # a read that kept a body
    denied: Receipt  # refused by the allowlist before anything was sent: no body
    edges: Receipt  # a receipt whose detail holds EDGES
    page: bytes

    def g6(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
        return subprocess.run([sys.executable, "-m", "g6", "--home", str(self.home.root), *args],
                              capture_output=True, text=True, timeout=120, cwd=cwd, env=env)

    def exported(self, receipt_id: str, fmt: str) -> str:
        r = self.g6("receipt", "export", receipt_id, "--format", fmt)
        assert r.returncode == 0, r.stderr
        return r.stdout


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = EvidenceHome(tmp_path_factory.mktemp("attest") / "home", fsync=False)
    home.keys.init()
    site = LocalSite({"/": Reply(body=PAGE.encode()), "/robots.txt": Reply(404, b"")}).start()
    policy = FetchPolicy(allow_loopback=True, host_pause=0.0, connect_timeout=5, read_timeout=5, total_timeout=10)
    try:
        with CheckedClient(policy) as client:
            ok = fetch(home, client, site.url("/"))
            denied = fetch(home, client, site.url("/"), policy=replace(policy, allowlist=("example.org",)))
        assert ok.outcome.value == "ok" and denied.outcome.value == "policy_denied"
        edges = home.record(Receipt(kind="fetch", source="web", request={"url": "http://127.0.0.1/edges"},
                                    outcome="refused", outcome_code="G6_E_KNOWLEDGE_REFUSED", detail=EDGES))
        yield World(home, home.ledger.get(ok.receipt_id), home.ledger.get(denied.receipt_id), edges, PAGE.encode())
    finally:
        site.stop()
        home.close()


# -- the VC verifier under node ----------------------------------------------------------------------------------
def node_vc_dir() -> Path:
    """Where npm installed the VC verifier's packages (``G6_NODE_VC_DIR``, else ``.tools/node-vc``), each at the
    version tests/peers/node-vc/package.json pins; a missing or other version skips (fails in CI)."""
    where = Path(os.environ.get("G6_NODE_VC_DIR") or ROOT / ".tools" / "node-vc")
    hint = "python3 scripts/run_tests.py installs it (npm ci into .tools/node-vc)"
    if shutil.which("node") is None:
        require_tool("node", "install Node.js (Debian package nodejs); " + hint)
    pins = json.loads((NODE_VC_SPEC / "package.json").read_text())["dependencies"]
    for name, version in pins.items():
        installed = where / "node_modules" / name / "package.json"
        if not installed.is_file():
            require_tool(f"{name} (in {where})", hint)
        found = json.loads(installed.read_text())["version"]
        if found != version:
            require_tool(f"{name} {version} (found {found} in {where})", hint)
    return where


@pytest.fixture(scope="module")
def vc_verifier(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``verify(credential) -> dict``: the credential run through tests/peers/node-vc/verify.mjs, with the two
    contexts pinned: the W3C's credentials v2 (fixtures/jsonld) and g6's, as g6 ships it."""
    from g6.export.vc import CREDENTIALS_V2, G6_CONTEXT_FILE, G6_CONTEXT_URL

    installed = node_vc_dir()
    run_dir = tmp_path_factory.mktemp("node-vc")
    # the script beside a link to the installed packages: node resolves its imports from the script's folder
    shutil.copy(NODE_VC_SPEC / "verify.mjs", run_dir / "verify.mjs")
    (run_dir / "node_modules").symlink_to(installed / "node_modules", target_is_directory=True)
    g6_context = run_dir / G6_CONTEXT_FILE
    g6_context.write_bytes((resources.files("g6.schemas") / G6_CONTEXT_FILE).read_bytes())
    pins = [f"{CREDENTIALS_V2}={ROOT / 'fixtures' / 'jsonld' / 'credentials-v2.jsonld'}",
            f"{G6_CONTEXT_URL}={g6_context}"]
    count = iter(range(1 << 30))

    def verify(credential: dict[str, Any] | str, *, contexts: list[str] | None = None) -> dict[str, Any]:
        path = run_dir / f"credential-{next(count)}.json"
        path.write_text(credential if isinstance(credential, str) else json.dumps(credential), encoding="utf-8")
        r = subprocess.run(["node", str(run_dir / "verify.mjs"), str(path), *(pins if contexts is None else contexts)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode in (0, 1), r.stderr
        verdict = json.loads(r.stdout)
        assert (r.returncode == 0) == (verdict["verified"] and verdict["jsonld"]["ok"]), verdict
        return dict(verdict)

    return verify
