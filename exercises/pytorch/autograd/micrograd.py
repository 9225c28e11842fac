"""Reverse-mode automatic differentiation from scratch, on scalars.

The question
------------
"How does autograd work inside?" The honest answer is small enough to write in an interview.
Every operation on a tracked value creates a new node that remembers its inputs and how to pass a
gradient back to them (a local chain-rule step). ``backward()`` on the final node orders the graph
so that each node comes after every node that uses it (a topological order, reversed), seeds the
output's gradient with 1 and runs the local steps in that order. A node used in several places
receives one contribution from each use, so contributions are *added*. PyTorch does the same with
tensors instead of scalars (its nodes are the ``grad_fn`` objects) and with a C++ engine that
never recurses.

Your task
---------
Write ``Value``, a scalar (a Python float) that records the operations applied to it, and its
``backward()``.

Contract
--------
- ``Value(data)`` takes an ``int`` or a ``float`` (anything else, a string or a list say, raises
  ``TypeError`` naming ``data``); ``.data`` is the value as a float and ``.grad`` a float that
  starts at ``0.0``. Your constructor may take extra arguments of your own after ``data``.
- Operations return a new ``Value`` and never change their operands' ``.data``:
  ``a + b``, ``a - b``, ``a * b``, ``a / b``, ``-a``, where either side may also be a plain
  ``int``/``float`` (``2 * a``, ``1 - a``, ``1 / a``, and ``sum(values)``, which starts from
  ``0 + ...``); ``a ** c`` for an ``int``/``float`` constant ``c`` (a ``Value`` exponent raises
  ``TypeError`` naming ``exponent``); and the methods ``a.exp()``, ``a.log()``, ``a.tanh()``,
  ``a.relu()`` (whose derivative at exactly ``0`` is ``0``, as in PyTorch). Outside an
  operation's domain (``log`` of a non-positive number, division by zero) the behaviour is yours
  to choose; the tests stay inside it.
- ``out.backward()`` fills in gradients of ``out`` with respect to every node it depends on, with
  PyTorch's semantics:

  * results of operations (non-leaf nodes), ``out`` included: afterwards their ``.grad`` is
    ``d out / d node`` from *this* call: it is recomputed from zero on every call.
  * leaves (the ``Value(...)`` you create yourself): ``d out / d leaf`` is *added* to ``.grad``,
    so two ``backward()`` calls (on the same or on different outputs) accumulate, like
    ``tensor.grad`` in PyTorch; the caller resets with ``leaf.grad = 0.0``.
  * nodes that ``out`` does not depend on are left alone.

  Values and gradients must agree with ``torch.autograd`` in float64 (to round-off).
- Graphs of any depth work: ``backward()`` on a chain of 10,000 operations (or 100,000) must not
  hit Python's recursion limit. Do not recurse once per node, and do not raise the limit.

Hints
-----
- Give each node its children and a small closure that adds its local gradient contribution to
  them. Why must it be ``child.grad += ...`` and not ``child.grad = ...``? Think of ``a * a``.
- Build the topological order with an explicit stack (iterative depth-first search). Careful: a
  node may only be placed after *all* of its children, including a child that is still waiting
  on the stack.
- ``a - b`` is ``a + (-b)`` and ``a / b`` is ``a * b ** -1``: few primitive operations, few
  backward rules to get right.
"""

from __future__ import annotations

from typing import Union

Number = Union[int, float]


class Value:
    """A scalar that records how it was computed, so that ``backward`` can differentiate it."""

    def __init__(self, data: Number) -> None:
        raise NotImplementedError

    def __add__(self, other: "Value | Number") -> "Value":
        raise NotImplementedError

    def __radd__(self, other: Number) -> "Value":
        raise NotImplementedError

    def __sub__(self, other: "Value | Number") -> "Value":
        raise NotImplementedError

    def __rsub__(self, other: Number) -> "Value":
        raise NotImplementedError

    def __mul__(self, other: "Value | Number") -> "Value":
        raise NotImplementedError

    def __rmul__(self, other: Number) -> "Value":
        raise NotImplementedError

    def __truediv__(self, other: "Value | Number") -> "Value":
        raise NotImplementedError

    def __rtruediv__(self, other: Number) -> "Value":
        raise NotImplementedError

    def __neg__(self) -> "Value":
        raise NotImplementedError

    def __pow__(self, exponent: Number) -> "Value":
        raise NotImplementedError

    def exp(self) -> "Value":
        raise NotImplementedError

    def log(self) -> "Value":
        raise NotImplementedError

    def tanh(self) -> "Value":
        raise NotImplementedError

    def relu(self) -> "Value":
        raise NotImplementedError

    def backward(self) -> None:
        """Fill in d(self)/d(node) for every node this value depends on (see the contract)."""
        raise NotImplementedError
