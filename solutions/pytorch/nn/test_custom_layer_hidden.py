"""Hidden tests for pytorch.nn.custom_layer (the catalog's contract checks)."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn
from torch.func import functional_call

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    autocast,
    check_gradients,
    device_params,
)

sizes = st.integers(1, 6)
ranks = st.integers(1, 4)
alphas = st.sampled_from([0.5, 1.0, 8.0, 16.0])


def make_base(in_f, out_f, *, bias=True, seed=0, dtype=torch.float32, device="cpu") -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(in_f, out_f, bias=bias, dtype=dtype, device=device)


def randomise_B(layer, seed: int = 1) -> None:
    """A trained-looking update: B no longer zero."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        layer.lora_B.copy_(torch.randn(layer.lora_B.shape, generator=gen, dtype=layer.lora_B.dtype))


def expected_forward(layer, base_w, base_b, x, alpha, rank):
    """The contract's formula, from the layer's own A and B."""
    A, B = layer.lora_A.detach(), layer.lora_B.detach()
    return F.linear(x, base_w, base_b) + (alpha / rank) * (x @ A.T @ B.T)


def describe(in_f, out_f, rank, alpha, bias=True) -> str:
    return f"LoRALinear(nn.Linear({in_f}, {out_f}, bias={bias}), rank={rank}, alpha={alpha})"


def test_factor_shapes_and_initialisation(impl):
    base = make_base(7, 5)
    layer = impl.LoRALinear(base, 3, 6.0)
    name = describe(7, 5, 3, 6.0)
    assert layer.base is base, f"{name}.base must be the Linear that was passed in, not a copy"
    for pname, shape in (("lora_A", (3, 7)), ("lora_B", (5, 3))):
        p = getattr(layer, pname, None)
        assert isinstance(p, nn.Parameter), f"{name}.{pname} is {type(p).__name__}, expected nn.Parameter"
        assert_shape(p, shape, name=f"{name}.{pname}")
    assert bool((layer.lora_B == 0).all()), f"{name}.lora_B must start at zero"
    assert bool(layer.lora_A.detach().abs().sum() > 0), (
        f"{name}.lora_A is all zero at initialisation: B would never receive a gradient")


# A value no initialisation scheme would draw for more than a stray entry.
_LEFTOVER = 12345.5


@pytest.mark.points(0.25)
@pytest.mark.parametrize(("rank", "in_f"), [(16, 64), (8, 128), (4, 256), (2, 512)], ids=str)
def test_lora_A_values_are_drawn_not_left_in_memory(impl, rank, in_f):
    """Initialised randomly: the layer draws lora_A's values, whatever its memory held. A block of
    lora_A's size is filled with a marker value and freed just before, so a layer that only
    allocates lora_A (``torch.empty``) would likely get that block back and show the marker (but
    for the few bytes the allocator writes into a freed block: hence "most entries", not "all")."""
    base = make_base(in_f, 4)
    torch.full((rank, in_f), _LEFTOVER).add_(0)  # freed at once: the allocator may hand it out next
    layer = impl.LoRALinear(base, rank, 2.0)
    A = layer.lora_A.detach()
    name = describe(in_f, 4, rank, 2.0)
    assert bool(torch.isfinite(A).all()), f"{name}.lora_A holds inf or NaN at initialisation"
    leftover = int((A == _LEFTOVER).sum())
    assert leftover <= A.numel() // 2, (
        f"{name}.lora_A has {leftover} of its {A.numel()} entries equal to what its memory held "
        "before, at initialisation: it must be initialised randomly (was it allocated and never "
        "filled?)")


@pytest.mark.points(2)
@given(in_f=sizes, out_f=sizes, rank=ranks, alpha=alphas, bias=st.booleans(),
       lead=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 2**16))
def test_output_equals_base_at_init(impl, in_f, out_f, rank, alpha, bias, lead, seed):
    base = make_base(in_f, out_f, bias=bias, seed=seed, dtype=torch.float64)
    layer = impl.LoRALinear(base, rank, alpha)
    x = torch.randn(*lead, in_f, dtype=torch.float64)
    name = describe(in_f, out_f, rank, alpha, bias) + f"(x{tuple(x.shape)}) at initialisation"
    assert_close(layer(x), base(x), rtol=1e-12, atol=1e-12, name=name)


@pytest.mark.points(2)
@given(in_f=sizes, out_f=sizes, rank=ranks, alpha=alphas, bias=st.booleans(),
       lead=st.lists(st.integers(1, 3), max_size=2), seed=st.integers(0, 2**16))
