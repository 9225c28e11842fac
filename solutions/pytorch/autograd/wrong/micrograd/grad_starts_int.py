"""Wrong: .grad starts at the int 0 instead of the float 0.0, so a node that backward never reaches
(or that nothing has reached yet) holds an int where the contract promises a float."""

from __future__ import annotations

import math
from collections.abc import Callable

Number = int | float


class Value:
    """A scalar that records how it was computed, so that ``backward`` can differentiate it."""

    def __init__(self, data: Number, _children: tuple[Value, ...] = (), _op: str = "") -> None:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"data must be an int or a float, got {type(data).__name__}")
        self.data = float(data)
        self.grad = 0
        self._prev = _children
        self._op = _op
        # Adds this node's contribution to its children's .grad, given this node's .grad.
        self._backward: Callable[[], None] = lambda: None

    def __repr__(self) -> str:
        return f"Value(data={self.data:g}, grad={self.grad:g})"

    @staticmethod
    def _lift(other: Value | Number) -> Value:
        if isinstance(other, Value):
            return other
        if isinstance(other, bool) or not isinstance(other, (int, float)):
            return NotImplemented  # type: ignore[return-value]
        return Value(other)

    # -- arithmetic ---------------------------------------------------------------------------
    # Every _backward *adds* (+=): a node used twice receives a contribution from each use.

    def __add__(self, other: Value | Number) -> Value:
        other = self._lift(other)
        if other is NotImplemented:
            return NotImplemented
        out = Value(self.data + other.data, (self, other), "+")

        def _backward() -> None:
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other: Value | Number) -> Value:
        other = self._lift(other)
        if other is NotImplemented:
            return NotImplemented
        out = Value(self.data * other.data, (self, other), "*")

        def _backward() -> None:
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out

    def __pow__(self, exponent: Number) -> Value:
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            raise TypeError(f"exponent must be an int or a float constant, got "
                            f"{type(exponent).__name__}")
        out = Value(self.data ** exponent, (self,), f"**{exponent}")

        def _backward() -> None:
            self.grad += exponent * self.data ** (exponent - 1) * out.grad

        out._backward = _backward
        return out

    def __neg__(self) -> Value:
        return self * -1

    def __sub__(self, other: Value | Number) -> Value:
        return self + (-other)

    def __truediv__(self, other: Value | Number) -> Value:
        return self * other ** -1

    def __radd__(self, other: Number) -> Value:
        return self + other

    def __rmul__(self, other: Number) -> Value:
        return self * other

    def __rsub__(self, other: Number) -> Value:
        return (-self) + other

    def __rtruediv__(self, other: Number) -> Value:
        return self ** -1 * other

    # -- elementwise functions ----------------------------------------------------------------

    def exp(self) -> Value:
        out = Value(math.exp(self.data), (self,), "exp")

        def _backward() -> None:
            self.grad += out.data * out.grad

        out._backward = _backward
        return out

    def log(self) -> Value:
        out = Value(math.log(self.data), (self,), "log")

        def _backward() -> None:
            self.grad += out.grad / self.data

        out._backward = _backward
        return out

    def tanh(self) -> Value:
        out = Value(math.tanh(self.data), (self,), "tanh")

        def _backward() -> None:
            self.grad += (1.0 - out.data ** 2) * out.grad

        out._backward = _backward
        return out

    def relu(self) -> Value:
        out = Value(self.data if self.data > 0 else 0.0, (self,), "relu")

        def _backward() -> None:
            self.grad += (1.0 if self.data > 0 else 0.0) * out.grad

        out._backward = _backward
        return out

    # -- reverse mode ---------------------------------------------------------------------------

    def backward(self) -> None:
        """Set ``.grad`` of every node this one depends on to d(self)/d(node) (leaves: add it)."""
        # Iterative post-order DFS: a recursive one overflows Python's stack on deep graphs.
        # A node is appended only after all its children are; it is marked visited when it is
        # expanded, not when it is pushed (marking on push can append a node before a child of
        # it that is still waiting lower on the stack).
        topo: list[Value] = []
        visited: set[int] = set()
        stack: list[tuple[Value, bool]] = [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                topo.append(node)
                continue
            if id(node) in visited:
                continue
            visited.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in node._prev if id(child) not in visited)
        # Intermediate gradients belong to this call only; leaves accumulate, as in torch.
        for node in topo:
            if node._prev:
                node.grad = 0.0
        self.grad = 1.0
        for node in reversed(topo):
            node._backward()
