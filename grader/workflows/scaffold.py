"""``grader new ID``: the files of a new exercise, laid out and shaped as the kit's rules want
(``docs/writing-an-exercise.md``), for a maintainer to fill in.

It writes the stub (module docstring with its Contract and dash-underlined Hints sections, one
function ending in ``raise NotImplementedError``), the public test, the reference, the hidden
test, the contract table, the wrong-solution folder with one example declared mistake (to
rewrite once the reference exists: its edit no longer applies then, and says so) and the catalog
entry. Nothing it writes
passes ``grader verify`` yet: the reference still raises and the table names no test, so an
unfinished exercise cannot slip through.
"""

from __future__ import annotations

from pathlib import Path

from grader import catalog
from grader.errors import UsageError

STUB = '''"""{title}

The question
------------
TODO: the interview question, in our words.

Task
----
Implement ``{name}``.

Contract
--------
- TODO: one bullet per clause (shapes, dtypes, devices, the exact error types, both ends of
  every range, NaN/inf), each proven by a test named in ``{name}.contract.toml``.

Hints
-----
- TODO
"""

from __future__ import annotations


def {name}(x):
    """TODO: the function's own contract."""
    raise NotImplementedError
'''

REFERENCE = '''"""Reference solution of ``{id}``: it must obey the stub's docstring, and nothing more."""

from __future__ import annotations


def {name}(x):
    raise NotImplementedError("write the reference solution")
'''

PUBLIC_TEST = '''"""Public tests of ``{id}``: a first check the learner can run (``pytest {path}``)."""

from __future__ import annotations

import pytest


@pytest.mark.points(1)
def test_{name}_small_example(impl):
    raise NotImplementedError("write the public tests")
'''

HIDDEN_TEST = '''"""Hidden tests of ``{id}``: the contract, one clause at a time, against independent
references. Submitted code is reached only through the ``impl`` fixture."""

from __future__ import annotations

import pytest


@pytest.mark.points(1)
def test_{name}_TODO(impl):
    raise NotImplementedError("write the hidden tests")
'''

CONTRACT = '''# Contract coverage for {id}: each clause of the stub's docstring -> the tests that prove it,
# and the wrong solutions that break it (see docs/writing-an-exercise.md).

# [[clause]]
# quote = "..."            # verbatim from the stub's docstrings
# tests = ["test_..."]
# wrong = ["..."]

# [constant]
# solution = "returns_zeros"
# max_points = 0
# why = "..."
'''

WRONG_EXAMPLE = """# A declared mistake of {id}: the reference with exact edits (docs/writing-an-exercise.md).
why = "TODO: the mistake, in words: what a learner wrote and which clause it breaks."
caught_by = ["test_{name}_TODO"]   # the tests that must fail for that reason

[[edit]]
old = '''
    raise NotImplementedError("write the reference solution")
'''
new = '''
    return x
'''
"""

CATALOG_ENTRY = '''
[[exercise]]
id = "{id}"
title = "{title}"
framework = "{framework}"
topic = "{topic}"
difficulty = "{difficulty}"
minutes = {minutes}
seeds = []
'''


def _parts(exercise_id: str, crossframework_topic: str) -> tuple[str, str, str]:
    """(framework, topic, name) of a new id; a cross-framework id has no topic level, its topic
    is ``crossframework_topic``."""
    parts = exercise_id.split(".")
    if len(parts) == 2 and parts[0] == "crossframework" and parts[1].isidentifier():
        return parts[0], crossframework_topic, parts[1]
    if len(parts) != 3 or parts[0] not in catalog.FRAMEWORKS or parts[0] == "crossframework":
        raise UsageError(f"{exercise_id!r}: an id is '<framework>.<topic>.<name>' with a framework of "
                         f"{', '.join(catalog.FRAMEWORKS)} (or 'crossframework.<name>')")
    if not all(p.isidentifier() for p in parts):
        raise UsageError(f"{exercise_id!r}: each part of an id must be a Python identifier")
    return parts[0], parts[1], parts[2]


def scaffold(exercise_id: str, title: str, difficulty: str = "medium", minutes: int = 15,
             crossframework_topic: str = "interop") -> list[Path]:
    """Write a new exercise's files and catalog entry; return the files written.

    Raises:
        UsageError: the id is malformed, already in the catalog, or one of its files exists.
    """
    framework, topic, name = _parts(exercise_id, crossframework_topic)
    if exercise_id in catalog.load_catalog():
        raise UsageError(f"{exercise_id} is already in the catalog")
    if difficulty not in catalog.DIFFICULTIES:
        raise UsageError(f"difficulty must be one of {', '.join(catalog.DIFFICULTIES)}")
    relpath = Path(*exercise_id.split(".")).with_suffix(".py")
    root = catalog.KIT_ROOT
    stub = root / "exercises" / relpath
    reference = root / "solutions" / relpath
    fields = {"id": exercise_id, "title": title.replace('"', "'"), "name": name,
              "path": f"exercises/{relpath.parent.as_posix()}/test_{name}.py"}
    files = {
        stub: STUB.format(**fields),
        stub.with_name(f"test_{name}.py"): PUBLIC_TEST.format(**fields),
        reference: REFERENCE.format(**fields),
        reference.with_name(f"test_{name}_hidden.py"): HIDDEN_TEST.format(**fields),
        reference.with_name(f"{name}.contract.toml"): CONTRACT.format(**fields),
        reference.parent / "wrong" / name / "returns_input.toml": WRONG_EXAMPLE.format(**fields),
    }
    existing = [str(p.relative_to(root)) for p in files if p.exists()]
    if existing:
        raise UsageError(f"{exercise_id}: {', '.join(existing)} already exist(s)")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    with open(catalog.CATALOG_FILE, "a", encoding="utf-8") as handle:
        handle.write(CATALOG_ENTRY.format(**fields, framework=framework, topic=topic,
                                          difficulty=difficulty, minutes=minutes))
    catalog.reload()
    return list(files)
