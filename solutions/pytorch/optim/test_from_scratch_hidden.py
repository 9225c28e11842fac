"""Hidden tests for pytorch.optim.from_scratch (the catalog's contract checks).

Every trajectory test runs the learner's optimizer and the matching ``torch.optim`` one side by
side on identical parameters, feeds both the same gradients (a function of the current
parameters plus fixed noise, so a divergence shows up as a different gradient too) and compares
the parameters after every step. While the learner's ``step`` runs, ``torch.optim``'s own SGD and
Adam kernels are replaced by functions that fail, so delegating to them is reported.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
import torch
from hypothesis import Phase, given, settings, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, device_params,
                           record_calls, shapes)

STEPS = 50
TOL = dict(rtol=1e-6, atol=1e-6)  # float64 trajectories (the catalog's 1e-6)
TOL32 = dict(rtol=1e-5, atol=1e-5)  # float32: another correct order of operations rounds differently
# Shrinking a failing 50-step trajectory re-runs it hundreds of times (past the test time limit);
# the failure message already names the options, groups and step, so report the first failure.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)

# torch.optim's own SGD and Adam update kernels, wherever the learner's code reaches them from.
TORCH_KERNELS = tuple(f"torch.optim.{module}.{kernel}" for module in ("sgd", "adam")
                      for kernel in (f"_single_tensor_{module}", f"_multi_tensor_{module}", f"_fused_{module}"))


def step_from_scratch(opt: torch.optim.Optimizer, what: str, *closure: Callable[[], Any]) -> Any:
    """``opt.step(*closure)``, failing when it ran one of torch.optim's own update kernels."""
    result, called = record_calls(TORCH_KERNELS, opt.step, *closure)
    assert not called, (f"{what} called torch.optim's built-in kernel {called[0]}: the update must be "
                        "written from scratch, not delegated to torch.optim")
    return result


# --------------------------------------------------------------------------------------------
# Problems and trajectories
# --------------------------------------------------------------------------------------------

@dataclass
class Problem:
    """Initial values, targets and per-step noise for some parameters, and where grads are None."""

    inits: list[torch.Tensor]
    targets: list[torch.Tensor]
    noise: list[list[torch.Tensor]]
    none: list[list[bool]] = field(default_factory=list)  # [step][param]: grad is None

    @property
    def steps(self) -> int:
        return len(self.noise)


def make_problem(param_shapes: list[tuple[int, ...]], seed: int, *, steps: int = STEPS,
                 none_prob: float = 0.0) -> Problem:
    gen = torch.Generator().manual_seed(seed)

    def randn(shape: tuple[int, ...], scale: float = 1.0) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64) * scale

    inits = [randn(s) for s in param_shapes]
    targets = [randn(s) for s in param_shapes]
    noise = [[randn(s, 0.3) for s in param_shapes] for _ in range(steps)]
    draws = torch.rand(steps, len(param_shapes), generator=gen)
    none = (draws < none_prob).tolist()
    return Problem(inits, targets, noise, none)


def run(make_opt: Callable[[list], torch.optim.Optimizer], problem: Problem, *,
        dtype: torch.dtype = torch.float64, device: str = "cpu", banned: str | None = None,
        on_step: Callable[[int, torch.optim.Optimizer], None] | None = None,
        params: list[torch.nn.Parameter] | None = None, opt: torch.optim.Optimizer | None = None,
        start: int = 0) -> tuple[list[list[torch.Tensor]], torch.optim.Optimizer, list]:
    """Run steps ``start..problem.steps``; return the parameters after each step, the optimizer and
    the parameters. ``banned`` names the learner's optimizer: its steps may not run torch's
    kernels."""
    if params is None:
        params = [torch.nn.Parameter(x.to(device, dtype, copy=True)) for x in problem.inits]
    if opt is None:
        opt = make_opt(params)
    targets = [t.to(device, dtype) for t in problem.targets]
    history = []
    for t in range(start, problem.steps):
        if on_step is not None:
            on_step(t, opt)
        for i, p in enumerate(params):
            if problem.none and problem.none[t][i]:
                p.grad = None
            else:
                # Curvature 1 plus noise: a stable, linear problem, so round-off never blows up.
                p.grad = (p.detach() - targets[i]) + problem.noise[t][i].to(device, dtype)
        if banned:
            step_from_scratch(opt, banned)
        else:
            opt.step()
        history.append([p.detach().clone() for p in params])
    return history, opt, params


