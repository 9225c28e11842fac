"""Hidden tests for pytorch.autograd.dynamic_graph (the catalog's contract checks)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, strategies as st
from torch import nn

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params)


def scaling_block(dim: int, factor: float, dtype: torch.dtype = torch.float64) -> nn.Linear:
    """block(h) = factor * h: with factor = -alpha each step shrinks h by (1 - alpha)."""
    block = nn.Linear(dim, dim, bias=False).to(dtype)
    with torch.no_grad():
        block.weight.copy_(factor * torch.eye(dim, dtype=dtype))
    return block


def tol_for(x: torch.Tensor, alpha: float, k: int) -> float:
    """A tol at which the contraction block stops after exactly ``k`` steps, far from a tie.

    The update at step j has norm alpha * (1 - alpha)**(j - 1) * |x|; this tol sits halfway (on a
    log scale) between the norms at steps k - 1 and k, so round-off cannot move the stop.
    """
    norm_k = alpha * (1 - alpha) ** (k - 1) * float(torch.linalg.vector_norm(x))
    return norm_k / math.sqrt(1 - alpha)


def nonlinear_block(dim: int, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    block = nn.Sequential(nn.Linear(dim, dim), nn.Tanh()).double()
    with torch.no_grad():
        for p in block.parameters():
            p.mul_(0.5)  # keep updates moderate so a few steps stay well conditioned
    return block


def unrolled(block: nn.Module, x: torch.Tensor, steps: int) -> torch.Tensor:
    """Independent reference for a fixed path: ``steps`` residual applications of ``block``."""
    h = x
    for _ in range(steps):
        h = h + block(h)
    return h


def call(refiner, x: torch.Tensor, name: str) -> tuple[torch.Tensor, int]:
    result = refiner(x)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise AssertionError(f"{name} returned {type(result).__name__}, expected a tuple "
                             "(h, steps)")
    h, steps = result
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise AssertionError(f"{name}: steps is a {type(steps).__name__}, expected a Python int")
    return h, steps


@pytest.mark.points(2)
@given(batch=st.lists(st.integers(1, 4), max_size=2), dim=st.integers(1, 4),
       alpha=st.sampled_from([0.2, 0.3, 0.5, 0.7, 0.8]), k=st.integers(1, 8),
       max_steps=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_steps_and_output_follow_the_stopping_rule(impl, batch, dim, alpha, k, max_steps, seed):
    x = torch.randn(*batch, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    tol = tol_for(x, alpha, k)
    refiner = impl.Refiner(scaling_block(dim, -alpha), tol=tol, max_steps=max_steps)
    name = (f"Refiner(block: h -> -{alpha} * h, tol={tol:.3g}, max_steps={max_steps})"
            f"(x{tuple(x.shape)} with |x|={float(torch.linalg.vector_norm(x)):.3g})")
    h, steps = call(refiner, x, name)
    expected_steps = min(k, max_steps)
    assert steps == expected_steps, (
        f"{name} took {steps} steps, expected {expected_steps}: the update norm (over the whole "
        f"batch) first drops below tol at step {k}")
    assert_shape(h, tuple(x.shape), name=name)
    assert_close(h, x * (1 - alpha) ** expected_steps, rtol=1e-10, atol=1e-12,
                 name=f"{name}: output after {expected_steps} steps")


@pytest.mark.points(2)
def test_steps_vary_with_input(impl):
    alpha, tol = 0.5, 1e-3
    refiner = impl.Refiner(scaling_block(3, -alpha), tol=tol, max_steps=50)
    direction = torch.tensor([[1.0, -2.0, 2.0]], dtype=torch.float64)  # norm 3
    seen = []
    for k in (1, 4, 9):
        # Scale the input so that the update norm first drops below tol at step k.
        x = direction * tol / tol_for(direction, alpha, k)
        _, steps = call(refiner, x, "Refiner(...)(x)")
        seen.append(steps)
        assert steps == k, (
            f"the same Refiner(tol={tol}) should take {k} steps on an input of norm "
            f"{float(x.norm()):.3g} but took {steps} (steps for growing inputs so far: {seen}); "
            "the loop must stop as soon as the update norm is below tol")


@pytest.mark.parametrize("max_steps", [1, 2, 3, 7])
def test_max_steps_honoured_when_tol_is_zero(impl, max_steps):
    x = torch.randn(2, 3, dtype=torch.float64)
    refiner = impl.Refiner(scaling_block(3, -0.5), tol=0.0, max_steps=max_steps)
    name = f"Refiner(block: h -> -h/2, tol=0, max_steps={max_steps})"
    h, steps = call(refiner, x, name)
    assert steps == max_steps, f"{name} took {steps} steps, expected exactly max_steps={max_steps}"
    assert_close(h, x * 0.5**max_steps, rtol=1e-10, atol=1e-12, name=f"{name}: output")


def test_max_steps_honoured_when_updates_grow(impl):
    x = torch.randn(4, dtype=torch.float64)
    refiner = impl.Refiner(scaling_block(4, 0.5), tol=1e-3, max_steps=5)
    name = "Refiner(block: h -> h/2 (diverging), tol=1e-3, max_steps=5)"
    h, steps = call(refiner, x, name)
    assert steps == 5, f"{name} took {steps} steps, expected max_steps=5"
    assert_close(h, x * 1.5**5, rtol=1e-10, atol=1e-12, name=f"{name}: output")


@pytest.mark.points(2)
@pytest.mark.parametrize("case", ["nonlinear, tol=0, 4 steps", "contraction, stops at step 3"])
def test_input_gradient_matches_finite_differences_on_a_fixed_path(impl, case):
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    if case.startswith("nonlinear"):
        refiner = impl.Refiner(nonlinear_block(3, seed=1), tol=0.0, max_steps=4)
        expected_steps = 4
    else:
        # Finite-difference steps of 1e-6 change |x| far less than the 10% margin around tol.
        refiner = impl.Refiner(scaling_block(3, -0.4), tol=tol_for(x, 0.4, 3), max_steps=10)
        expected_steps = 3
    _, steps = call(refiner, x, f"Refiner ({case})")
    assert steps == expected_steps, (f"Refiner ({case}) took {steps} steps, "
                                     f"expected {expected_steps}")
    check_gradients(lambda t: refiner(t)[0], x, name=f"Refiner ({case}) output w.r.t. x")


@pytest.mark.points(2)
@pytest.mark.parametrize("steps", [1, 3])
def test_parameter_gradients_accumulate_over_all_steps(impl, steps):
    block = nonlinear_block(3, seed=2)
    refiner = impl.Refiner(block, tol=0.0, max_steps=steps)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, generator=gen, dtype=torch.float64)
    weights = torch.randn(2, 3, generator=gen, dtype=torch.float64)
    name = f"Refiner(nonlinear block, tol=0, max_steps={steps})"
    h, _ = call(refiner, x, name)
    assert_close(h, unrolled(block, x, steps), rtol=1e-10, atol=1e-12,
                 name=f"{name}: output vs the block applied {steps} times")
    block.zero_grad(set_to_none=True)
    (h * weights).sum().backward()
    eps = 1e-6
    for pname, p in block.named_parameters():
        if p.grad is None:
            raise AssertionError(f"{name}: the block's parameter {pname!r} got no gradient; the "
                                 "block you were given must be the one applied at every step")
        numerical = torch.zeros_like(p)
        flat, num = p.data.view(-1), numerical.view(-1)
        for i in range(flat.numel()):
            orig = flat[i].item()
            with torch.no_grad():
                flat[i] = orig + eps
                plus = (unrolled(block, x, steps) * weights).sum()
                flat[i] = orig - eps
                minus = (unrolled(block, x, steps) * weights).sum()
                flat[i] = orig
            num[i] = (plus - minus) / (2 * eps)
        assert_close(p.grad, numerical, rtol=1e-5, atol=1e-7,
                     name=f"{name}: gradient of block.{pname} (finite differences of {steps} "
                          "steps with the shared block)")


@pytest.mark.points(2)
@pytest.mark.parametrize("max_steps", [1, 5, 40])
def test_one_parameter_set_whatever_the_number_of_steps(impl, max_steps):
    block = nonlinear_block(4, seed=4)
    refiner = impl.Refiner(block, tol=1e-4, max_steps=max_steps)
    refiner(torch.randn(3, 4, dtype=torch.float64))
    own = {id(p) for p in block.parameters()}
    got = list(refiner.parameters())
    name = f"Refiner(block, max_steps={max_steps})"
    assert len(got) == len(own) and {id(p) for p in got} == own, (
        f"{name}.parameters() yields {len(got)} tensors, expected exactly the block's own "
        f"{len(own)} parameters (the same objects): one shared block, not a copy per step and "
        "not an unregistered attribute")
    assert len(refiner.state_dict()) == len(block.state_dict()), (
        f"{name}.state_dict() has {len(refiner.state_dict())} entries, the block has "
        f"{len(block.state_dict())}")


@pytest.mark.parametrize("device", device_params())
def test_output_stays_on_device(impl, device):
    refiner = impl.Refiner(scaling_block(3, -0.5, dtype=torch.float32), tol=1e-2).to(device)
    x = torch.randn(2, 3, device=device, requires_grad=True)
    h, steps = call(refiner, x, f"Refiner on {device}")
    assert_device(h, device, name=f"Refiner on {device}")
    assert h.dtype == x.dtype, f"Refiner on {device}: output dtype {h.dtype}, input {x.dtype}"
    assert 1 <= steps <= 50, f"Refiner on {device}: steps={steps} outside [1, max_steps=50]"
    h.sum().backward()
    assert x.grad is not None, (f"Refiner on {device}: x requires grad but got no gradient (the "
                                "steps must stay in the autograd graph)")
    assert_device(x.grad, device, name=f"gradient of x on {device}")


@pytest.mark.parametrize("kwargs, argname", [
    ({"tol": -1e-3}, "tol"),
    ({"tol": float("nan")}, "tol"),
    ({"tol": float("-inf")}, "tol"),
    ({"max_steps": 0}, "max_steps"),
    ({"max_steps": -2}, "max_steps"),
], ids=str)
def test_rejects_bad_arguments(impl, kwargs, argname):
    assert_raises_naming(ValueError, argname, impl.Refiner, scaling_block(2, -0.5), **kwargs)


@pytest.mark.parametrize("max_steps", [2.5, 2.0, "3", None], ids=repr)
def test_rejects_non_int_max_steps(impl, max_steps):
    assert_raises_naming(ValueError, "max_steps", impl.Refiner, scaling_block(2, -0.5),
                         max_steps=max_steps)


def test_tol_zero_never_stops_early_even_on_a_zero_update(impl):
    x = torch.randn(2, 3, dtype=torch.float64)
    refiner = impl.Refiner(scaling_block(3, 0.0), tol=0.0, max_steps=5)
    name = "Refiner(block: h -> 0 * h, tol=0, max_steps=5)"
    h, steps = call(refiner, x, name)
    assert steps == 5, (f"{name} took {steps} steps, expected 5: with tol=0 the loop never stops "
                        "early, not even when an update is exactly zero (||u|| < 0 never holds)")
    assert_close(h, x, rtol=0, atol=0, name=f"{name}: output")


def test_an_update_norm_equal_to_tol_does_not_stop(impl):
    x = torch.tensor([3.0, 4.0], dtype=torch.float64)  # updates -x/2, norms 2.5, 1.25, ... exactly
    refiner = impl.Refiner(scaling_block(2, -0.5), tol=2.5, max_steps=10)
    name = "Refiner(block: h -> -h/2, tol=2.5)(x=[3, 4]) (first update norm exactly 2.5)"
    h, steps = call(refiner, x, name)
    assert steps == 2, (f"{name} took {steps} steps, expected 2: the stop needs ||u|| < tol "
                        "strictly, and the first update's norm equals tol")
    assert_close(h, x / 4, rtol=0, atol=0, name=f"{name}: output")


def test_default_max_steps_is_50(impl):
    x = torch.randn(2, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    refiner = impl.Refiner(scaling_block(3, 0.0), tol=0.0)  # tol=0 never stops early
    name = "Refiner(block: h -> 0 * h, tol=0) with the default max_steps"
    _, steps = call(refiner, x, name)
    assert steps == 50, f"{name} took {steps} steps, expected the default max_steps=50"


def test_default_tol_is_1e_minus_4(impl):
    alpha, k = 0.5, 6
    direction = torch.tensor([[1.0, -2.0, 2.0]], dtype=torch.float64)
    # Scaled so that the update norm first drops below 1e-4 at step k, far from a tie.
    x = direction * 1e-4 / tol_for(direction, alpha, k)
    refiner = impl.Refiner(scaling_block(3, -alpha), max_steps=20)
    name = (f"Refiner(block: h -> -{alpha} * h, max_steps=20) with the default tol "
            f"(x with |x|={float(torch.linalg.vector_norm(x)):.3g})")
    _, steps = call(refiner, x, name)
    assert steps == k, (f"{name} took {steps} steps, expected {k}: with the default tol=1e-4 the "
                        f"update norm first drops below tol at step {k}")
