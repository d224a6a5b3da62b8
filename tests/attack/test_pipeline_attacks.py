"""Attacks on the last session's pipeline changes: ``--render auto`` in a batch (a shell rendered on a render thread
while its host goes on), Ctrl-C and resume during a render, canonical JSON by orjson, run-file lines by orjson, and
the signed result ``g6 report verify`` checks.

Each test says what it attacks and what it found: a defect (the test failed before its fix) or nothing (the test
guards the behaviour that held)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
import rfc8785

from g6.adapters import CheckedClient
from g6.adapters.browser import RenderLimits
from g6.adapters.browser.pool import BrowserPool
from g6.demo.site import LocalSite, Reply, SeenRequest
from g6.fetch.batch import batch_fetch
from g6.fetch.capture import prepare_fetch
from g6.fetch.render import Renderer
from g6.home import EvidenceHome
from g6.ledger.receipts import Receipt, canonical_json
from g6.report.result import ResultInputs, build_result, canonical, found_manifest, sign_result
from g6.report.texts_cache import DERIVED
from tests.attack._browser_world import need_chromium, wait_until
from tests.export.conftest import vc_verifier  # noqa: F401 - the fixture: Digital Bazaar's verifier under node
from tests.report.check_helpers import LEAD, QUOTE, article, check, cite, g6, report_of, same, write_report

Site = Callable[..., LocalSite]
Verify = Callable[..., dict]
ENV = {"G6_ALLOW_LOOPBACK": "1", "G6_HOST_PAUSE": "0", "G6_RENDER_BROWSERS": "1"}
ROBOTS = Reply(body=b"User-agent: *\nAllow: /\n", content_type="text/plain")
PLAIN = ("<html><body><article><p>" + "A page whose words are all in its HTML. " * 12
         + "</p></article></body></html>").encode()
# a shell whose script polls until a poll answers 404 (one that fails is asked again): while a poll is held open
# the page is never quiet
POLLING_SHELL = (b"<!doctype html><html><body><div id='a'></div><script>const poll = () => fetch('/poll')"
                 b".then((r) => r.ok ? poll() : (document.getElementById('a').textContent = 'done'), poll);"
                 b" poll();</script></body></html>")


def run_lines(home: Path, run_id: str) -> list[dict]:
    p = home / "knowledge" / "fetches" / f"{run_id}.jsonl"
    return [json.loads(x) for x in p.read_bytes().split(b"\n") if x.strip()] if p.exists() else []


def own_reads(home: Path) -> Counter[str]:
    """How many receipts of its own (not a capture's sub-resource) each URL has in the ledger."""
    with EvidenceHome(home) as ev:
        if not ev.ledger.present():
            return Counter()
        return Counter(e.receipt.request.get("url") for e in ev.ledger.entries() if "capture" not in e.receipt.links)


def g6_cmd(home: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "g6", "--home", str(home), *args]


# -- a render under way and the lines of the URLs that end meanwhile ----------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_a_stop_during_a_render_loses_no_line_of_the_urls_that_ended_meanwhile(tmp_path: Path, site: Site,
                                                                              sig: signal.Signals) -> None:
    """FOUND (before the fix): with ``--render auto`` the thread that writes run-file lines waited for each result in
    the order they came, so a shell's render under way held back the lines of every URL that ended after it, their
    receipts already durable (up to the render's deadline, 30 s by default). Ctrl-C or a kill in that time left
    those URLs receipted with no line: the resumed run fetched and receipted each of them a second time.

    Host A's shell renders and is held (its poll never answers); host B's three pages are read meanwhile. Once their
    receipts are durable their lines must be on file, and after Ctrl-C (or kill -9) and ``--run`` each URL has one
    receipt, A's render cut short none."""
    need_chromium()
    polled, release = threading.Event(), threading.Event()

    def poll(req: SeenRequest) -> Reply:
        polled.set()
        if release.is_set():
            return Reply(404, b"")  # the resumed run's render: the script stops, the page settles
        release.wait(300)
        return Reply(body=b"tick", content_type="text/plain")

    def after_the_render_started(req: SeenRequest) -> Reply:
        polled.wait(120)  # B's pages end after A's shell went to its render
        return Reply(body=PLAIN)

    a = site({"/": Reply(body=POLLING_SHELL), "/robots.txt": ROBOTS, "/poll": poll}, host="127.0.0.2")
    b = site({"/robots.txt": ROBOTS, **{f"/p{i}": after_the_render_started for i in range(3)}}, host="127.0.0.3")
    b_urls = [b.url(f"/p{i}") for i in range(3)]
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join([a.url("/"), *b_urls]) + "\n")
    h = tmp_path / "h"
    env = {**os.environ, **ENV, "G6_RENDER_TIMEOUT": "600", "G6_TIMEOUT": "5"}
    cmd = g6_cmd(h, "fetch", "--input", str(urls), "--render", "auto", "--run", "r1", "--json")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's
    try:
        assert polled.wait(120), "the render never started"
        assert wait_until(lambda: sum(own_reads(h)[u] for u in b_urls) == 3, 60), own_reads(h)
        on_file = wait_until(lambda: {x["url"] for x in run_lines(h, "r1")} >= set(b_urls), 20)
        lines = run_lines(h, "r1")
        proc.send_signal(sig)
        err = proc.communicate(timeout=90)[1].decode()
        assert proc.returncode == (130 if sig == signal.SIGINT else -9) and "Traceback" not in err, err
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    resumed = subprocess.run(cmd, env={**env, "G6_RENDER_TIMEOUT": "60"}, capture_output=True, timeout=300)
    assert resumed.returncode in (0, 1) and b"Traceback" not in resumed.stderr, resumed.stderr
    reads = own_reads(h)
    assert [reads[u] for u in b_urls] == [1, 1, 1], reads  # not fetched (and receipted) a second time
    assert reads[a.url("/")] == 2  # the shell's raw read and its capture, once: the cut render receipted nothing
    assert on_file, f"B's receipts were durable, their lines were not on file while A rendered: {lines}"
    final = run_lines(h, "r1")
    assert sorted(x["url"] for x in final) == sorted([a.url("/"), *b_urls])