@example(in_f=5, out_f=4, rank=3, alpha=8.0, bias=True, lead=[2], seed=1)  # alpha / rank != alpha
@example(in_f=5, out_f=4, rank=1, alpha=8.0, bias=False, lead=[], seed=2)  # no bias, no lead dims
def test_forward_matches_formula_and_merge(impl, in_f, out_f, rank, alpha, bias, lead, seed):
    base = make_base(in_f, out_f, bias=bias, seed=seed, dtype=torch.float64)
    w0 = base.weight.detach().clone()
    b0 = base.bias.detach().clone() if bias else None
    layer = impl.LoRALinear(base, rank, alpha)
    randomise_B(layer, seed)
    x = torch.randn(*lead, in_f, dtype=torch.float64)
    name = describe(in_f, out_f, rank, alpha, bias)
    out = layer(x)
    expected = expected_forward(layer, w0, b0, x, alpha, rank)
    assert_close(out, expected, rtol=1e-10, atol=1e-10,
                 name=f"{name}(x{tuple(x.shape)}) with a non-zero B (base(x) + alpha/rank * x A^T B^T)")
    merged = layer.merge()
    assert type(merged) is nn.Linear, f"{name}.merge() returned {type(merged).__name__}, not nn.Linear"
    assert (merged.bias is not None) == bias, (
        f"{name}.merge(): the merged Linear must have a bias exactly when the base has one")
    assert_close(merged.weight.detach(), w0 + (alpha / rank) * layer.lora_B.detach() @ layer.lora_A.detach(),
                 rtol=1e-10, atol=1e-10, name=f"{name}.merge().weight (W + alpha/rank * B @ A)")
    assert_close(merged(x), expected, rtol=1e-10, atol=1e-10, name=f"{name}.merge()(x) vs the LoRA layer")


def test_merge_leaves_layer_and_base_alone(impl):
    base = make_base(5, 4, seed=3)
    w0 = base.weight.detach().clone()
    layer = impl.LoRALinear(base, 2, 8.0)
    randomise_B(layer)
    x = torch.randn(6, 5)
    before = layer(x).detach().clone()
    assert_close(before, expected_forward(layer, w0, base.bias.detach(), x, 8.0, 2), rtol=1e-5,
                 atol=1e-5, name="LoRA layer output before merge() (base(x) + alpha/rank * x A^T B^T)")
    merged = layer.merge()
    assert_close(base.weight.detach(), w0, name="base.weight after merge() (merge must not modify the base)")
    assert_close(layer(x), before, name="LoRA layer output after merge() (must not change)")
    with torch.no_grad():
        merged.weight.add_(1.0)
        if merged.bias is not None:
            merged.bias.add_(1.0)
    assert_close(layer(x), before, name="LoRA layer output after changing the merged Linear "
                                        "(merge() must return an independent copy)")


@pytest.mark.points(2)
def test_only_lora_factors_trainable_and_counted(impl):
    base = make_base(9, 4)
    layer = impl.LoRALinear(base, 3, 2.0)
    trainable = sorted(n for n, p in layer.named_parameters() if p.requires_grad)
    assert trainable == ["lora_A", "lora_B"], (
        f"trainable parameters are {trainable}, expected ['lora_A', 'lora_B'] (freeze the base)")
    assert not base.weight.requires_grad and not base.bias.requires_grad, (
        "base.weight / base.bias still require grad: freeze the base in place")
    n_trainable = sum(p.numel() for p in layer.parameters() if p.requires_grad)
    n_total = sum(p.numel() for p in layer.parameters())
    assert n_trainable == 3 * (9 + 4), f"{n_trainable} trainable values, expected rank * (in + out) = 39"
    assert n_total == 9 * 4 + 4 + 39, (f"{n_total} parameter values in total, expected 79 (the frozen "
                                       "base stays registered, plus the LoRA factors)")


@pytest.mark.points(2)
def test_gradients_reach_only_lora_factors(impl):
    base = make_base(5, 3)
    layer = impl.LoRALinear(base, 2, 4.0)
    x = torch.randn(8, 5, requires_grad=True)
    layer(x).pow(2).sum().backward()
    assert base.weight.grad is None and base.bias.grad is None, "the frozen base received a gradient"
    assert layer.lora_B.grad is not None and bool(layer.lora_B.grad.abs().sum() > 0), (
        "lora_B received no (or an all-zero) gradient at initialisation; is lora_A all zero?")
    assert layer.lora_A.grad is not None, "lora_A received no gradient"
    assert x.grad is not None, "the input received no gradient"


@pytest.mark.points(2)
@settings(max_examples=6)
@given(in_f=st.integers(1, 3), out_f=st.integers(1, 3), rank=st.integers(1, 2), bias=st.booleans())
def test_gradients_match_finite_differences(impl, in_f, out_f, rank, bias):
    layer = impl.LoRALinear(make_base(in_f, out_f, bias=bias, dtype=torch.float64), rank, 2.0)
    randomise_B(layer)
    A, B = layer.lora_A.detach(), layer.lora_B.detach()

    def forward(x, a, b):
        return functional_call(layer, {"lora_A": a, "lora_B": b}, (x,))

    base_w = layer.base.weight.detach()
    base_b = None if layer.base.bias is None else layer.base.bias.detach()

    def independent(x, a, b):
        return F.linear(x, base_w, base_b) + (2.0 / rank) * (x @ a.T @ b.T)

    check_gradients(forward, torch.randn(2, in_f, dtype=torch.float64), A, B, reference=independent,
                    name=describe(in_f, out_f, rank, 2.0, bias) + " forward w.r.t. (x, lora_A, lora_B)")


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16], ids=str)
def test_factors_follow_base_dtype(impl, dtype):
    layer = impl.LoRALinear(make_base(4, 3, dtype=dtype), 2, 1.0)
    for pname in ("lora_A", "lora_B"):
        got = getattr(layer, pname).dtype
        assert got == dtype, f"{pname} is {got} for a {dtype} base, expected {dtype}"
    out = layer(torch.randn(2, 4, dtype=dtype))
    assert out.dtype == dtype, f"output is {out.dtype} for a {dtype} base and input"


