"""Public tests for pytorch.autograd.micrograd: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_micrograd.py``."""

import math


def _close(got: float, want: float, what: str) -> None:
    assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (
        f"{what}: got {got}, expected {want}")


def test_forward_values(impl):
    a, b = impl.Value(2.0), impl.Value(-3.0)
    _close((a * b + a).data, -4.0, "(a * b + a).data for a=2, b=-3")
    _close((a / b - 1).data, 2.0 / -3.0 - 1, "(a / b - 1).data")
    _close((a ** 2).tanh().data, math.tanh(4.0), "(a ** 2).tanh().data")
    _close(b.relu().data, 0.0, "b.relu().data for b=-3")


def test_gradients_of_a_small_expression(impl):
    # f = (a * b + b.exp()).log(); df/da = b / u, df/db = (a + e^b) / u with u = a*b + e^b
    a, b = impl.Value(1.5), impl.Value(0.5)
    f = (a * b + b.exp()).log()
    f.backward()
    u = 1.5 * 0.5 + math.exp(0.5)
    _close(f.data, math.log(u), "f.data")
    _close(a.grad, 0.5 / u, "df/da")
    _close(b.grad, (1.5 + math.exp(0.5)) / u, "df/db")


def test_a_reused_value_collects_every_contribution(impl):
    a = impl.Value(3.0)
    f = a * a + a  # df/da = 2a + 1
    f.backward()
    _close(a.grad, 7.0, "d(a * a + a)/da at a=3")
