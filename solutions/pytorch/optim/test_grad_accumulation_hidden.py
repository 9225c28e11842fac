"""Hidden tests for pytorch.optim.grad_accumulation (the catalog's contract checks).

The reference is big-batch training: a deep copy of the model takes one ordinary step per group
on the concatenation of the group's (equal-sized) micro-batches, with a mean-reduced loss.
"""

from __future__ import annotations

import copy
import math
from typing import Callable

import pytest
import torch
import torch.nn.functional as F
from hypothesis import Phase, given, settings, strategies as st

from grader.checks import assert_close, assert_device, assert_raises_naming, device_params

# float64 models, but float32-level tolerances: the contract promises big-batch training "up to
# round-off", and a correct solution may take its losses or their mean through float32.
TOL = dict(rtol=1e-6, atol=1e-8)
LOSS_TOL = dict(rel_tol=1e-6, abs_tol=1e-9)
# Shrinking a failure re-runs whole training passes hundreds of times; the failure message
# already names the micro-batch count, group size and optimizer.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)

OPTIMIZERS: dict[str, Callable] = {
    "SGD(lr=0.1, momentum=0.9)": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "Adam(lr=0.01)": lambda ps: torch.optim.Adam(ps, lr=0.01),
}
LOSSES: dict[str, Callable] = {"mse_loss": F.mse_loss, "cross_entropy": F.cross_entropy}


def make_model(n_in: int, n_out: int, *, seed: int, dtype=torch.float64, device="cpu"):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(n_in, 4), torch.nn.Tanh(),
                               torch.nn.Linear(4, n_out)).to(device, dtype)


def make_batches(n: int, size: int, n_in: int, n_out: int, loss: str, *, seed: int,
                 dtype=torch.float64, device="cpu") -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        x = torch.randn(size, n_in, generator=gen, dtype=dtype)
        y = (torch.randint(0, n_out, (size,), generator=gen) if loss == "cross_entropy"
             else torch.randn(size, n_out, generator=gen, dtype=dtype))
        out.append((x.to(device), y.to(device)))
    return out


def big_batch_reference(model, make_opt, loss_fn, batches, accum_steps):
    """Parameters after each step and the loss of each step, training on concatenated groups."""
    opt = make_opt(model.parameters())
    snapshots, losses = [], []
    model.train()
    for start in range(0, len(batches), accum_steps):
        group = batches[start:start + accum_steps]
        x = torch.cat([b[0] for b in group])
        y = torch.cat([b[1] for b in group])
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
    return snapshots, losses


def run_learner(impl, model, opt, loss_fn, batches, accum_steps, *, as_generator=False):
    """Call the learner; return its losses and the parameters right after each optimizer step."""
    snapshots = []
    opt.register_step_post_hook(lambda *_: snapshots.append(
        {k: v.detach().clone() for k, v in model.state_dict().items()}))
    source = (b for b in batches) if as_generator else batches
    losses = impl.train_accumulated(model, opt, loss_fn, source, accum_steps)
    assert isinstance(losses, list), f"train_accumulated returned {type(losses).__name__}, expected a list"
    assert all(type(v) is float for v in losses), (
        f"train_accumulated must return Python floats, got {[type(v).__name__ for v in losses]}")
    return losses, snapshots


def check_against_big_batch(impl, *, n, size, n_in, n_out, accum, opt_name, loss_name, seed,
                            as_generator=False, label_extra="") -> None:
    model = make_model(n_in, n_out, seed=seed)
    ref_model = copy.deepcopy(model)
    batches = make_batches(n, size, n_in, n_out, loss_name, seed=seed + 1)
    label = (f"{n} micro-batches of {size} ({'a generator' if as_generator else 'a list'}), "
             f"accum_steps={accum}, {opt_name}, {loss_name}{label_extra}")
    losses, got = run_learner(impl, model, OPTIMIZERS[opt_name](model.parameters()),
                              LOSSES[loss_name], batches, accum, as_generator=as_generator)
    want, want_losses = big_batch_reference(ref_model, OPTIMIZERS[opt_name], LOSSES[loss_name],
                                            batches, accum)
    steps = math.ceil(n / accum)
    assert len(got) == steps, (f"{label}: optimizer.step() was called {len(got)} times, expected "
                               f"ceil({n} / {accum}) = {steps}")
    assert len(losses) == steps, (f"{label}: returned {len(losses)} losses, expected one per "
                                  f"optimizer step ({steps})")
    for k in range(steps):
        first, last = k * accum + 1, min(n, (k + 1) * accum)
        where = f"{label}: optimizer step {k + 1} (micro-batches {first}..{last})"
        assert math.isclose(losses[k], want_losses[k], **LOSS_TOL), (
            f"{where}: returned loss {losses[k]!r}, expected {want_losses[k]!r} (the mean of the "
            "group's micro-batch losses)")
        for name, value in want[k].items():
            assert_close(got[k][name], value, **TOL,
                         name=f"{where}: {name} differs from big-batch training")


