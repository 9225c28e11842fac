"""Mutation testing of the references: how strong is each exercise's hidden suite?

``grader mutants ID [ID ...]`` makes small changes (mutants) to an exercise's reference solution,
grades each mutant as a submission through the fork-server grading path, and reports per exercise
how many were killed (lost at least one point), timed out, or survived (full marks). A surviving
mutant is either a hole in the tests or equivalent to the reference; equivalent ones are reviewed
by hand and recorded beside the hidden tests in ``<name>.mutants.toml``::

    [[equivalent]]
    mutant = "core/NumberReplacer@1f3a9c0b2d"    # the id the report prints
    reason = "the clamp's lower bound is never reached: inputs are squared first"

The mutation score is ``(killed + timed out) / (mutants run - equivalent)``. The command exits 1
when a mutant survives that is not recorded as equivalent.

Operators: cosmic-ray's (``cosmic_ray.operators``) for arithmetic, comparison, unary and boolean
operators, numbers (off by one, which covers dims and keyword defaults), ``break``/``continue``,
decorators and zero-iteration loops; our own (below) for what it lacks and tensor code needs:
dropped ``.detach()``/``.clone()``/``.contiguous()``, dropped ``no_grad``-style contexts, dropped
``keepdim=True``, swapped positional arguments and removed statements.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import pickle
import random
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader import catalog
from grader._source import parse, replace_node

# cosmic-ray's operators that make sense for tensor code (bit shifts and friends do not).
COSMIC_RAY_OPERATORS = tuple(f"core/{name}" for name in (
    "ReplaceBinaryOperator_Add_Sub", "ReplaceBinaryOperator_Sub_Add", "ReplaceBinaryOperator_Mul_Div",
    "ReplaceBinaryOperator_Div_Mul", "ReplaceBinaryOperator_Pow_Mul", "ReplaceBinaryOperator_Mul_Add",
    "ReplaceBinaryOperator_FloorDiv_Div",
    "ReplaceComparisonOperator_Lt_LtE", "ReplaceComparisonOperator_LtE_Lt",
    "ReplaceComparisonOperator_Gt_GtE", "ReplaceComparisonOperator_GtE_Gt",
    "ReplaceComparisonOperator_Eq_NotEq", "ReplaceComparisonOperator_NotEq_Eq",
    "ReplaceComparisonOperator_Is_IsNot", "ReplaceComparisonOperator_IsNot_Is",
    "ReplaceUnaryOperator_USub_UAdd", "ReplaceUnaryOperator_Delete_Not",
    "ReplaceTrueWithFalse", "ReplaceFalseWithTrue", "ReplaceAndWithOr", "ReplaceOrWithAnd",
    "NumberReplacer", "ZeroIterationForLoop", "ReplaceBreakWithContinue", "RemoveDecorator"))

_DROPPABLE_METHODS = {"detach", "clone", "contiguous", "detach_", "float", "double"}
_GRAD_CONTEXTS = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled"}


@dataclass(frozen=True)
class Mutant:
    """One changed copy of a reference; ``id`` is stable while the changed lines stay the same."""

    exercise: str
    operator: str
    id: str
    source: str
    diff: str


@dataclass
class ExerciseMutation:
    """What grading one exercise's mutants showed."""

    exercise: str
    generated: int = 0
    killed: list[str] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)  # not recorded as equivalent: holes
    known: list[str] = field(default_factory=list)  # of the survivors, those the baseline run had too
    equivalent: list[str] = field(default_factory=list)  # survived, recorded as equivalent
    stale: list[str] = field(default_factory=list)  # recorded as equivalent, no longer generated
    not_run: int = 0  # left out by --sample or the --budget
    diffs: dict[str, str] = field(default_factory=dict)  # of the survivors

    @property
    def score(self) -> float | None:
        """Killed or timed out, over the non-equivalent mutants that ran (None when none ran)."""
        detected = len(self.killed) + len(self.timed_out)
        total = detected + len(self.survived)
        return detected / total if total else None

    @property
    def new_survivors(self) -> list[str]:
        """Survivors neither recorded as equivalent nor seen by the baseline run."""
        return [m for m in self.survived if m not in self.known]


def read_baseline(path: Path) -> dict[str, set[str]]:
    """Exercise id -> the mutants that survived in an earlier run's ``--json`` output."""
    return {row["exercise"]: set(row["survived"]) for row in json.loads(path.read_text(encoding="utf-8"))}


def equivalents_file(ex: catalog.Exercise) -> Path:
    return ex.hidden_tests.with_name(f"{ex.stem}.mutants.toml")


