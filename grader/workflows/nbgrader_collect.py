"""Collect test cases for ``grader.workflows.nbgrader_export``, in a child process of its own (collecting
imports torch, which the ``grader`` command keeps out of its own process).

``python -m grader.workflows.nbgrader_collect OUT KIT_ROOT CONFIG TEST_FILE ...`` runs pytest's collection
of the test files and writes ``OUT``: ``{"code": pytest's exit status, "items": [...]}``, one item
per test case with what the export needs to rebuild it in a notebook (its file, function, name,
points, the index of its case in each ``parametrize`` mark, its fixtures).
"""

from __future__ import annotations

import json
import sys

import pytest

from grader.pytest_plugin import points_of


def case_indices(item: pytest.Item) -> tuple[dict[str, int], list[str]]:
    """Per parametrize mark (keyed by its first argument name), the index of the case this item
    runs, found by identity: pytest hands the very objects of the mark's list to the test. Also
    the parameters no mark accounts for."""
    params = item.callspec.params if hasattr(item, "callspec") else {}
    found, covered = {}, set()
    for mark in item.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs["argnames"]
        values = mark.args[1] if len(mark.args) > 1 else mark.kwargs["argvalues"]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if names[0] not in params:
            continue
        for index, value in enumerate(values):
            case = value.values if hasattr(value, "marks") and hasattr(value, "values") else (
                (value,) if len(names) == 1 else tuple(value))
            if all(params[n] is v for n, v in zip(names, case)):
                found[names[0]] = index
                covered.update(names)
                break
    return found, sorted(set(params) - covered)


def describe(item: pytest.Item) -> dict:
    """What the export needs of one collected test case."""
    callspec = getattr(item, "callspec", None)
    indices, unmatched = case_indices(item)
    return {"file": str(item.path), "function": item.originalname, "name": item.name,
            "points": points_of(item), "indices": indices, "unmatched": unmatched,
            "params": sorted(callspec.params) if callspec else [],
            "cuda": item.get_closest_marker("cuda") is not None,
            "fixtures": list(item.fixturenames),
            "module_fixtures": [n for n in item.fixturenames if any(
                hasattr(getattr(item.module, n, None), a)
                for a in ("_get_wrapped_function", "__pytest_wrapped__"))]}


class _Collect:
    def __init__(self) -> None:
        self.items: list[dict] = []

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items.extend(describe(item) for item in items)


def main(argv: list[str]) -> int:
    out, kit_root, config, *files = argv
    collector = _Collect()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "--rootdir", kit_root,
                        "-c", config, *files], plugins=[collector])
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"code": int(code), "items": collector.items}, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
