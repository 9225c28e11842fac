"""The maintainer's check that the exercises themselves are right (like rustlings' dev check).

For each exercise: the reference scores full marks, the untouched stub scores 0 and reads as
"not started", and every wrong solution under ``solutions/<path>/wrong/<name>/`` fails at least one
hidden test: one of the tests of the contract clause it is said to break (``grader.workflows.contract``), where
the contract table names one, and every test a declared mistake's ``caught_by`` names
(``grader.wrong_solutions``). A constant-output submission the table names earns no more than the
table allows. Wrong solutions are graded in rounds (round k holds the k-th wrong solution of every
selected exercise), so checking the whole kit costs a handful of grading runs, not one per file.
A wrong solution the table names, or one with a ``caught_by``, is graded on those tests only (when
they include a hidden one): that is what it must fail, and the rest of the suite would only cost time.
Nor do they run past what decides the verdict: each clause's tests, each ``caught_by`` test and the
hidden tests among them form groups, and a test every group of which already failed is left out
(``grader._until_failed``); it reads as missing, where a failure would have changed nothing. The
tests a group names alone (each ``caught_by`` test) run first, which often decides the rest.
The stub and the wrong solutions need only to fail: a failing hypothesis test of theirs ends at
the first failing example it finds, unshrunk (``score_submission``'s ``shrink``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grader import catalog
from grader.engine import sandbox
from grader.engine.sandbox import Limits
from grader.engine.scoring import ExerciseResult, Report, score_submission
from grader.outcomes import State, TestStatus, Visibility
from grader.workflows import contract
from grader.wrong_solutions import WrongSolution, WrongSolutionError

# A test with one of these did not fail: it passed, or it cannot run on this machine.
_COUNTED_PASS = (TestStatus.PASSED, TestStatus.NOT_RUN)


@dataclass
class Verdict:
    """What grading one exercise's reference, stub and wrong solutions showed."""

    id: str
    reference: ExerciseResult
    stub: ExerciseResult
    wrong: dict[str, ExerciseResult] = field(default_factory=dict)
    unbuilt: dict[str, str] = field(default_factory=dict)  # mistake -> why it could not be made (not graded)

    def problems(self) -> list[str]:
        """Every way this exercise breaks the rules, in words; empty when it is sound."""
        found = []
        ref = self.reference
        if not [t for t in ref.tests if t.visibility == Visibility.HIDDEN and t.status != TestStatus.NOT_RUN]:
            found.append("no hidden test ran against the reference")
        if not ref.score == ref.max_score > 0:
            found.extend(f"reference fails {t.name}: {t.status}: {t.message[:300]}"
                         for t in ref.tests if t.status not in _COUNTED_PASS)
        passed = [t.name for t in self.stub.tests if t.status == TestStatus.PASSED]
        if passed or self.stub.score:
            found.append(f"the untouched stub passes {passed}")
        elif self.stub.status != State.NOT_STARTED:
            found.append(f"the untouched stub reads as {self.stub.status!r}, not 'not started'")
        found.extend(f"wrong solution {mistake!r} was not graded: {why}" for mistake, why in self.unbuilt.items())
        if len(self.wrong) + len(self.unbuilt) < 2:
            found.append(f"needs at least two wrong solutions, has {len(self.wrong) + len(self.unbuilt)}")
        ex = catalog.get_exercise(self.id)
        table = contract.load(ex)
        caught_by = {w.name: w.caught_by for w in ex.wrong_solutions}
        for mistake, result in self.wrong.items():
            if not [t for t in result.tests if t.visibility == Visibility.HIDDEN
                    and t.status not in _COUNTED_PASS]:
                found.append(f"wrong solution {mistake!r} passes every hidden test")
            failed = {t.name.split("::", 1)[-1] for t in result.tests if t.status not in _COUNTED_PASS}
            for clause in table.clauses_breaking(mistake):
                if not any(_names(test, name) for test in clause.tests for name in failed):
                    found.append(f"wrong solution {mistake!r} breaks {clause.quote[:60]!r} but passes "
                                 f"every test of that clause ({', '.join(clause.tests)})")
            found.extend(f"wrong solution {mistake!r} is not caught by {test}, which its caught_by "
                         "names: that test did not fail"
                         for test in caught_by.get(mistake, ()) if not any(_names(test, n) for n in failed))
        constant = table.constant
        if constant and constant.solution in self.wrong:
            earned = self.wrong[constant.solution].score
            if earned > constant.max_points:
                found.append(f"the constant submission {constant.solution!r} earns {earned:g} points, "
                             f"more than the {constant.max_points:g} its contract table allows")
        return found


def _names(test: str, result_name: str) -> bool:
    """Whether ``test`` (a function, or one parametrized case) of a contract table or a caught_by
    list names a result."""
    return result_name == test or ("[" not in test and result_name.split("[", 1)[0] == test)


@dataclass
class _Run:
    """What one mistake is graded on: ``tests`` alone (empty: all), until each of ``groups`` has a
    failing test (empty: to the end)."""

    tests: set[str] = field(default_factory=set)
    groups: list[set[str]] = field(default_factory=list)