# -- a batch whose pages are shells, their renders waiting for a browser ---------------------------------------------


def test_a_shell_waiting_for_a_browser_holds_no_body(home: EvidenceHome, client: CheckedClient, site: Site) -> None:
    """FOUND (before the fix): a shell's render still to do (``prepare_page_steps``) held the raw read whole,
    with the body ``prepare_fetch`` kept (``PreparedFetch.body``, up to 2 MiB). A ``--render auto`` batch queues its
    shells for the browsers while the hosts go on, so a list of big shells held one body per shell waiting (a few
    hundred at most before the hosts wait): here twelve 1.5 MB shells held about 18 MB; now the queue holds receipts
    and responses (``RawDocument``: the body's reference; the browser is given the bytes from the store).

    Host A's shell holds the only browser (its poll is answered once host B's shells are all read); B's shells
    wait for it. What Python holds then must stay near one body (the read under way), not one per shell (18 MB
    before, 0.4 MB after; measured by tracemalloc, the text readers' word lists loaded first)."""
    need_chromium()
    n, size = 12, 1_500_000
    big_shell = (b"<!doctype html><html><body><div id='app'></div><script>void 0</script><!-- "
                 + b"x" * size + b" --></body></html>")
    served, release, held = [0], threading.Event(), []

    def shell(req: SeenRequest) -> Reply:
        served[0] += 1  # the raw reads (the renders start from their bytes, reading none again) while A's renders
        if served[0] == n:
            release.set()
        return Reply(body=big_shell)

    def poll(req: SeenRequest) -> Reply:
        if not release.wait(120):
            return Reply(503, b"")
        held.append(tracemalloc.get_traced_memory()[0])  # B's shells all read, waiting for the browser
        return Reply(404, b"")  # the script stops: A's render settles and the browser goes to B's shells

    a = site({"/": Reply(body=POLLING_SHELL), "/robots.txt": ROBOTS, "/poll": poll}, host="127.0.0.2")
    b = site({"/robots.txt": ROBOTS, **{f"/s{i}": shell for i in range(n)}}, host="127.0.0.3")
    prepare_fetch(home.store, client, a.url("/"), documents=False)  # the text readers' word lists, loaded once
    tracemalloc.start()
    try:
        with BrowserPool(1) as pool:
            report = batch_fetch(home, client, [a.url("/"), *[b.url(f"/s{i}") for i in range(n)]], concurrency=2,
                                 render_mode="auto", renderer=Renderer(pool, RenderLimits(deadline=60)))
    finally:
        tracemalloc.stop()
    assert served[0] == n and all(r.render and r.render["rendered"] for r in report.results), report.results
    # what Python held once every shell was read and waited for the browser (the last read may still be in hand)
    assert held and held[0] < 4 * size, f"{held[0]:,} bytes held by {n} shells of {size:,} bytes waiting"


