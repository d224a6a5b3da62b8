"""The house's import rule, read from the code (AST, imports inside functions included).

| package | may import (of ours) |
| --- | --- |
| g6.errors | nothing |
| g6.schemas | errors |
| g6.store | errors |
| g6.ledger | errors, store |
| g6.adapters | errors, store, the ledger's value types (g6.ledger.receipts) |
| inside it: g6.adapters.net | g6.adapters.outcomes (the vocabulary every part shares) |
| inside it: g6.adapters.html, g6.adapters.sources | outcomes, untrusted, net (never each other) |
| inside it: g6.adapters.browser | nothing else of g6.adapters |
| g6.home, g6.config, g6.runs, g6.files | the above |
| g6.fetch < g6.cite < g6.prove < g6.report < g6.export | the above and the lower siblings |
| g6.compat (the source documents' shapes) | any library module |
| faces: g6.knowledge, g6.core, g6.capture, g6.elastic, MOVED | re-exports only, never imported by the library |
| g6.cli, g6.mcp, g6.demo, g6.serve, g6.__main__, g6.console | anything |

Everything may import the root package ``g6`` (``__version__``, ``TOOL_NAME``). No two library modules
import each other, directly or in a circle. Run ``python tests/test_import_rule.py`` to print every breach.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"store": "g6.store", "ledger": "g6.ledger", "adapters": "g6.adapters", "schemas": "g6.schemas"}

# layer -> the layers (and single modules) it may import besides itself, from the bottom up
LOWER = ["g6.errors", "g6.schemas", "g6.store", "g6.ledger", "g6.adapters", "HOME", "g6.fetch", "g6.cite",
         "g6.prove", "g6.report", "g6.export", "g6.compat"]
HOME_TIER = ("g6.home", "g6.config", "g6.runs", "g6.files")
ALLOWED: dict[str, tuple[str, ...]] = {
    "g6.errors": (),
    "g6.schemas": ("g6.errors",),
    "g6.store": ("g6.errors",),
    "g6.ledger": ("g6.errors", "g6.store"),
    "g6.adapters": ("g6.errors", "g6.store", "g6.ledger.receipts"),
}
for i, layer in enumerate(LOWER):
    if layer not in ALLOWED:
        below = [m for lay in LOWER[:i] for m in (HOME_TIER if lay == "HOME" else (lay,))]
        ALLOWED[layer] = tuple(below) + (HOME_TIER if layer == "HOME" else ())
# the adapters' own parts: the network edge at the bottom, a page's reading and the sources over it, side by side
ALLOWED |= {part: ALLOWED["g6.adapters"] + inside for part, inside in {
    "g6.adapters.net": ("g6.adapters.outcomes",),
    "g6.adapters.html": ("g6.adapters.outcomes", "g6.adapters.untrusted", "g6.adapters.net"),
    "g6.adapters.sources": ("g6.adapters.outcomes", "g6.adapters.untrusted", "g6.adapters.net"),
    "g6.adapters.browser": (),
}.items()}
# the documented import paths of modules that moved (docs/layout.md, "Import paths kept"): re-exports, kept
MOVED = ("g6.adapters.html_text", "g6.adapters.interstitial", "g6.ledger.policy", "g6.ledger.cosignature")
FACES = ("g6.knowledge", "g6.core", "g6.capture", "g6.elastic", *MOVED)
TOP = ("g6.cli", "g6.mcp", "g6.demo", "g6.serve", "g6.__main__", "g6.console")


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("").parts
    if rel[0] in FOLDERS:
        name = ".".join((FOLDERS[rel[0]], *rel[1:]))
    elif rel[:2] == ("src", "g6"):
        name = ".".join(("g6", *rel[2:]))
    else:
        raise ValueError(f"{path} is not a g6 module")
    return name.removesuffix(".__init__")


def sources(root: Path = ROOT) -> Iterator[Path]:
    for folder in (*FOLDERS, "src/g6"):
        yield from sorted((root / folder).rglob("*.py"))


@dataclass(frozen=True)
class Import:
    module: str  # who imports
    target: str  # what, as written (a module or module.name)
    line: int
    path: Path

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}: " \
               f"{self.module} imports {self.target}"


def imports(path: Path, module: str) -> Iterator[Import]:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, path)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative imports are banned by ruff; resolve them anyway
                base = module.split(".")[: -node.level] if not path.name == "__init__.py" else \
                    module.split(".")[: len(module.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                yield Import(module, f"{target}.{alias.name}", node.lineno, path)


def ours(name: str) -> bool:
    return name == "g6" or name.startswith("g6.")


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer_of(module: str) -> str | None:
    layer = max((lay for lay in (*ALLOWED, *HOME_TIER) if within(module, lay)), key=len, default=None)
    return "HOME" if layer in HOME_TIER else layer  # the innermost: g6.adapters.net before g6.adapters


def allowed(imp: Import) -> bool:
    target = imp.target
    if target.split(".")[:2] == ["g6", "__version__"] or target in ("g6.__version__", "g6.TOOL_NAME", "g6"):
        return True
    if imp.module == "g6":  # the root package: its version and the error tree's base
        return within(target, "g6.errors")
    if any(within(imp.module, t) for t in TOP):
        return True
    if any(within(imp.module, f) for f in FACES):
        return True  # what a face may hold is checked by test_faces_are_thin_re_exports
    if any(within(target, f) for f in FACES):
        return False  # the library never imports a face
    layer = layer_of(imp.module)
    if layer is None:
        return False  # a module of ours no layer claims: put it in the table
    own = HOME_TIER if layer == "HOME" else (layer,)
    if any(within(target, o) for o in own):
        return True
    return any(within(target, ok) for ok in ALLOWED[layer])


def breaches(files: Iterable[Path], root: Path = ROOT) -> list[Import]:
    out = []
    for path in files:
        module = module_name(path, root)
        out += [imp for imp in imports(path, module) if ours(imp.target) and not allowed(imp)]
    return out


def graph(files: Iterable[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (a package's ``__init__`` counts only for what it defines)."""
    paths = {module_name(p, root): p for p in files}
    out: dict[str, set[str]] = {m: set() for m in paths}
    for module, path in paths.items():
        for imp in imports(path, module):
            hit = max((m for m in paths if within(imp.target, m)), key=len, default=None)
            if hit and hit != module and paths[hit].name != "__init__.py":
                out[module].add(hit)
    return out


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in g:
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


