"""One interface, two stores: the folder store and the S3 store each provide every member of
``BlobBackend`` (and their writers every member of ``BlobWriterLike``) with a signature a caller typed
with the interface can use, and ``open_store`` is typed to return the interface, not either store.

Checked with ``inspect`` and ``typing.get_type_hints`` on the classes, so a store that drops a method,
renames a parameter, turns a keyword into a positional one, loses a default or changes what it returns
fails here, whether or not a type checker is run. No server is needed: the S3 store is made with a
client it never calls.
"""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

import g6.store
from g6.store import BlobBackend, BlobStore, BlobWriter, S3BlobStore, open_store
from g6.store.base import BlobWriterLike
from g6.store.s3 import S3BlobWriter

STORES = [BlobStore, S3BlobStore]


def _members(proto: type) -> dict[str, Any]:
    """The protocol's own members: methods, properties, and annotated attributes (as ``None``)."""
    out: dict[str, Any] = {name: None for name in getattr(proto, "__annotations__", {})}
    for name, value in vars(proto).items():
        if (not name.startswith("_") or name in ("__enter__", "__exit__")) and (
                inspect.isfunction(value) or isinstance(value, property)):
            out[name] = value
    return out


def _params(fn: Any) -> list[inspect.Parameter]:
    return list(inspect.signature(fn).parameters.values())[1:]  # without self


def _signature_problems(proto: type, impl: type, name: str) -> list[str]:
    """What stops a call written against ``proto.name`` from working on ``impl.name``."""
    want, got = getattr(proto, name), getattr(impl, name)
    want_hints, got_hints = typing.get_type_hints(want), typing.get_type_hints(got)
    problems: list[str] = []
    got_params = {p.name: p for p in _params(got)}
    got_positional = [p.name for p in _params(got) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, p in enumerate(q for q in _params(want) if q.kind not in (q.VAR_POSITIONAL, q.VAR_KEYWORD)):
        g = got_params.get(p.name)
        if g is None:
            problems.append(f"no parameter {p.name!r}")
            continue
        if p.kind == p.POSITIONAL_OR_KEYWORD and (i >= len(got_positional) or got_positional[i] != p.name):
            problems.append(f"{p.name!r} is not positional parameter {i + 1}")
        if p.kind == p.KEYWORD_ONLY and g.kind not in (g.KEYWORD_ONLY, g.POSITIONAL_OR_KEYWORD):
            problems.append(f"{p.name!r} cannot be passed by keyword")
        if p.default is not p.empty and g.default != p.default:
            problems.append(f"{p.name!r} defaults to {g.default!r}, the interface to {p.default!r}")
        if want_hints.get(p.name) != got_hints.get(p.name):
            problems.append(f"{p.name!r} is {got_hints.get(p.name)}, the interface says {want_hints.get(p.name)}")
    wanted = {p.name for p in _params(want)}
    problems += [f"extra parameter {p.name!r} has no default" for p in _params(got)
                 if p.name not in wanted and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    want_ret, got_ret = want_hints.get("return"), got_hints.get("return")
    if want_ret is typing.Self:
        if got_ret not in (impl, typing.Self):
            problems.append(f"returns {got_ret}, not its own class")
    elif getattr(want_ret, "_is_protocol", False):  # e.g. writer() -> BlobWriterLike: any class providing it
        if not inspect.isclass(got_ret):
            problems.append(f"returns {got_ret}, not a class providing {want_ret.__name__}")
        else:
            problems += [f"returns {got_ret.__name__}, which {p}" for p in _class_problems(want_ret, got_ret)]
    elif got_ret != want_ret:
        problems.append(f"returns {got_ret}, the interface says {want_ret}")
    return problems


def _class_problems(proto: type, impl: type) -> list[str]:
    problems = []
    if inspect.isabstract(impl):
        problems.append(f"leaves abstract: {sorted(impl.__abstractmethods__)}")  # type: ignore[attr-defined]
    for name, member in _members(proto).items():
        if member is None or isinstance(member, property):
            continue  # data: checked on an instance (``test_..._data_members``)
        if not callable(getattr(impl, name, None)):
            problems.append(f"has no {name}()")
            continue
        problems += [f"{name}(): {p}" for p in _signature_problems(proto, impl, name)]
    return problems


@pytest.mark.parametrize("store", STORES, ids=lambda c: c.__name__)
def test_each_store_provides_every_member_of_the_interface(store: type) -> None:
    assert set(_members(BlobBackend)) >= {"writer", "put", "put_stream", "has", "open", "open_verified", "read",
                                          "read_checked", "info", "iter_digests", "check", "verify", "gc", "close"}
    assert _class_problems(BlobBackend, store) == []


@pytest.mark.parametrize("writer", [BlobWriter, S3BlobWriter], ids=lambda c: c.__name__)
def test_each_writer_provides_every_member_of_the_writer_interface(writer: type) -> None:
    assert set(_members(BlobWriterLike)) == {"size", "write", "commit", "abort", "__enter__", "__exit__"}
    assert _class_problems(BlobWriterLike, writer) == []


def test_the_data_members_are_there_on_real_instances(tmp_path: Path) -> None:
    folder = BlobStore(tmp_path, fsync=False)
    s3 = S3BlobStore("bucket", "prefix", client=object(), check_bucket=False)  # never called here
    assert folder.root == tmp_path and s3.root == "s3://bucket/prefix/"
    for store in (folder, s3):
        w = store.writer()
        try:
            assert isinstance(w.size, int)
        finally:
            w.abort()


def test_a_checker_would_see_the_same(tmp_path: Path) -> None:
    """What a type checker sees: ``open_store`` returns the interface, and each store is assignable to it
    (these lines are for the checker; at run time they only show the calls work through the interface)."""
    assert typing.get_type_hints(open_store)["return"] is BlobBackend
    store: BlobBackend = open_store(None, tmp_path, fsync=False)
    assert isinstance(store, BlobStore)
    ref = store.put(b"one body, through the interface")
    assert store.read_checked(ref.sha256) == (ref, b"one body, through the interface")
    store.close()
    typed: list[BlobBackend] = [BlobStore(tmp_path, fsync=False),
                                S3BlobStore("bucket", client=object(), check_bucket=False)]
    assert len(typed) == 2


def test_g6_store_imports_only_g6_errors_and_itself() -> None:
    """The layer rule: the store is the bottom of the library. Imports made inside functions count too."""
    folder = Path(g6.store.__file__).parent
    offending = []
    for py in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(py.read_text(), str(py))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else ["(relative import)"]
            else:
                continue
            offending += [f"store/{py.name}:{node.lineno}: {n}" for n in names
                          if (n == "g6" or n.startswith(("g6.", "(")))
                          and not (n == "g6.errors" or n == "g6.store" or n.startswith("g6.store."))]
    assert offending == [], "g6.store may import only g6.errors and itself:\n" + "\n".join(offending)
