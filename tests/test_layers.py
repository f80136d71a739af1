"""The layers' front doors: app/ and bench/ reach the engine only through `engine`
(engine/__init__.py lists what they may use), and the LLM layer (app/llm) imports nothing
of the speech models (app/speech) nor they of it: both use the catalogs in app/catalog
(app/components.py, above them, loads both).

Every module is parsed, not imported: an import inside a function counts the same.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported(source: str) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of everything a module's source imports: `import a.b` gives
    a.b, `from a.b import c` gives a.b.c (c may be a module); relative imports are none
    here (the project uses absolute ones), so they are skipped."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def engine_submodules() -> set[str]:
    """`engine.x` for each module and package directly in engine/."""
    engine = ROOT / "engine"
    names = {p.stem for p in engine.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in engine.iterdir() if (p / "__init__.py").is_file()}
    return {f"engine.{n}" for n in names}


def reaches_past_front_door(name: str, submodules: set[str]) -> bool:
    """Whether importing `name` reaches into the engine past engine/__init__."""
    return any(name == m or name.startswith(m + ".") for m in submodules)


def modules(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (ROOT / f).rglob("*.py"))


def offenders(folders: tuple[str, ...], bad: Callable[[str], bool]) -> list[str]:
    found = []
    for path in modules(*folders):
        for line, name in imported(path.read_text()):
            if bad(name):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return found


def test_the_checks_see_every_kind_of_import() -> None:
    source = (
        "import engine.paths\n"
        "from engine.loading import model_store\n"
        "from engine import kernels, LLM\n"
        "def f():\n"
        "    from engine.thread_name import os_thread_named\n"
        "from . import sibling\n"
    )
    submodules = engine_submodules()
    assert {"engine.paths", "engine.loading", "engine.kernels"} <= submodules
    bad = [(n, name) for n, name in imported(source) if reaches_past_front_door(name, submodules)]
    assert bad == [
        (1, "engine.paths"),
        (2, "engine.loading.model_store"),
        (3, "engine.kernels"),
        (5, "engine.thread_name.os_thread_named"),
    ]
    assert not reaches_past_front_door("engine.LLM", submodules)
    assert not reaches_past_front_door("engineer.x", submodules)


@pytest.mark.parametrize("folder", ["app", "bench"])
def test_app_and_bench_use_only_the_engines_front_door(folder: str) -> None:
    submodules = engine_submodules()
    found = offenders((folder,), lambda name: reaches_past_front_door(name, submodules))
    assert not found, (
        "import these from `engine` (export them in engine/__init__.py if needed):\n"
        + "\n".join(found)
    )


def under(package: str) -> Callable[[str], bool]:
    return lambda name: name == package or name.startswith(package + ".")


@pytest.mark.parametrize(
    ("folder", "package"),
    [
        ("app/llm", "app.speech"),
        ("app/speech", "app.llm"),
        ("app/catalog", "app.speech"),
        ("app/catalog", "app.llm"),
    ],
)
def test_the_llm_layer_and_the_speech_models_share_only_the_catalogs(
    folder: str, package: str
) -> None:
    found = "\n".join(offenders((folder,), under(package)))
    assert not found, f"{folder} must not import {package} (both use app/catalog):\n{found}"