def _shell(script: str) -> bytes:
    return f"<!doctype html><html><body><div id='a'></div><script>{script}</script></body></html>".encode()


WORDS = "Words only a script writes, rendered for the reader and kept as the capture's text. " * 4


def test_a_batch_of_hostile_shells_settles_each_url_once_with_its_raw_read(home: EvidenceHome, client: CheckedClient,
                                                                            site: Site) -> None:
    """HELD: every page of the batch a shell. One would answer differently on a second read (a redirect to another
    host): its render starts from the raw read's bytes (``RawDocument``), so the capture shows the shell that was
    read, never read again. Two redirect to the same shell (read again by the browser, hop by hop), one never settles
    (it polls until the deadline). Each URL ends
    with one result, rendered, its capture naming its raw read, the raw read, the sub-resources and the capture
    appended together and in that order; the ledger verifies; a resumed run settles all of them without a read."""
    need_chromium()
    writes = f"document.getElementById('a').textContent = {json.dumps(WORDS)};"
    flips = [0]

    def flip(req: SeenRequest) -> Reply:
        flips[0] += 1
        if flips[0] == 1:
            return Reply(body=_shell(writes))  # the raw read: a shell
        return Reply(302, b"", headers=(("Location", c.url("/moved")),))  # a second read: elsewhere

    c = site({"/robots.txt": ROBOTS, "/moved": Reply(body=_shell(writes))}, host="127.0.0.3")
    a = site({"/robots.txt": ROBOTS, "/shell": Reply(body=_shell(writes)), "/flip": flip,
              "/r1": Reply(302, b"", headers=(("Location", "/same"),)),
              "/r2": Reply(302, b"", headers=(("Location", "/same"),)), "/same": Reply(body=_shell(writes)),
              "/never": Reply(body=_shell("const p = () => fetch('/tick').finally(() => setTimeout(p, 100)); p();")),
              "/tick": Reply(body=b"tick", content_type="text/plain")}, host="127.0.0.2")
    urls = [a.url(p) for p in ("/shell", "/flip", "/r1", "/r2", "/never")]
    with BrowserPool(1) as pool:
        renderer = Renderer(pool, RenderLimits(deadline=4))
        report = batch_fetch(home, client, urls, run_id="hostile", render_mode="auto", renderer=renderer)
        entries = [e.receipt for e in home.ledger.entries()]
        again = batch_fetch(home, client, urls, run_id="hostile", render_mode="auto", renderer=renderer)
    assert sorted(r.url for r in report.results) == sorted(urls)
    assert again.resumed == len(urls) and len(list(home.ledger.entries())) == len(entries)
    assert home.verify().ok
    place = {r.receipt_id: i for i, r in enumerate(entries)}
    by_url = {r.url: r for r in report.results}
    for url, r in by_url.items():
        assert r.render is not None and r.render["rendered"], r
        capture = entries[place[r.receipt_id]]
        raw = entries[place[r.render["raw_receipt_id"]]]
        assert capture.links["raw"] == raw.receipt_id and raw.request["url"] == capture.request["url"] == url
        between = entries[place[raw.receipt_id] + 1:place[capture.receipt_id]]
        assert [x.receipt_id for x in between] == [x["receipt_id"] for x in capture.capture["resources"]]
        assert all(x.links.get("capture") == capture.receipt_id for x in between)
    assert entries[place[by_url[a.url("/flip")].render["raw_receipt_id"]]].final_url == a.url("/flip")
    flipped = entries[place[by_url[a.url("/flip")].receipt_id]]
    assert flipped.final_url == a.url("/flip") and flips[0] == 1  # the raw read's document, read once
    assert entries[place[flipped.capture["resources"][0]["receipt_id"]]].links["answered_from"] == \
        by_url[a.url("/flip")].render["raw_receipt_id"]
    assert {entries[place[by_url[a.url(p)].receipt_id]].final_url for p in ("/r1", "/r2")} == {a.url("/same")}
    assert entries[place[by_url[a.url("/never")].receipt_id]].capture["ended"] == "deadline"
    assert sum(r.ok for r in report.results) == 4  # /never wrote no text: empty, and said so


