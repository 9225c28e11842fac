"""Hidden tests for pytorch.autograd.hooks (the catalog's contract checks).

Expected activations come from running the layers one by one by hand; expected gradients from a
deep copy of the model without hooks. "No hooks left" is checked twice: by counting every hook
registry torch keeps (module, global and tensor hooks), and by behaviour (a forward pass after the
block must not touch the dict).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn
from torch.nn.modules import module as nn_module

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           device_params)


_MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
_GLOBAL_HOOKS = ("_global_forward_hooks", "_global_forward_pre_hooks", "_global_backward_hooks",
                 "_global_backward_pre_hooks")


def hook_counts(model: nn.Module) -> dict[str, int]:
    """How many hooks of each kind are registered on the model, its parameters and globally."""
    counts: dict[str, int] = {}
    for name, mod in model.named_modules():
        for attr in _MODULE_HOOKS:
            counts[f"{name or '<model>'}.{attr}"] = len(getattr(mod, attr, None) or {})
    for name, p in model.named_parameters():
        counts[f"{name} tensor hooks"] = len(getattr(p, "_backward_hooks", None) or {})
        counts[f"{name} post-accumulate hooks"] = len(
            getattr(p, "_post_accumulate_grad_hooks", None) or {})
    for attr in _GLOBAL_HOOKS:
        counts[f"torch.nn.modules.module.{attr}"] = len(getattr(nn_module, attr, None) or {})
    return counts


def assert_same_hooks(before: dict[str, int], after: dict[str, int], when: str) -> None:
    diff = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not diff, f"{when}, hooks were left behind or removed: " + ", ".join(
        f"{k}: {b} before, {a} after" for k, (b, a) in sorted(diff.items()))


def make_mlp(widths: list[int], seed: int = 0, dtype=torch.float64,
             device: str = "cpu") -> nn.Sequential:
    """Blocks of (Linear, Tanh): names '0', '0.0', '0.1', '1', ..."""
    torch.manual_seed(seed)
    return nn.Sequential(*[nn.Sequential(nn.Linear(a, b), nn.Tanh())
                           for a, b in zip(widths, widths[1:])]).to(device, dtype)


def manual_activations(model: nn.Sequential, x: torch.Tensor) -> dict[str, torch.Tensor]:
    acts: dict[str, torch.Tensor] = {}
    h = x
    with torch.no_grad():
        for i, block in enumerate(model):
            lin = block[0](h)
            h = block[1](lin)
            acts[f"{i}.0"], acts[f"{i}.1"], acts[str(i)] = lin, h, h
    acts[""] = h
    return acts


def capture(impl, model: nn.Module, names: list[str], *inputs: torch.Tensor) -> dict:
    with impl.capture_activations(model, names) as acts:
        for x in inputs:
            model(x)
    return acts


def snapshot(acts: dict) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in acts.items()}


# The tests' own modules live at module level: a submission graded in a process of its own gets
# a copy of a model, pickled by reference to its class.
class WithSpare(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mlp = make_mlp([3, 4, 2])
        self.unused = nn.Linear(2, 2).double()  # registered, never called in forward

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class Boom(Exception):
    pass


class Exploding(nn.Module):
    def forward(self, x):
        raise Boom("forward failed on purpose")


class Twice(nn.Module):
    """One module called twice per forward."""

    def __init__(self, shared: nn.Module) -> None:
        super().__init__()
        self.shared = shared

    def forward(self, x):
        return self.shared(torch.tanh(self.shared(x)))


# ---------------------------------------------------------------------------------------------
# capture_activations
# ---------------------------------------------------------------------------------------------

@pytest.mark.points(2)
@given(widths=st.lists(st.integers(1, 5), min_size=2, max_size=4), batch=st.integers(1, 4),
       data=st.data())
def test_capture_keys_shapes_and_values(impl, widths, batch, data):
    model = make_mlp(widths)
    all_names = sorted(dict(model.named_modules()))
    names = data.draw(st.lists(st.sampled_from(all_names), min_size=1, max_size=4, unique=True),
                      label="names")
    x = torch.randn(batch, widths[0], dtype=torch.float64)
    acts = capture(impl, model, names, x)
    expected = manual_activations(model, x)
    assert isinstance(acts, dict), f"capture_activations yielded {type(acts).__name__}, not a dict"
    assert set(acts) == set(names), (f"captured keys {sorted(acts)} for names {sorted(names)} "
                                     f"on an MLP with widths {widths}")
    for name in names:
        label = f"acts[{name!r}] (MLP widths {widths}, batch {batch})"
        assert_shape(acts[name], tuple(expected[name].shape), name=label)
        assert_close(acts[name], expected[name], name=label, rtol=1e-12, atol=1e-12)


def test_capture_dict_starts_empty_and_gets_only_modules_that_ran(impl):
    model = WithSpare()
    x = torch.randn(2, 3, dtype=torch.float64)
    with impl.capture_activations(model, ["mlp.0", "unused"]) as acts:
        assert isinstance(acts, dict) and acts == {}, (
            f"capture_activations yielded {acts!r:.100} on entry, expected an empty dict")
        model(x)
    assert set(acts) == {"mlp.0"}, (
        f"captured keys {sorted(acts)}: a named module that never ran in the block ('unused') "
        "must not get a key")
    assert_close(acts["mlp.0"], manual_activations(model.mlp, x)["0"], name="acts['mlp.0']",
                 rtol=1e-12, atol=1e-12)


def test_capture_is_detached(impl):
    model = make_mlp([3, 4, 2])
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    acts = capture(impl, model, ["0.0", "1", ""], x)
    expected = manual_activations(model, x.detach())
    for name, value in acts.items():
        assert not value.requires_grad and value.grad_fn is None, (
            f"acts[{name!r}] still has autograd history (grad_fn={value.grad_fn}): store a "
            "detached copy, or every captured activation keeps the whole graph alive")
        assert_close(value, expected[name], name=f"acts[{name!r}]", rtol=1e-12, atol=1e-12)


@pytest.mark.points(2)
def test_capture_is_a_copy_not_changed_by_inplace_ops(impl):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 2)).double()
    x = torch.randn(8, 4, dtype=torch.float64)
    with torch.no_grad():
        expected = model[0](x)
    assert bool((expected < 0).any()), "test setup: the Linear output should have negatives"
    acts = capture(impl, model, ["0"], x)
    assert_close(acts["0"], expected, rtol=1e-12, atol=1e-12,
                 name="acts['0'] for Linear followed by ReLU(inplace=True) (the ReLU must not "
                      "change the captured copy: detach() alone shares memory)")


@pytest.mark.points(2)
def test_capture_changes_neither_outputs_nor_gradients(impl):
    model = make_mlp([4, 5, 3, 2], seed=3)
    twin = copy.deepcopy(model)
    x = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    x_twin = x.detach().clone().requires_grad_(True)
    with impl.capture_activations(model, ["0", "1.0", "2"]):
        out = model(x)
        out.pow(2).sum().backward()
    expected = twin(x_twin)
    expected.pow(2).sum().backward()
    assert_close(out.detach(), expected.detach(), name="model output while capturing",
                 rtol=1e-12, atol=1e-12)
    assert_close(x.grad, x_twin.grad, name="input gradient while capturing", rtol=1e-12,
                 atol=1e-12)
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert p.grad is not None, (f"{name}.grad is None after a backward pass while capturing: "
                                    "the forward hook cut the graph (does it return a value?)")
        assert_close(p.grad, q.grad, name=f"{name}.grad while capturing", rtol=1e-12, atol=1e-12)


@pytest.mark.points(2)
def test_capture_removes_hooks_on_exit(impl):
    model = make_mlp([3, 4, 2])
    before = hook_counts(model)
    acts = capture(impl, model, ["0", "1.1"], torch.randn(2, 3, dtype=torch.float64))
    assert_same_hooks(before, hook_counts(model), "after the with block")
    kept = snapshot(acts)
    model(torch.randn(5, 3, dtype=torch.float64))
    assert set(acts) == set(kept), "a forward pass after the block changed the keys of acts"
    for name, value in kept.items():
        assert_close(acts[name], value, name=f"acts[{name!r}] after a forward pass outside the "
                     "block (must keep the value captured inside it)", rtol=0, atol=0)


@pytest.mark.points(2)
@pytest.mark.parametrize("where", ["in the with body", "in the model's forward"])
def test_capture_removes_hooks_after_an_exception(impl, where):
    model = make_mlp([3, 4, 2])
    if where == "in the model's forward":
        model.append(Exploding())
    before = hook_counts(model)
    x = torch.randn(2, 3, dtype=torch.float64)
    try:
        with impl.capture_activations(model, ["0", "1"]) as acts:
            model(x)
            raise Boom("raised in the with body on purpose")
    except Boom:
        pass
    else:
        raise AssertionError(f"an exception raised {where} did not propagate out of the with "
                             "block (capture_activations swallowed it)")
    assert_same_hooks(before, hook_counts(model), f"after an exception {where}")
    kept = snapshot(acts)
    try:
        model(torch.randn(7, 3, dtype=torch.float64))
    except Boom:
        pass
    for name, value in kept.items():
        assert_close(acts[name], value, name=f"acts[{name!r}] after a later forward pass (a hook "
                     f"survived the exception {where})", rtol=0, atol=0)


def test_capture_keeps_other_hooks(impl):
    model = make_mlp([3, 4, 2])
    calls = []
    model[0].register_forward_hook(lambda m, a, o: calls.append("forward"))
    model[1][0].weight.register_hook(lambda g: calls.append("tensor") or None)
    before = hook_counts(model)
    capture(impl, model, ["0", "1.0"], torch.randn(2, 3, dtype=torch.float64))
    assert_same_hooks(before, hook_counts(model), "after the with block (with a user's hooks)")
    calls.clear()
    model(torch.randn(2, 3, dtype=torch.float64)).sum().backward()
    assert calls.count("forward") == 1 and calls.count("tensor") == 1, (
        f"hooks registered by someone else stopped firing after the block (calls: {calls}): "
        "remove only your own hooks, through their handles")


def test_capture_last_call_wins(impl):
    torch.manual_seed(2)
    model = Twice(nn.Linear(3, 3).double())
    shared = model.shared
    x1, x2 = torch.randn(2, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    acts = capture(impl, model, ["shared"], x1, x2)
    with torch.no_grad():
        expected = shared(torch.tanh(shared(x2)))
    assert_close(acts["shared"], expected, rtol=1e-12, atol=1e-12,
                 name="acts['shared'] for a module called twice per forward, two forwards "
                      "(must hold the output of the last call)")


@pytest.mark.parametrize("kind", ["tuple", "generator", "dict keys"])
def test_capture_accepts_any_iterable_of_names(impl, kind):
    model = make_mlp([3, 4, 2])
    wanted = ["0.0", "1", ""]
    names = {"tuple": lambda: tuple(wanted), "generator": lambda: (n for n in wanted),
             "dict keys": lambda: dict.fromkeys(wanted).keys()}[kind]()
    x = torch.randn(2, 3, dtype=torch.float64)
    acts = capture(impl, model, names, x)
    expected = manual_activations(model, x)
    assert set(acts) == set(wanted), (
        f"names given as a {kind} of {wanted}: captured keys {sorted(acts)} (was the iterable "
        "consumed before the hooks were registered?)")
    for name in wanted:
        assert_close(acts[name], expected[name], name=f"acts[{name!r}] (names given as a {kind})",
                     rtol=1e-12, atol=1e-12)


def test_capture_rejects_unknown_names(impl):
    model = make_mlp([3, 4, 2])
    before = hook_counts(model)

    def enter():
        with impl.capture_activations(model, ["0", "decoder.3"]):
            model(torch.randn(1, 3, dtype=torch.float64))

    enter.__name__ = "capture_activations"
    assert_raises_naming(ValueError, "decoder.3", enter)
    assert_same_hooks(before, hook_counts(model), "after rejecting an unknown name")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_capture_keeps_device(impl, device):
    model = make_mlp([3, 4, 2], dtype=torch.float32, device=device)
    x = torch.randn(5, 3, device=device)
    acts = capture(impl, model, ["0.0", ""], x)
    expected = manual_activations(model, x)
    assert_shape(acts["0.0"], (5, 4), name=f"acts['0.0'] on {device}")
    assert_device(acts["0.0"], device, name=f"acts['0.0'] on {device}")
    assert_device(acts[""], device, name=f"acts[''] on {device}")
    assert_close(acts["0.0"], expected["0.0"], name=f"acts['0.0'] on {device}")


# ---------------------------------------------------------------------------------------------
# clamp_grads
# ---------------------------------------------------------------------------------------------

def reference_grads(model: nn.Module, x: torch.Tensor, scale: float) -> dict[str, torch.Tensor]:
    twin = copy.deepcopy(model)
    (scale * twin(x).sum()).backward()
    return {n: p.grad for n, p in twin.named_parameters() if p.grad is not None}


@pytest.mark.points(2)
@given(widths=st.lists(st.integers(1, 5), min_size=2, max_size=4),
       max_abs=st.floats(1e-3, 2.0), seed=st.integers(0, 2**16))
def test_clamp_grads_matches_clamped_reference(impl, widths, max_abs, seed):
    model = make_mlp(widths, seed=seed % 100)
    x = torch.randn(3, widths[0], generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64)
    expected = reference_grads(model, x, 5.0)
    handles = impl.clamp_grads(model, max_abs)
    (5.0 * model(x).sum()).backward()
    for name, p in model.named_parameters():
        label = f"{name}.grad with clamp_grads(max_abs={max_abs:.4g}), widths {widths}"
        assert p.grad is not None, f"{label}: no gradient"
        assert_close(p.grad, expected[name].clamp(-max_abs, max_abs), name=label, rtol=1e-12,
                     atol=1e-12)
    for handle in handles:
        handle.remove()


def test_clamp_grads_clamps_each_backward_before_accumulating(impl):
    torch.manual_seed(4)
    model = nn.Linear(3, 2).double()
    x = torch.randn(4, 3, dtype=torch.float64) * 10
    g1 = reference_grads(model, x, 1.0)
    g2 = reference_grads(model, x, 0.3)
    impl.clamp_grads(model, 0.75)
    model(x).sum().backward()
    (0.3 * model(x).sum()).backward()
    for name, p in model.named_parameters():
        expected = g1[name].clamp(-0.75, 0.75) + g2[name].clamp(-0.75, 0.75)
        assert_close(p.grad, expected, rtol=1e-12, atol=1e-12,
                     name=f"{name}.grad after two backward passes (each pass's gradient is "
                          "clamped, then accumulated: clamp(g1) + clamp(g2))")


@pytest.mark.points(2)
def test_clamp_grads_skips_frozen_parameters(impl):
    model = make_mlp([3, 4, 4, 2], seed=5)
    for p in model[1].parameters():
        p.requires_grad_(False)
    trainable = [p for p in model.parameters() if p.requires_grad]
    handles = impl.clamp_grads(model, 0.1)
    assert isinstance(handles, list) and len(handles) == len(trainable), (
        f"clamp_grads returned {len(handles) if isinstance(handles, list) else type(handles)} "
        f"handles, expected a list of {len(trainable)} (one per parameter that requires grad)")
    x = torch.randn(2, 3, dtype=torch.float64) * 10
    expected = reference_grads(model, x, 1.0)
    model(x).sum().backward()
    for name, p in model.named_parameters():
        if p.requires_grad:
            assert_close(p.grad, expected[name].clamp(-0.1, 0.1), rtol=1e-12, atol=1e-12,
                         name=f"{name}.grad with clamp_grads(max_abs=0.1), some layers frozen")
        else:
            assert p.grad is None, f"frozen {name} received a gradient"


@pytest.mark.points(2)
def test_clamp_grads_handles_remove_the_hooks(impl):
    model = make_mlp([3, 4, 2], seed=6)
    x = torch.randn(3, 3, dtype=torch.float64)
    before = hook_counts(model)
    handles = impl.clamp_grads(model, 1e-3)
    for handle in handles:
        handle.remove()
    assert_same_hooks(before, hook_counts(model), "after removing every returned handle")
    expected = reference_grads(model, x, 5.0)
    (5.0 * model(x).sum()).backward()
    for name, p in model.named_parameters():
        assert_close(p.grad, expected[name], rtol=1e-12, atol=1e-12,
                     name=f"{name}.grad after removing the handles (must be unclamped again)")


class Shifted(nn.Module):
    """shift + x followed by a Linear: autograd hands ``shift`` and ``x`` the very same gradient
    tensor (the add passes its incoming gradient to both inputs, and shift's hook runs before x's
    gradient is stored), so a hook that clamps in place would also clamp the input's gradient."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(8)
        self.shift = nn.Parameter(torch.randn(3, 3, dtype=torch.float64))
        self.linear = nn.Linear(3, 2).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(self.shift + x)