def recorded_equivalents(ex: catalog.Exercise) -> dict[str, str]:
    """Mutant id -> the reviewer's reason it behaves like the reference."""
    path = equivalents_file(ex)
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {e["mutant"]: e["reason"] for e in data.get("equivalent", [])}


def _make(ex: catalog.Exercise, operator: str, original: str, mutated: str) -> Mutant | None:
    try:
        compile(mutated, str(ex.relpath), "exec")
    except SyntaxError:
        return None
    old, new = original.splitlines(keepends=True), mutated.splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old, new, f"reference/{ex.relpath}", f"mutant/{ex.relpath}", n=1))
    changed = "".join(line for line in diff.splitlines(keepends=True)[2:] if line[:1] in "+-")
    digest = hashlib.sha1(f"{operator}\n{changed}".encode()).hexdigest()[:10]
    return Mutant(ex.id, operator, f"{operator}@{digest}", mutated, diff)


def _cosmic_ray_mutants(ex: catalog.Exercise, source: str) -> Iterator[Mutant]:
    """What ``cosmic_ray.mutating.mutate_code`` makes of ``source``, occurrence by occurrence.

    mutate_code parses the source again for every occurrence and walks the whole tree to reach it
    (parso: 80% of generating a whole catalog's mutants). Here one walk of one parse finds every
    occurrence, in mutate_code's order (a node before its children, each node's positions in turn);
    each is applied to a copy of its node alone (hung from the same parent, which operators read),
    whose code then takes the place of the node's text, prefix included (a node the operator
    removes leaves nothing): the module text mutate_code makes, at a sixth of the cost."""
    import parso
    from cosmic_ray.plugins import get_operator

    lines = parso.split_lines(source, keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1]

    nodes = []
    pending = [parso.parse(source)]
    while pending:  # pre-order, as cosmic-ray's walk visits them
        node = pending.pop()
        nodes.append(node)
        pending.extend(reversed(getattr(node, "children", ())))
    for name in COSMIC_RAY_OPERATORS:
        operator = get_operator(name)()
        for node in nodes:
            for index, _ in enumerate(operator.mutation_positions(node)):
                parent, node.parent = node.parent, None  # copied alone, not with the tree it hangs in
                try:
                    copy = pickle.loads(pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL))
                finally:
                    node.parent = parent
                copy.parent = parent  # operators read the node's context (an operator's parent)
                mutated = operator.mutate(copy, index)
                text = "" if mutated is None else mutated.get_code()
                changed = source[:offset(node.get_start_pos_of_prefix())] + text + source[offset(node.end_pos):]
                if mutant := _make(ex, name, source, changed):
                    yield mutant