# -- a signed result, verified by `g6 report verify` ---------------------------------------------------------------


def test_report_verify_refuses_a_result_that_repeats_a_key(home: EvidenceHome, client: CheckedClient, site: Site,
                                                           tmp_path: Path) -> None:
    """FOUND (before the fix): ``g6 report verify`` read the result with ``json.loads``, which keeps the last of a
    repeated key, and checked the signature over what it kept. A result whose citation says ``"verdict":
    "quote_found"`` and then, later in the same object, the ``"quote_not_found"`` it was signed with verified
    "holds" (exit 0): a reader that keeps the first (or a person reading the file) sees a found quote the signer
    never said. RFC 8785 signs I-JSON, which has no repeated key; the bundle reader already refuses one
    (``g6.prove.bundle_zip.strict_json``). Now the file is refused as input (exit 2), the key named."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    run = check(home, report_of(cite(s.url("/a"), QUOTE), cite(s.url("/a"), "A sentence the page never had.")),
                client)
    key = home.signing_key()
    m = found_manifest(run)
    assert m is not None
    inputs = ResultInputs("r.json", "sha256:" + "0" * 64, 10, {"source": "home", "receipts_only": False})
    signed = sign_result(build_result(run, inputs, m.signed(key)), key)
    assert [c["verdict"] for c in signed["citations"]] == ["quote_found", "quote_not_found"]
    text = json.dumps(signed)
    good = tmp_path / "good.json"
    good.write_text(text)
    forged = tmp_path / "forged.json"
    first = text.replace('"verdict": "quote_not_found"', '"verdict": "quote_found", "verdict": "quote_not_found"')
    forged.write_text(first.replace('"exit_code": 1', '"exit_code": 0, "exit_code": 1'))
    assert json.loads(forged.read_text()) == signed  # what a reader keeping the last of each key sees
    ok = g6(home.root, "report", "verify", str(good))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    r = g6(home.root, "report", "verify", str(forged))
    assert r.returncode == 2 and b"Traceback" not in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert b"repeats the key" in r.stderr and b"verdict" in r.stderr, r.stderr


def test_manifest_verify_refuses_a_manifest_that_repeats_a_key(home: EvidenceHome, client: CheckedClient, site: Site,
                                                               tmp_path: Path) -> None:
    """FOUND (before the fix): a signed manifest read by ``json.loads`` kept the last of a repeated key, so a citation
    whose text says one thing first and the signed text after verified "holds" while a reader keeping the first saw
    a quote the signer never signed. Every reader of a manifest (``manifest verify``, ``recheck``, ``bundle``,
    ``serve --manifest``) loads it with ``load_manifest``, which now refuses it as input (exit 2), the key named."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    run = check(home, report_of(cite(s.url("/a"), QUOTE)), client)
    m = found_manifest(run)
    assert m is not None
    text = json.dumps(m.signed(home.signing_key()).to_json())
    good = tmp_path / "good.json"
    good.write_text(text)
    ok = g6(home.root, "manifest", "verify", str(good))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    quoted = json.dumps(QUOTE)
    assert text.count(f'"text": {quoted}') == 1
    forged = tmp_path / "forged.json"
    forged.write_text(text.replace(f'"text": {quoted}', f'"text": "The signer never said this.", "text": {quoted}'))
    assert json.loads(forged.read_text()) == json.loads(text)  # what a reader keeping the last of each key sees
    r = g6(home.root, "manifest", "verify", str(forged))
    assert r.returncode == 2 and b"Traceback" not in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert b"repeats the key" in r.stderr and b"'text'" in r.stderr, r.stderr


# -- canonical JSON by orjson: values where orjson, json.dumps and RFC 8785 could differ ----------------------------


def _deep(n: int) -> list:
    v: list = []
    for _ in range(n):
        v = [v]
    return v


ODD = {"neg_zero": -0.0, "tenth": 0.1, "e21": 1e21, "tiny": 5e-324, "one": 1.0, "min_int": -(2**53 - 1),
       "deep": _deep(300),  # past orjson's nesting limit (255): json.dumps writes it
       "text": "nul\x00 ls\u2028 ps\u2029 nel\x85 del\x7f bom\ufeff \U0001f600 \"\\/",
       "keys": {"\uffff": 1, "\U0001f600": 2, "\ue000": 3, "a": 4, "": 5, "\x00": 6, "\u00e9": 7},
       "pair": (1, "x"), "empty": {}, "none": None, "yes": True}