def _what_to_run(ex: catalog.Exercise, mistakes: list[WrongSolution]) -> list[_Run]:
    """Per mistake of ``ex``: the tests of the clauses it is said to break and its ``caught_by``,
    when they include a hidden one (it must fail a hidden test), until each clause's tests, each
    ``caught_by`` test and the hidden ones among them have a failing test. Every test of the suite
    for an unnamed mistake, one whose named tests are all public, and the constant submission,
    whose points over the whole suite are capped."""
    table, hidden = contract.load(ex), contract.defined_tests(ex.hidden_tests)
    public = contract.defined_tests(ex.public_tests)
    chosen = []
    for mistake in mistakes:
        groups = [set(clause.tests) for clause in table.clauses_breaking(mistake.name)]
        groups += [{test} for test in mistake.caught_by]
        tests = set().union(*groups)
        hidden_among = {test for test in tests if test.split("[", 1)[0] in hidden}
        if not hidden_among or (table.constant is not None and table.constant.solution == mistake.name):
            chosen.append(_Run())
        elif {test.split("[", 1)[0] for test in hidden_among} & public:
            # A name both test files define: a child could not tell whether the one that failed
            # was hidden, so these tests run to the end.
            chosen.append(_Run(tests))
        else:
            chosen.append(_Run(tests, [*groups, hidden_among]))
    return chosen


def _by_id(report: Report) -> dict[str, ExerciseResult]:
    return {ex.id: ex for ex in report.exercises}


def verify(ids: list[str] | None = None, *, jobs: int = 2, limits: Limits | None = None,
           on_run: Callable[[str, Report], None] | None = None) -> tuple[list[Verdict], list[Report]]:
    """Grade the reference, stub and wrong solutions of ``ids`` (default: every exercise).

    Returns one verdict per exercise and every grading report (whose ``problems`` say whether a
    run itself went wrong). ``on_run(name, report)`` is called as each run finishes.
    """
    exercises = catalog.select(ids)
    limits = limits or Limits(wall_s=1800.0)
    with tempfile.TemporaryDirectory(prefix="drills-verify-") as tmp:
        jobs_by_name: dict[str, tuple[Path, list[str]]] = {
            "reference": (catalog.KIT_ROOT / "solutions", [ex.id for ex in exercises]),
            "stub": (catalog.KIT_ROOT / "exercises", [ex.id for ex in exercises])}
        runs: dict[str, dict[str, _Run]] = {}  # run name -> exercise id -> what it runs
        rounds: list[dict[str, WrongSolution]] = []
        mistakes = {ex.id: ex.wrong_solutions for ex in exercises}
        to_run = {ex.id: _what_to_run(ex, mistakes[ex.id]) for ex in exercises}
        unbuilt: dict[str, dict[str, str]] = {ex.id: {} for ex in exercises}
        for k in range(max(map(len, mistakes.values()), default=0)):
            chosen = {ex_id: found[k] for ex_id, found in mistakes.items() if len(found) > k}
            root = Path(tmp) / f"wrong{k}"
            for ex_id, mistake in list(chosen.items()):
                try:
                    source = mistake.source()
                except WrongSolutionError as exc:  # a reference changed under a declared edit
                    unbuilt[ex_id][mistake.name] = str(exc)
                    del chosen[ex_id]
                    continue
                target = root / catalog.get_exercise(ex_id).relpath
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(source, encoding="utf-8")
            rounds.append(chosen)
            if chosen:
                jobs_by_name[f"wrong{k}"] = (root, list(chosen))
                runs[f"wrong{k}"] = {ex_id: to_run[ex_id][k] for ex_id in chosen}

        def grade(name: str) -> Report:
            root, selected = jobs_by_name[name]
            chosen = runs.get(name, {})
            # Forked from a server that imported the frameworks and collected the tests once. Only
            # the reference's failures are read (by its maintainer): the others need only to fail.
            report = score_submission(root, selected, limits=limits, fork=True,
                                      select={ex_id: run.tests for ex_id, run in chosen.items() if run.tests},
                                      until_failed={ex_id: run.groups for ex_id, run in chosen.items() if run.groups},
                                      shrink=name == "reference")
            if on_run:
                on_run(name, report)
            return report

        with sandbox.ending_in_background(), ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            reports = dict(zip(jobs_by_name, pool.map(grade, jobs_by_name)))
    references, stubs = _by_id(reports["reference"]), _by_id(reports["stub"])
    verdicts = {ex.id: Verdict(ex.id, references[ex.id], stubs[ex.id], unbuilt=unbuilt[ex.id]) for ex in exercises}
    for k, chosen in enumerate(rounds):
        if not chosen:
            continue
        results = _by_id(reports[f"wrong{k}"])
        for ex_id, mistake in chosen.items():
            verdicts[ex_id].wrong[mistake.name] = results[ex_id]
    return list(verdicts.values()), list(reports.values())
