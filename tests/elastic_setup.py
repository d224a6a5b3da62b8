"""The Elasticsearch the integration tests read: noida-db on 127.0.0.1, loaded with a test index.

`.ci/run` starts one server and passes its URL in G6_TEST_ELASTIC_URL; without it, the
session fixture starts its own noida-db on a free loopback port and stops it by PID.
Loading the index is test set-up and uses plain httpx; the reader under test never writes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from importlib.resources import files
from pathlib import Path

import httpx

HANDBOOK_MAPPING = {
    "properties": {
        "title": {"type": "text", "fields": {"raw": {"type": "keyword"}}},
        "body": {"type": "text"},
        "tag": {"type": "keyword"},
        "year": {"type": "integer"},
        "author": {"properties": {"name": {"type": "text"}, "orcid": {"type": "keyword"}}},
        "comments": {"type": "nested", "properties": {"text": {"type": "text"}, "by": {"type": "keyword"}}},
    }
}
HANDBOOK_DOCS = {
    "1": {"title": "Retention policy", "body": "Receipts are kept for seven years and verified every quarter.",
          "tag": "policy", "year": 2024, "author": {"name": "Ada Lovelace", "orcid": "0000-0001"},
          "comments": [{"text": "clear", "by": "bob"}]},
    "2": {"title": "Citation checks", "body": "Every cited passage is re-checked against the stored receipt.",
          "tag": "process", "year": 2025, "author": {"name": "Grace Hopper", "orcid": "0000-0002"}},
    "3": {"title": "Onboarding", "body": "New staff read the retention policy in their first week.",
          "tag": "hr", "year": 2023, "author": {"name": "Alan Turing", "orcid": "0000-0003"}},
}
NUMBERS_MAPPING = {"properties": {"n": {"type": "integer"}, "code": {"type": "keyword"}}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def noida_binary() -> str:
    path = files("noida_db") / "noida-db"
    os.chmod(str(path), 0o755)
    return str(path)


def start_noida(data_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen([noida_binary(), "start", "--only", "elasticsearch", "--host", "127.0.0.1",
                             "--elasticsearch-port", str(port), "--data-dir", str(data_dir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_ready(url, proc)
    return proc, url


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"noida-db exited with {proc.returncode} before answering")
        try:
            if httpx.get(url + "/", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no Elasticsearch answered at {url} within {timeout} s")


def load(url: str) -> None:
    with httpx.Client(base_url=url, timeout=10.0) as c:
        for index in ("handbook", "handbook2", "numbers"):
            c.delete(f"/{index}")
        c.put("/handbook", json={"mappings": HANDBOOK_MAPPING}).raise_for_status()
        c.put("/handbook2", json={"mappings": HANDBOOK_MAPPING}).raise_for_status()
        c.put("/numbers", json={"mappings": NUMBERS_MAPPING}).raise_for_status()
        for doc_id, doc in HANDBOOK_DOCS.items():
            c.put(f"/handbook/_doc/{doc_id}", params={"refresh": "true"}, json=doc).raise_for_status()
        c.put("/numbers/_doc/1", params={"refresh": "true"}, json={"n": 1, "code": "a"}).raise_for_status()
        c.post("/_aliases", json={"actions": [{"add": {"index": "handbook", "alias": "hb"}},
                                              {"add": {"index": "handbook", "alias": "both"}},
                                              {"add": {"index": "handbook2", "alias": "both"}}]}).raise_for_status()


if __name__ == "__main__":  # python tests/elastic_setup.py load URL: the docs' Elasticsearch examples' index
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "load":
        sys.exit("usage: python tests/elastic_setup.py load URL")
    wait_ready(sys.argv[2].rstrip("/"))
    load(sys.argv[2].rstrip("/"))