def compare(got: list[list[torch.Tensor]], want: list[list[torch.Tensor]], label: str,
            *, offset: int = 0, tol: dict | None = None) -> None:
    """Compare histories step by step; the first difference fails, naming step and parameter."""
    for t, (g_params, w_params) in enumerate(zip(got, want)):
        for i, (g, w) in enumerate(zip(g_params, w_params)):
            assert_close(g, w, **(tol or TOL),
                         name=f"{label}: parameter {i} (shape {tuple(w.shape)}) after step "
                              f"{offset + t + 1}")


def groups_for(params: list, spec: list[tuple[list[int], dict]]) -> list[dict]:
    return [{"params": [params[i] for i in idx], **opts} for idx, opts in spec]


def describe(name: str, defaults: dict, spec: list[tuple[list[int], dict]]) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in defaults.items())
    groups = "; ".join(f"group {g} params {idx} {opts}" for g, (idx, opts) in enumerate(spec))
    return f"{name}({args}) with {groups}"


def check_against_torch(impl, name: str, defaults: dict, spec: list[tuple[list[int], dict]],
                        problem: Problem, *, dtype: torch.dtype = torch.float64,
                        device: str = "cpu", on_step=None, tol: dict | None = None) -> None:
    mine_cls, ref_cls = getattr(impl, name), getattr(torch.optim, name)
    got, _, _ = run(lambda ps: mine_cls(groups_for(ps, spec), **defaults), problem, dtype=dtype,
                    device=device, banned=f"{name}.step", on_step=on_step)
    want, _, _ = run(lambda ps: ref_cls(groups_for(ps, spec), **defaults), problem, dtype=dtype,
                     device=device, on_step=on_step)
    label = describe(name, defaults, spec)
    skipped = [(t + 1, i) for t, row in enumerate(problem.none) for i, none in enumerate(row) if none]
    if skipped:
        label += (f" (some parameters had grad None, e.g. parameter {skipped[0][1]} at step "
                  f"{skipped[0][0]}: {len(skipped)} such (step, parameter) pairs)")
    compare(got, want, label, tol=tol)


# --------------------------------------------------------------------------------------------
# Hyper-parameter strategies
# --------------------------------------------------------------------------------------------

lrs = st.one_of(st.just(0.0), st.floats(1e-3, 0.5))
decays = st.one_of(st.just(0.0), st.floats(1e-4, 0.2))


@st.composite
def sgd_options(draw) -> dict:
    momentum = draw(st.one_of(st.just(0.0), st.floats(0.05, 0.95)))
    nesterov = momentum > 0 and draw(st.booleans())
    return dict(lr=draw(lrs), momentum=momentum, weight_decay=draw(decays), nesterov=nesterov)


@st.composite
def adam_options(draw) -> dict:
    betas = (draw(st.one_of(st.just(0.0), st.floats(0.0, 0.99, allow_subnormal=False))),
             draw(st.one_of(st.just(0.0), st.floats(0.5, 0.9999))))
    eps = draw(st.sampled_from([1e-8, 1e-6, 1e-3, 0.1]))
    return dict(lr=draw(lrs), betas=betas, eps=eps, weight_decay=draw(decays),
                amsgrad=draw(st.booleans()))


@st.composite
def setups(draw, options, safe_keys: tuple[str, ...]):
    """(shapes, constructor defaults, group spec, seed, none_prob). Later groups override either
    a whole valid option set or a subset of keys that are valid in any combination."""
    param_shapes = draw(st.lists(shapes(max_dims=3, max_side=4), min_size=1, max_size=3))
    defaults = draw(options())
    n_groups = draw(st.integers(1, len(param_shapes)))
    spec = []
    for g in range(n_groups):
        idx = list(range(g, len(param_shapes), n_groups))
        if g == 0:
            opts = {}
        else:
            full = draw(options())
            keys = draw(st.sampled_from([(), tuple(full), safe_keys]))
            opts = {k: full[k] for k in keys}
        spec.append((idx, opts))
    seed = draw(st.integers(0, 2**16))
    none_prob = draw(st.sampled_from([0.0, 0.0, 0.3]))
    return param_shapes, defaults, spec, seed, none_prob


