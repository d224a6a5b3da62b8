"""kill -9 at every step of a redaction, on both backend pairs: what is left is either nothing (no entry, every
byte still there) or the signed entry with some bytes still there, which `finish` (what `g6 blob gc` and the next
redact run) takes out. Never a byte gone without its entry; the ledger verifies after every kill.

The child redacts a body with a derived copy (the text `g6 convert` made of it) and kills itself at one step: a
library step (``step``, the hook ``g6.ledger.takedown`` takes for tests), or inside the store's removal, after
its n-th delete (the folder's unlink, S3's DeleteObject: patched in the child, which is test code).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from g6.home import EvidenceHome
from g6.ledger import Receipt
from g6.ledger.takedown import finish
from g6.store import BlobRef, BlobStore
from tests.children import Children

CHILD = r"""
import json, os, signal, sys
from g6.home import EvidenceHome
from g6.ledger.takedown import plan, redact
args = json.loads(sys.argv[1])
home = EvidenceHome(args["root"], ledger_url=args["ledger_url"], blob_url=args["blob_url"], env=args["env"])

def die(*_):
    os.kill(os.getpid(), signal.SIGKILL)

def step(name):
    if name == args["step"]:
        die()

deletes = args.get("after_delete")
if deletes is not None:  # a kill inside the store's removal, once its n-th delete has returned
    calls = [0]
    def counted(real):
        def call(*a, **kw):
            out = real(*a, **kw)
            calls[0] += 1
            if calls[0] == deletes:
                die()
            return out
        return call
    if args["blob_url"]:
        home.store.s3.delete_object = counted(home.store.s3.delete_object)
    else:
        import g6.store.folder_files as ff
        ff.unlink = counted(ff.unlink)
p = plan(home.ledger, digests=[args["digest"]])
redact(home.ledger, home.store, home.signing_key(), home.trust().roots(), p, "court-order", step=step)
print("not killed", flush=True)
"""


def _env(root: Path) -> dict[str, str]:
    env_file = root / ".env"
    if not env_file.exists():
        return {}
    return dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)


def _body_with_copy(home: EvidenceHome, n: int) -> tuple[BlobRef, BlobRef]:
    body = home.store.put(f"%PDF-1.4 round {n}: a page someone must take down".encode())
    home.record(Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{n}.pdf"}, outcome="ok",
                        outcome_code="G6_E_KNOWLEDGE_FETCHED", content=body.to_json(), byte_count=body.size))
    text = home.store.put(f"round {n}: the text of that page".encode())
    home.record(Receipt(kind="convert", source="pypdf", request={"digest": body.blake3}, outcome="ok",
                        outcome_code="G6_E_KNOWLEDGE_CONVERTED", content=text.to_json(), byte_count=text.size,
                        links={"from": body.to_json()}))
    return body, text


# where the child dies: a library step (with the index of the blob, body 0 or copy 1, it is about), or after the
# store's n-th delete (per blob the folder unlinks raw, .zst, meta, index; S3 deletes the object, the index object)
KILLS = [("planned", None), ("deciding", None), ("appended", None), ("removing", 0), ("removed", 0),
         ("removing", 1), ("removed", 1)]
DELETES = {"sqlite+file": 8, "postgresql+s3": 4}


def _kill_args(kill: tuple[str, int | None] | int, blobs: tuple[BlobRef, BlobRef]) -> dict[str, object]:
    if isinstance(kill, int):
        return {"step": "", "after_delete": kill}
    name, which = kill
    return {"step": name if which is None else f"{name} {blobs[which].blake3}"}


@pytest.mark.parametrize("pair", ["sqlite+file", "postgresql+s3"])
def test_a_kill_at_any_step_leaves_the_entry_first_or_nothing(pair: str, tmp_path: Path,
                                                             make_pair_home: Callable[[str, Path], EvidenceHome]
                                                             ) -> None:
    root = tmp_path / "home"
    home = make_pair_home(pair, root)
    home.keys.init()
    env = _env(root)
    ledger_url, blob_url = env.get("G6_LEDGER_URL"), env.get("G6_BLOB_URL")
    seen = {"nothing": 0, "entry": 0}
    kills: list[tuple[str, int | None] | int] = [*KILLS, *range(1, DELETES[pair] + 1)]
    for n, kill in enumerate(kills):
        body, text = _body_with_copy(home, n)
        entries_before = len(list(home.ledger.entries(kind="redaction")))
        args = {"root": str(root), "ledger_url": ledger_url, "blob_url": blob_url, "env": env, "digest": body.blake3,
                **_kill_args(kill, (body, text))}
        with Children() as kids:
            p = kids.start([sys.executable, "-c", CHILD, json.dumps(args)], stdout=subprocess.PIPE)
            out, _ = p.communicate(timeout=120)
        assert p.returncode == -9 and b"not killed" not in out, (kill, p.returncode, out)
        entries = list(home.ledger.entries(kind="redaction"))
        report = home.verify()
        assert report.ok, (kill, report.failures())  # never a byte gone without its entry
        if len(entries) == entries_before:  # nothing: every byte is still there
            seen["nothing"] += 1
            assert home.store.has(body.blake3) and home.store.has(text.blake3), kill
        else:  # the entry, and what was not yet removed is finished now
            seen["entry"] += 1
            assert [b["blake3"] for b in entries[-1].receipt.request["blobs"]] == [body.blake3, text.blake3]
            finish(home.ledger, home.store, home.trust().roots(), deep=True)
            assert not home.store.has(body.blake3) and not home.store.has(text.blake3), kill
            store_report = home.store.verify()
            assert store_report.ok and not store_report.dangling, (kill, store_report)
            assert home.verify().to_json()["redactions"]["pending"] == 0
    assert seen == {"nothing": 2, "entry": len(kills) - 2}, seen  # planned and deciding: nothing; after: the entry
    if isinstance(home.store, BlobStore):
        assert not list((home.store.root / "tmp").iterdir())
    home.close()
