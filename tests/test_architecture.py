"""The package's structure, read from its source: the layering the README states, no import cycles,
and `KnowledgeBase` as the only way the CLI and the servers reach a store.

Imports are collected from the syntax tree (those inside functions too: a lazy import runs all the
same), so these tests need no import and see every module, however rarely it is loaded.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "threadkeep"
README = ROOT / "README.md"
FRONT_DOOR = ("threadkeep.cli", "threadkeep.server")  # what people and clients call


def module_files() -> dict[str, Path]:
    files = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        files[name] = path
    return files


def imports_of(tree: ast.AST, known: Iterable[str]) -> Iterator[tuple[str, int]]:
    """(module, line) for every threadkeep module the code imports, `importlib.import_module(f"...")` included."""
    known = set(known)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                yield (name if name in known else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            argument = node.args[0]
            prefix = argument.values[0] if isinstance(argument, ast.JoinedStr) and argument.values else argument
            if isinstance(prefix, ast.Constant) and isinstance(prefix.value, str):
                whole = isinstance(argument, ast.Constant)
                for name in known:
                    if name == prefix.value or (not whole and name.startswith(prefix.value)):
                        yield name, node.lineno


def import_graph() -> dict[str, dict[str, int]]:
    """Each module's threadkeep imports, with the line of the first."""
    files = module_files()
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges: dict[str, int] = {}
        for imported, line in imports_of(ast.parse(path.read_text(encoding="utf-8")), files):
            if imported in files and imported != name:
                edges.setdefault(imported, line)
        graph[name] = edges
    return graph


def readme_layers() -> list[list[str]]:
    """The rows of the README's module table, first to last, each as the modules or packages it names."""
    text = README.read_text(encoding="utf-8")
    table = text.split("each layer only uses those listed before it", 1)[1]
    rows = []
    for line in table.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        names = re.findall(r"`([\w/]+?)(?:\.py|/)`", line.split("|")[1])
        if names:
            rows.append([f"threadkeep.{name.replace('/', '.')}" for name in names])
    return rows


def layer_of(module: str, layers: list[list[str]]) -> int | None:
    for index, row in enumerate(layers):
        if any(module == unit or module.startswith(unit + ".") for unit in row):
            return index
    return None


def layering_violations(graph: dict[str, dict[str, int]], layers: list[list[str]]) -> list[str]:
    """Imports of a module listed later in the table than the importer."""
    found = []
    for module, edges in sorted(graph.items()):
        own = layer_of(module, layers)
        for imported, line in sorted(edges.items()):
            theirs = layer_of(imported, layers)
            if own is not None and theirs is not None and theirs > own:
                found.append(f"{module} (line {line}) imports {imported}, a later layer")
    return found


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Every set of modules that import each other, directly or through others (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# --- the checks themselves catch what they are meant to catch -------------------------------------


def test_the_checks_find_a_cycle_and_an_import_of_a_later_layer() -> None:
    graph = {"threadkeep.model": {}, "threadkeep.api": {"threadkeep.cli": 3}, "threadkeep.cli": {"threadkeep.api": 5}}
    layers = [["threadkeep.model"], ["threadkeep.api"], ["threadkeep.cli"]]
    assert cycles(graph) == [["threadkeep.api", "threadkeep.cli"]]
    assert layering_violations(graph, layers) == ["threadkeep.api (line 3) imports threadkeep.cli, a later layer"]
    assert layer_of("threadkeep.store.sqlite", [["threadkeep.store"]]) == 0


def test_lazy_and_dynamic_imports_count() -> None:
    tree = ast.parse(
        "def f():\n    from threadkeep.cli import main\nimportlib.import_module(f'threadkeep.readers.{name}')\n"
    )
    found = dict(imports_of(tree, ["threadkeep.cli", "threadkeep.readers.slack", "threadkeep.api"]))
    assert found == {"threadkeep.cli": 2, "threadkeep.readers.slack": 3}


# --- the package -------------------------------------------------------------------------------------


def test_every_module_has_a_place_in_the_readme_table() -> None:
    layers = readme_layers()
    assert len(layers) >= 6, layers
    unplaced = [name for name in module_files() if name != "threadkeep" and layer_of(name, layers) is None]
    assert unplaced == [], "add these modules to the README's table of layers"


def test_no_module_imports_a_later_layer() -> None:
    assert layering_violations(import_graph(), readme_layers()) == []


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_servers_load_without_the_cli() -> None:
    script = (
        "import sys, threadkeep.server.http, threadkeep.server.mcp\n"
        "print(sorted(name for name in sys.modules if name == 'threadkeep.cli'))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def front_door_files() -> list[Path]:
    return [path for name, path in module_files().items() if name.startswith(FRONT_DOOR)]


def store_leaks(tree: ast.AST, known: Iterable[str]) -> list[str]:
    """Where code imports a store module or reaches for an object's `.store`."""
    leaks = [
        f"line {line}: imports {name}"
        for name, line in imports_of(tree, known)
        if name == "threadkeep.store" or name.startswith("threadkeep.store.")
    ]
    attributes = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "store"]
    return leaks + [f"line {node.lineno}: .store" for node in attributes]


def test_the_store_check_sees_a_leak() -> None:
    tree = ast.parse("from threadkeep.store.base import StoreError\nkb.store.list_documents()\n")
    known = ["threadkeep.store", "threadkeep.store.base"]
    assert store_leaks(tree, known) == ["line 1: imports threadkeep.store.base", "line 2: .store"]


@pytest.mark.parametrize("path", front_door_files(), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_cli_and_servers_reach_the_store_only_through_the_knowledge_base(path: Path) -> None:
    leaks = store_leaks(ast.parse(path.read_text(encoding="utf-8")), module_files())
    assert leaks == [], "use KnowledgeBase (threadkeep.api) for what the store holds"