@pytest.mark.points(2)
@settings(max_examples=15, phases=NO_SHRINK)
@given(n=st.integers(1, 7), accum=st.integers(1, 4), size=st.integers(1, 3),
       n_in=st.integers(1, 3), n_out=st.integers(1, 3), opt_name=st.sampled_from(sorted(OPTIMIZERS)),
       loss_name=st.sampled_from(sorted(LOSSES)), as_generator=st.booleans(),
       seed=st.integers(0, 2**16))
def test_matches_big_batch_training(impl, n, accum, size, n_in, n_out, opt_name, loss_name,
                                    as_generator, seed):
    check_against_big_batch(impl, n=n, size=size, n_in=n_in, n_out=n_out, accum=accum,
                            opt_name=opt_name, loss_name=loss_name, seed=seed,
                            as_generator=as_generator)


@pytest.mark.points(2)
def test_short_last_group_is_a_mean_over_its_own_size(impl):
    """5 micro-batches in groups of 3: the second group has 2 micro-batches and its gradient is
    their mean (divide by 2, not by accum_steps=3)."""
    check_against_big_batch(impl, n=5, size=2, n_in=3, n_out=2, accum=3,
                            opt_name="SGD(lr=0.1, momentum=0.9)", loss_name="mse_loss", seed=1)
    check_against_big_batch(impl, n=4, size=3, n_in=2, n_out=3, accum=3, opt_name="Adam(lr=0.01)",
                            loss_name="cross_entropy", seed=2, as_generator=True)


@pytest.mark.points(2)
@pytest.mark.parametrize("n, accum", [(6, 3), (7, 3), (2, 5), (4, 1)])
def test_step_count_is_ceil_n_over_accum(impl, n, accum):
    check_against_big_batch(impl, n=n, size=2, n_in=2, n_out=1, accum=accum,
                            opt_name="SGD(lr=0.1, momentum=0.9)", loss_name="mse_loss", seed=3)


def test_leftover_gradients_do_not_enter_the_update(impl):
    model = make_model(2, 1, seed=4)
    ref_model = copy.deepcopy(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)
    batches = make_batches(4, 2, 2, 1, "mse_loss", seed=5)
    make_opt = OPTIMIZERS["SGD(lr=0.1, momentum=0.9)"]
    _, got = run_learner(impl, model, make_opt(model.parameters()), F.mse_loss, batches, 2)
    want, _ = big_batch_reference(ref_model, make_opt, F.mse_loss, batches, 2)
    assert len(got) == len(want), f"optimizer.step() called {len(got)} times, expected {len(want)}"
    for name, value in want[0].items():
        assert_close(got[0][name], value, **TOL,
                     name=f"with gradients of 100 already in .grad before the call: {name} after "
                          "the first step")