@pytest.mark.parametrize("model_kind", ["mlp", "input and parameter share a gradient"])
def test_clamp_grads_leaves_input_gradient_alone(impl, model_kind):
    model = make_mlp([3, 4, 2], seed=7) if model_kind == "mlp" else Shifted()
    x = (torch.randn(3, 3, dtype=torch.float64) * 10).requires_grad_(True)
    x_ref = x.detach().clone().requires_grad_(True)
    twin = copy.deepcopy(model)
    (5.0 * twin(x_ref).sum()).backward()
    expected = reference_grads(model, x.detach(), 5.0)
    impl.clamp_grads(model, 1e-3)
    (5.0 * model(x).sum()).backward()
    assert_close(x.grad, x_ref.grad, rtol=1e-12, atol=1e-12,
                 name=f"gradient with respect to the model's input ({model_kind}; only parameter "
                      "gradients are clamped, and a hook must not change its argument in place)")
    for name, p in model.named_parameters():
        assert_close(p.grad, expected[name].clamp(-1e-3, 1e-3), rtol=1e-12, atol=1e-12,
                     name=f"{name}.grad ({model_kind}, clamped to 1e-3)")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_clamp_grads_keeps_device(impl, device):
    model = make_mlp([3, 4, 2], dtype=torch.float32, device=device)
    x = torch.randn(2, 3, device=device)
    expected = reference_grads(model, x, 1.0)
    impl.clamp_grads(model, 0.5)
    model(x).sum().backward()
    for name, p in model.named_parameters():
        assert_shape(p.grad, tuple(p.shape), name=f"{name}.grad on {device}")
        assert_device(p.grad, device, name=f"{name}.grad on {device}")
        assert_close(p.grad, expected[name].clamp(-0.5, 0.5), name=f"{name}.grad on {device}")


