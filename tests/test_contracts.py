"""Every exercise's contract table ties each clause of its stub's docstring to the tests that prove
it, and every hidden test to a clause (``grader.workflows.contract``). ``grader verify`` (test_meta) checks the
graded half: wrong solutions fail the tests of the clause they break."""

from __future__ import annotations

import pytest

from grader import catalog
from grader.workflows import contract

EXERCISES = list(catalog.load_catalog().values())


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_contract_table_covers_the_docstring(ex):
    problems = contract.problems(contract.load(ex))
    assert problems == [], f"{contract.contract_file(ex).name}:\n" + "\n".join(problems)


def test_bullets_are_read_from_the_contract_section_only(tmp_path):
    stub = tmp_path / "stub.py"
    stub.write_text('"""Title.\n\nContract\n--------\n- first rule\n  continues here.\n- second\n\n'
                    'Hints\n-----\n- not a rule\n"""\n')
    assert contract.contract_bullets(stub) == ["first rule continues here.", "second"]