def test_a_receipt_of_odd_values_signs_rfc8785_bytes_that_the_vc_peer_verifies(home: EvidenceHome,
                                                                               vc_verifier: Verify) -> None:  # noqa: F811
    """HELD: a receipt whose detail holds what orjson, ``json.dumps`` and RFC 8785 could write differently (-0.0,
    floats, nesting past orjson's limit, NUL, U+2028, U+0085, keys past U+FFFF beside private-use ones, a tuple)
    signs exactly ``rfc8785.dumps`` of its JSON, reads back from the ledger with its signature good, and its
    ``g6 receipt export --format vc`` credential, as g6 wrote it, passes Digital Bazaar's eddsa-jcs-2022 verifier."""
    r = home.record(Receipt(kind="fetch", source="web", request={"url": "http://127.0.0.1/odd"}, outcome="refused",
                            outcome_code="G6_E_KNOWLEDGE_REFUSED", detail=ODD))
    assert r.canonical_bytes() == rfc8785.dumps(r.to_json(with_signature=False))
    assert r.canonical_bytes(with_signature=True) == rfc8785.dumps(r.to_json())
    back = home.ledger.get(r.receipt_id)
    assert back.canonical_bytes(with_signature=True) == r.canonical_bytes(with_signature=True)
    assert home.verify().ok
    out = g6(home.root, "receipt", "export", r.receipt_id, "--format", "vc")
    assert out.returncode == 0, out.stderr
    verdict = vc_verifier(out.stdout.decode("utf-8"))
    assert verdict["verified"], verdict
    assert json.loads(out.stdout)["credentialSubject"]["receipt"]["detail"]["keys"] == ODD["keys"]


def test_canonical_json_is_rfc8785_for_every_odd_value_alone_and_in_a_result() -> None:
    """HELD: ``canonical_json`` (orjson for plain JSON) gives ``rfc8785.dumps``' bytes, or refuses what it refuses,
    for each odd value and for subclasses of str, int and dict; a result's citations in one orjson call
    (``canonical``) are the bytes of the whole."""
    import enum

    class S(str):
        pass

    class N(int):
        pass

    class D(dict):
        pass

    class E(enum.IntEnum):
        A = 1

    values = [*ODD.values(), ODD, S("s"), N(3), D(b=1, a=2), E.A, {"k": S("v")}, [N(1), True, False],
              2**53, -(2**53), float("nan"), float("inf"), "\ud800", {"\ud83d\ude00": 1}, {1: "a"}, b"x", _deep(2000)]
    for v in values:
        outcome = []
        for dumps in (canonical_json, rfc8785.dumps):
            try:
                outcome.append(dumps(v))
            except (ValueError, TypeError, RecursionError) as e:  # rfc8785's refusals (ValueErrors), too deep
                outcome.append(type(e).__name__)
        assert outcome[0] == outcome[1], (v if not isinstance(v, list) else "deep", outcome)
    citations = [{"n": i, "quote": ODD["text"], "similarity": 0.5 if i % 2 else None, "k": ODD["keys"]}
                 for i in range(5)]
    result = {"schema": "x", "citations": citations, "figures": {"a": 1}, "signature": {"x": 1}}
    assert canonical(result) == rfc8785.dumps({k: v for k, v in result.items() if k != "signature"})
    plain = {**result, "citations": [{k: v for k, v in c.items() if k != "similarity"} for c in citations]}
    assert canonical(plain) == rfc8785.dumps({k: v for k, v in plain.items() if k != "signature"})


# -- run files by orjson -------------------------------------------------------------------------------------------


class _Item:
    def __init__(self, key: str, value: object) -> None:
        self.key, self.value = key, value

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value}