# --------------------------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------------------------

def test_both_are_optimizer_subclasses_with_hyperparameters_in_groups(impl):
    p = torch.nn.Parameter(torch.zeros(2))
    sgd = impl.SGD([p], lr=0.25, momentum=0.5, weight_decay=0.125, nesterov=True)
    adam = impl.Adam([p], lr=0.25, betas=(0.5, 0.75), eps=0.125, weight_decay=0.5, amsgrad=True)
    for opt, expected in ((sgd, dict(lr=0.25, momentum=0.5, weight_decay=0.125, nesterov=True)),
                          (adam, dict(lr=0.25, betas=(0.5, 0.75), eps=0.125, weight_decay=0.5,
                                      amsgrad=True))):
        name = type(opt).__name__
        assert isinstance(opt, torch.optim.Optimizer), f"{name} must subclass torch.optim.Optimizer"
        group = opt.param_groups[0]
        for key, value in expected.items():
            assert key in group, f"{name}: param_groups[0] has no {key!r} (keys: {sorted(group)})"
            got = tuple(group[key]) if key == "betas" else group[key]
            assert got == value, f"{name}: param_groups[0][{key!r}] is {got!r}, expected {value!r}"
    adam_default = impl.Adam([p])
    group = adam_default.param_groups[0]
    assert (group.get("lr"), tuple(group.get("betas", ())), group.get("eps")) == (1e-3, (0.9, 0.999), 1e-8), (
        "Adam defaults must be lr=1e-3, betas=(0.9, 0.999), eps=1e-8")


@pytest.mark.points(2)
@settings(max_examples=20, phases=NO_SHRINK)
@given(setup=setups(sgd_options, ("lr", "weight_decay")))
def test_sgd_trajectories_match_torch(impl, setup):
    param_shapes, defaults, spec, seed, none_prob = setup
    problem = make_problem(param_shapes, seed, none_prob=none_prob)
    check_against_torch(impl, "SGD", defaults, spec, problem)


@pytest.mark.points(2)
@settings(max_examples=20, phases=NO_SHRINK)
@given(setup=setups(adam_options, ("lr", "betas", "eps", "weight_decay", "amsgrad")))
def test_adam_trajectories_match_torch(impl, setup):
    param_shapes, defaults, spec, seed, none_prob = setup
    problem = make_problem(param_shapes, seed, none_prob=none_prob)
    check_against_torch(impl, "Adam", defaults, spec, problem)


@pytest.mark.points(2)
def test_sgd_each_option_matches_torch(impl):
    """One option at a time, so a failure names the option that is wrong."""
    problem = make_problem([(3, 2), (4,)], seed=1)
    for defaults in (dict(lr=0.1), dict(lr=0.1, weight_decay=0.1), dict(lr=0.1, weight_decay=1.0),
                     dict(lr=0.1, momentum=0.9),
                     dict(lr=0.05, momentum=0.9, nesterov=True),
                     dict(lr=0.02, momentum=1.0), dict(lr=0.02, momentum=1.0, nesterov=True),
                     dict(lr=0.05, momentum=0.5, weight_decay=0.05, nesterov=True)):
        check_against_torch(impl, "SGD", defaults, [([0, 1], {})], problem)


@pytest.mark.points(2)
def test_adam_each_option_matches_torch(impl):
    problem = make_problem([(3, 2), (4,)], seed=2)
    for defaults in (dict(lr=0.05), dict(lr=0.05, betas=(0.5, 0.9)), dict(lr=0.05, eps=0.1),
                     dict(lr=0.05, weight_decay=0.1), dict(lr=0.05, weight_decay=1.0),
                     dict(lr=0.05, amsgrad=True),
                     dict(lr=0.05, betas=(0.0, 0.0), eps=1e-3, weight_decay=0.05, amsgrad=True)):
        check_against_torch(impl, "Adam", defaults, [([0, 1], {})], problem)