@pytest.mark.points(2)
def test_each_micro_batch_is_back_propagated_before_the_next_forward(impl):
    """A hook on each micro-batch's loss records when backward reaches it; when the next
    micro-batch's loss is computed, the previous one must have been back-propagated already."""
    model = make_model(2, 1, seed=6)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    reached: list[bool] = []
    late: list[int] = []

    def loss_fn(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        index = len(reached)
        if index > 0 and not reached[index - 1]:
            late.append(index)
        reached.append(False)
        loss = F.mse_loss(out, y)
        loss.register_hook(lambda grad: reached.__setitem__(index, True) or grad)
        return loss

    impl.train_accumulated(model, opt, loss_fn, make_batches(6, 2, 2, 1, "mse_loss", seed=7), 3)
    assert len(reached) == 6, (f"loss_fn was called {len(reached)} times for 6 micro-batches, "
                               "expected once per micro-batch")
    assert not late, (f"micro-batch {late[0] + 1}'s forward pass ran before micro-batch {late[0]}'s "
                      "loss was back-propagated: call backward on each micro-batch's (scaled) loss "
                      "right away, so only one graph is in memory at a time")
    assert all(reached), ("some micro-batch losses were never back-propagated "
                          f"(backward reached {sum(reached)} of {len(reached)})")


def test_no_batches_no_step(impl):
    model = make_model(2, 1, seed=8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses, snapshots = run_learner(impl, model, opt, F.mse_loss, [], 3)
    assert losses == [] and not snapshots, (
        f"with no batches: returned {losses!r} and stepped {len(snapshots)} times, expected [] and 0")


@pytest.mark.parametrize("device", device_params())
def test_runs_on_the_model_device(impl, device):
    model = make_model(3, 2, seed=9, dtype=torch.float32, device=device)
    ref_model = copy.deepcopy(model)
    batches = make_batches(5, 2, 3, 2, "cross_entropy", seed=10, dtype=torch.float32, device=device)
    make_opt = OPTIMIZERS["Adam(lr=0.01)"]
    losses, got = run_learner(impl, model, make_opt(model.parameters()), F.cross_entropy, batches, 2)
    want, want_losses = big_batch_reference(ref_model, make_opt, F.cross_entropy, batches, 2)
    assert len(got) == len(want), f"on {device}: {len(got)} optimizer steps, expected {len(want)}"
    for name, p in model.named_parameters():
        assert_device(p, device, name=f"{name} after train_accumulated")
    for name, value in want[-1].items():
        assert_close(got[-1][name], value, rtol=1e-4, atol=1e-5, name=f"on {device}: {name}")


@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=["bfloat16", "float16"])
def test_works_under_autocast(impl, low):
    model = make_model(3, 2, seed=11, dtype=torch.float32)
    ref_model = copy.deepcopy(model)
    batches = make_batches(4, 4, 3, 2, "mse_loss", seed=12, dtype=torch.float32)
    make_opt = OPTIMIZERS["SGD(lr=0.1, momentum=0.9)"]
    with torch.autocast("cpu", dtype=low):
        losses, got = run_learner(impl, model, make_opt(model.parameters()), F.mse_loss, batches, 2)
    with torch.autocast("cpu", dtype=low):
        want, want_losses = big_batch_reference(ref_model, make_opt, F.mse_loss, batches, 2)
    assert len(got) == len(want), f"under autocast: {len(got)} optimizer steps, expected {len(want)}"
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, f"under autocast: {name} became {p.dtype}, expected float32"
    for k, (loss, want_loss) in enumerate(zip(losses, want_losses)):
        assert math.isclose(loss, want_loss, rel_tol=5e-2, abs_tol=1e-2), (
            f"under autocast: loss of step {k + 1} is {loss}, expected about {want_loss}")
    for name, value in want[-1].items():
        assert_close(got[-1][name], value, rtol=5e-2, atol=1e-2,
                     name=f"under autocast ({low} on CPU): {name}")


@pytest.mark.parametrize("bad", [0, -2, 1.5, float("nan"), "2", None],
                         ids=["0", "-2", "1.5", "nan", "str", "None"])
def test_bad_accum_steps(impl, bad):
    model = make_model(2, 1, seed=13)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = make_batches(2, 2, 2, 1, "mse_loss", seed=14)
    assert_raises_naming(ValueError, "accum_steps", impl.train_accumulated, model, opt,
                         F.mse_loss, batches, bad)


class RecordsMode(torch.nn.Module):
    """A model that records whether it was in training mode at each forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = make_model(2, 1, seed=15)
        self.modes: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        return self.inner(x)


def test_model_is_in_training_mode_before_the_first_forward(impl):
    model = RecordsMode()
    model.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    impl.train_accumulated(model, opt, F.mse_loss, make_batches(4, 2, 2, 1, "mse_loss", seed=16), 2)
    assert len(model.modes) == 4, f"the model ran {len(model.modes)} forward passes, expected 4"
    assert all(model.modes), (
        f"training mode at each forward pass: {model.modes}; call model.train() first, before any "
        "forward pass")


class BatchIterable:
    """An iterable that is neither a sequence nor a generator, and has no len()."""

    def __init__(self, batches: list) -> None:
        self.batches = batches

    def __iter__(self):
        return iter(self.batches)


@pytest.mark.parametrize("kind", ["list", "tuple", "generator", "iterable object", "DataLoader"])
def test_any_iterable_of_micro_batches(impl, kind):
    """5 micro-batches of 2 in groups of 2 (the last group short), given as each kind."""
    model = make_model(3, 2, seed=17)
    ref_model = copy.deepcopy(model)
    batches = make_batches(5, 2, 3, 2, "mse_loss", seed=18)
    if kind == "DataLoader":
        x = torch.cat([b[0] for b in batches])
        y = torch.cat([b[1] for b in batches])
        source = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=2)
    else:
        source = {"list": lambda: list(batches), "tuple": lambda: tuple(batches),
                  "generator": lambda: (b for b in batches),
                  "iterable object": lambda: BatchIterable(batches)}[kind]()
    make_opt = OPTIMIZERS["Adam(lr=0.01)"]
    losses, got = run_learner(impl, model, make_opt(model.parameters()), F.mse_loss, source, 2)
    want, want_losses = big_batch_reference(ref_model, make_opt, F.mse_loss, batches, 2)
    label = f"5 micro-batches given as a {kind}, accum_steps=2"
    assert len(got) == len(want) == len(losses), (
        f"{label}: {len(got)} optimizer steps and {len(losses)} losses, expected {len(want)}")
    for k, (loss, want_loss) in enumerate(zip(losses, want_losses)):
        assert math.isclose(loss, want_loss, **LOSS_TOL), (
            f"{label}: loss of step {k + 1} is {loss!r}, expected {want_loss!r}")
    for name, value in want[-1].items():
        assert_close(got[-1][name], value, **TOL, name=f"{label}: {name} after the last step")