def test_a_run_file_line_of_every_odd_value_reads_back_as_written(tmp_path: Path) -> None:
    """HELD: one run-file line holding every odd value at once (and one of each alone, then a line a crash tore,
    then more): each reads back as ``json`` would read it back (a tuple as a list), whether orjson wrote the line or,
    for what it refuses (nesting past 255, an integer past 64 bits, a lone surrogate, a non-string key), ``json``.
    Not tried: NaN and infinities, which orjson writes as null; no run file holds a float that could be one."""
    from g6.runs import RunState

    odd = {**ODD, "huge": 2**70, "lone": "\ud800 \udfff", "int_key": {1: "a"}}
    items = [_Item("all", odd), *(_Item(k, v) for k, v in odd.items())]
    path = tmp_path / "run.jsonl"
    state = RunState(path, decode=lambda d: (d["key"], d["value"]), key=lambda kv: kv[0])
    state.add_many(items[:3])
    with path.open("ab") as f:
        f.write(b'{"key": "torn", "value": "\\u2028')  # a crash in the middle of a line
    state.add_many(items[3:])
    back = RunState(path, decode=state._decode, key=state._key).load()
    assert set(back) == {i.key for i in items}
    for i in items:
        assert back[i.key] == (i.key, json.loads(json.dumps(i.value))), i.key


def test_ctrl_c_receipts_no_read_it_cannot_put_on_file(tmp_path: Path, site: Site) -> None:
    """FOUND (before the fix): a batch without ``--render`` (``--processes 1``) stopped by Ctrl-C let the reads under
    way end and appended their receipts (the ledger writer was closed after the hosts), but wrote no line for them:
    the resumed run fetched each again, a second receipt for one URL. With ``--render`` the writer was already closed
    first (nothing of a render cut short is receipted); now every batch does so, and a read that ends after the stop
    is receipted by the resumed run only.

    Host A's page is held (its read ends at its deadline, after the Ctrl-C); host B's pages are read meanwhile."""
    entered, release = threading.Event(), threading.Event()

    def held(req: SeenRequest) -> Reply:
        entered.set()
        release.wait(120)
        return Reply(body=PLAIN)

    a = site({"/robots.txt": ROBOTS, "/held": held}, host="127.0.0.2")
    b = site({"/robots.txt": ROBOTS, **{f"/p{i}": Reply(body=PLAIN) for i in range(3)}}, host="127.0.0.3")
    b_urls = [b.url(f"/p{i}") for i in range(3)]
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join([a.url("/held"), *b_urls]) + "\n")
    h = tmp_path / "h"
    env = {**os.environ, **ENV, "G6_TIMEOUT": "5"}
    cmd = g6_cmd(h, "fetch", "--input", str(urls), "--run", "r1", "--processes", "1", "--json")
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's
    try:
        assert entered.wait(60), "A's page was never asked for"
        assert wait_until(lambda: {x["url"] for x in run_lines(h, "r1")} >= set(b_urls), 60), run_lines(h, "r1")
        proc.send_signal(signal.SIGINT)  # A's read is under way: it ends at its deadline, after the stop
        err = proc.communicate(timeout=90)[1].decode()
        assert proc.returncode == 130 and "Traceback" not in err, err
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    first = own_reads(h)
    resumed = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert resumed.returncode == 0 and b"Traceback" not in resumed.stderr, resumed.stderr
    reads = own_reads(h)
    assert [reads[u] for u in b_urls] == [1, 1, 1], reads
    assert reads[a.url("/held")] == 1, (first, reads)  # receipted once: by the resumed run, which put it on file
    assert sorted(x["url"] for x in run_lines(h, "r1")) == sorted([a.url("/held"), *b_urls])


@pytest.mark.parametrize("read", ['"x"', "[1]", '{"how": "fetched"}', '{"how": "fetched", "url": null}'])
def test_report_check_resumes_past_a_run_file_line_whose_read_is_not_one(tmp_path: Path, site: Site,
                                                                        read: str) -> None:
    """FOUND (before the fix): a run file is not evidence and anyone can edit one, but ``g6 report check --run`` read
    each line's ``read`` as an object with a ``url``: a line whose ``read`` was a string, a list, or an object
    without a ``url`` ended the check with an internal error (exit 70, ``AttributeError``/``KeyError``). Now such a
    line is dropped as a torn one is, and the citation is decided from a read made now."""
    s = site({"/a": Reply(body=article(QUOTE)), "/robots.txt": Reply(404)})
    h = tmp_path / "h"
    with EvidenceHome(h) as ev:
        ev.keys.init()
    report = write_report(tmp_path / "report.json", report_of(cite(s.url("/a"), QUOTE)))
    runs = h / "knowledge" / "reports"
    runs.mkdir(parents=True)
    (runs / "r1.jsonl").write_text(f'{{"key": "1:0", "verdict": "quote_found", "reason": "", "read": {read}, '
                                   f'"receipt_id": "rcpt_x"}}\n')
    r = g6(h, "report", "check", str(report), "--run", "r1", "--json")
    assert r.returncode == 0 and b"Traceback" not in r.stderr and b"internal error" not in r.stderr, r.stderr
    out = json.loads(r.stdout)
    assert [c["verdict"] for c in out["citations"]] == ["quote_found"]
    assert out["citations"][0]["read"]["how"] == "fetched"