@pytest.mark.points(2)
def test_groups_use_their_own_hyperparameters(impl):
    problem = make_problem([(2, 3), (5,), (1,)], seed=3)
    check_against_torch(impl, "SGD", dict(lr=0.1, momentum=0.5),
                        [([0], dict(lr=0.02, momentum=0.9, nesterov=True)),
                         ([1], dict(weight_decay=0.1, momentum=0.0)), ([2], {})], problem)
    check_against_torch(impl, "Adam", dict(lr=0.05),
                        [([0], dict(betas=(0.5, 0.9), amsgrad=True)),
                         ([1], dict(eps=1e-2, weight_decay=0.05, lr=0.2)), ([2], {})], problem)


@pytest.mark.points(2)
def test_params_without_grad_are_skipped_altogether(impl):
    """grad None: the parameter must not move, and its own state (momentum buffer, Adam moments,
    Adam's update count used in the bias correction) must not advance."""
    problem = make_problem([(3,), (2, 2)], seed=4)
    for t in range(STEPS):
        # Parameter 1 has no gradient for its first 5 steps and then on every third step.
        problem.none[t] = [False, t < 5 or t % 3 == 0]
    for name, defaults in (("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
                           ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                           ("Adam", dict(lr=0.1)),
                           ("Adam", dict(lr=0.1, weight_decay=0.1, amsgrad=True))):
        check_against_torch(impl, name, defaults, [([0, 1], {})], problem)


@pytest.mark.parametrize("name, defaults", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, amsgrad=True)),
], ids=["SGD-decay", "SGD-nesterov", "Adam", "Adam-amsgrad"])
def test_exactly_zero_gradients_are_updates(impl, name, defaults):
    """A gradient of exactly zero is not ``None``: the step happens (weight decay acts, momentum
    and Adam's moments decay, Adam's ``t`` advances), as in torch."""
    gen = torch.Generator().manual_seed(10)
    init = torch.randn(3, 2, generator=gen, dtype=torch.float64)
    grads = [torch.zeros(3, 2, dtype=torch.float64) if t in (0, 1, 4) else
             torch.randn(3, 2, generator=gen, dtype=torch.float64) for t in range(8)]
    mine, ref = torch.nn.Parameter(init.clone()), torch.nn.Parameter(init.clone())
    opt_mine = getattr(impl, name)([mine], **defaults)
    opt_ref = getattr(torch.optim, name)([ref], **defaults)
    for t, g in enumerate(grads):
        mine.grad, ref.grad = g.clone(), g.clone()
        step_from_scratch(opt_mine, f"{name}.step")
        opt_ref.step()
        assert_close(mine.detach(), ref.detach(), **TOL,
                     name=f"{name}({defaults}) with gradients exactly 0 at steps 1, 2 and 5: "
                          f"parameter after step {t + 1}")


@pytest.mark.parametrize("defaults", [dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True)],
                         ids=["momentum", "nesterov"])
def test_sgd_with_grads_zeroed_in_place(impl, defaults):
    """``zero_grad(set_to_none=False)`` keeps each ``.grad`` tensor and zeroes it in place, and
    ``backward`` then adds into it: the momentum buffer must be a value of its own, as in torch."""
    gen = torch.Generator().manual_seed(11)
    x, y = torch.randn(8, 3, generator=gen, dtype=torch.float64), torch.randn(8, generator=gen, dtype=torch.float64)
    mine = torch.nn.Parameter(torch.randn(3, generator=gen, dtype=torch.float64))
    ref = torch.nn.Parameter(mine.detach().clone())
    opt_mine, opt_ref = impl.SGD([mine], **defaults), torch.optim.SGD([ref], **defaults)
    for step in range(6):
        for w, opt in ((mine, opt_mine), (ref, opt_ref)):
            opt.zero_grad(set_to_none=False)
            ((x @ w - y) ** 2).mean().backward()
            if opt is opt_mine:
                step_from_scratch(opt, "SGD.step")
            else:
                opt.step()
        assert_close(mine.detach(), ref.detach(), **TOL,
                     name=f"SGD({defaults}) trained with zero_grad(set_to_none=False): parameter "
                          f"after step {step + 1}")


