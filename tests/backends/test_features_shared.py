"""Every feature again on PostgreSQL + SeaweedFS: the feature suites' own test bodies, with ``home``
an evidence home on the shared pair (ledger in a fresh PostgreSQL schema, blobs under a fresh S3
prefix; its ``.env`` names them, so the CLI run in a subprocess with ``--home`` reaches them too).

The SQLite + folder pair runs these same tests where they live; here they are collected a second
time, so a feature that behaves differently on the shared engines fails a test. The core ledger
tests' tampering (``raw(home)``: plain SQL) runs through the ledger's own connection, so the same
statements hit PostgreSQL. Tests that reach into SQLite or the folder layout on purpose are left out
by name (listed below, with why).
"""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest

from g6.home import EvidenceHome
from tests.backends.raw_sql import raw_sql

TESTS = Path(__file__).resolve().parent.parent
# test -> why it only makes sense on the SQLite + folder pair
SQLITE_ONLY = {
    "test_a_tree_that_rewrote_an_old_leaf_fails_consistency": "rewrites a row through sqlite3",
    "test_rows_removed_from_the_end_are_caught_after_a_checkpoint": "deletes rows through sqlite3 "
                                                                     "(tests/backends/test_pairs.py does it on both)",
    "test_flipped_byte_in_blob_is_detected": "edits the blob's file (test_pairs.py does it on both)",
    "test_missing_blob_is_detected": "deletes the blob's file (test_pairs.py does it on both)",
    "test_truncated_database_file_is_detected": "truncates the SQLite file",
    "test_concurrent_processes_do_not_fork_the_chain": "its workers open the home's SQLite file "
                                                       "(test_shared_engines.py runs 8 writers on PostgreSQL)",
    "test_append_many_is_one_transaction": "expects sqlite3.IntegrityError",
}


def _ledger_connection(home: EvidenceHome) -> object:
    """test_ledger's ``raw(home)``: its statements are plain SQL, so the ledger's own connection runs them."""
    return raw_sql(home.ledger)


BORROWED = {"test_bundle_warc.py": {}, "test_cite_recheck.py": {}, "test_cite_failed_read.py": {},
            "test_convert.py": {}, "ledger/test_transparency.py": {},
            "ledger/test_ledger.py": {"raw": _ledger_connection},
            "adapters/test_search.py": {}, "adapters/test_elasticsearch.py": {}, "test_mcp.py": {}}


def _borrow(rel: str, patch: dict[str, object]) -> None:
    """Collect a feature module's tests and fixtures into this module under ``<module>__<test>``."""
    path = TESTS / rel
    spec = importlib.util.spec_from_file_location(f"g6_shared_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    vars(mod).update(patch)
    fixtures = {name: obj for name, obj in vars(mod).items()
                if hasattr(obj, "_fixture_function_marker") or type(obj).__name__ == "FixtureFunctionDefinition"}
    uses_home = {"home"} | {name for name, obj in fixtures.items() if "home" in _params(obj)}
    globals().update(fixtures)
    for name, obj in vars(mod).items():
        # only the tests that store or receipt something: the others would just run twice
        if name.startswith("test_") and callable(obj) and name not in SQLITE_ONLY and uses_home & _params(obj):
            globals()[f"test_{path.stem[5:]}__{name[5:]}"] = obj


def _params(obj: object) -> set[str]:
    fn = getattr(obj, "_get_wrapped_function", lambda: None)() or getattr(obj, "__wrapped__", obj)
    fn = getattr(fn, "hypothesis", None) and getattr(fn.hypothesis, "inner_test", fn) or fn
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


for _rel, _patch in BORROWED.items():
    _borrow(_rel, _patch)


@pytest.fixture
def home(shared_home: EvidenceHome) -> EvidenceHome:
    """The conftest ``home``, on PostgreSQL + SeaweedFS."""
    return shared_home
