"""Wrong solutions as module files or as declared edits of the reference (``grader.wrong_solutions``),
and ``grader verify``'s check that each declared mistake's ``caught_by`` tests fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import catalog, wrong_solutions
from grader.engine.scoring import ExerciseResult, score_submission
from grader.workflows import contract, scaffold
from grader.workflows.verify import Verdict, _Run, _what_to_run
from grader.wrong_solutions import WrongSolutionError
from tests.helpers import make_submission

REFERENCE = '''"""Reference solution: demo.

It says ``café`` so that columns are bytes, not characters."""

def clip(x, low, high):
    if low > high:
        raise ValueError("low must not exceed high")
    return max(low, min(x, high))


def double(x):
    return x + x
'''

NO_CHECK = '''"""Wrong: clip takes low > high
without complaint (ValueError missing)."""

def clip(x, low, high):
    return max(low, min(x, high))


def double(x):
    return x + x
'''

NO_CHECK_TOML = """why = '''
clip takes low > high
without complaint (ValueError missing).'''
caught_by = ["test_clip_rejects_low_above_high"]

[[edit]]
old = '''
    if low > high:
        raise ValueError("low must not exceed high")
'''
new = ""
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "clip.py").write_text(REFERENCE, encoding="utf-8")
    wrong = tmp_path / "wrong" / "clip"
    wrong.mkdir(parents=True)
    return wrong


def _load(folder: Path) -> dict[str, wrong_solutions.WrongSolution]:
    return {w.name: w for w in wrong_solutions.load(folder, folder.parent.parent / "clip.py")}


def _declare(folder: Path, text: str, name: str = "mistake") -> wrong_solutions.WrongSolution:
    (folder / f"{name}.toml").write_text(text, encoding="utf-8")
    return _load(folder)[name]


def test_declared_edits_round_trip_to_the_module_they_replace(folder):
    mistake = _declare(folder, NO_CHECK_TOML, "no_check")
    assert mistake.declared and mistake.caught_by == ("test_clip_rejects_low_above_high",)
    assert mistake.why.startswith("clip takes low > high\n")
    assert mistake.source() == NO_CHECK


def test_module_files_and_declared_mistakes_are_listed_together_by_name(folder):
    (folder / "b_rewrite.py").write_text('"""Wrong: a rewrite."""\n', encoding="utf-8")
    _declare(folder, NO_CHECK_TOML, "a_declared")
    _declare(folder, NO_CHECK_TOML, "c_declared")
    found = wrong_solutions.load(folder, folder.parent.parent / "clip.py")
    assert [w.name for w in found] == ["a_declared", "b_rewrite", "c_declared"]
    assert not found[1].declared and found[1].source() == '"""Wrong: a rewrite."""\n'
    assert found[1].caught_by == ()


def test_count_replaces_every_occurrence(folder):
    mistake = _declare(folder, """why = "doubles wrongly"\ncaught_by = ["test_double"]\n
[[edit]]\nold = "x + x"\nnew = "x * x"\n
[[edit]]\nold = "return "\nnew = "yield "\ncount = 2\n""")
    source = mistake.source()
    assert "yield x * x" in source and source.count("yield ") == 2 and "return" not in source


@pytest.mark.parametrize("old, count, found", [("never in the reference", 1, 0), ("return", 1, 2),
                                                ("x + x", 2, 1)])
def test_an_edit_that_no_longer_applies_names_the_file_the_edit_and_what_it_found(folder, old, count, found):
    mistake = _declare(folder, f'why = "w"\ncaught_by = ["test_x"]\n[[edit]]\nold = "must not"\nnew = "may"\n'
                               f'[[edit]]\nold = "{old}"\nnew = "z"\ncount = {count}\n', "stale")
    times = "once" if count == 1 else f"{count} times"
    with pytest.raises(WrongSolutionError, match=rf"the reference changed: edit 2 of stale\.toml expects its "
                                                 rf"`old` text {times}, found {found}"):
        mistake.source()


@pytest.mark.parametrize("text, message", [
    ("why = = 1", "not valid TOML"),
    ('why = "w"\ncaught_by = ["t"]\nauthor = "me"\n[[edit]]\nold = "x"\nnew = "y"\n', "unknown key.*author"),
    ('why = "w"\ncaught_by = ["t"]\n[[edit]]\nold = "x"\nnew = "y"\ncuont = 2\n', "edit 1: unknown key.*cuont"),
    ('caught_by = ["t"]\n[[edit]]\nold = "x"\nnew = "y"\n', "'why' must be"),
    ('why = " "\ncaught_by = ["t"]\n[[edit]]\nold = "x"\nnew = "y"\n', "'why' must be"),
    ('why = "w"\n[[edit]]\nold = "x"\nnew = "y"\n', "'caught_by' must be"),
    ('why = "w"\ncaught_by = []\n[[edit]]\nold = "x"\nnew = "y"\n', "'caught_by' must be"),
    ('why = "w"\ncaught_by = ["t"]\n', r"at least one \[\[edit\]\]"),
    ('why = "w"\ncaught_by = ["t"]\n[[edit]]\nold = ""\nnew = "y"\n', "edit 1: 'old' must be non-empty"),
    ('why = "w"\ncaught_by = ["t"]\n[[edit]]\nold = "x"\n', "edit 1: 'new' must be a string"),
    ('why = "w"\ncaught_by = ["t"]\n[[edit]]\nold = "x"\nnew = "y"\ncount = 0\n', "edit 1: 'count' must be"),
])
def test_a_malformed_declaration_is_refused_naming_the_file(folder, text, message):
    (folder / "bad.toml").write_text(text, encoding="utf-8")
    with pytest.raises(WrongSolutionError, match=message) as caught:
        _load(folder)
    assert "bad.toml" in str(caught.value)