def test_lr_changed_between_steps_takes_effect(impl):
    """What a learning-rate scheduler does: edit group['lr'] between steps."""
    problem = make_problem([(3,), (2,)], seed=5)

    def schedule(t: int, opt: torch.optim.Optimizer) -> None:
        if t == 20:
            opt.param_groups[0]["lr"] *= 0.1
        if t == 35:
            opt.param_groups[1]["lr"] = 0.0

    for name, defaults in (("SGD", dict(lr=0.2, momentum=0.9)), ("Adam", dict(lr=0.1))):
        check_against_torch(impl, name, defaults, [([0], {}), ([1], {})], problem, on_step=schedule)


@pytest.mark.points(2)
def test_float32_trajectories_match_torch(impl):
    problem = make_problem([(4, 3), (5,)], seed=6, none_prob=0.2)
    check_against_torch(impl, "SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True),
                        [([0, 1], {})], problem, dtype=torch.float32, tol=TOL32)
    check_against_torch(impl, "Adam", dict(lr=0.05, weight_decay=0.01, amsgrad=True),
                        [([0, 1], {})], problem, dtype=torch.float32, tol=TOL32)


@pytest.mark.points(2)
@pytest.mark.parametrize("name, defaults", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.05, nesterov=True)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.05, amsgrad=True)),
], ids=["SGD", "Adam"])
def test_state_dict_resume_continues_exactly(impl, name, defaults):
    """Checkpoint after k steps (through torch.save / torch.load(weights_only=True)), load into a
    new optimizer built with a different lr, continue: the same trajectory as never stopping."""
    problem = make_problem([(3, 2), (4,)], seed=7, none_prob=0.2)
    problem.none[0] = [False, True]  # parameter 1 starts without state
    mine_cls, ref_cls = getattr(impl, name), getattr(torch.optim, name)
    want, _, _ = run(lambda ps: ref_cls(ps, **defaults), problem)
    k = 17
    first, opt, params = run(lambda ps: mine_cls(ps, **defaults),
                             Problem(problem.inits, problem.targets, problem.noise[:k],
                                     problem.none[:k]), banned=f"{name}.step")
    label = f"{name}({defaults})"
    compare(first, want[:k], label + " before the checkpoint")
    buffer = io.BytesIO()
    torch.save(opt.state_dict(), buffer)
    buffer.seek(0)
    try:
        saved = torch.load(buffer, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"{name}.state_dict() cannot be loaded with torch.load(weights_only="
                             f"True) ({type(exc).__name__}: {str(exc)[:200]}): keep only tensors "
                             "and Python numbers in the state") from None
    fresh_params = [torch.nn.Parameter(p.detach().clone()) for p in params]
    fresh = mine_cls(fresh_params, **{**defaults, "lr": 123.0})
    fresh.load_state_dict(saved)
    rest, _, _ = run(None, problem, params=fresh_params, opt=fresh, start=k, banned=f"{name}.step")
    compare(rest, want[k:], label + " resumed from its state_dict", offset=k)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_step_with_closure(impl, name):
    torch.manual_seed(0)
    x, y = torch.randn(6, 3, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    w_mine = torch.nn.Parameter(torch.randn(3, dtype=torch.float64))
    w_ref = torch.nn.Parameter(w_mine.detach().clone())
    opt_mine = getattr(impl, name)([w_mine], lr=0.1)
    opt_ref = getattr(torch.optim, name)([w_ref], lr=0.1)

    def closure_for(w: torch.Tensor, opt: torch.optim.Optimizer):
        def closure() -> torch.Tensor:
            opt.zero_grad()
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            return loss
        return closure

    for step in range(3):
        closure = closure_for(w_mine, opt_mine)
        try:
            loss = step_from_scratch(opt_mine, f"{name}.step", closure)
        except RuntimeError as exc:
            raise AssertionError(
                f"{name}.step(closure) raised RuntimeError: {str(exc)[:200]} (the closure calls "
                "backward, so it must run with gradients enabled even if step itself runs "
                "under torch.no_grad())") from None
        loss_ref = opt_ref.step(closure_for(w_ref, opt_ref))
        assert isinstance(loss, torch.Tensor), (
            f"{name}.step(closure) returned {type(loss).__name__}, expected the closure's loss")
        assert_close(loss.detach(), loss_ref.detach(), name=f"{name}.step(closure) return value")
        assert_close(w_mine.detach(), w_ref.detach(), **TOL,
                     name=f"{name} parameter after step(closure) number {step + 1}")
    w_mine.grad = torch.ones_like(w_mine)
    result = opt_mine.step()
    assert result is None, f"{name}.step() without a closure returned {result!r}, expected None"


@pytest.mark.parametrize("name, defaults", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, amsgrad=True)),
], ids=["SGD", "Adam"])
def test_updates_in_place_without_autograd_history(impl, name, defaults):
    p = torch.nn.Parameter(torch.randn(4, 3))
    twin = torch.nn.Parameter(p.detach().clone())
    ptr = p.data_ptr()
    opt = getattr(impl, name)([p], **defaults)
    ref = getattr(torch.optim, name)([twin], **defaults)
    for _ in range(3):
        for param, o in ((p, opt), (twin, ref)):
            (param ** 2).sum().backward()
            o.step()
            o.zero_grad()
    assert p.is_leaf and p.grad_fn is None and p.requires_grad, (
        f"{name}.step left the parameter with autograd history (is_leaf={p.is_leaf}, grad_fn="
        f"{p.grad_fn}): update it under torch.no_grad()")
    assert p.data_ptr() == ptr, (f"{name}.step replaced the parameter's storage: update it in place "
                                 "(p.add_(...)) so views of it and references to it stay valid")
    assert_close(p.detach(), twin.detach(), **TOL32, name=f"{name}: parameter after 3 steps")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("name, defaults", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True)),
    ("Adam", dict(lr=0.1, weight_decay=0.1, amsgrad=True)),
], ids=["SGD", "Adam"])
def test_runs_on_device_with_state_on_device(impl, name, defaults, device, dtype):
    problem = make_problem([(3, 2), (5,)], seed=8, steps=4)
    got, opt, params = run(lambda ps: getattr(impl, name)(ps, **defaults), problem,
                           dtype=dtype, device=device, banned=f"{name}.step")
    for i, p in enumerate(params):
        assert_device(p, device, name=f"{name}: parameter {i} after step")
        assert p.dtype == dtype, f"{name}: parameter {i} became {p.dtype}"
        for key, value in opt.state[p].items():
            if isinstance(value, torch.Tensor) and value.shape == p.shape:
                assert_device(value, device, name=f"{name}: state[{key!r}] of parameter {i}")
                assert value.dtype == p.dtype, (f"{name}: state[{key!r}] of parameter {i} is "
                                                f"{value.dtype}, the parameter {p.dtype}")
    if device != "meta":
        want, _, _ = run(lambda ps: getattr(torch.optim, name)(ps, **defaults), problem,
                         dtype=dtype, device=device)
        compare(got, want, f"{name}({defaults}) on {device} in {dtype}",
                tol=TOL32 if dtype == torch.float32 else TOL)