# -- the rule holds ------------------------------------------------------------------------------------
def test_every_import_follows_the_rule() -> None:
    found = breaches(sources())
    assert not found, "imports against the house's rule (see this file's table):\n" + "\n".join(map(str, found))


def test_no_library_module_imports_another_in_a_circle() -> None:
    library = [p for p in sources() if not any(within(module_name(p), t) for t in (*TOP, *FACES))]
    found = circles(graph(library))
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


def test_faces_are_thin_re_exports() -> None:
    """A face (the source documents' import paths, and the README's first ones) holds a docstring, imports
    and ``__all__``: nothing that could behave differently from the library it names."""
    for path in sources():
        module = module_name(path)
        if not any(within(module, f) for f in FACES):
            continue
        for node in ast.parse(path.read_text()).body:
            ok = isinstance(node, ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) or (
                isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"])
            assert ok, f"{path.relative_to(ROOT)}:{node.lineno}: a face holds only re-exports"


def test_nothing_of_ours_imports_a_moved_modules_old_path() -> None:
    """The old paths (MOVED) are for the readers of the docs; the library, the tests, the benchmarks and the
    scripts use the new ones (only tests/test_layout.py imports the old, to check they still work)."""
    found = []
    for folder in (*FOLDERS, "src/g6", "tests", "bench", "scripts", "docs"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != ROOT / "tests" / "test_layout.py":
                found += [imp for imp in imports(path, path.stem) if any(within(imp.target, m) for m in MOVED)]
    assert not found, "old paths of moved modules imported:\n" + "\n".join(map(str, found))


def test_every_module_is_in_a_layer() -> None:
    loose = [m for m in map(module_name, sources())
             if m != "g6" and layer_of(m) is None and not any(within(m, t) for t in (*TOP, *FACES))]
    assert not loose, f"modules no layer of the rule claims: {loose}"


def test_the_errors_module_repeats_the_status_words_exactly() -> None:
    from g6 import errors
    from g6.adapters import outcomes

    assert errors.BLOCKED == outcomes.BLOCKED
    assert errors.OUTSIDE_PROGRAM_MISSING == outcomes.OUTSIDE_PROGRAM_MISSING


# -- the rule can fail -----------------------------------------------------------------------------------
def _fake_tree(tmp_path: Path, files: dict[str, str]) -> list[Path]:
    out = []
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        out.append(p)
    return out


@pytest.mark.parametrize(("rel", "text", "named"), [
    ("adapters/sources/__init__.py", "from g6.config import load_settings\n",
     "g6.adapters.sources imports g6.config.load_settings"),
    ("adapters/html/page.py", "def f():\n    from g6.ledger.log import Ledger\n",
     "g6.adapters.html.page imports g6.ledger.log.Ledger"),
    ("adapters/net/urls.py", "from g6.adapters.html.text import extract_html\n",
     "g6.adapters.net.urls imports g6.adapters.html.text.extract_html"),
    ("adapters/sources/arxiv.py", "from g6.adapters.html import text\n",
     "g6.adapters.sources.arxiv imports g6.adapters.html.text"),
    ("adapters/html/text.py", "import g6.adapters.sources.search\n",
     "g6.adapters.html.text imports g6.adapters.sources.search"),
    ("adapters/browser/render.py", "from g6.adapters.net.checked_client import CheckedClient\n",
     "g6.adapters.browser.render imports g6.adapters.net.checked_client.CheckedClient"),
    ("adapters/sources/search.py", "from g6.adapters.interstitial import detect\n",
     "g6.adapters.sources.search imports g6.adapters.interstitial.detect"),
    ("ledger/log.py", "from g6.ledger.policy import read_policy\n",
     "g6.ledger.log imports g6.ledger.policy.read_policy"),
    ("store/folder.py", "import g6.ledger\n", "g6.store.folder imports g6.ledger"),
    ("src/g6/errors.py", "from g6.store import BlobRef\n", "g6.errors imports g6.store.BlobRef"),
    ("ledger/log.py", "from g6.home import EvidenceHome\n", "g6.ledger.log imports g6.home.EvidenceHome"),
    ("src/g6/fetch/batch.py", "from g6.cite.recheck import verdict_run\n",
     "g6.fetch.batch imports g6.cite.recheck.verdict_run"),
    ("src/g6/cite/recheck.py", "from g6.compat import http\n", "g6.cite.recheck imports g6.compat.http"),
    ("src/g6/prove/bundle.py", "from g6.knowledge import ctx_elastic\n",
     "g6.prove.bundle imports g6.knowledge.ctx_elastic"),
    ("src/g6/export/warc.py", "from g6.cli import cli\n", "g6.export.warc imports g6.cli.cli"),
])
def test_a_forbidden_import_is_named(tmp_path: Path, rel: str, text: str, named: str) -> None:
    found = [f"{b.module} imports {b.target}" for b in breaches(_fake_tree(tmp_path, {rel: text}), tmp_path)]
    assert found == [named]


@pytest.mark.parametrize(("rel", "text"), [
    ("adapters/html/page.py", "from g6.ledger.receipts import Receipt\nfrom g6.errors import InputError\n"),
    ("adapters/sources/search.py", "from g6.adapters.net.checked_client import CheckedClient\n"
     "from g6.adapters.outcomes import Outcome\n"),
    ("adapters/html/text.py", "from g6.adapters.html.css import css_effects\n"
     "from g6.adapters.net.urls import URLError\n"),
    ("adapters/interstitial.py", "from g6.adapters.html.interstitial import detect\n"),
    ("ledger/log.py", "from g6.ledger.transparency.tiles import MAX_ENTRY\n"),
    ("ledger/log.py", "from g6.store import BlobRef\nfrom g6.ledger.chain import Check\n"),
    ("src/g6/prove/bundle.py", "from g6.cite.manifest import Manifest\nfrom g6.fetch.capture import fetch\n"),
    ("src/g6/cli/app.py", "from g6.knowledge import ctx_elastic\n"),
    ("src/g6/config.py", "from g6.home import EvidenceHome\nfrom g6 import __version__\n"),
])
def test_an_allowed_import_passes(tmp_path: Path, rel: str, text: str) -> None:
    assert breaches(_fake_tree(tmp_path, {rel: text}), tmp_path) == []


def test_a_circle_is_found(tmp_path: Path) -> None:
    files = _fake_tree(tmp_path, {"ledger/a.py": "from g6.ledger.b import x\n",
                                  "ledger/b.py": "def f():\n    from g6.ledger.c import y\n",
                                  "ledger/c.py": "import g6.ledger.a\n", "ledger/d.py": "import g6.ledger.a\n"})
    assert circles(graph(files, tmp_path)) == [["g6.ledger.a", "g6.ledger.b", "g6.ledger.c"]]


if __name__ == "__main__":
    for b in breaches(sources()):
        print(b)
    for c in circles(graph(list(sources()))):
        print("circle:", " <-> ".join(c))
    sys.exit(0)
