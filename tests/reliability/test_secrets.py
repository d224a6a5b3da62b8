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

from g6.localsite import LocalSite, Reply

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
