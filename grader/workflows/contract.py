"""Contract coverage: every clause of an exercise's docstring contract, and the tests that prove it.

Beside each exercise's hidden tests lies ``<name>.contract.toml`` (``solutions/<path>/``)::

    [[clause]]
    quote = "Distances are never negative"   # verbatim from the stub's docstrings
    tests = ["test_pairwise_never_negative"]  # public or hidden test functions that isolate it
    wrong = ["negative_roundoff"]             # optional: wrong solutions that break this clause

    [constant]                                # what a constant-output submission earns
    solution = "returns_zeros"                # a wrong solution returning zeros of the right shape
    max_points = 4                            # it may earn at most this many points
    why = "the shape and error checks hold for it honestly"

The table is checked both ways (``problems``): every bullet of the stub's ``Contract`` section is
quoted by a clause, every quote is in the stub, every named test exists, and every hidden test is
named by some clause (a test may demand only what the docstring says). ``grader verify`` checks the
rest by grading: each wrong solution a clause names fails one of that clause's tests, and the
constant submission earns no more than ``max_points``.
"""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from grader import catalog
from grader._source import parse


@dataclass(frozen=True)
class Clause:
    quote: str
    tests: tuple[str, ...]
    wrong: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConstantSubmission:
    solution: str
    max_points: float
    why: str


@dataclass(frozen=True)
class Contract:
    exercise: catalog.Exercise
    clauses: tuple[Clause, ...]
    constant: ConstantSubmission | None = None
    errors: tuple[str, ...] = field(default=())  # what is malformed in the file itself

    def clauses_breaking(self, wrong_solution: str) -> list[Clause]:
        """The clauses that ``wrong_solution`` (a mistake's name under ``wrong/``) is said to break."""
        return [c for c in self.clauses if wrong_solution in c.wrong]


def contract_file(ex: catalog.Exercise) -> Path:
    return ex.hidden_tests.with_name(f"{ex.stem}.contract.toml")


def load(ex: catalog.Exercise) -> Contract:
    """Read ``ex``'s contract table; a missing or malformed file gives a contract with ``errors``."""
    path = contract_file(ex)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Contract(ex, (), errors=(f"no contract table {path.relative_to(catalog.KIT_ROOT)}",))
    except tomllib.TOMLDecodeError as exc:
        return Contract(ex, (), errors=(f"{path.name} is not valid TOML: {exc}",))
    errors: list[str] = []
    clauses = []
    for index, raw in enumerate(data.get("clause", [])):
        quote, tests, wrong = raw.get("quote"), raw.get("tests"), raw.get("wrong", [])
        if not isinstance(quote, str) or not quote.strip():
            errors.append(f"clause {index}: 'quote' must be a non-empty string")
            continue
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) for t in tests):
            errors.append(f"clause {index} ({quote[:40]!r}): 'tests' must be a non-empty list of test names")
            continue
        if not isinstance(wrong, list) or not all(isinstance(w, str) for w in wrong):
            errors.append(f"clause {index} ({quote[:40]!r}): 'wrong' must be a list of mistake names")
            continue
        clauses.append(Clause(quote, tuple(tests), tuple(wrong)))
    if not clauses and not errors:
        errors.append(f"{path.name} has no [[clause]]")
    constant = None
    if "constant" in data:
        raw = data["constant"]
        try:
            constant = ConstantSubmission(str(raw["solution"]), float(raw["max_points"]), str(raw["why"]))
        except (KeyError, TypeError, ValueError):
            errors.append("[constant] needs solution (a wrong-solution stem), max_points and why")
    unknown = set(data) - {"clause", "constant"}
    if unknown:
        errors.append(f"unknown table(s) {sorted(unknown)}")
    return Contract(ex, tuple(clauses), constant, tuple(errors))


def _normalise(text: str) -> str:
    return " ".join(text.split())


def stub_docstrings(stub: Path) -> str:
    """The module's, classes' and functions' docstrings of ``stub``, joined."""
    tree = parse(stub.read_text(encoding="utf-8"))
    nodes = [tree, *(n for n in ast.walk(tree)
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    return "\n".join(doc for n in nodes if (doc := ast.get_docstring(n)))


def contract_bullets(stub: Path) -> list[str]:
    """The bullets of the module docstring's ``Contract`` section, each as one line of text."""
    doc = ast.get_docstring(parse(stub.read_text(encoding="utf-8"))) or ""
    match = re.search(r"^Contract\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
    if not match:
        return []
    bullets: list[str] = []
    for line in match.group(1).splitlines():
        if line.startswith("- "):
            bullets.append(line[2:])
        elif bullets and line.strip():
            bullets[-1] += " " + line.strip()
    return [_normalise(b) for b in bullets]


def defined_tests(path: Path) -> set[str]:
    """The test functions defined at the top of the test module ``path`` (none if it is missing)."""
    if not path.is_file():
        return set()
    tree = parse(path.read_text(encoding="utf-8"))
    return {n.name for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")}


def problems(contract: Contract) -> list[str]:
    """Every way the table fails to tie the stub's contract to tests, in words; empty when sound."""
    ex = contract.exercise
    found = list(contract.errors)
    docs = _normalise(stub_docstrings(ex.stub))
    bullets = contract_bullets(ex.stub)
    if not bullets:
        found.append(f"{ex.stub.name} has no 'Contract' section with '- ' bullets")
    quotes = [_normalise(c.quote) for c in contract.clauses]
    for quote in quotes:
        if quote not in docs:
            found.append(f"quote not in the stub's docstrings: {quote!r}")
    for bullet in bullets:
        if not any(q in bullet for q in quotes):
            found.append(f"contract bullet with no clause: {bullet[:100]!r}")
    hidden, public = defined_tests(ex.hidden_tests), defined_tests(ex.public_tests)
    named = {t.split("[", 1)[0] for c in contract.clauses for t in c.tests}
    for name in sorted(named - hidden - public):
        found.append(f"clause names a test that does not exist: {name}")
    for name in sorted(hidden - named):
        found.append(f"hidden test proves no clause of the contract: {name}")
    wrong = {w.name for w in ex.wrong_solutions}
    for name in sorted({w for c in contract.clauses for w in c.wrong} - wrong):
        found.append(f"clause names a wrong solution that does not exist: {name}")
    if contract.constant is None:
        found.append("no [constant] table: what does a constant-output submission earn?")
    elif contract.constant.solution not in wrong:
        found.append(f"[constant] solution {contract.constant.solution!r} is not a wrong solution")
    return found