@pytest.mark.parametrize("max_abs", [1, 3, math.inf], ids=repr)
def test_clamp_grads_accepts_any_positive_number(impl, max_abs):
    model = make_mlp([3, 4, 2], seed=9)
    x = torch.randn(3, 3, dtype=torch.float64) * 10
    expected = reference_grads(model, x, 5.0)
    impl.clamp_grads(model, max_abs)
    (5.0 * model(x).sum()).backward()
    for name, p in model.named_parameters():
        assert_close(p.grad, expected[name].clamp(-max_abs, max_abs), rtol=1e-12, atol=1e-12,
                     name=f"{name}.grad with clamp_grads(model, {max_abs!r})")


@pytest.mark.points(2)
def test_clamp_grads_one_hook_per_parameter_handles_in_parameter_order(impl):
    model = make_mlp([3, 4, 2], seed=10)
    model[0][0].bias.requires_grad_(False)
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    x = torch.randn(3, 3, dtype=torch.float64) * 10
    expected = reference_grads(model, x, 5.0)
    before = hook_counts(model)
    handles = impl.clamp_grads(model, 1e-3)
    after = hook_counts(model)
    for name, _ in trainable:
        key = f"{name} tensor hooks"
        assert after[key] == before[key] + 1, (
            f"clamp_grads registered {after[key] - before[key]} tensor hooks on {name}, "
            "expected exactly one (Tensor.register_hook)")
    assert isinstance(handles, list) and len(handles) == len(trainable), (
        f"clamp_grads returned {handles!r:.100}, expected a list of {len(trainable)} handles")
    # Removing handle i must unclamp exactly the i-th trainable parameter in parameters() order.
    for i, (name, _) in enumerate(trainable):
        handles[i].remove()
        model.zero_grad(set_to_none=True)
        (5.0 * model(x).sum()).backward()
        for j, (other, p) in enumerate(trainable):
            want = expected[other] if j <= i else expected[other].clamp(-1e-3, 1e-3)
            assert_close(p.grad, want, rtol=1e-12, atol=1e-12,
                         name=f"{other}.grad after removing handles 0..{i} (handle {i} must be "
                              f"the hook of {name}, the {i}-th trainable parameter)")


def test_clamp_grads_rejects_bad_max_abs(impl):
    for bad in (0, 0.0, -1.0, -math.inf, math.nan):
        assert_raises_naming(ValueError, "max_abs", impl.clamp_grads, make_mlp([2, 2]), bad)
    assert_raises_naming((TypeError, ValueError), "max_abs", impl.clamp_grads, make_mlp([2, 2]),
                         "1.0")
