"""Wrong: a constant submission -- a Value that validates and stores its data as a float, but every
operation returns Value(0.0) and backward() leaves every gradient at 0.0 except the output's."""

from __future__ import annotations

Number = int | float


class Value:
    def __init__(self, data: Number) -> None:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise TypeError(f"data must be an int or a float, got {type(data).__name__}")
        self.data = float(data)
        self.grad = 0.0

    def _zero(self, other: Value | Number = 0.0) -> Value:
        return Value(0.0)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _zero
    __truediv__ = __rtruediv__ = _zero

    def __neg__(self) -> Value:
        return Value(0.0)

    def __pow__(self, exponent: Number) -> Value:
        if isinstance(exponent, bool) or not isinstance(exponent, (int, float)):
            raise TypeError("exponent must be an int or a float constant")
        return Value(0.0)

    def exp(self) -> Value:
        return Value(0.0)

    log = tanh = relu = exp

    def backward(self) -> None:
        self.grad = 1.0
