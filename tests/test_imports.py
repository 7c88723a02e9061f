"""No import cycles in hanrag: every module imports on its own, and the import graph is acyclic.

A cycle hidden by function-local imports works until someone lifts one of them to the top
(or calls the functions in another order), so the graph checked here includes the imports
inside functions too.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "hanrag"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, *, inside_functions: bool) -> set[str]:
    """hanrag modules that ``name`` imports: at module level, or anywhere when ``inside_functions``.

    ``if TYPE_CHECKING:`` blocks never run, so they do not count."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def target(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = package[: len(package) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            nested = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            counts = inside_functions or not nested
            if isinstance(child, ast.Import) and counts:
                found.update(a.name for a in child.names if a.name in MODULES)
            elif isinstance(child, ast.ImportFrom) and counts:
                mod = target(child)
                for alias in child.names:  # `from hanrag.index import store` imports the module hanrag.index.store
                    sub = f"{mod}.{alias.name}"
                    found.add(sub if sub in MODULES else mod)
            visit(child, nested)

    tree = ast.parse(path.read_text(encoding="utf-8"))
    visit(tree, False)
    if inside_functions and "import_module" in ast.unparse(tree):
        # importlib.import_module(NAME): every string in the module that names a hanrag module, in full
        # ("hanrag.sources.pdf") or below the package (the root's lazy exports: "api" -> hanrag.api)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.update(m for m in (node.value, f"hanrag.{node.value}") if m in MODULES)
    return {m for m in found if m in MODULES and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_module_level_imports_have_no_cycle() -> None:
    graph = {n: _imports(n, p, inside_functions=False) for n, p in MODULES.items()}
    assert _cycles(graph) == []


def test_no_cycle_hidden_in_function_local_imports() -> None:
    # imports inside functions and through importlib.import_module count, and so does the root package
    graph = {n: _imports(n, p, inside_functions=True) for n, p in MODULES.items()}
    assert _cycles(graph) == []


def test_importlib_imports_are_followed() -> None:
    # the root's lazy exports and the corpus readers loaded on their first file are edges of the graph
    assert {"hanrag.api", "hanrag.config", "hanrag.records"} <= _imports("hanrag", MODULES["hanrag"],
                                                                         inside_functions=True)
    readers = _imports("hanrag.sources.files", MODULES["hanrag.sources.files"], inside_functions=True)
    assert {"hanrag.sources.html", "hanrag.sources.pdf", "hanrag.sources.openapi"} <= readers


def test_the_checker_finds_a_cycle(tmp_path: Path) -> None:
    """The graph walk is real: the cycle this test suite was written for is found when put back."""
    graph = {n: _imports(n, p, inside_functions=True) for n, p in MODULES.items()}
    graph["hanrag.index.store"] = graph["hanrag.index.store"] | {"hanrag.sync"}  # store -> sync -> ... -> store
    assert any("hanrag.sync" in c and "hanrag.index.store" in c for c in _cycles(graph))


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """Each module imported as the first hanrag module (the others dropped from sys.modules before it)."""
    code = (
        "import importlib, json, sys, traceback\n"
        "bad = {}\n"
        f"for name in {sorted(MODULES)!r}:\n"
        "    for m in [m for m in sys.modules if m == 'hanrag' or m.startswith('hanrag.')]:\n"
        "        del sys.modules[m]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:\n"
        "        bad[name] = traceback.format_exc(limit=3)\n"
        "print(json.dumps(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=PACKAGE.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bad = json.loads(proc.stdout.strip().splitlines()[-1])
    assert bad == {}, "\n".join(f"{k}:\n{v}" for k, v in bad.items())