def _tensor_mutants(ex: catalog.Exercise, source: str) -> Iterator[Mutant]:
    """Our own operators: what cosmic-ray has no operator for."""
    tree = parse(source)
    segment = lambda n: ast.get_source_segment(source, n)  # noqa: E731 - a short local alias
    bodies = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in _DROPPABLE_METHODS and not node.args and not node.keywords:
                yield _make(ex, "drills/DropCall", source, replace_node(source, node, segment(node.func.value)))
            for kw in node.keywords:
                if kw.arg == "keepdim" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                    kept = [segment(a) for a in node.args] + [
                        f"{k.arg}={segment(k.value)}" if k.arg else f"**{segment(k.value)}"
                        for k in node.keywords if k is not kw]
                    yield _make(ex, "drills/DropKeepdim", source,
                                replace_node(source, node, f"{segment(node.func)}({', '.join(kept)})"))
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in node.args[:2]):
            first, second = segment(node.args[0]), segment(node.args[1])
            if first != second:
                # Edit the later argument first: the earlier one's position stays valid.
                swapped = replace_node(replace_node(source, node.args[1], first), node.args[0], second)
                yield _make(ex, "drills/SwapArguments", source, swapped)
        if isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                call = item.context_expr
                name = (call.func.attr if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        else call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else "")
                if name in _GRAD_CONTEXTS:
                    yield _make(ex, "drills/DropGradContext", source,
                                replace_node(source, call, '__import__("contextlib").nullcontext()'))
    for func in bodies:
        statements = func.body[1:] if ast.get_docstring(func) else func.body
        for stmt in (s for body in _blocks(statements) for s in body):
            if isinstance(stmt, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign) and not (
                    isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                yield _make(ex, "drills/RemoveStatement", source, replace_node(source, stmt, "pass"))


def _blocks(statements: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """``statements`` and every nested block of them (if/for/while/with/try bodies)."""
    yield statements
    for stmt in statements:
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt) and not isinstance(
                    stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                yield from _blocks(inner)
        for handler in getattr(stmt, "handlers", []):
            yield from _blocks(handler.body)


class _Behaviour(ast.NodeTransformer):
    """What is left of the code once the parts no learner writes or no contract prescribes go.

    Every f-string is blanked (message text), and every signature loses its ``/`` and ``*``
    markers (which parameters go by position or keyword): the stub fixes the signature and the
    learner writes the body, so a mutant there models no mistake a learner makes.
    """

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.Constant:
        return ast.Constant("")

    def visit_arguments(self, node: ast.arguments) -> ast.arguments:
        self.generic_visit(node)
        positional = node.posonlyargs + node.args
        no_default = [None] * (len(positional) - len(node.defaults))
        return ast.arguments(
            posonlyargs=[], args=positional + node.kwonlyargs, vararg=node.vararg, kwonlyargs=[],
            kw_defaults=[], kwarg=node.kwarg, defaults=no_default + node.defaults + node.kw_defaults)


class _Parsed:
    """A module's syntax tree and source, to compare statements by their exact text (a
    statement's text includes its decorators: the same text is the same statement)."""

    def __init__(self, source: str) -> None:
        self.tree = parse(source)
        self.raw = source.encode("utf-8")  # ast's column offsets count UTF-8 bytes
        self.starts = [0]
        for line in self.raw.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(line))
        self._behaviours: dict[int, tuple[ast.AST, str]] = {}

    def text(self, node: ast.stmt | ast.excepthandler) -> bytes:
        first = min((node, *getattr(node, "decorator_list", ())), key=lambda n: (n.lineno, n.col_offset))
        return self.raw[self.starts[first.lineno - 1] + first.col_offset:
                        self.starts[node.end_lineno - 1] + node.end_col_offset]

    def behaviour(self, value) -> str:
        """What ``_Behaviour`` leaves of a node (or a field's list of them), dumped; memoized,
        since a reference is compared with each of its mutants. ``_Behaviour`` edits the nodes
        below the one it is given and returns the edited one; it is idempotent, and it never
        replaces a statement, whose text stays readable."""
        if isinstance(value, list):
            return "[" + ", ".join(map(self.behaviour, value)) + "]"
        if not isinstance(value, ast.AST):
            return repr(value)
        if id(value) not in self._behaviours:  # the node is kept with it: its id is never reused
            self._behaviours[id(value)] = (value, ast.dump(_Behaviour().visit(value)))
        return self._behaviours[id(value)][1]


_BLOCKS = (ast.stmt, ast.excepthandler)  # what a field's list of nested statements holds


def _same_behaviour(ours: _Parsed, theirs: _Parsed) -> bool:
    """Whether two modules are the same but for what ``_Behaviour`` leaves out: as comparing the
    dumps of the whole trees, but statements of the same text are the same, and a compound
    statement that differs is compared field by field, so only the statements that differ are
    dumped (a whole module's dump per mutant was half the time of generating the mutants)."""
    return _same_statements(ours, ours.tree.body, theirs, theirs.tree.body)


def _same_statements(ours: _Parsed, mine: list, theirs: _Parsed, others: list) -> bool:
    return len(mine) == len(others) and all(_same_node(ours, a, theirs, b) for a, b in zip(mine, others))


def _same_node(ours: _Parsed, a: ast.AST, theirs: _Parsed, b: ast.AST) -> bool:
    if ours.text(a) == theirs.text(b):
        return True
    if type(a) is not type(b):
        return False
    for (_, x), (_, y) in zip(ast.iter_fields(a), ast.iter_fields(b)):
        if isinstance(x, list) and isinstance(y, list) and any(isinstance(n, _BLOCKS) for n in (*x, *y)):
            if not _same_statements(ours, x, theirs, y):
                return False
        elif ours.behaviour(x) != theirs.behaviour(y):
            return False
    return True


def generate(ex: catalog.Exercise) -> list[Mutant]:
    """Every distinct, compilable mutant of ``ex``'s reference, in a stable order.

    A change inside an f-string only (a number in an error message) is left out: no contract
    prescribes a message's exact text, so such a mutant could only survive. So is a change of which
    parameters are positional-only or keyword-only (``*`` made ``/``): the stub gives the learner
    the signature, and every call the contract describes goes through it unchanged.
    """
    source = ex.reference.read_text(encoding="utf-8")
    reference = _Parsed(source)
    seen: dict[str, Mutant] = {}
    ids: set[str] = set()
    for mutant in (*_cosmic_ray_mutants(ex, source), *_tensor_mutants(ex, source)):
        if mutant is None or mutant.source == source or mutant.source in seen:
            continue
        if _same_behaviour(reference, _Parsed(mutant.source)):
            continue
        unique, n = mutant.id, 1
        while unique in ids:  # the same change at another place of the file
            n += 1
            unique = f"{mutant.id}-{n}"
        ids.add(unique)
        seen[mutant.source] = replace(mutant, id=unique)
    return list(seen.values())


def _grade(mutant: Mutant, workdir: Path, wall_s: float) -> str:
    """Grade one mutant as a submission: killed, timed_out or survived."""
    from grader.engine.sandbox import Limits
    from grader.engine.scoring import score_submission

    ex = catalog.get_exercise(mutant.exercise)
    root = Path(tempfile.mkdtemp(prefix="mutant-", dir=workdir))
    target = root / ex.relpath
    target.parent.mkdir(parents=True)
    target.write_text(mutant.source, encoding="utf-8")
    # Killed needs one failing test, not all of them: most mutants end at their first failure.
    report = score_submission(root, [ex.id], limits=Limits(wall_s=wall_s), fork=True, stop_at_first_failure=True,
                              shrink=False)
    if any("wall-clock limit" in p for p in report.problems):
        return "timed_out"
    return "survived" if report.max_score and report.score == report.max_score else "killed"


def choose(mutants: list[Mutant], sample: int | None, seed: int) -> list[Mutant]:
    """At most ``sample`` of ``mutants`` drawn with ``seed``, in their order (all when None).

    A shuffled prefix: a smaller sample with the same seed is part of a larger one, so the few
    mutants of a CI check are among those a maintainer's larger run graded.
    """
    if sample is None or sample >= len(mutants):
        return mutants
    shuffled = mutants[:]
    random.Random(seed).shuffle(shuffled)
    return sorted(shuffled[:sample], key=mutants.index)


def run_mutants(ids: list[str], *, sample: int | None = None, seed: int = 0, budget_s: float | None = None,
                jobs: int = 2, wall_s: float = 120.0, baseline: dict[str, set[str]] | None = None,
                on_mutant=None) -> list[ExerciseMutation]:
    """Generate, grade and classify the mutants of each exercise in ``ids``.

    ``jobs`` mutants are graded at once, the next exercise's as soon as a job is free (one
    exercise's sample may be a single mutant). ``sample``: grade at most this many mutants per
    exercise, drawn with ``seed``. ``budget_s``: stop starting new mutants of an exercise once
    this much time went into it, counted from its first mutant's start. ``baseline``
    (``read_baseline``): survivors already known, which still count against the score but are not
    new. ``on_mutant(ex_id, mutant, verdict)`` is called as each finishes.
    """
    from grader.engine import sandbox

    with (tempfile.TemporaryDirectory(prefix="drills-mutants-") as tmp, sandbox.ending_in_background(),
          ThreadPoolExecutor(max_workers=max(1, jobs)) as pool):
        started = [_start_exercise(catalog.get_exercise(ex_id), Path(tmp), pool, sample=sample,
                                   seed=seed, budget_s=budget_s, wall_s=wall_s,
                                   known=(baseline or {}).get(ex_id, set()), on_mutant=on_mutant)
                   for ex_id in ids]
        return [finish() for finish in started]


def _start_exercise(ex: catalog.Exercise, workdir: Path, pool: Executor, *, sample: int | None, seed: int,
                    budget_s: float | None, wall_s: float, known: set[str],
                    on_mutant) -> Callable[[], ExerciseMutation]:
    """Generate ``ex``'s mutants and hand the chosen ones to ``pool``; the function that waits for
    them and classifies them."""
    mutants = generate(ex)
    result = ExerciseMutation(ex.id, generated=len(mutants))
    chosen = choose(mutants, sample, seed)
    result.not_run = len(mutants) - len(chosen)
    equivalent = recorded_equivalents(ex)
    result.stale = sorted(set(equivalent) - {m.id for m in mutants})
    first_start: list[float] = []  # when the first of them started grading
    lock = threading.Lock()

    def grade(mutant: Mutant) -> str | None:
        with lock:
            if not first_start:
                first_start.append(time.monotonic())
        if budget_s is not None and time.monotonic() - first_start[0] >= budget_s:
            return None
        verdict = _grade(mutant, workdir, wall_s)
        if on_mutant:
            on_mutant(ex.id, mutant, verdict)
        return verdict

    futures = [pool.submit(grade, mutant) for mutant in chosen]

    def finish() -> ExerciseMutation:
        for mutant, future in zip(chosen, futures):
            verdict = future.result()
            if verdict is None:
                result.not_run += 1
            elif verdict == "survived" and mutant.id in equivalent:
                result.equivalent.append(mutant.id)
            elif verdict == "survived":
                result.survived.append(mutant.id)
                result.diffs[mutant.id] = mutant.diff
                if mutant.id in known:
                    result.known.append(mutant.id)
            else:
                getattr(result, verdict).append(mutant.id)
        return result

    return finish
