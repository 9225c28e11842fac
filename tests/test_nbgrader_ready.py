"""Every exercise test can become a notebook cell (``grader nbgrader export``): the notebook
runtime calls the test function itself, so a test may take only the fixtures it provides
(``grader.notebook_runtime.SUPPORTED_FIXTURES``), fixtures its own module defines (and what those
take, by the same rule), and parameters of ``parametrize`` marks written on the test. Checked from
the source, without collecting: a test that would break the export fails here, named."""

from __future__ import annotations

import ast

import pytest

from grader import catalog
from grader.notebook_runtime import SUPPORTED_FIXTURES

TEST_FILES = sorted({p for ex in catalog.load_catalog().values()
                     for p in (ex.public_tests, ex.hidden_tests) if p.is_file()})


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return ast.unparse(target)


def _parametrized(fn: ast.FunctionDef) -> set[str]:
    names: set[str] = set()
    for dec in fn.decorator_list:
        if isinstance(dec, ast.Call) and _decorator_name(dec).endswith("mark.parametrize") and dec.args:
            first = dec.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names |= {n.strip() for n in first.value.split(",")}
            elif isinstance(first, (ast.Tuple, ast.List)):
                names |= {e.value for e in first.elts if isinstance(e, ast.Constant)}
    return names


def _given(fn: ast.FunctionDef) -> set[str]:
    """The arguments hypothesis' ``@given`` fills (keywords, or the last ones positionally)."""
    args = [a.arg for a in fn.args.args]
    for dec in fn.decorator_list:
        if isinstance(dec, ast.Call) and _decorator_name(dec).endswith("given"):
            return {k.arg for k in dec.keywords} | set(args[len(args) - len(dec.args):] if dec.args else [])
    return set()


def _fixture_params(dec: ast.expr) -> bool:
    return isinstance(dec, ast.Call) and any(k.arg == "params" for k in dec.keywords)


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_every_test_can_be_exported_to_a_notebook(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    fixtures = {fn.name: fn for fn in functions
                if any(_decorator_name(d).endswith("fixture") for d in fn.decorator_list)}
    problems = [f"fixture {name} has params=, which notebooks cannot choose from"
                for name, fn in fixtures.items() if any(_fixture_params(d) for d in fn.decorator_list)]
    problems += [f"{fn.name}: @pytest.mark.usefixtures is not supported in notebooks" for fn in functions
                 if any("usefixtures" in _decorator_name(d) for d in fn.decorator_list)]
    allowed = set(SUPPORTED_FIXTURES) | set(fixtures)
    for fn in functions:
        if not fn.name.startswith("test"):
            continue
        wanted, seen = [fn], set()
        free = _parametrized(fn) | _given(fn)
        while wanted:
            current = wanted.pop()
            for arg in (a.arg for a in current.args.args):
                if arg in free or arg in seen:
                    continue
                seen.add(arg)
                if arg not in allowed:
                    problems.append(f"{fn.name} needs fixture {arg!r}, which notebooks do not provide "
                                    f"(they provide {', '.join(SUPPORTED_FIXTURES)}, and the module's own)")
                elif arg in fixtures:
                    wanted.append(fixtures[arg])
    assert not problems, f"{path.name}: " + "; ".join(problems)
