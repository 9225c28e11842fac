"""Public tests for pytorch.autograd.dynamic_graph: a few quick examples. Run with
``pytest exercises/pytorch/autograd/test_dynamic_graph.py``."""

import torch
from torch import nn

from grader.checks import assert_close


def halving_block(dim: int) -> nn.Linear:
    """block(h) = -h / 2, so each step halves h and the update norm halves too."""
    block = nn.Linear(dim, dim, bias=False)
    with torch.no_grad():
        block.weight.copy_(-0.5 * torch.eye(dim))
    return block


def test_stops_when_the_update_is_small(impl):
    refiner = impl.Refiner(halving_block(2), tol=0.1, max_steps=50)
    x = torch.tensor([3.0, 4.0])  # norm 5: updates have norms 2.5, 1.25, 0.625, ...
    h, steps = refiner(x)
    # Update norms 2.5 * 0.5**(k-1): the first one below 0.1 is at step 6 (0.078).
    assert steps == 6, f"Refiner(tol=0.1) on x=[3, 4] took {steps} steps, expected 6"
    assert_close(h, x * 0.5**6, name="refined output after 6 steps")


def test_larger_input_needs_more_steps(impl):
    refiner = impl.Refiner(halving_block(2), tol=0.1, max_steps=50)
    _, small = refiner(torch.tensor([0.3, 0.4]))
    _, large = refiner(torch.tensor([30.0, 40.0]))
    assert small < large, (f"steps for |x|=0.5: {small}, for |x|=50: {large}; expected fewer "
                           "for the small input")


def test_max_steps_caps_the_loop(impl):
    refiner = impl.Refiner(halving_block(3), tol=0.0, max_steps=4)
    h, steps = refiner(torch.ones(2, 3))
    assert steps == 4, f"Refiner(tol=0, max_steps=4) took {steps} steps, expected 4"
    assert_close(h, torch.full((2, 3), 0.5**4), name="refined output after 4 steps")