@pytest.mark.parametrize("bias", [True, False])
def test_merge_keeps_dtype_and_bias(impl, bias):
    base = make_base(4, 3, bias=bias, dtype=torch.float64)
    layer = impl.LoRALinear(base, 2, 1.0)
    randomise_B(layer)
    merged = layer.merge()
    name = f"merge() of a float64 nn.Linear(4, 3, bias={bias})"
    assert type(merged) is nn.Linear, f"{name} returned {type(merged).__name__}, not nn.Linear"
    assert merged.weight.dtype == torch.float64, f"{name}: weight is {merged.weight.dtype}, expected float64"
    assert (merged.bias is not None) == bias, f"{name}: the merged layer must have a bias exactly when the base has one"
    if bias:
        assert merged.bias.dtype == torch.float64, f"{name}: bias is {merged.bias.dtype}, expected float64"
        assert_close(merged.bias.detach(), base.bias.detach(), name=f"{name}: bias (the base's bias)")
    assert merged is not base, f"{name} returned the base layer itself; merge() builds a new nn.Linear"


@pytest.mark.parametrize("device", device_params(meta=True))
def test_runs_on_base_device(impl, device):
    layer = impl.LoRALinear(make_base(4, 3, device=device), 2, 1.0)
    for pname in ("lora_A", "lora_B"):
        assert_device(getattr(layer, pname), device, name=f"{pname} for a base on {device}")
    out = layer(torch.randn(5, 4, device=device))
    assert_shape(out, (5, 3), name=f"LoRALinear on {device}")
    assert_device(out, device, name=f"LoRALinear on {device}")
    merged = layer.merge()
    assert_device(merged.weight, device, name=f"merge().weight on {device}")


def test_moves_with_to(impl):
    layer = impl.LoRALinear(make_base(4, 3), 2, 1.0).to("meta")
    for pname, p in layer.named_parameters():
        assert p.device.type == "meta", f"after .to('meta'), {pname} is on {p.device}"


def test_autocast_output_dtype(impl):
    layer = impl.LoRALinear(make_base(4, 3), 2, 1.0)
    randomise_B(layer)
    with autocast("cpu") as low:
        out = layer(torch.randn(5, 4))
    assert out.dtype == low, f"LoRALinear under torch.autocast('cpu') returned {out.dtype}, expected {low}"


# Each case breaks exactly one rule.
BAD_ARGUMENTS = {
    "base=nn.Conv1d": (TypeError, "base", lambda: nn.Conv1d(3, 3, 1), 2, 1.0),
    "base=tensor": (TypeError, "base", lambda: torch.randn(3, 4), 2, 1.0),
    "rank=0": (ValueError, "rank", lambda: make_base(4, 3), 0, 1.0),
    "rank=-2": (ValueError, "rank", lambda: make_base(4, 3), -2, 1.0),
    "rank=2.0": (ValueError, "rank", lambda: make_base(4, 3), 2.0, 1.0),
    "rank=1.5": (ValueError, "rank", lambda: make_base(4, 3), 1.5, 1.0),
    "alpha=0.0": (ValueError, "alpha", lambda: make_base(4, 3), 2, 0.0),
    "alpha=-1.0": (ValueError, "alpha", lambda: make_base(4, 3), 2, -1.0),
    "alpha=nan": (ValueError, "alpha", lambda: make_base(4, 3), 2, math.nan),
    "alpha=inf": (ValueError, "alpha", lambda: make_base(4, 3), 2, math.inf),
    "alpha='2'": (ValueError, "alpha", lambda: make_base(4, 3), 2, "2"),  # a string is not a number
}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_rejects_bad_arguments(impl, case):
    error, argname, build, rank, alpha = BAD_ARGUMENTS[case]
    assert_raises_naming(error, argname, impl.LoRALinear, build(), rank, alpha)


@pytest.mark.points(0.5)
@pytest.mark.parametrize(("rank", "alpha"), [(1, 1e-3), (4, 2)])
def test_accepts_smallest_rank_and_any_positive_alpha(impl, rank, alpha):
    # rank 1 is the smallest allowed; alpha may be tiny, or an int.
    base = make_base(5, 3)
    layer = impl.LoRALinear(base, rank, alpha)
    randomise_B(layer)
    x = torch.randn(2, 5)
    assert_close(layer(x), expected_forward(layer, base.weight.detach(), base.bias.detach(), x, alpha, rank),
                 rtol=1e-5, atol=1e-6, name=f"LoRALinear(nn.Linear(5, 3), rank={rank}, alpha={alpha!r})(x)")
