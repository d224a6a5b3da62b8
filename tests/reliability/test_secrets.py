"""No API key, header value, cookie or credential ever appears in a receipt, an output line, an error
message, the ledger file, a bundle or a WARC: every output of these runs is grepped for the test secrets."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

from g6.demo.site import LocalSite, Reply

Site = Callable[..., LocalSite]
SECRETS = ["oa-TESTKEY-5f1c9", "s2-TESTKEY-77ab", "es-TESTKEY-c0ffee", "pw-SECRET-9911", "COOKIE-SECRET-31",
           "HDR-SECRET-4242"]
FIX = Path(__file__).resolve().parent.parent.parent / "fixtures" / "http"


def test_no_secret_leaks_anywhere(tmp_path: Path, site: Site) -> None:
    leaky = (("Set-Cookie", f"session={SECRETS[4]}; Path=/"), ("X-Secret-Header", SECRETS[5]))
    s = site({
        "/page": Reply(body=b"<html><body><p>A page that sets a cookie and a secret header.</p></body></html>",
                       headers=leaky),
        "/robots.txt": Reply(404, b""),
        "/works": Reply(body=(FIX / "openalex" / "works_search_49_results_per_page200_status200.json").read_bytes(),
                        content_type="application/json", headers=leaky),
        "/graph/v1/paper/search": Reply(429, b'{"message": "Too Many Requests"}', content_type="application/json",
                                        headers=(("Retry-After", "5"), *leaky)),
        "/es/_mapping": Reply(401, (FIX / "elasticsearch-derived" / "security_exception_status401.json").read_bytes(),
                              content_type="application/json"),
    })
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0",
                "G6_OPENALEX_URL": s.url("/works"), "G6_OPENALEX_PAUSE": "0",
                "G6_SEMANTIC_SCHOLAR_URL": s.url("/graph/v1"), "G6_SEMANTIC_SCHOLAR_PAUSE": "0",
                "G6_ELASTIC_URL": s.base_url})
    home.mkdir()
    (home / ".env").write_text(f"G6_OPENALEX_API_KEY={SECRETS[0]}\nG6_SEMANTIC_SCHOLAR_API_KEY={SECRETS[1]}\n"
                               f"G6_ELASTIC_API_KEY={SECRETS[2]}\n")
    outputs: list[bytes] = []

    def g6(*args: str) -> subprocess.CompletedProcess[bytes]:
        r = subprocess.run([sys.executable, "-m", "g6", *args], env=env, capture_output=True, timeout=120)
        outputs.extend([r.stdout, r.stderr])
        return r

    url_with_creds = s.url("/page").replace("http://", f"http://alice:{SECRETS[3]}@")
    fetched = json.loads(g6("fetch", url_with_creds, "--json").stdout)
    g6("fetch", url_with_creds)
    g6("search", "openalex", "climate", "--json")
    g6("search", "openalex", "climate")
    g6("search", "semantic_scholar", "x", "--json")
    g6("es", "search", "es", "x", "--json")
    g6("es", "count", "es", "x")
    g6("sources", "--json")
    g6("ledger", "list", "--json")
    g6("ledger", "verify", "--json")
    for line in json.loads(g6("ledger", "list", "--json", "--limit", "100").stdout):
        g6("receipt", "show", line["receipt_id"])
    man = tmp_path / "m.json"
    g6("cite", fetched["receipt_id"], "--quote", "sets a cookie", "--manifest", str(man))
    g6("bundle", str(man), "-o", str(tmp_path / "b.zip"))
    g6("export", "warc", "-o", str(tmp_path / "out.warc.gz"))

    # the requests did carry the keys to their own servers (so the test can fail)
    sent = [q for q in s.requests if q.path.startswith(("/works", "/graph", "/es"))]
    assert any(SECRETS[0] in q.path for q in sent) and any(q.headers.get("x-api-key") == SECRETS[1] for q in sent)
    assert any(SECRETS[2] in q.headers.get("authorization", "") for q in sent)
    assert not any(SECRETS[3] in json.dumps(q.headers) for q in s.requests)  # userinfo never sent

    corpus = list(outputs)
    corpus.append((home / "knowledge" / "ledger.sqlite").read_bytes())
    for extra in (home / "knowledge" / "ledger.sqlite-wal",):
        if extra.exists():
            corpus.append(extra.read_bytes())
    corpus.append(man.read_bytes())
    with zipfile.ZipFile(tmp_path / "b.zip") as z:
        corpus.extend(z.read(n) for n in z.namelist())
    corpus.append(gzip.decompress((tmp_path / "out.warc.gz").read_bytes()))
    for path in (home / "knowledge" / "rechecks").rglob("*") if (home / "knowledge" / "rechecks").exists() else []:
        corpus.append(path.read_bytes())
    leaks = [(secret, i) for i, blob in enumerate(corpus) for secret in SECRETS if secret.encode() in blob]
    assert leaks == [], leaks
    assert len(corpus) > 40


# -- a property: whatever the secret and whichever way the read ends, it is never written ------
import string  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from g6.adapters import CheckedClient, FetchPolicy  # noqa: E402
from g6.export.warc import export_warc  # noqa: E402
from g6.fetch.capture import fetch  # noqa: E402
from g6.home import EvidenceHome  # noqa: E402

PATHS = ["ok", "redirect_loop", "off_allowlist", "http_404", "http_503", "malformed_header", "bad_location",
         "location_echo"]
CARRIERS = ["userinfo_password", "userinfo_user", "api_key", "token", "access_token", "secret", "key",
            "configured_in_path"]


def _scenario_routes(state: dict[str, Any]) -> dict[str, Any]:
    def page(req: Any) -> Reply:
        path, target = state["path"], req.path  # the request target, secret query values included
        port = state["port"]
        if path == "ok":
            return Reply(body=b"<html><body><p>An ordinary page with nothing secret in it.</p></body></html>")
        if path == "redirect_loop":
            return Reply(302, headers=(("Location", target),))
        if path == "off_allowlist":
            return Reply(302, headers=(("Location", f"http://elsewhere.test:{port}{target}"),))
        if path in ("http_404", "http_503"):
            return Reply(int(path[-3:]), b"<p>no</p>")
        if path == "malformed_header":  # h11 quotes a bad header line in its error message
            return Reply(raw=b"HTTP/1.1 200 OK\r\nX-Echo " + target.encode() + b"\r\n\r\n")
        if path == "bad_location":
            return Reply(302, headers=(("Location", f"http://[::1{target}"),))
        if path == "location_echo":  # an unparseable port after a URL carrying the secret
            loc = f"http://127.0.0.1:①{target}".encode()
            return Reply(raw=b"HTTP/1.1 302 Found\r\nLocation: " + loc + b"\r\nContent-Length: 0\r\n\r\n")
        raise AssertionError(path)

    return {"*": page, "/robots.txt": Reply(404, b"")}


@pytest.fixture(scope="module")
def secret_site() -> Any:
    state: dict[str, Any] = {}
    s = LocalSite(_scenario_routes(state)).start()
    state["port"] = s.port
    yield s, state
    s.stop()


def _url(base: str, carrier: str, secret: str) -> str:
    if carrier == "userinfo_password":
        return base.replace("http://", f"http://alice:{secret}@") + "/p"
    if carrier == "userinfo_user":
        return base.replace("http://", f"http://{secret}@") + "/p"
    if carrier == "configured_in_path":
        return f"{base}/keys/{secret}/page"
    return f"{base}/p?q=1&{carrier}={secret}&page=2"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# a fixed head keeps a drawn secret from being a run of zeros that a genesis hash holds by chance
@given(secret=st.text(string.ascii_letters + string.digits + "-_.~", min_size=10, max_size=40).map(lambda t: "Qz" + t),
       path=st.sampled_from(PATHS), carrier=st.sampled_from(CARRIERS))
def test_no_secret_is_ever_sealed(secret_site: Any, secret: str, path: str, carrier: str) -> None:
    s, state = secret_site
    state["path"] = path
    configured = ("G6SECRET" + secret,) if carrier != "configured_in_path" else (secret,)
    url = _url(s.base_url, carrier, secret)
    policy = FetchPolicy(allow_loopback=True, host_pause=0, max_redirects=3,
                         allowlist=("127.0.0.1",) if path == "off_allowlist" else ())
    resolver = lambda host, port: ["127.0.0.1"]  # noqa: E731 - elsewhere.test is loopback too, but off the list
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        with EvidenceHome(root / "home", fsync=False) as home, \
                CheckedClient(policy, secrets=configured, resolver=resolver) as client:
            home.keys.init()
            result = fetch(home, client, url)
            export_warc(home, root / "out.warc.gz", [e.receipt for e in home.ledger.entries()])
            corpus = [json.dumps(result.to_json(), ensure_ascii=False).encode(), json.dumps(result.to_json()).encode()]
        corpus.append(gzip.decompress((root / "out.warc.gz").read_bytes()))
        corpus.extend(p.read_bytes() for p in (root / "home").rglob("*") if p.is_file())
    assert s.requests, "the scenario sent nothing: it could not test anything"
    leaked = [i for i, blob in enumerate(corpus) if secret.encode() in blob]
    assert leaked == [], (path, carrier, result.outcome, result.reason, result.detail)


@pytest.mark.parametrize(("value", "why"), [
    (" Qz-key-with-space", b"whitespace"), ("Qz-key-trailing\t", b"whitespace"), ("Qz-k\u00e9y-secret", b"non-ASCII"),
    ("Qz-key\x01secret", b"control"), ("Qz-key\x7fsecret", b"control")])
@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_bad_secret_setting_is_a_config_error_naming_the_variable_never_the_value(
        tmp_path: Path, value: str, why: bytes, where: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env["G6_HOME"] = str(home)
    if where == "environment":
        env["G6_SEMANTIC_SCHOLAR_API_KEY"] = value
    else:
        (home / ".env").write_text(f'G6_SEMANTIC_SCHOLAR_API_KEY="{value}"\n', encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "g6", "sources"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(b"g6: G6_SEMANTIC_SCHOLAR_API_KEY") and why in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and b"Traceback" not in r.stderr
    assert b"Qz-" not in r.stderr + r.stdout  # no part of the value is quoted


def test_a_token_in_an_oai_endpoint_or_a_source_url_is_never_written(tmp_path: Path, site: Site) -> None:
    oai = (FIX / "oai-pmh" / "ListRecords4.xml").read_bytes()
    s = site({"/oai": Reply(body=oai, content_type="text/xml")})
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("G6_")}
    env.update({"G6_HOME": str(home), "G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_OAI_PMH_PAUSE": "0",
                "G6_OPENALEX_URL": s.url("/works?api_key=QzSourceUrlKey-777")})
    runs = [subprocess.run([sys.executable, "-m", "g6", *args], env=env, capture_output=True, timeout=120)
            for args in (("search", "oai_pmh", "--endpoint", s.url("/oai?token=QzEndpointToken-555"), "--json"),
                         ("search", "oai_pmh", "--endpoint", s.url("/oai?token=QzEndpointToken-555")),
                         ("sources", "--json"), ("sources",))]
    assert runs[0].returncode == 0, runs[0].stderr
    assert any("QzEndpointToken-555" in q.path for q in s.requests)  # it was sent to its own server
    written = b"".join(r.stdout + r.stderr for r in runs)
    written += b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"QzEndpointToken-555" not in written and b"QzSourceUrlKey-777" not in written
