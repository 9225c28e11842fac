"""Hidden tests for pytorch.deploy.pruning (the catalog's contract checks).

Models get weights with distinct magnitudes (a random permutation of 1..n, random signs), so the
set of pruned weights is determined; the expected set is the ``round(amount * n)`` smallest by
brute force over all considered weights together.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn

from grader.checks import assert_close, assert_device, assert_raises_naming, device_params

DEFAULT_TYPES = (nn.Linear, nn.Conv2d)


class Net(nn.Module):
    """Conv2d, Linear layers and a Conv1d / LayerNorm that the default types do not consider."""

    def __init__(self, widths=(3, 4)) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 2)
        self.conv1d = nn.Conv1d(2, 2, 1)
        self.norm = nn.LayerNorm(8)
        self.body = nn.Sequential(nn.Linear(8, widths[0]), nn.ReLU(), nn.Linear(widths[0], widths[1]))

    def forward(self, x):  # x: (B, 1, 3, 5)
        h = self.conv(x)                          # (B, 2, 2, 4)
        h = self.conv1d(h.flatten(2)).flatten(1)  # (B, 16)
        return self.body(self.norm(h[:, :8]))


class MyLinear(nn.Linear):
    pass


def distinct_weights(model: nn.Module, module_types, seed: int) -> None:
    """Give the considered weights distinct magnitudes, the layers interleaved in rank."""
    modules = [m for m in model.modules() if isinstance(m, module_types)]
    n = sum(m.weight.numel() for m in modules)
    gen = torch.Generator().manual_seed(seed)
    mags = (torch.randperm(n, generator=gen) + 1).double() / n
    signs = torch.randint(0, 2, (n,), generator=gen) * 2 - 1
    values = mags * signs
    with torch.no_grad():
        start = 0
        for m in modules:
            k = m.weight.numel()
            m.weight.copy_(values[start:start + k].reshape(m.weight.shape))
            start += k


def considered(model, module_types=DEFAULT_TYPES):
    return [m for m in model.modules() if isinstance(m, module_types)]


def expected_masks(model, amount, module_types=DEFAULT_TYPES):
    """0/1 masks pruning the round(amount * n) smallest |w| across all considered modules."""
    modules = considered(model, module_types)
    flat = torch.cat([m.weight.detach().abs().flatten() for m in modules])
    k = round(amount * flat.numel())
    keep = torch.ones_like(flat)
    keep[torch.argsort(flat)[:k]] = 0
    masks, start = [], 0
    for m in modules:
        masks.append(keep[start:start + m.weight.numel()].reshape(m.weight.shape))
        start += m.weight.numel()
    return masks


def prune_and_check(impl, model, amount, module_types=DEFAULT_TYPES, label=""):
    before = {name: t.detach().clone() for name, t in model.state_dict().items()}
    want = expected_masks(model, amount, module_types)
    result = (impl.global_magnitude_prune(model, amount) if module_types == DEFAULT_TYPES
              else impl.global_magnitude_prune(model, amount, module_types))
    assert result is None, f"{label}: global_magnitude_prune should return None, got {type(result).__name__}"
    for (i, m), mask in zip(enumerate(considered(model, module_types)), want):
        name = f"{label}: module {i} ({type(m).__name__})"
        got = m.weight.detach()
        n_pruned, want_pruned = int((got == 0).sum()), int((mask == 0).sum())
        assert torch.equal((got != 0).to(mask.dtype), mask), (
            f"{name}: {n_pruned} weights are zero, expected {want_pruned}, and the zeros should be the "
            "weights of smallest magnitude across all considered modules together")
    return before


# -- amount --------------------------------------------------------------------------------------

@pytest.mark.points(1)
# -0.001 of the 44 weights rounds to 0 of them: refused all the same, for it is below 0.0.
@pytest.mark.parametrize("amount", [-0.1, -0.001, 1.0000001, 1.5, float("nan"), float("inf")])
def test_amount_outside_0_1_or_nan_raises_value_error(impl, amount):
    assert_raises_naming(ValueError, "amount", impl.global_magnitude_prune, Net(), amount)


@pytest.mark.points(1)
@pytest.mark.parametrize("amount", [1, 0, "0.5", None])
def test_amount_that_is_not_a_float_raises_type_error(impl, amount):
    assert_raises_naming(TypeError, "amount", impl.global_magnitude_prune, Net(), amount)


@pytest.mark.points(2)
@pytest.mark.parametrize("amount", [0.0, 1.0])
def test_amount_at_both_ends_is_accepted(impl, amount):
    torch.manual_seed(0)
    model = Net()
    distinct_weights(model, DEFAULT_TYPES, 0)
    prune_and_check(impl, model, amount, label=f"amount={amount}")
    assert impl.sparsity(model) == amount, f"amount={amount}: sparsity is {impl.sparsity(model)}"


@pytest.mark.points(3)
@settings(max_examples=20)
@given(amount=st.floats(0.0, 1.0), widths=st.tuples(st.integers(1, 6), st.integers(1, 6)),
       seed=st.integers(0, 2**16))
@example(amount=0.5, widths=(3, 4), seed=0)
@example(amount=0.36, widths=(1, 1), seed=1)   # n = 8 + 4 + 8 + 1 = 21 weights: 7.56 -> 8
@example(amount=0.3, widths=(2, 1), seed=2)
def test_exact_global_sparsity_and_the_smallest_magnitudes_go(impl, amount, widths, seed):
    torch.manual_seed(seed)
    model = Net(widths)
    distinct_weights(model, DEFAULT_TYPES, seed)
    n = sum(m.weight.numel() for m in considered(model))
    label = f"amount={amount!r} of n={n} weights"
    prune_and_check(impl, model, amount, label=label)
    got = impl.sparsity(model)
    assert type(got) is float, f"sparsity should return a Python float, got {type(got).__name__}"
    assert math.isclose(got, round(amount * n) / n, rel_tol=1e-12), (
        f"{label}: sparsity {got}, expected exactly round(amount * n) / n = {round(amount * n) / n}")


@pytest.mark.points(2)
@pytest.mark.parametrize("n_out", [5, 7])
def test_round_half_follows_python_round(impl, n_out):
    model = nn.Linear(2, n_out, bias=False)   # n = 10 or 14, amount 0.25 -> 2.5 or 3.5
    distinct_weights(model, DEFAULT_TYPES, n_out)
    prune_and_check(impl, model, 0.25, label=f"amount 0.25 of {2 * n_out} weights")


@pytest.mark.points(2)
def test_global_not_per_layer(impl):
    model = nn.Sequential(nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False))
    with torch.no_grad():
        model[0].weight.copy_(torch.arange(1, 17, dtype=torch.float32).reshape(4, 4) / 100)
        model[1].weight.copy_(torch.arange(1, 17, dtype=torch.float32).reshape(4, 4))
    impl.global_magnitude_prune(model, 0.5)
    assert bool((model[0].weight == 0).all()) and not bool((model[1].weight == 0).any()), (
        "with the first layer's weights all smaller than the second's, pruning half of all weights "
        f"globally zeroes the whole first layer; got {int((model[0].weight == 0).sum())} and "
        f"{int((model[1].weight == 0).sum())} zeros of 16 per layer")


# -- which modules -------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_biases_and_other_modules_are_not_pruned(impl):
    torch.manual_seed(3)
    model = Net()
    distinct_weights(model, DEFAULT_TYPES, 3)
    before = prune_and_check(impl, model, 0.9, label="amount=0.9")
    state = model.state_dict()
    for name in ("conv.bias", "body.0.bias", "body.2.bias", "conv1d.weight", "conv1d.bias",
                 "norm.weight", "norm.bias"):
        assert torch.equal(state[name], before[name]), f"{name} changed; only weights of module_types are pruned"
    assert not hasattr(model.conv1d, "weight_orig"), "a Conv1d is not in the default module_types"


@pytest.mark.points(2)
def test_module_types_given_and_subclasses_count(impl):
    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv1d(2, 3, 2), MyLinear(3, 4), nn.Linear(4, 2))
    types = (nn.Conv1d, nn.Linear)
    distinct_weights(model, types, 4)
    prune_and_check(impl, model, 0.5, types, label="module_types=(Conv1d, Linear) with a Linear subclass")
    assert math.isclose(impl.sparsity(model, types), round(0.5 * 26) / 26, rel_tol=1e-12)


@pytest.mark.points(1)
@pytest.mark.parametrize("fn", ["global_magnitude_prune", "sparsity"])
def test_model_without_such_modules_raises_value_error(impl, fn):
    model = nn.Sequential(nn.Conv1d(2, 2, 1), nn.ReLU())
    args = (model, 0.5) if fn == "global_magnitude_prune" else (model,)
    assert_raises_naming(ValueError, "module_types", getattr(impl, fn), *args)


# -- reparametrisation ---------------------------------------------------------------------------

@pytest.mark.points(2)
def test_weight_orig_and_mask_like_torch_prune(impl):
    torch.manual_seed(5)
    model = Net()
    distinct_weights(model, DEFAULT_TYPES, 5)
    original = [m.weight.detach().clone() for m in considered(model)]
    masks = expected_masks(model, 0.4)
    impl.global_magnitude_prune(model, 0.4)
    for i, (m, w, mask) in enumerate(zip(considered(model), original, masks)):
        params, buffers = dict(m.named_parameters(recurse=False)), dict(m.named_buffers(recurse=False))
        assert "weight_orig" in params, f"module {i}: no parameter weight_orig after pruning"
        assert "weight_mask" in buffers, f"module {i}: no buffer weight_mask after pruning"
        assert_close(params["weight_orig"].detach(), w, name=f"module {i}: weight_orig")
        assert_close(buffers["weight_mask"], mask.to(buffers["weight_mask"].dtype), name=f"module {i}: weight_mask")


@pytest.mark.points(2)
def test_forward_uses_the_mask_after_weight_orig_changes(impl):
    torch.manual_seed(6)
    model = Net()
    distinct_weights(model, DEFAULT_TYPES, 6)
    impl.global_magnitude_prune(model, 0.5)
    with torch.no_grad():
        for m in considered(model):
            m.weight_orig.add_(0.25)
    x = torch.randn(3, 1, 3, 5)
    state = {k: v for k, v in model.state_dict().items() if not k.endswith(("_orig", "_mask"))}
    for name, m in model.named_modules():
        if isinstance(m, DEFAULT_TYPES):
            state[f"{name}.weight"] = (m.weight_orig * m.weight_mask).detach()
    ref = Net()
    ref.load_state_dict(state)
    assert_close(model(x).detach(), ref(x).detach(), rtol=1e-5, atol=1e-6,
                 name="output after changing weight_orig (it must be weight_orig * weight_mask)")
    for i, m in enumerate(considered(model)):
        assert bool((m.weight[m.weight_mask == 0] == 0).all()), f"module {i}: pruned entries are no longer zero"


@pytest.mark.points(1)
@pytest.mark.parametrize("device", device_params())
def test_masks_live_on_the_weight_device(impl, device):
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)).to(device)
    impl.global_magnitude_prune(model, 0.5)
    for i, m in enumerate(model):
        assert_device(m.weight_mask, device, name=f"layer {i} weight_mask")
        assert_device(m.weight, device, name=f"layer {i} weight")


# -- sparsity ------------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_sparsity_of_an_unpruned_model_counts_existing_zeros(impl):
    model = nn.Sequential(nn.Linear(4, 5), nn.Conv2d(1, 1, 2), nn.Conv1d(1, 1, 3))
    with torch.no_grad():
        model[0].weight.fill_(1.0)
        model[0].weight[:2] = 0.0       # 8 of 20
        model[1].weight.fill_(0.0)      # 4 of 4
        model[0].bias.zero_()           # biases do not count
        model[2].weight.zero_()         # Conv1d is not considered by default
    got = impl.sparsity(model)
    assert type(got) is float, f"sparsity should return a Python float, got {type(got).__name__}"
    assert math.isclose(got, 12 / 24, rel_tol=1e-12), f"sparsity is {got}, expected 12 / 24 = 0.5"
    assert math.isclose(impl.sparsity(model, (nn.Conv1d,)), 1.0, rel_tol=1e-12), (
        "sparsity(model, (nn.Conv1d,)) should count only the Conv1d weight, which is all zero")


# -- make_permanent --------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_make_permanent_leaves_plain_pruned_weights(impl):
    torch.manual_seed(7)
    model = Net()
    distinct_weights(model, DEFAULT_TYPES, 7)
    impl.global_magnitude_prune(model, 0.6)
    x = torch.randn(2, 1, 3, 5)
    before = model(x).detach()
    pruned = [m.weight.detach().clone() for m in considered(model)]
    impl.make_permanent(model)
    for i, (m, w) in enumerate(zip(considered(model), pruned)):
        names = set(dict(m.named_parameters(recurse=False))) | set(dict(m.named_buffers(recurse=False)))
        assert "weight_orig" not in names and "weight_mask" not in names, (
            f"module {i}: {sorted(names)} left after make_permanent; expected no weight_orig / weight_mask")
        assert isinstance(m.weight, nn.Parameter), f"module {i}: weight should be a plain parameter again"
        assert torch.equal(m.weight.detach(), w), f"module {i}: make_permanent changed the pruned weights"
        assert len(m._forward_pre_hooks) == 0, f"module {i}: a pruning forward pre-hook is still registered"
    assert_close(model(x).detach(), before, name="output after make_permanent")
    assert not any(k.endswith(("_orig", "_mask")) for k in model.state_dict()), sorted(model.state_dict())


@pytest.mark.points(1)
def test_make_permanent_leaves_unpruned_modules_alone(impl):
    torch.manual_seed(8)
    model = nn.Sequential(nn.Linear(3, 3), nn.Conv1d(1, 1, 1), nn.Linear(3, 2))
    impl.global_magnitude_prune(model, 0.5, (nn.Conv1d,))
    state = {k: v.clone() for k, v in model.state_dict().items()}
    impl.make_permanent(model)
    for name in ("0.weight", "0.bias", "2.weight", "2.bias"):
        assert torch.equal(model.state_dict()[name], state[name]), f"make_permanent changed {name}"
    impl.make_permanent(nn.Sequential(nn.Linear(2, 2)))  # nothing pruned at all: no error
