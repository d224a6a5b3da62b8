"""The ledger's shape: both backends provide the one rows protocol, and ``ledger/`` imports form a DAG.

The log, verify and copy are written once over ``g6.ledger.backends.rows.LedgerRows``; a backend that lacks
a method, or names its parameters otherwise, would only fail where that path runs. The modules of
``ledger/`` import each other at module level only and never in a circle (a circle was once hidden
behind imports made inside functions); they import nothing of ours but ``g6.errors``, ``g6.store``
and the ``g6`` package itself.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from g6.ledger import Ledger, PostgresLedger, Receipt, SigningKey
from g6.ledger.backends.postgres import PostgresRows
from g6.ledger.backends.rows import LedgerRows
from g6.ledger.backends.sqlite import SqliteRows

LEDGER = Path(__file__).resolve().parents[2] / "ledger"
ALLOWED = ("g6.errors", "g6.store", "g6.ledger")  # and ``g6`` itself (the package every module is in)
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 120


def _protocol_members() -> dict[str, object]:
    return {name: value for name, value in vars(LedgerRows).items()
            if not name.startswith("_") and (callable(value) or isinstance(value, property))}


def _params(fn: object) -> list[tuple[str, object]]:
    target = fn.fget if isinstance(fn, property) else fn
    return [(p.name, p.kind) for p in inspect.signature(target).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", [SqliteRows, PostgresRows])
def test_each_backend_class_has_every_protocol_member_with_its_parameters(backend: type) -> None:
    members = _protocol_members()
    assert {"write", "read_snapshot", "append_rows", "checkpoint_notes", "trusted_key_rows", "read_hashes",
            "layout_problem", "present", "close"} <= set(members)
    for name, proto in members.items():
        impl = inspect.getattr_static(backend, name, None)
        assert impl is not None, f"{backend.__name__} lacks {name}"
        assert isinstance(impl, property) == isinstance(proto, property), f"{backend.__name__}.{name}"
        assert _params(impl) == _params(proto), f"{backend.__name__}.{name} takes other parameters"
    for attr in LedgerRows.__annotations__:
        assert attr in {"path", "readonly", "broken", "unreadable"}
    assert not issubclass(PostgresRows, SqliteRows) and not issubclass(SqliteRows, PostgresRows)


def _receipt(i: int) -> Receipt:
    return Receipt(kind="fetch", source="web", request={"url": f"https://example.org/{i}"}, outcome="ok",
                   outcome_code="G6_E_KNOWLEDGE_FETCHED")


@pytest.fixture(params=["sqlite", "postgres"])
def two_ledgers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    """Two connections to one ledger, on each backend."""
    if request.param == "sqlite":
        pair = (Ledger(tmp_path / "l.sqlite"), Ledger(tmp_path / "l.sqlite"))
    else:
        url = request.getfixturevalue("pg_url")
        pair = (PostgresLedger(url), PostgresLedger(url))
    yield pair
    for ledger in pair:
        ledger.close()


def test_both_backends_are_the_protocol_and_a_snapshot_holds_one_state(two_ledgers: tuple[Ledger, Ledger]) -> None:
    reader, writer = two_ledgers
    assert isinstance(reader.rows, LedgerRows) and isinstance(writer.rows, LedgerRows)
    key = SigningKey.generate()
    writer.append(_receipt(0), key)
    with reader.rows.read_snapshot():
        before = (reader.rows.count(), reader.rows.head())
        writer.append(_receipt(1), key)  # another connection writes meanwhile
        assert (reader.rows.count(), reader.rows.head()) == before
    assert reader.rows.count() == 2 and reader.head() == writer.head()
    assert reader.verify({key.key_id: key.public}, workers=1).ok


def _imports(path: Path) -> Iterator[tuple[ast.stmt, str, bool]]:
    """(statement, module it imports, made at module level?) for every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, id(node) in top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module == "g6.ledger":  # `from g6.ledger import x`: the module x, or the package face
                for alias in node.names:
                    sub = LEDGER / f"{alias.name}.py"
                    yield node, f"g6.ledger.{alias.name}" if sub.exists() else "g6.ledger", id(node) in top
            else:
                yield node, node.module, id(node) in top


def _ledger_module(name: str) -> str | None:
    if name == "g6.ledger":
        return "__init__"
    if name.startswith("g6.ledger."):
        return name.split(".")[2]
    return None


def test_ledger_modules_import_each_other_in_a_dag_at_module_level_only() -> None:
    graph: dict[str, dict[str, str]] = {}  # module -> {imported module: where}
    problems = []
    for path in sorted(LEDGER.glob("*.py")):
        edges = graph.setdefault(path.stem, {})
        for node, name, at_top in _imports(path):
            where = f"ledger/{path.name}:{node.lineno} imports {name}"
            ours = name == "g6" or name.startswith("g6.")
            if ours and name != "g6" and not name.startswith(ALLOWED):
                problems.append(f"{where}: ledger/ may import only {', '.join(ALLOWED)} of ours")
            target = _ledger_module(name)
            if target is None:
                continue
            if not at_top:
                problems.append(f"{where} inside a function or block: ledger/ imports itself at module level")
            edges.setdefault(target, where)
    assert not problems, "\n".join(problems)

    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            loop = trail[trail.index(module):] + [module]
            pytest.fail("import circle in ledger/: " + "; ".join(graph[a][b] for a, b in zip(loop, loop[1:],
                                                                                                strict=False)))
        if module in done:
            return
        for nxt in graph.get(module, {}):
            visit(nxt, [*trail, module])
        done.add(module)

    for module in graph:
        visit(module, [])


def test_ledger_files_and_functions_stay_short() -> None:
    too_long = []
    for path in sorted(LEDGER.glob("*.py")):
        text = path.read_text()
        if text.count("\n") > MAX_FILE_LINES:
            too_long.append(f"ledger/{path.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    too_long.append(f"ledger/{path.name}:{node.lineno} {node.name}: {n} lines")
    assert not too_long, "\n".join(too_long)
