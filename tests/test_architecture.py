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


# argparse is the CLI's: its parsers live in grader/cli/, their option types in grader/_options.py,
# and the pytest plugin needs it only to hide its internal options from `pytest --help`.
ARGPARSE_HOMES = ("grader.cli", "grader._options", "grader.pytest_plugin")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_argparse_lives_in_the_cli(path):
    module = _module_name(path)
    if any(module == home or module.startswith(home + ".") for home in ARGPARSE_HOMES):
        return
    parsing = [f"line {line}: {name}" for line, name in _imports(path)
               if name.split(".")[0] == "argparse" or name.startswith("grader._options")]
    assert not parsing, (f"{module} imports argparse or the CLI's option types ({'; '.join(parsing)}): "
                         "command-line code goes in grader/cli/, option types in grader/_options.py")


def _defined_in(module_file: Path) -> set[str]:
    """The top-level names a module defines or imports (static: nothing is imported), and those
    its ``__all__`` lists when it has a module ``__getattr__`` (``grader._lazy``: the check
    packages' strategies; test_checks and test_tfchecks import each)."""
    names: set[str] = set()
    exported: list[str] = []
    for node in ast.parse(module_file.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            assigned = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            names |= assigned
            if "__all__" in assigned:
                exported = ast.literal_eval(node.value)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names | set(exported) if "__getattr__" in names else names


def _resolves(name: str) -> bool:
    """Whether ``grader.x.y`` is a module of the kit, or a name its parent module defines."""
    parts = name.split(".")
    path = GRADER.parent.joinpath(*parts)
    if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
        return True
    parent = GRADER.parent.joinpath(*parts[:-1])
    module_file = parent / "__init__.py" if parent.is_dir() else parent.with_suffix(".py")
    return module_file.is_file() and parts[-1] in _defined_in(module_file)


KIT_PYTHON = sorted([*MODULES, *(GRADER.parent / "bench").glob("*.py"),
                     *(p for d in ("tests", "exercises", "solutions") for p in (GRADER.parent / d).rglob("*.py"))])


@pytest.mark.parametrize("path", KIT_PYTHON, ids=lambda p: str(p.relative_to(GRADER.parent)))
def test_every_kit_import_resolves(path):
    """A moved or renamed module breaks its importers loudly here, not at run time in a grading
    child or a rank process (imports inside functions count)."""
    missing = [f"line {line}: {name}" for line, name in _imports(path)
               if name.split(".")[0] == "grader" and not _resolves(name)]
    assert not missing, f"{path.name} imports what the kit does not have: {'; '.join(missing)}"
