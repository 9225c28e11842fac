"""Hidden tests for pytorch.optim.train_step (the catalog's contract checks).

The reference for every comparison is a deep copy of the model, with an optimizer of the same
kind, stepped by hand: train(), zero_grad(), forward, loss, backward(), step().
"""

from __future__ import annotations

import copy
import gc
import weakref
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from hypothesis import Phase, given, settings, strategies as st

from grader.checks import assert_close, assert_device, assert_raises_naming, device_params

# float64 models, float32-level tolerances: nothing in the contract demands float64 round-off,
# and a correct solution may take its loss through float32 (say loss.float().item()).
TOL = dict(rtol=1e-6, atol=1e-8)
LOSS_RTOL = 1e-6
# Shrinking a failure re-runs training steps hundreds of times (slow on a loaded machine); the
# failure message already names the optimizer, loss and shapes.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)

OPTIMIZERS: dict[str, Callable] = {
    "SGD(lr=0.1, momentum=0.9)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam(lr=0.01)": lambda ps: torch.optim.Adam(ps, lr=0.01),
}
LOSSES: dict[str, Callable] = {"mse_loss": F.mse_loss, "cross_entropy": F.cross_entropy}


def make_model(n_in: int, hidden: int, n_out: int, *, seed: int, norm: bool = False,
               dtype: torch.dtype = torch.float64, device: str = "cpu") -> torch.nn.Module:
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(n_in, hidden)]
    if norm:
        layers.append(torch.nn.BatchNorm1d(hidden))
    layers += [torch.nn.Tanh(), torch.nn.Linear(hidden, n_out)]
    return torch.nn.Sequential(*layers).to(device, dtype)


def make_batch(n: int, n_in: int, n_out: int, loss: str, *, seed: int,
               dtype: torch.dtype = torch.float64, device: str = "cpu"):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_in, generator=gen, dtype=dtype)
    if loss == "cross_entropy":
        y = torch.randint(0, n_out, (n,), generator=gen)
    else:
        y = torch.randn(n, n_out, generator=gen, dtype=dtype)
    return x.to(device), y.to(device)


def manual_step(model, opt, loss_fn, batch) -> float:
    model.train()
    opt.zero_grad()
    loss = loss_fn(model(batch[0]), batch[1])
    loss.backward()
    opt.step()
    return loss.item()


def compare_models(got: torch.nn.Module, want: torch.nn.Module, label: str, tol=None) -> None:
    for (name, g), (_, w) in zip(got.state_dict().items(), want.state_dict().items()):
        if g.is_floating_point():
            assert_close(g, w, **(tol or TOL), name=f"{label}: {name}")
        else:
            assert torch.equal(g, w), f"{label}: {name} is {g.tolist()}, expected {w.tolist()}"


def call(impl, model, opt, loss_fn, batch, label: str) -> float:
    loss = impl.train_step(model, opt, loss_fn, batch)
    assert type(loss) is float, (f"{label}: train_step returned {type(loss).__name__}, expected a "
                                 "Python float (use loss.item())")
    return loss


@pytest.mark.points(2)
@settings(max_examples=15, phases=NO_SHRINK)
@given(n=st.integers(1, 5), n_in=st.integers(1, 4), hidden=st.integers(1, 4),
       n_out=st.integers(1, 3), opt_name=st.sampled_from(sorted(OPTIMIZERS)),
       loss_name=st.sampled_from(sorted(LOSSES)), seed=st.integers(0, 2**16))
def test_two_calls_equal_two_manual_steps(impl, n, n_in, hidden, n_out, opt_name, loss_name, seed):
    model = make_model(n_in, hidden, n_out, seed=seed)
    ref = copy.deepcopy(model)
    opt, ref_opt = OPTIMIZERS[opt_name](model.parameters()), OPTIMIZERS[opt_name](ref.parameters())
    loss_fn = LOSSES[loss_name]
    label = f"{opt_name}, {loss_name}, inputs ({n}, {n_in}), model {n_in}->{hidden}->{n_out}"
    for step in range(2):
        batch = make_batch(n, n_in, n_out, loss_name, seed=seed + step)
        loss = call(impl, model, opt, loss_fn, batch, label)
        ref_loss = manual_step(ref, ref_opt, loss_fn, batch)
        assert abs(loss - ref_loss) <= LOSS_RTOL * max(1.0, abs(ref_loss)), (
            f"{label}: call {step + 1} returned loss {loss}, expected {ref_loss} (the loss of this "
            "batch, before the update)")
        compare_models(model, ref, f"{label}: after call {step + 1}")


@pytest.mark.points(2)
def test_leftover_gradients_do_not_leak_into_the_update(impl):
    model = make_model(3, 4, 2, seed=1)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)  # stale gradients from "before"
    batch = make_batch(5, 3, 2, "mse_loss", seed=2)
    call(impl, model, opt, F.mse_loss, batch, "stale gradients")
    manual_step(ref, ref_opt, F.mse_loss, batch)
    compare_models(model, ref, "with gradients of 100 already in .grad before the call: parameter")


@pytest.mark.points(2)
def test_sets_training_mode(impl):
    """BatchNorm uses batch statistics and updates its running stats only in training mode."""
    model = make_model(3, 4, 2, seed=3, norm=True)
    model.eval()
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    batch = make_batch(6, 3, 2, "mse_loss", seed=4)
    call(impl, model, opt, F.mse_loss, batch, "model in eval mode")
    manual_step(ref, ref_opt, F.mse_loss, batch)
    not_training = [name or "model" for name, m in model.named_modules() if not m.training]
    assert not not_training, (f"after train_step, these modules are still in eval mode: "
                              f"{not_training} (call model.train())")
    compare_models(model, ref, "model with BatchNorm, in eval mode before the call")