FORGED = {"content": {"blake3": "blake3:" + "0" * 64, "sha256": "sha256:" + "0" * 64, "size": 9},
          "status": 201, "byte_count": 9, "interstitial": {"kind": "login", "evidence": "x"},
          "render": {"mode": "auto", "rendered": True, "why": "x", "raw_receipt_id": "rcpt_x"}}


@pytest.mark.parametrize("field", sorted(FORGED))
def test_a_resumed_batch_reports_what_the_receipt_says_not_what_the_line_says(tmp_path: Path, site: Site,
                                                                               field: str) -> None:
    """FOUND (before the fix): a run-file line settled its URL when the ledger held a receipt of that URL with the
    line's outcome, and the resumed run then reported the rest of the line as it was: an edited line under a real
    receipt's id printed another body's digests, another status, a wall that was not there, a render that was not
    made. Now a line that says anything of its read its receipt does not settles nothing: the URL is read again
    (and said so on stderr), and what is reported is the new read's receipt."""
    s = site({"/robots.txt": ROBOTS, "/p": Reply(body=PLAIN)})
    h = tmp_path / "h"
    urls = tmp_path / "urls.txt"
    urls.write_text(s.url("/p") + "\n")
    env = {**ENV, "G6_TIMEOUT": "5"}
    first = g6(h, "fetch", "--input", str(urls), "--run", "r1", "--json", env=env)
    assert first.returncode == 0, first.stderr
    path = h / "knowledge" / "fetches" / "r1.jsonl"
    line = json.loads(path.read_bytes())
    path.write_text(json.dumps({**line, field: FORGED[field]}) + "\n")
    again = g6(h, "fetch", "--input", str(urls), "--run", "r1", "--json", env=env)
    assert again.returncode == 0 and b"Traceback" not in again.stderr, again.stderr
    shown = json.loads(again.stdout)
    with EvidenceHome(h) as ev:
        receipt = ev.ledger.get(shown["receipt_id"])
    assert shown.get(field) != FORGED[field], shown
    assert (shown["content"], shown["status"], shown["byte_count"]) == (receipt.content, receipt.http_status,
                                                                        receipt.byte_count)
    assert shown.get("interstitial") is None and receipt.interstitial is None and receipt.capture is None
    assert b"no matching receipt" in again.stderr, again.stderr


@pytest.mark.parametrize("line", ['{"url": ["x"], "outcome": "ok", "code": "c"}',
                                  '{"url": {"u": 1}, "outcome": "ok", "code": "c", "receipt_id": "rcpt_x"}'])
def test_a_batch_resumes_past_a_run_file_line_it_cannot_key(tmp_path: Path, site: Site, line: str) -> None:
    """FOUND (before the fix): a run-file line whose url was a list or an object ended ``g6 fetch --input --run``
    with an internal error (exit 70, ``unhashable type``): ``RunState.load`` keyed the line outside the guard that
    drops a torn line. Now it is dropped as a torn line is."""
    s = site({"/robots.txt": ROBOTS, "/p": Reply(body=PLAIN)})
    h = tmp_path / "h"
    with EvidenceHome(h) as ev:
        ev.keys.init()
    (h / "knowledge" / "fetches").mkdir(parents=True)
    (h / "knowledge" / "fetches" / "r1.jsonl").write_text(line + "\n")
    urls = tmp_path / "urls.txt"
    urls.write_text(s.url("/p") + "\n")
    r = g6(h, "fetch", "--input", str(urls), "--run", "r1", "--json", env={**ENV, "G6_TIMEOUT": "5"})
    assert r.returncode == 0 and b"internal error" not in r.stderr, r.stderr
    assert json.loads(r.stdout)["outcome"] == "ok"


# -- report check: the body the fetch held, not the store's copy ---------------------------------------------------


