"""Hidden tests for pytorch.autograd.micrograd (the catalog's contract checks).

The independent reference is torch.autograd on 0-dim float64 tensors: the same expression is built
twice, once with the learner's ``Value`` and once with tensors (both support the same operators and
the ``exp``/``log``/``tanh``/``relu`` methods), and every node's value and gradient are compared.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch
from hypothesis import given, settings, strategies as st

from grader.checks import assert_raises_naming

CONSTANTS = [2, -1, 0.5, 3.0, -2.5]
# Drawn expressions stay well-conditioned, so that any correct implementation (tanh written with
# exp, a / b as a * b ** -1, ...) agrees with torch to round-off: every node's value is at most
# VALUE_LIMIT in size, operands keep TINY away from the poles of log, 1/x, x ** -2, from the kink
# of relu (where a one-ulp difference would flip the derivative) and from 0 for x ** 0.5; tanh
# stays where exp(2x) cannot overflow (a common, valid way to write it).
VALUE_LIMIT = 1e3
TINY = 0.05


@dataclass(frozen=True)
class Op:
    name: str            # how the node is shown in failure messages, "{0}"/"{1}" are operands
    arity: int
    fn: Callable[..., Any]
    ok: Callable[..., bool] = lambda *args: True  # domain check on the operands' float values


UNARY_OPS = [
    Op("-{0}", 1, lambda a: -a),
    Op("{0}.exp()", 1, lambda a: a.exp(), lambda a: a < 8),
    Op("{0}.log()", 1, lambda a: a.log(), lambda a: a > TINY),
    Op("{0}.tanh()", 1, lambda a: a.tanh(), lambda a: abs(a) < 20),
    Op("{0}.relu()", 1, lambda a: a.relu(), lambda a: abs(a) > TINY),
    Op("{0} ** 2", 1, lambda a: a ** 2),
    Op("{0} ** 3", 1, lambda a: a ** 3),
    Op("{0} ** -1", 1, lambda a: a ** -1, lambda a: abs(a) > TINY),
    Op("{0} ** -2", 1, lambda a: a ** -2, lambda a: abs(a) > TINY),
    Op("{0} ** 0.5", 1, lambda a: a ** 0.5, lambda a: a > TINY),
    Op("{0} ** 1.5", 1, lambda a: a ** 1.5, lambda a: a > TINY),
]
BINARY_OPS = [
    Op("({0} + {1})", 2, lambda a, b: a + b),
    Op("({0} - {1})", 2, lambda a, b: a - b),
    Op("({0} * {1})", 2, lambda a, b: a * b),
    Op("({0} / {1})", 2, lambda a, b: a / b, lambda a, b: abs(b) > TINY),
]


def _const_ops(c: float) -> list[Op]:
    """Operations with a plain Python number on the left or on the right."""
    return [
        Op(f"({c!r} + {{0}})", 1, lambda a: c + a),
        Op(f"({{0}} + {c!r})", 1, lambda a: a + c),
        Op(f"({c!r} - {{0}})", 1, lambda a: c - a),
        Op(f"({{0}} - {c!r})", 1, lambda a: a - c),
        Op(f"({c!r} * {{0}})", 1, lambda a: c * a),
        Op(f"({{0}} * {c!r})", 1, lambda a: a * c),
        Op(f"({c!r} / {{0}})", 1, lambda a: c / a, lambda a: abs(a) > TINY),
        Op(f"({{0}} / {c!r})", 1, lambda a: a / c),
    ]


def _num(t: torch.Tensor) -> float:
    return float(t.detach())


def _tensor(x: float) -> torch.Tensor:
    return torch.tensor(float(x), dtype=torch.float64, requires_grad=True)


def _apply_ok(op: Op, args: list[float]) -> bool:
    """The op is inside its domain and keeps the value moderate."""
    if not op.ok(*args):
        return False
    with torch.no_grad():
        out = float(op.fn(*[torch.tensor(a, dtype=torch.float64) for a in args]))
    return math.isfinite(out) and abs(out) <= VALUE_LIMIT


def _close(got: Any, want: float, *, scale: float, what: str) -> None:
    # The contract promises floats: .data "as a float", .grad "a float" (an int 0 or 6 is not).
    assert isinstance(got, float), f"{what}: expected a float, got {type(got).__name__} ({got!r})"
    tol = 1e-8 * scale + 1e-6 * abs(want)
    assert abs(got - want) <= tol, f"{what}: got {got!r}, expected {want!r}"


class Graph:
    """One expression built with both implementations, node for node."""

    def __init__(self) -> None:
        self.values: list[Any] = []            # the learner's Value objects
        self.tensors: list[torch.Tensor] = []  # the same nodes as float64 tensors
        self.lines: list[str] = []             # the program, for failure messages

    def program(self) -> str:
        return "; ".join(self.lines)

    def __repr__(self) -> str:  # how hypothesis shows a failing draw
        return f"<expression {self.program()}>"


def _add_leaf(impl, g: Graph, x: float) -> None:
    g.values.append(impl.Value(x))
    g.tensors.append(_tensor(x))
    g.lines.append(f"n{len(g.lines)} = Value({x!r})")


def _add_op(g: Graph, op: Op, idx: list[int]) -> None:
    out_v = op.fn(*[g.values[i] for i in idx])
    out_t = op.fn(*[g.tensors[i] for i in idx])
    out_t.retain_grad()
    g.values.append(out_v)
    g.tensors.append(out_t)
    g.lines.append(f"n{len(g.lines)} = " + op.name.format(*[f"n{i}" for i in idx]))


def _compare_after_backward(impl, g: Graph) -> None:
    """Run backward on the last node with both implementations and compare every node."""
    out_v, out_t = g.values[-1], g.tensors[-1]
    what = f"in the expression {g.program()}; out = n{len(g.values) - 1}"
    for k, (v, t) in enumerate(zip(g.values, g.tensors)):
        assert isinstance(v, impl.Value), f"{what}: n{k} is a {type(v).__name__}, not a Value"
    scale = max([1.0] + [abs(_num(t)) for t in g.tensors])
    for k, (v, t) in enumerate(zip(g.values, g.tensors)):
        _close(v.data, _num(t), scale=scale, what=f"value of n{k} {what}")
    out_v.backward()
    out_t.backward()
    grads = [0.0 if t.grad is None else float(t.grad) for t in g.tensors]
    scale = max([scale] + [abs(x) for x in grads])
    for k, (v, want) in enumerate(zip(g.values, grads)):
        _close(v.grad, want, scale=scale, what=f"gradient d out / d n{k} {what}")


@st.composite
def graphs(draw, impl) -> Graph:
    """Random expression DAGs: every operation picks its operands among *all* earlier nodes, so
    sub-expressions are shared (and an operand may even appear twice, as in n2 * n2)."""
    g = Graph()
    leaf = st.one_of(st.just(0.0), st.integers(-3, 3).map(float),
                     st.floats(-3, 3).filter(lambda x: abs(x) >= 1e-3))
    for _ in range(draw(st.integers(1, 4))):
        _add_leaf(impl, g, draw(leaf))
    for _ in range(draw(st.integers(1, 12))):
        n = len(g.values)
        arity = draw(st.sampled_from([1, 2]))
        idx = [draw(st.integers(0, n - 1)) for _ in range(arity)]
        # Bias towards recent nodes so expressions get deep, not only wide.
        if draw(st.booleans()):
            idx[0] = n - 1
        c = draw(st.sampled_from(CONSTANTS))
        pool = BINARY_OPS if arity == 2 else UNARY_OPS + _const_ops(c)
        args = [_num(g.tensors[i]) for i in idx]
        allowed = [op for op in pool if _apply_ok(op, args)]
        if not allowed:  # negation is always allowed, so only a binary pool can be empty
            idx, allowed = idx[:1], [op for op in UNARY_OPS if _apply_ok(op, args[:1])]
        _add_op(g, draw(st.sampled_from(allowed)), idx)
    return g


# ---------------------------------------------------------------------------- single operations

SINGLE_CASES = [
    ("a + b", lambda a, b: a + b, (1.5, -0.5)),
    ("a - b", lambda a, b: a - b, (1.5, -0.5)),
    ("a * b", lambda a, b: a * b, (1.5, -0.5)),
    ("a / b", lambda a, b: a / b, (1.5, -0.5)),
    ("-a", lambda a, b: -a, (1.5, -0.5)),
    ("a ** 3", lambda a, b: a ** 3, (-1.5, 0.0)),
    ("a ** 2 (int exponent)", lambda a, b: a ** 2, (-1.5, 0.0)),
    ("a ** -1.5", lambda a, b: a ** -1.5, (1.7, 0.0)),
    ("a ** 0.5", lambda a, b: a ** 0.5, (2.5, 0.0)),
    ("a.exp()", lambda a, b: a.exp(), (0.7, 0.0)),
    ("a.log()", lambda a, b: a.log(), (0.7, 0.0)),
    ("a.tanh()", lambda a, b: a.tanh(), (-0.8, 0.0)),
    ("a.relu() at a > 0", lambda a, b: a.relu(), (0.8, 0.0)),
    ("a.relu() at a < 0", lambda a, b: a.relu(), (-0.8, 0.0)),
    ("a.relu() at a == 0 (derivative 0, as in torch)", lambda a, b: a.relu(), (0.0, 0.0)),
    ("(a - b).relu() at a == b (difference exactly 0: derivative 0)",
     lambda a, b: (a - b).relu(), (1.25, 1.25)),
    ("(a * b).relu() at b == 0", lambda a, b: (a * b).relu(), (-0.75, 0.0)),
    ("2 + a", lambda a, b: 2 + a, (1.5, 0.0)),
    ("a + 2", lambda a, b: a + 2, (1.5, 0.0)),
    ("3 - a", lambda a, b: 3 - a, (1.5, 0.0)),
    ("a - 3.5", lambda a, b: a - 3.5, (1.5, 0.0)),
    ("2 * a", lambda a, b: 2 * a, (1.5, 0.0)),
    ("a * -0.5", lambda a, b: a * -0.5, (1.5, 0.0)),
    ("2 / a", lambda a, b: 2 / a, (1.5, 0.0)),
    ("a / 4", lambda a, b: a / 4, (1.5, 0.0)),
    ("sum([a, b, a])", lambda a, b: sum([a, b, a]), (1.5, -0.5)),
]


@pytest.mark.parametrize("label, fn, inputs", SINGLE_CASES, ids=[c[0] for c in SINGLE_CASES])
def test_each_operation_matches_torch(impl, label, fn, inputs):
    a, b = (impl.Value(x) for x in inputs)
    ta, tb = (_tensor(x) for x in inputs)
    out = fn(a, b)
    assert isinstance(out, impl.Value), f"{label}: returned a {type(out).__name__}, not a Value"
    expected = fn(ta, tb)
    where = f"for a={inputs[0]!r}, b={inputs[1]!r}"
    _close(out.data, _num(expected), scale=1.0, what=f"value of {label} {where}")
    assert (a.data, b.data) == inputs, f"{label} changed its operands' .data"
    out.backward()
    expected.backward()
    for name, v, t in (("a", a, ta), ("b", b, tb)):
        want = 0.0 if t.grad is None else float(t.grad)
        _close(v.grad, want, scale=1.0, what=f"d({label})/d{name} {where}")


@pytest.mark.points(2)
@settings(max_examples=60)
@given(data=st.data())
def test_random_expression_graphs_match_torch(impl, data):
    g = data.draw(graphs(impl))
    _compare_after_backward(impl, g)


@pytest.mark.points(2)
def test_reused_nodes_accumulate(impl):
    V = impl.Value
    cases = []
    a = V(3.0)
    cases.append(("a * a at a=3", a * a, a, 6.0))
    a = V(3.0)
    cases.append(("a + a at a=3", a + a, a, 2.0))
    a = V(3.0)
    cases.append(("a / a at a=3", a / a, a, 0.0))
    a = V(0.5)
    cases.append(("sum of a used 50 times", sum([a] * 50), a, 50.0))
    a = V(0.5)
    b = a * 2
    cases.append(("c = b * b + b with b = 2a, at a=0.5", b * b + b, a, (2 * 1.0 + 1) * 2))
    a = V(0.3)
    b = a.tanh()
    c = b * a
    d = c + b
    tb = math.tanh(0.3)
    want = (0.3 + 1) * (1 - tb ** 2) + tb  # d = b * (a + 1): dd/da = b' (a + 1) + b
    cases.append(("d = (b * a) + b with b = tanh(a), at a=0.3", d, a, want))
    # b reaches the output directly and through b.tanh(): b may pass its gradient on only after
    # both contributions have arrived (whichever order the children are stored in).
    for label, build in (("b + b.tanh()", lambda b: b + b.tanh()),
                         ("b.tanh() + b", lambda b: b.tanh() + b)):
        a = V(0.4)
        b = a * 2
        want = (1 + (1 - math.tanh(0.8) ** 2)) * 2
        cases.append((f"{label} with b = 2a, at a=0.4", build(b), a, want))
    for label, out, leaf, want in cases:
        out.backward()
        _close(leaf.grad, want, scale=1.0,
               what=f"gradient of {label} (a node used more than once must get the sum of all "
                    "its contributions)")


def _frame_depth() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    return depth


def _deepest_call(fn: Callable[[], Any]) -> int:
    """How many Python frames deeper than its caller ``fn()`` ever went."""
    deepest = depth = 0

    def profile(frame, event, arg):  # noqa: ARG001 - sys.setprofile signature
        nonlocal deepest, depth
        if event == "call":
            depth += 1
            deepest = max(deepest, depth)
        elif event == "return":
            depth -= 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(previous)
    return deepest


@pytest.mark.points(2)
def test_backward_does_not_recurse_once_per_node(impl):
    steps = 2_000
    x, a = impl.Value(0.3), impl.Value(0.25)
    out = x
    for _ in range(steps):
        out = out + a
    limit = sys.getrecursionlimit()
    try:
        deepest = _deepest_call(out.backward)
    except RecursionError:
        raise AssertionError(f"backward() on a chain of {steps:,} operations raised RecursionError: "
                             "build the topological order with an explicit stack") from None
    finally:
        sys.setrecursionlimit(limit)
    assert deepest < 200, (
        f"backward() on a chain of {steps:,} operations went {deepest:,} Python calls deep: it "
        "recurses once per node (raising the recursion limit only hides that); build the "
        "topological order with an explicit stack")
    _close(x.grad, 1.0, scale=1.0, what=f"d out / d x through a chain of {steps:,} additions")
    _close(a.grad, float(steps), scale=1.0,
           what=f"d out / d a, where a is added at every one of {steps:,} steps")


@pytest.mark.points(2)
def test_deep_chain_does_not_hit_the_recursion_limit(impl):
    steps = 10_000
    x, a = impl.Value(0.3), impl.Value(0.001)
    out = x
    val, dx, da = 0.3, 1.0, 0.0  # forward-mode derivatives, by hand
    for _ in range(steps):
        out = (out + a).tanh()
        val = math.tanh(val + 0.001)
        local = 1.0 - val * val
        dx, da = local * dx, local * (da + 1.0)
    limit = sys.getrecursionlimit()
    # Leave room for the test machinery but far less than the chain's depth (20,000 nodes).
    sys.setrecursionlimit(_frame_depth() + 1000)
    try:
        own = sys.getrecursionlimit()
        try:
            out.backward()
        except RecursionError:
            raise AssertionError(
                f"backward() on a chain of {steps:,} operations raised RecursionError: build the "
                "topological order with an explicit stack instead of recursion") from None
        assert sys.getrecursionlimit() == own, (
            "backward() changed the recursion limit: make it iterative instead")
    finally:
        sys.setrecursionlimit(limit)
    _close(out.data, val, scale=1.0, what=f"value at the end of a {steps:,}-step chain")
    _close(out.grad, 1.0, scale=1.0, what="gradient of the output with respect to itself")
    _close(x.grad, dx, scale=0.0, what=f"d out / d x through a {steps:,}-step chain")
    _close(a.grad, da, scale=1.0,
           what=f"d out / d a, where a is used at every one of {steps:,} steps")


def test_backward_twice_accumulates_into_leaves_only(impl):
    x, y = impl.Value(0.5), impl.Value(-1.2)
    m = x * y + x          # an intermediate shared by both outputs
    o1, o2 = m.tanh(), m * m
    o1.backward()
    o2.backward()
    tx, ty = _tensor(0.5), _tensor(-1.2)
    tm = tx * ty + tx
    tm.retain_grad()
    tm.tanh().backward(retain_graph=True)
    (tm * tm).backward()   # torch adds both calls into the leaves' .grad
    do2_dm = 2 * _num(tm)
    what = "after o1.backward() then o2.backward(), with m = x * y + x, o1 = m.tanh(), o2 = m * m"
    _close(o1.grad, 1.0, scale=1.0,
           what=f"o1.grad {what} (o2 does not depend on o1, so o2.backward() leaves it alone)")
    _close(x.grad, float(tx.grad), scale=1.0, what=f"x.grad {what} (leaves add up both calls)")
    _close(y.grad, float(ty.grad), scale=1.0, what=f"y.grad {what} (leaves add up both calls)")
    _close(m.grad, do2_dm, scale=1.0,
           what=f"m.grad {what} (an intermediate holds d o2 / d m of the last call only; a stale "
                "value left from o1's call would also be pushed into x and y again)")


@pytest.mark.parametrize("data", [3, -2, 0, 2.5], ids=repr)
def test_data_and_grad_are_floats(impl, data):
    v = impl.Value(data)
    _close(v.data, float(data), scale=1.0, what=f"Value({data!r}).data")
    _close(v.grad, 0.0, scale=1.0, what=f"Value({data!r}).grad before any backward")
    w = impl.Value(2)
    for label, out, want in ((f"Value({data!r}) * Value(2)", v * w, 2.0 * data),
                             (f"Value({data!r}) + 1", v + 1, data + 1.0),
                             (f"3 * Value({data!r})", 3 * v, 3.0 * data)):
        _close(out.data, want, scale=1.0, what=f"({label}).data")
        _close(out.grad, 0.0, scale=1.0, what=f"({label}).grad before any backward")
    (v * w).backward()
    _close(w.grad, float(data), scale=1.0, what=f"Value(2).grad after (Value({data!r}) * Value(2)).backward()")


def test_pow_rejects_a_value_exponent(impl):
    a, b = impl.Value(2.0), impl.Value(3.0)
    assert_raises_naming(TypeError, "exponent", lambda: a ** b)


@pytest.mark.parametrize("data", ["1.5", [1.5], None, 1 + 2j], ids=repr)
def test_value_rejects_non_numbers(impl, data):
    assert_raises_naming(TypeError, "data", impl.Value, data)
