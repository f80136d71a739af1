"""bench/ stays in folders by what it measures: no flat module beside the registry, no
import circle, no entry point imported by another module, package __init__ files that
import nothing (importing one module never runs a bench), the registry's help the first
line of each bench's docstring, and the Pipecat bot free of r1voice's packages (it runs
in .venv-pipecat). Read with `ast`: nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

from bench.registry import BENCHES

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
TOP_LEVEL = {"__init__.py", "registry.py"}  # the only modules directly in bench/
MAX_LINES = 300


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in sorted(BENCH.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The bench modules `path` imports, wherever in it (inside functions too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return circles


def test_every_module_lives_in_a_package_folder() -> None:
    flat = sorted(p.name for p in BENCH.glob("*.py") if p.name not in TOP_LEVEL)
    assert flat == [], f"put {flat} in a package of bench/ (engine, voice, kit, ...)"
    for folder in {p.parent for p in BENCH.rglob("*.py")} - {BENCH}:
        assert (folder / "__init__.py").exists(), f"{folder} has no __init__.py"


def test_no_import_circle() -> None:
    graph = _graph()
    assert len(graph) > 40  # the walk found the modules
    assert _circles(graph) == []


def test_the_circle_finder_finds_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_an_entry_point() -> None:
    entries = {bench.module for bench in BENCHES.values()}
    importers = {
        entry: sorted(m for m, targets in _graph().items() if entry in targets) for entry in entries
    }
    assert {e: m for e, m in importers.items() if m} == {}, "move what they share to kit/"


def test_package_inits_import_nothing() -> None:
    # importing bench.voice.client must not run a bench's module
    for path in BENCH.rglob("__init__.py"):
        tree = ast.parse(path.read_text())
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        assert imports == [], f"{path.relative_to(ROOT)} imports; keep it a docstring"


def test_the_registry_names_each_bench_with_its_docstring_line() -> None:
    modules = _modules()
    for name, bench in BENCHES.items():
        assert bench.module in modules, f"bench {name}: no module {bench.module}"
        doc = ast.get_docstring(ast.parse(modules[bench.module].read_text())) or ""
        assert bench.help == doc.strip().splitlines()[0], name
        functions = {
            n.name
            for n in ast.parse(modules[bench.module].read_text()).body
            if isinstance(n, ast.FunctionDef)
        }
        assert {"add_arguments", "run"} <= functions, name


def test_the_pipecat_bot_imports_nothing_of_r1voice() -> None:
    tree = ast.parse((BENCH / "capacity" / "pipecat_bot.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import: the bot runs as a script"
            roots.add((node.module or "").split(".")[0])
    assert roots.isdisjoint({"app", "bench", "engine"}), roots


def test_no_bench_file_over_the_size_cap() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in BENCH.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}
