"""The grader's layout shows its architecture, and imports run one way:

    cli -> workflows -> reports -> engine -> the base (catalog, outcomes, errors, defaults, ...)

Test-time modules (the pytest plugin, the notebook runtime, the check libraries and what they
use) are part of the base: they run inside the grading child and never import the engine,
reports, workflows or the CLI. Every import counts, those inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GRADER = Path(__file__).resolve().parent.parent / "grader"
LAYERS = ("base", "engine", "reports", "workflows", "cli")  # each may import those before it


def _module_name(path: Path) -> str:
    parts = path.relative_to(GRADER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "grader":
        return ""  # not the kit's
    if len(parts) > 1 and parts[1] in LAYERS[1:]:
        return parts[1]
    return "cli" if module == "grader.__main__" else "base"


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports (``from grader import x`` counts as ``grader.x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


MODULES = sorted(GRADER.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_imports_run_one_way(path):
    mine = _layer(_module_name(path))
    upward = [f"line {line}: {name} ({_layer(name)})" for line, name in _imports(path)
              if _layer(name) and LAYERS.index(_layer(name)) > LAYERS.index(mine)]
    assert not upward, f"{_module_name(path)} ({mine}) imports a higher layer: {'; '.join(upward)}"


def test_every_layer_has_its_package():
    for layer in LAYERS[1:]:
        assert (GRADER / layer / "__init__.py").is_file(), f"grader/{layer}/ is missing"