@pytest.mark.parametrize("processes", [1, 2])
def test_a_page_judged_from_the_body_the_fetch_held_is_judged_as_from_the_store(home: EvidenceHome,
                                                                               client: CheckedClient, site: Site,
                                                                               processes: int) -> None:
    """HELD: ``g6 report check`` judges a page it fetches from the bytes the fetch held (``PreparedFetch.body``),
    not read back from the store. Over pages whose bytes on the wire and in the store differ in every way a fetch
    allows (gzip on the wire, a legacy charset, a redirect, kept compressed, past the size a page is held at,
    one cut off mid-markup), in this process and on forked ones, the verdicts are those a check reading the store
    gives (``same``: verdict, receipt, where found, hints, reason)."""
    import gzip

    latin = ("<html><head><meta charset='windows-1252'></head><body><article><p>" + LEAD + "</p><p>Caf\u00e9 "
             + QUOTE + " \u2013 \u201cquoted\u201d</p></article></body></html>").encode("cp1252")
    big = article(QUOTE, *(f"Filler paragraph {i} of a long page. " * 20 for i in range(3000)))
    assert len(big) > 2 * 1024 * 1024  # past MAX_EXTRACT_BYTES: not held
    a = site({"/robots.txt": Reply(404), "/gz": Reply(body=gzip.compress(article(QUOTE)),
                                                      headers=(("Content-Encoding", "gzip"),)),
              "/latin": Reply(body=latin, content_type="text/html"),
              "/story/1": Reply(301, b"", headers=(("Location", "/story/1/"),)),
              "/story/1/": Reply(body=article(QUOTE))},
             host="127.0.0.2")
    b = site({"/robots.txt": Reply(404), "/big": Reply(body=big), "/small": Reply(body=article(QUOTE)[:400])},
             host="127.0.0.3")
    report = report_of(*(cite(u, q) for u in (a.url("/gz"), a.url("/latin"), a.url("/story/1"), b.url("/big"),
                                              b.url("/small")) for q in (QUOTE, "A sentence none of them has.")),
                       cite(a.url("/latin"), "Caf\u00e9 " + QUOTE + " \u2013 \u201cquoted\u201d"))
    fetched = check(home, report, client, processes=processes)
    assert fetched.fetched == 5
    shutil.rmtree(home.root / DERIVED)  # the texts the fetch derived: the stored check reads every body again
    stored = check(home, report, None)
    assert same(stored) == same(fetched)
    assert [v.verdict for v in fetched.verdicts][::2][:3] == ["quote_found"] * 3, fetched.verdicts
    assert fetched.verdicts[-1].verdict == "quote_found"


# -- lone surrogates a page's script makes ---------------------------------------------------------------------------


def test_a_rendered_page_whose_script_writes_a_lone_surrogate_is_printed_as_kept(tmp_path: Path, site: Site) -> None:
    """FOUND (before the fix): JavaScript strings are UTF-16, so a page's script can give its title and its text a
    lone surrogate, which the browser hands over as it is. The capture's text blob kept it as '?', and every receipt
    was signed, but ``g6 fetch URL --render`` (and ``--render auto``) then printed the page's document with the lone
    surrogate in it and ended with an internal error (exit 70, ``UnicodeEncodeError``), its receipts appended. Now the
    rendered text and title are what the capture keeps, and the command prints them."""
    need_chromium()
    script = ("document.title = 'T\\udfffX'; document.getElementById('p').textContent = "
              "'Words of an article \\ud800 ' + 'and more words. '.repeat(30);")
    page = (f"<html><head><title>Title</title></head><body><article><p id='p'>x</p></article><script>{script}"
            "</script></body></html>").encode()
    s = site({"/": Reply(body=page), "/robots.txt": ROBOTS})
    h = tmp_path / "h"
    for mode in ("always", "auto"):
        r = g6(h, "fetch", s.url("/"), "--render", mode, "--json", env=ENV)
        assert r.returncode == 0 and b"Traceback" not in r.stderr, (mode, r.stderr)
        out = json.loads(r.stdout)
        doc = out["documents"][0]
        assert doc["title"] == "T?X" and "Words of an article ? and more" in doc["text"], doc
        with EvidenceHome(h) as ev:
            kept = ev.store.read_as(ev.ledger.get(out["receipt_id"]).capture["text"]).decode("utf-8")
        assert kept == doc["text"]
    text = g6(h, "fetch", s.url("/"), "--render", env=ENV)
    assert text.returncode == 0 and "Words of an article ? and more" in text.stdout.decode(), text.stderr