def test_a_mistake_may_not_be_both_a_file_and_declared(folder):
    (folder / "twice.py").write_text(NO_CHECK, encoding="utf-8")
    (folder / "twice.toml").write_text(NO_CHECK_TOML, encoding="utf-8")
    with pytest.raises(WrongSolutionError, match="twice is both a .py and a .toml"):
        _load(folder)


def test_the_scaffolds_example_mistake_applies_to_the_scaffolds_reference(folder):
    fields = {"id": "demo.clip", "name": "clip"}
    (folder.parent.parent / "clip.py").write_text(scaffold.REFERENCE.format(**fields), encoding="utf-8")
    mistake = _declare(folder, scaffold.WRONG_EXAMPLE.format(**fields))
    assert "    return x\n" in mistake.source()


def test_exercise_names_its_mistakes():
    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    assert ex.wrong_solution("no_bias_check").source().startswith('"""Wrong: ')
    with pytest.raises(catalog.CatalogError, match="has no wrong solution 'nope'"):
        ex.wrong_solution("nope")


@pytest.mark.timeout(900)
def test_verify_reports_each_caught_by_test_that_did_not_fail(tmp_path):
    """Real grading of one small exercise: its reference stands in for a mistake that its
    caught_by tests should have caught."""
    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    mistake = ex.wrong_solution("no_bias_check")
    assert mistake.declared and mistake.caught_by
    reference = score_submission(catalog.KIT_ROOT / "solutions", [ex.id]).exercises[0]
    wrong_root = make_submission(tmp_path, {ex: mistake.source()})
    wrong = score_submission(wrong_root, [ex.id]).exercises[0]

    caught = Verdict(ex.id, reference, reference, {mistake.name: wrong}).problems()
    assert not [p for p in caught if mistake.name in p]
    missed = Verdict(ex.id, reference, reference, {mistake.name: reference}).problems()
    for test in mistake.caught_by:
        assert (f"wrong solution 'no_bias_check' is not caught by {test}, which its caught_by names: "
                "that test did not fail") in missed


def test_verify_names_a_mistake_whose_edits_no_longer_apply_as_that_exercises_problem(folder):
    stale = _declare(folder, 'why = "w"\ncaught_by = ["t"]\n[[edit]]\nold = "not in the reference"\nnew = "y"\n')
    with pytest.raises(WrongSolutionError) as caught:
        stale.source()
    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    nothing = ExerciseResult(ex.id, 0.0, 0.0, [])
    problems = Verdict(ex.id, nothing, nothing, unbuilt={stale.name: str(caught.value)}).problems()
    assert f"wrong solution {stale.name!r} was not graded: {caught.value}" in problems


def test_a_named_mistake_runs_its_tests_until_each_clause_caught_by_test_and_hidden_test_fails():
    ex = catalog.get_exercise("pytorch.tensors.broadcasting")
    table, hidden = contract.load(ex), contract.defined_tests(ex.hidden_tests)
    runs = dict(zip((m.name for m in ex.wrong_solutions), _what_to_run(ex, ex.wrong_solutions)))
    assert runs[table.constant.solution] == _Run()  # its points over the whole suite are capped
    mistake = ex.wrong_solution("no_bias_check")
    run = runs[mistake.name]
    expected = [set(clause.tests) for clause in table.clauses_breaking(mistake.name)]
    expected += [{test} for test in mistake.caught_by]
    assert run.tests == set().union(*expected)
    assert run.groups == [*expected, {t for t in run.tests if t.split("[", 1)[0] in hidden}]


def test_a_mistake_named_by_a_test_both_files_define_runs_its_tests_to_the_end():
    # A child could not tell whether the failing one was hidden: no group can stand for that.
    ex = catalog.get_exercise("tensorflow.data.pipeline")
    shared = contract.defined_tests(ex.hidden_tests) & contract.defined_tests(ex.public_tests)
    assert shared
    named = [(m, run) for m, run in zip(ex.wrong_solutions, _what_to_run(ex, ex.wrong_solutions))
             if {t.split("[", 1)[0] for t in run.tests} & shared]
    assert named and all(run.tests and not run.groups for _, run in named)
