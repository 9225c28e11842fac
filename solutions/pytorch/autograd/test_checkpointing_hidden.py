"""Hidden tests for pytorch.autograd.checkpointing (the catalog's contract checks)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from grader.checks import (assert_close, assert_device, assert_raises_naming, autocast,
                           check_gradients, count_saved_tensors, device_params)


class Recorder(nn.Module):
    """Linear + tanh that logs its index each time its forward runs (called or .forward()'d)."""

    def __init__(self, index: int, dim: int, log: list[int]) -> None:
        super().__init__()
        self.index, self.log = index, log
        self.linear = nn.Linear(dim, dim)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        self.log.append(self.index)
        return torch.tanh(self.linear(h))


def make_blocks(n: int, dim: int, *, seed: int = 0, dropout: float = 0.0,
                dtype: torch.dtype = torch.float64, device: str = "cpu") -> list[nn.Module]:
    torch.manual_seed(seed)
    layers = []
    for _ in range(n):
        parts = [nn.Linear(dim, dim)] + ([nn.Dropout(dropout)] if dropout else []) + [nn.Tanh()]
        layers.append(nn.Sequential(*parts).to(device, dtype))
    return layers


def plain_forward(blocks, x: torch.Tensor) -> torch.Tensor:
    for block in blocks:
        x = block(x)
    return x


def parameters_of(blocks) -> list[nn.Parameter]:
    return [p for block in blocks for p in block.parameters()]


def forward_backward(fn, blocks, x: torch.Tensor, upstream: torch.Tensor):
    """Output, grad of x (or None) and parameter grads after ``fn(blocks, x)`` and backward."""
    for p in parameters_of(blocks):
        p.grad = None
    if x.grad is not None:
        x.grad = None
    out = fn(blocks, x)
    if not out.requires_grad:
        raise AssertionError("checkpointed_forward returned an output that does not require grad "
                             f"(x.requires_grad={x.requires_grad}), so backward cannot reach the "
                             "blocks' parameters; the plain forward's output does require grad")
    out.backward(upstream)
    return out.detach(), x.grad, [p.grad for p in parameters_of(blocks)]


def assert_grads_equal(actual: list, expected: list, *, name: str, rtol: float = 1e-10,
                       atol: float = 1e-12) -> None:
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a is None:
            raise AssertionError(f"{name}: parameter {i} got no gradient (grad is None) but the "
                                 "plain forward gives it one")
        assert_close(a, e, rtol=rtol, atol=atol, name=f"{name}: gradient of parameter {i}")


CONTAINERS = {"list": list, "ModuleList": nn.ModuleList, "Sequential": lambda b: nn.Sequential(*b)}
containers = st.sampled_from(list(CONTAINERS.values()))


@st.composite
def stacks(draw):
    n = draw(st.integers(1, 6))
    return n, draw(st.integers(1, n))


@pytest.mark.points(2)
@given(stack=stacks(), batch=st.lists(st.integers(1, 4), max_size=2), dim=st.integers(1, 4),
       x_grad=st.booleans(), wrap=containers, seed=st.integers(0, 2**16))
def test_output_and_gradients_equal_plain_forward(impl, stack, batch, dim, x_grad, wrap, seed):
    n, segments = stack
    blocks = make_blocks(n, dim, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, dim, generator=gen, dtype=torch.float64).requires_grad_(x_grad)
    upstream = torch.randn(*batch, dim, generator=gen, dtype=torch.float64)
    name = f"checkpointed_forward({n} blocks, x{tuple(x.shape)}, segments={segments})"
    out_p, gx_p, gp_p = forward_backward(plain_forward, blocks, x, upstream)
    out_c, gx_c, gp_c = forward_backward(
        lambda b, t: impl.checkpointed_forward(wrap(b), t, segments), blocks, x, upstream)
    assert_close(out_c, out_p, rtol=1e-10, atol=1e-12, name=name)
    if x_grad:
        if gx_c is None:
            raise AssertionError(f"{name}: x requires grad but got no gradient")
        assert_close(gx_c, gx_p, rtol=1e-10, atol=1e-12, name=f"{name}: gradient of x")
    assert_grads_equal(gp_c, gp_p, name=name)


@pytest.mark.parametrize("container", sorted(CONTAINERS))
def test_every_container_kind_gives_the_plain_forward(impl, container):
    blocks = make_blocks(5, 3, seed=2)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(4, 3, dtype=torch.float64)
    name = f"checkpointed_forward({container} of 5 blocks, x, segments=2)"
    out_p, gx_p, gp_p = forward_backward(plain_forward, blocks, x, upstream)
    out_c, gx_c, gp_c = forward_backward(
        lambda b, t: impl.checkpointed_forward(CONTAINERS[container](b), t, 2), blocks, x, upstream)
    assert_close(out_c, out_p, rtol=1e-10, atol=1e-12, name=name)
    assert_close(gx_c, gx_p, rtol=1e-10, atol=1e-12, name=f"{name}: gradient of x")
    assert_grads_equal(gp_c, gp_p, name=name)


@pytest.mark.points(2)
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_input_gradient_matches_finite_differences(impl, segments):
    blocks = make_blocks(3, 3, seed=segments)
    x = torch.randn(2, 3, dtype=torch.float64)
    check_gradients(lambda t: impl.checkpointed_forward(blocks, t, segments), x,
                    name=f"checkpointed_forward(3 blocks, x, segments={segments})")


@pytest.mark.points(2)
def test_parameters_get_gradients_when_input_does_not_require_grad(impl):
    blocks = make_blocks(4, 3, seed=1)
    x = torch.randn(5, 3, dtype=torch.float64)  # e.g. a batch of data: no requires_grad
    upstream = torch.randn(5, 3, dtype=torch.float64)
    _, _, expected = forward_backward(plain_forward, blocks, x, upstream)
    out = impl.checkpointed_forward(blocks, x, 2)
    if not out.requires_grad:
        raise AssertionError("checkpointed_forward(blocks, x, 2) with an x that does not require "
                             "grad returned an output that does not require grad, so the blocks' "
                             "parameters can get no gradient (the reentrant checkpoint does this)")
    _, _, actual = forward_backward(lambda b, t: impl.checkpointed_forward(b, t, 2), blocks, x,
                                    upstream)
    assert_grads_equal(actual, expected,
                       name="checkpointed_forward(blocks, x without requires_grad, segments=2)")
    try:
        via_grad = torch.autograd.grad(impl.checkpointed_forward(blocks, x, 2), parameters_of(blocks),
                                       upstream)
    except RuntimeError as exc:
        raise AssertionError("torch.autograd.grad of checkpointed_forward(blocks, x without "
                             f"requires_grad, 2) w.r.t. the parameters raised: {exc!s:.200}") from None
    assert_grads_equal(list(via_grad), expected, name="torch.autograd.grad of checkpointed_forward("
                       "blocks, x without requires_grad, segments=2) w.r.t. the parameters")


@pytest.mark.points(2)
@pytest.mark.parametrize("x_requires_grad", [True, False])
@pytest.mark.parametrize("segments", [2, 4, 8])
def test_saves_fewer_tensors_than_plain_forward(impl, segments, x_requires_grad):
    n, dim = 8, 4
    blocks = make_blocks(n, dim, dtype=torch.float32)
    x = torch.randn(3, dim, requires_grad=x_requires_grad)
    h = torch.randn(3, dim, requires_grad=True)
    _, plain = count_saved_tensors(plain_forward, blocks, x)
    _, per_block = count_saved_tensors(blocks[-1], h)
    out, saved = count_saved_tensors(impl.checkpointed_forward, blocks, x, segments)
    call = f"checkpointed_forward(8 blocks, x, segments={segments}), x.requires_grad={x_requires_grad}"
    if not out.requires_grad:
        raise AssertionError(f"{call}: the output does not require grad (was the forward run "
                             "under no_grad?)")
    # A checkpointed segment saves its input only; the last segment may run without checkpoint.
    bound = plain - 1 if segments < n else 2 * n + per_block
    assert saved <= bound, (
        f"{call} saved {saved} tensors for "
        f"backward; the plain forward saves {plain} ({per_block} per block), and with every "
        f"segment but possibly the last checkpointed it should save at most {bound}")


def recompute_groups(log: list[int]) -> list[list[int]]:
    """Split the blocks run during backward into runs of consecutive indices, in block order."""
    groups: list[list[int]] = []
    for i in log:
        if groups and i == groups[-1][-1] + 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    return sorted(groups)


@pytest.mark.points(2)
@pytest.mark.parametrize("n, segments", [(6, 2), (6, 3), (7, 3), (5, 5), (4, 1), (7, 6)])
def test_backward_recomputes_the_asked_segments(impl, n, segments):
    log: list[int] = []
    torch.manual_seed(n + segments)
    blocks = nn.ModuleList(Recorder(i, 3, log) for i in range(n))
    x = torch.randn(2, 3, requires_grad=True)
    out = impl.checkpointed_forward(blocks, x, segments)
    forward_calls = len(log)
    out.sum().backward()
    groups = recompute_groups(log[forward_calls:])
    covered = [i for g in groups for i in g]
    tail = n - len(covered)
    ok = covered == list(range(len(covered))) and (
        (tail == 0 and len(groups) == segments) or (tail > 0 and len(groups) == segments - 1))
    assert ok, (
        f"checkpointed_forward({n} blocks, x, segments={segments}): during backward the blocks "
        f"re-ran in the groups {groups} (block indices; blocks not listed were not recomputed). "
        f"Expected {segments} contiguous checkpointed segments covering the blocks in order, of "
        f"which the last may run without checkpoint (then it is not recomputed)")


@pytest.mark.points(2)
@pytest.mark.parametrize("device", device_params())
def test_dropout_recomputation_replays_the_same_randomness(impl, device):
    n, dim, segments = 4, 16, 2
    blocks = make_blocks(n, dim, seed=3, dropout=0.5, device=device)
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(8, dim, generator=gen, dtype=torch.float64).to(device).requires_grad_(True)
    upstream = torch.randn(8, dim, generator=gen, dtype=torch.float64).to(device)
    results = []
    for fn in (plain_forward, lambda b, t: impl.checkpointed_forward(b, t, segments)):
        torch.manual_seed(1234)
        out, gx, gp = forward_backward(fn, blocks, x, upstream)
        after = torch.rand(4, device=device)
        results.append((out, gx.clone(), gp, after))
    (out_p, gx_p, gp_p, after_p), (out_c, gx_c, gp_c, after_c) = results
    name = "checkpointed_forward with dropout (same seed as the plain forward)"
    assert_close(out_c, out_p, rtol=1e-10, atol=1e-12, name=f"{name}: output")
    assert_close(gx_c, gx_p, rtol=1e-10, atol=1e-12,
                 name=f"{name}: gradient of x (a different dropout mask in the recomputation?)")
    assert_grads_equal(gp_c, gp_p, name=f"{name} (a different dropout mask in the recomputation?)")
    assert_close(after_c, after_p, rtol=0, atol=0,
                 name=f"{name}: torch.rand after backward (the global RNG state must end where "
                      "the plain forward and backward leave it)")


@settings(max_examples=10)
@given(segments=st.integers(1, 3))
def test_autocast_output_dtype_and_gradients(impl, segments):
    blocks = make_blocks(3, 8, seed=5, dtype=torch.float32)
    x = torch.randn(4, 8, requires_grad=True)
    upstream = torch.randn(4, 8)
    with autocast("cpu") as low:
        out_p = plain_forward(blocks, x)
        out_c = impl.checkpointed_forward(blocks, x, segments)
    name = f"checkpointed_forward under torch.autocast('cpu') (segments={segments})"
    assert out_c.dtype == out_p.dtype == low, (
        f"{name}: output dtype {out_c.dtype}, the plain forward gives {out_p.dtype}")
    _, _, gp_p = forward_backward(lambda b, t: out_p, blocks, x, upstream)
    _, _, gp_c = forward_backward(lambda b, t: out_c, blocks, x, upstream)
    assert_grads_equal(gp_c, gp_p, name=name, rtol=1.6e-2, atol=1e-3)


@pytest.mark.parametrize("device", device_params())
def test_output_stays_on_input_device(impl, device):
    blocks = make_blocks(3, 4, dtype=torch.float32, device=device)
    x = torch.randn(2, 4, device=device, requires_grad=True)
    out = impl.checkpointed_forward(blocks, x, 3)
    assert_device(out, device, name="checkpointed_forward(blocks, x, 3)")
    out.sum().backward()
    assert_device(x.grad, device, name="gradient of x")


@pytest.mark.parametrize("segments", [0, -1, 4, 10])
def test_rejects_out_of_range_segments(impl, segments):
    blocks = make_blocks(3, 4, dtype=torch.float32)
    assert_raises_naming(ValueError, "segments", impl.checkpointed_forward, blocks,
                         torch.randn(2, 4), segments)


@pytest.mark.parametrize("segments", [1.5, 2.0, "2", None])
def test_rejects_non_int_segments(impl, segments):
    blocks = make_blocks(3, 4, dtype=torch.float32)
    assert_raises_naming(ValueError, "segments", impl.checkpointed_forward, blocks,
                         torch.randn(2, 4), segments)