# Each bad argument alone, every other argument valid, so a check on the wrong argument fails.
_SGD_OK = dict(lr=0.1, momentum=0.5, weight_decay=0.1)
_ADAM_OK = dict(lr=0.1, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
NAN = float("nan")


@pytest.mark.parametrize("name, key, value", [
    ("SGD", "lr", -0.1), ("SGD", "momentum", -0.5), ("SGD", "weight_decay", -1.0),
    ("Adam", "lr", -1e-3), ("Adam", "eps", -1e-8), ("Adam", "weight_decay", -0.1),
])
def test_negative_arguments_raise_value_error_naming_them(impl, name, key, value):
    p = [torch.nn.Parameter(torch.zeros(2))]
    defaults = _SGD_OK if name == "SGD" else _ADAM_OK
    assert_raises_naming(ValueError, key, getattr(impl, name), p, **{**defaults, key: value})


@pytest.mark.parametrize("name, key", [
    ("SGD", "lr"), ("SGD", "momentum"), ("SGD", "weight_decay"),
    ("Adam", "lr"), ("Adam", "eps"), ("Adam", "weight_decay"),
])
def test_nan_arguments_raise_value_error_naming_them(impl, name, key):
    p = [torch.nn.Parameter(torch.zeros(2))]
    defaults = _SGD_OK if name == "SGD" else _ADAM_OK
    assert_raises_naming(ValueError, key, getattr(impl, name), p, **{**defaults, key: NAN})


@pytest.mark.parametrize("betas", [(1.0, 0.999), (0.9, 1.0), (-1e-3, 0.999), (0.9, -0.1),
                                   (NAN, 0.999), (0.9, NAN)],
                         ids=["beta1=1", "beta2=1", "beta1<0", "beta2<0", "beta1=nan", "beta2=nan"])
def test_betas_outside_range_raise_value_error_naming_betas(impl, betas):
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert_raises_naming(ValueError, "betas", impl.Adam, p, **{**_ADAM_OK, "betas": betas})


def test_nesterov_without_momentum_raises_value_error_naming_nesterov(impl):
    p = [torch.nn.Parameter(torch.zeros(2))]
    assert_raises_naming(ValueError, "nesterov", impl.SGD, p, lr=0.1, nesterov=True)
    assert_raises_naming(ValueError, "nesterov", impl.SGD, p, lr=0.1, momentum=0.0, nesterov=True)


@pytest.mark.parametrize("name, key, value", [
    ("SGD", "lr", 0.0), ("SGD", "momentum", 0.0), ("SGD", "weight_decay", 0.0),
    ("SGD", "momentum", 0), ("Adam", "lr", 0.0), ("Adam", "eps", 0.0),
    ("Adam", "weight_decay", 0.0), ("Adam", "betas", (0.0, 0.999)), ("Adam", "betas", (0.9, 0.0)),
    ("Adam", "betas", (0.0, 0.0)), ("Adam", "betas", (0.999999, 0.999999)),
], ids=["SGD-lr=0", "SGD-momentum=0.0", "SGD-weight_decay=0", "SGD-momentum=int0", "Adam-lr=0",
        "Adam-eps=0", "Adam-weight_decay=0", "Adam-beta1=0", "Adam-beta2=0", "Adam-betas=0",
        "Adam-betas-near-1"])
def test_included_range_ends_are_accepted_and_step_like_torch(impl, name, key, value):
    """One boundary value at a time (the others ordinary), and the optimizer built with it must
    also step exactly like torch's."""
    defaults = {**(_SGD_OK if name == "SGD" else _ADAM_OK), key: value}
    try:
        getattr(impl, name)([torch.nn.Parameter(torch.zeros(2))], **defaults)
    except ValueError as exc:
        raise AssertionError(f"{name}({key}={value!r}) raised ValueError ({str(exc)[:200]}), but "
                             f"{value!r} is inside the allowed range") from None
    problem = make_problem([(3,), (2, 2)], seed=9, steps=10)
    check_against_torch(impl, name, defaults, [([0, 1], {})], problem)


@pytest.mark.parametrize("name, defaults", [
    ("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1)),
], ids=["SGD", "Adam"])
def test_params_given_as_a_generator(impl, name, defaults):
    """``model.parameters()`` is a one-shot generator: every parameter must still be optimized."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).double()
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)).double()
    twin.load_state_dict(model.state_dict())
    try:
        opt = getattr(impl, name)(model.parameters(), **defaults)
    except ValueError as exc:
        raise AssertionError(f"{name}(model.parameters(), ...) raised ValueError ({str(exc)[:200]}): "
                             "params may be any iterable, a one-shot generator included") from None
    ref = getattr(torch.optim, name)(twin.parameters(), **defaults)
    x = torch.randn(5, 3, dtype=torch.float64)
    for step in range(3):
        for m, o in ((model, opt), (twin, ref)):
            o.zero_grad()
            m(x).square().sum().backward()
            if o is opt:
                step_from_scratch(o, f"{name}.step")
            else:
                o.step()
        for (key, got), want in zip(model.state_dict().items(), twin.state_dict().values()):
            assert_close(got, want, **TOL, name=f"{name}(model.parameters(), ...): {key} after "
                                                f"step {step + 1}")