def test_calls_optimizer_step_exactly_once(impl):
    model = make_model(2, 3, 1, seed=5)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = []
    opt.register_step_post_hook(lambda *_: steps.append(1))
    call(impl, model, opt, F.mse_loss, make_batch(4, 2, 1, "mse_loss", seed=6), "step count")
    assert len(steps) == 1, f"train_step called optimizer.step() {len(steps)} times, expected once"


@pytest.mark.points(2)
def test_keeps_no_reference_to_the_loss_or_its_graph(impl):
    model = make_model(3, 4, 2, seed=7)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    refs: dict[str, weakref.ref] = {}

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = F.mse_loss(out, y)
        refs["model output"], refs["loss"] = weakref.ref(out), weakref.ref(loss)
        return loss

    call(impl, model, opt, loss_fn, make_batch(5, 3, 2, "mse_loss", seed=8), "no graph")
    assert refs, "train_step never called loss_fn"
    gc.collect()
    alive = [name for name, ref in refs.items() if ref() is not None]
    assert not alive, (f"after train_step returned, something still holds the {' and the '.join(alive)}"
                       " tensor, and with it the autograd graph: return loss.item() and keep no "
                       "tensors around")


def test_gradients_carry_no_graph(impl):
    model = make_model(3, 4, 2, seed=7)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    call(impl, model, opt, F.mse_loss, make_batch(5, 3, 2, "mse_loss", seed=8), "no create_graph")
    for name, p in model.named_parameters():
        assert p.grad is not None, f"after train_step, {name}.grad is None: nothing was back-propagated"
        assert not p.grad.requires_grad and p.grad.grad_fn is None, (
            f"{name}.grad carries an autograd graph (backward(create_graph=True)?)")


@pytest.mark.parametrize("device", device_params())
def test_runs_on_the_model_device(impl, device):
    model = make_model(3, 4, 2, seed=9, dtype=torch.float32, device=device)
    ref = copy.deepcopy(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    batch = make_batch(5, 3, 2, "cross_entropy", seed=10, dtype=torch.float32, device=device)
    loss = call(impl, model, opt, F.cross_entropy, batch, f"on {device}")
    ref_loss = manual_step(ref, ref_opt, F.cross_entropy, batch)
    assert abs(loss - ref_loss) <= 1e-5, f"on {device}: returned loss {loss}, expected {ref_loss}"
    for name, p in model.named_parameters():
        assert_device(p, device, name=f"{name} after train_step")
    compare_models(model, ref, f"on {device}", tol=dict(rtol=1e-5, atol=1e-6))


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_works_under_autocast(impl, low):
    model = make_model(3, 8, 2, seed=11, dtype=torch.float32)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    batch = make_batch(5, 3, 2, "mse_loss", seed=12, dtype=torch.float32)
    with torch.autocast("cpu", dtype=low):
        loss = call(impl, model, opt, F.mse_loss, batch, "under torch.autocast")
    with torch.autocast("cpu", dtype=low):
        ref_loss = manual_step(ref, ref_opt, F.mse_loss, batch)
    assert abs(loss - ref_loss) <= 1e-2 * max(1.0, abs(ref_loss)), (
        f"under autocast: returned loss {loss}, expected about {ref_loss}")
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, f"under autocast: {name} became {p.dtype}, expected float32"
    compare_models(model, ref, f"under autocast ({low} on CPU)", tol=dict(rtol=1e-3, atol=1e-4))


@pytest.mark.parametrize("kind", [tuple, list], ids=["tuple", "list"])
def test_batch_as_a_tuple_or_a_list(impl, kind):
    model = make_model(3, 4, 2, seed=15)
    ref = copy.deepcopy(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    x, y = make_batch(5, 3, 2, "mse_loss", seed=16)
    label = f"batch given as a {kind.__name__} [inputs, targets]"
    loss = call(impl, model, opt, F.mse_loss, kind((x, y)), label)
    ref_loss = manual_step(ref, ref_opt, F.mse_loss, (x, y))
    assert abs(loss - ref_loss) <= LOSS_RTOL * max(1.0, abs(ref_loss)), (
        f"{label}: returned loss {loss}, expected {ref_loss}")
    compare_models(model, ref, label)


def _batch_not_a_pair(kind: str, x: torch.Tensor, y: torch.Tensor):
    return {"one element": (x,), "three elements": (x, y, y), "empty list": [],
            "dict of two": {"inputs": x, "targets": y}}[kind]


# Each bad argument alone, the others valid, so a check on the wrong property fails.
@pytest.mark.parametrize("kind", ["one element", "three elements", "empty list", "dict of two"])
def test_batch_that_is_not_a_pair_raises_value_error(impl, kind):
    model = make_model(3, 4, 2, seed=13)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_batch(5, 3, 2, "mse_loss", seed=14)
    assert_raises_naming(ValueError, "batch", impl.train_step, model, opt, F.mse_loss,
                         _batch_not_a_pair(kind, x, y))


@pytest.mark.parametrize("shape", ["per-sample", "one-element vector"])
def test_non_scalar_loss_raises_value_error(impl, shape):
    """A (5, 2) per-sample loss, and a loss of shape (1,): one element, but not 0-dim."""
    model = make_model(3, 4, 2, seed=13)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = make_batch(5, 3, 2, "mse_loss", seed=14)
    if shape == "per-sample":
        def loss_fn(out, target):
            return F.mse_loss(out, target, reduction="none")
    else:
        def loss_fn(out, target):
            return F.mse_loss(out, target).reshape(1)
    assert_raises_naming(ValueError, "loss_fn", impl.train_step, model, opt, loss_fn, (x, y))
