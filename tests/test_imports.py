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


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through the modules it imports."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for m in graph[todo.pop()] - seen:
            seen.add(m)
            todo.append(m)
    return seen


def _server_reaches_cli(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each module under hanrag/server/ that imports a module of the CLI package (hanrag.cli, hanrag.cli.*),
    directly or through what it imports, with those modules."""
    cli = {m for m in MODULES if m == "hanrag.cli" or m.startswith("hanrag.cli.")}
    server = [m for m in MODULES if m == "hanrag.server" or m.startswith("hanrag.server.")]
    found = {m: sorted(_reachable(graph, m) & cli) for m in server}
    return {m: hit for m, hit in found.items() if hit}


def test_the_server_imports_nothing_from_the_cli() -> None:
    """A relayed ``hanrag search`` is parsed and rendered by hanrag.commands.search, which the CLI shares with the
    server: the typer app with every command (hanrag.cli and its modules) is never loaded by a server, neither by
    its modules nor through what they import, imports inside functions and through importlib included."""
    graph = {n: _imports(n, p, inside_functions=True) for n, p in MODULES.items()}
    assert "hanrag.commands.search" in _reachable(graph, "hanrag.server.app")  # the edge the relay needs is seen
    assert _server_reaches_cli(graph) == {}


def test_the_checker_finds_a_server_import_of_the_cli() -> None:
    """Put back, the import this check was written for is found, and so is one through another module."""
    graph = {n: _imports(n, p, inside_functions=True) for n, p in MODULES.items()}
    direct = {**graph, "hanrag.server.app": graph["hanrag.server.app"] | {"hanrag.cli"}}
    assert "hanrag.cli" in _server_reaches_cli(direct)["hanrag.server.app"]
    through = {**graph, "hanrag.commands.search": graph["hanrag.commands.search"] | {"hanrag.cli.demo"}}
    assert "hanrag.cli.demo" in _server_reaches_cli(through)["hanrag.server.app"]


def test_storage_never_imports_the_build_pipeline() -> None:
    """Data flows one way: hanrag.pipeline writes through hanrag.index, and no module of hanrag.index reaches
    hanrag.pipeline, directly or through what it imports (imports inside functions and importlib included)."""
    graph = {n: _imports(n, p, inside_functions=True) for n, p in MODULES.items()}
    pipeline = {m for m in MODULES if m == "hanrag.pipeline" or m.startswith("hanrag.pipeline.")}
    storage = [m for m in MODULES if m == "hanrag.index" or m.startswith("hanrag.index.")]
    assert "hanrag.index.store" in _reachable(graph, "hanrag.pipeline.assemble")  # the edge that must be seen
    assert {m: sorted(_reachable(graph, m) & pipeline) for m in storage if _reachable(graph, m) & pipeline} == {}


ROOT = PACKAGE.parent
# what a test helper is imported as: the tests package, or (with tests/ on sys.path) one of its modules by name
TEST_NAMES = {"tests"} | {p.stem for p in (ROOT / "tests").iterdir()
                          if p.suffix == ".py" or (p / "__init__.py").is_file()}


def _test_imports(source: str) -> set[str]:
    """The modules of tests/ that ``source`` imports, anywhere in it (functions included) or through
    importlib.import_module / __import__ with a literal name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and "import" in ast.unparse(node.func)):
            names = [node.args[0].value]
        found.update(n for n in names if n.split(".")[0] in TEST_NAMES)
    return found


def test_no_benchmark_or_fixture_imports_a_test_module() -> None:
    """Benchmarks share what they need with the tests through fixtures/ (not shipped, importable by both), never
    by importing tests/: a benchmark must not depend on the test suite's layout, nor fixtures/ on it."""
    assert TEST_NAMES >= {"tests", "conftest", "hostile"} and "fixtures" not in TEST_NAMES
    scripts = sorted((ROOT / "benchmarks").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py"))
    assert len(scripts) > 20
    bad = {str(p.relative_to(ROOT)): sorted(found) for p in scripts
           if (found := _test_imports(p.read_text(encoding="utf-8")))}
    assert bad == {}


def test_the_checker_finds_a_benchmark_importing_a_test_module() -> None:
    local = "def f():\n    from tests.hostile.test_corpora import LAUGHS\n"
    assert _test_imports(local) == {"tests.hostile.test_corpora"}
    assert _test_imports("import tests.conftest as c\n") == {"tests.conftest"}
    assert _test_imports("import importlib\nm = importlib.import_module('tests.conftest')\n") == {"tests.conftest"}
    assert _test_imports("from conftest import x\n") == {"conftest"}  # tests/ put on sys.path first
    assert _test_imports("from fixtures.server import CORPUS\nfrom hanrag.pipeline import build_index\n") == set()


def test_the_package_imports_no_fixture_test_or_benchmark() -> None:
    """hanrag ships alone (pyproject packages only hanrag*): it imports nothing from fixtures/, tests/ or
    benchmarks/."""
    outside = TEST_NAMES | {"fixtures", "benchmarks"}
    bad = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if hits := [m for m in mods if m.split(".")[0] in outside]:
                bad.setdefault(name, []).extend(hits)
    assert bad == {}


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
