"""Hidden tests for pytorch.optim.lr_schedules (the catalog's contract checks)."""

from __future__ import annotations

import io
import math

import pytest
import torch
from hypothesis import given, strategies as st

from grader.checks import assert_raises_naming


def expected_lr(step: int, base_lr: float, warmup: int, total: int, ratio: float) -> float:
    """The docstring's schedule, written out independently."""
    if step < warmup:
        return base_lr * step / warmup
    if step >= total:
        return base_lr * ratio
    angle = math.pi * (step - warmup) / (total - warmup)
    return base_lr * ratio + base_lr * (1 - ratio) * (1 + math.cos(angle)) / 2


def close(a: float, b: float, scale: float = 1.0) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12 * max(scale, 1e-300))


def lr_of(impl, step: int, **kw) -> float:
    value = impl.lr_at(step, **kw)
    assert type(value) is float, f"lr_at returned {type(value).__name__}, expected a Python float"
    return value


schedules = st.integers(0, 20).flatmap(lambda w: st.tuples(
    st.just(w), st.integers(w + 1, w + 100), st.floats(0.0, 1.0),
    st.floats(1e-5, 10.0)))

# (warmup, total, min_lr_ratio, base_lr, step) -> lr, worked out by hand.
KEY_STEPS = [
    (10, 110, 0.1, 0.1, 0, 0.0),  # warmup starts from 0
    (10, 110, 0.1, 0.1, 1, 0.01),
    (10, 110, 0.1, 0.1, 5, 0.05),
    (10, 110, 0.1, 0.1, 9, 0.09),
    (10, 110, 0.1, 0.1, 10, 0.1),  # peak exactly at the end of warmup
    (10, 110, 0.1, 0.1, 60, 0.055),  # cosine midpoint: r + (1 - r) / 2
    (10, 110, 0.1, 0.1, 110, 0.01),  # floor at total_steps
    (10, 110, 0.1, 0.1, 111, 0.01),
    (10, 110, 0.1, 0.1, 250, 0.01),  # and after it: no cosine coming back up
    (10, 110, 0.1, 0.1, 210, 0.01),
    (0, 4, 0.0, 2.0, 0, 2.0),  # no warmup: the first step uses base_lr
    (0, 4, 0.0, 2.0, 1, 1.0 + math.sqrt(0.5)),
    (0, 4, 0.0, 2.0, 2, 1.0),
    (0, 4, 0.0, 2.0, 4, 0.0),
    (3, 4, 0.5, 1.0, 2, 2 / 3),
    (3, 4, 0.5, 1.0, 3, 1.0),
    (3, 4, 0.5, 1.0, 4, 0.5),
    (1, 3, 1.0, 0.3, 0, 0.0),  # ratio 1: constant after warmup
    (1, 3, 1.0, 0.3, 2, 0.3),
    (1, 3, 1.0, 0.3, 7, 0.3),
]


@pytest.mark.points(2)
def test_lr_at_key_steps(impl):
    wrong = []
    for warmup, total, ratio, base, step, want in KEY_STEPS:
        got = lr_of(impl, step, base_lr=base, warmup_steps=warmup, total_steps=total,
                    min_lr_ratio=ratio)
        if not close(got, want, base):
            wrong.append(f"lr_at({step}, base_lr={base}, warmup_steps={warmup}, total_steps={total}, "
                         f"min_lr_ratio={ratio}) = {got!r}, expected {want!r}")
    assert not wrong, "\n".join(wrong[:4]) + (f"\n(and {len(wrong) - 4} more)" if len(wrong) > 4 else "")


@pytest.mark.points(2)
@given(schedule=schedules, data=st.data())
def test_lr_at_matches_the_formula(impl, schedule, data):
    warmup, total, ratio, base = schedule
    step = data.draw(st.integers(0, total + 30), label="step")
    got = lr_of(impl, step, base_lr=base, warmup_steps=warmup, total_steps=total, min_lr_ratio=ratio)
    want = expected_lr(step, base, warmup, total, ratio)
    assert close(got, want, base), (
        f"lr_at({step}, base_lr={base!r}, warmup_steps={warmup}, total_steps={total}, "
        f"min_lr_ratio={ratio!r}) = {got!r}, expected {want!r}")


@given(schedule=schedules)
def test_lr_at_phases_are_monotone_bounded_and_hit_their_ends(impl, schedule):
    warmup, total, ratio, base = schedule
    kw = dict(base_lr=base, warmup_steps=warmup, total_steps=total, min_lr_ratio=ratio)
    lrs = [lr_of(impl, s, **kw) for s in range(total + 10)]
    slack = 1e-12 * base
    label = f"lr_at with {kw}"
    for s in range(1, warmup + 1):
        assert lrs[s] >= lrs[s - 1] - slack, (f"{label}: lr goes down during warmup, "
                                              f"from {lrs[s - 1]!r} at step {s - 1} to {lrs[s]!r}")
    for s in range(warmup + 1, len(lrs)):
        assert lrs[s] <= lrs[s - 1] + slack, (f"{label}: lr goes up after warmup, from "
                                              f"{lrs[s - 1]!r} at step {s - 1} to {lrs[s]!r}")
    for s, lr in enumerate(lrs):
        low = 0.0 if s < warmup else base * ratio
        assert low - slack <= lr <= base + slack, (f"{label}: lr {lr!r} at step {s} is outside "
                                                   f"[{low!r}, {base!r}]")
    for s, want, what in ((0, 0.0 if warmup else base, "the first step"),
                          (warmup, base, "the end of warmup (the peak)"),
                          (total, base * ratio, "total_steps (the floor)")):
        assert close(lrs[s], want, base), (f"{label}: lr {lrs[s]!r} at step {s}, {what}, "
                                           f"expected {want!r}")


def make_optimizer(lrs: list[float]) -> torch.optim.Optimizer:
    groups = [{"params": [torch.nn.Parameter(torch.zeros(2))], "lr": lr} for lr in lrs]
    return torch.optim.SGD(groups, lr=1.0, momentum=0.9)


def group_lrs(opt: torch.optim.Optimizer) -> list[float]:
    return [g["lr"] for g in opt.param_groups]


def check_lrs(opt, k: int, bases: list[float], warmup: int, total: int, ratio: float,
              label: str) -> None:
    got = group_lrs(opt)
    want = [expected_lr(k, b, warmup, total, ratio) for b in bases]
    for i, (g, w) in enumerate(zip(got, want)):
        assert close(g, w, bases[i]), (
            f"{label}: after {k} scheduler.step() calls, group {i} (base lr {bases[i]}) has lr {g!r}, "
            f"expected {w!r} (warmup_steps={warmup}, total_steps={total}, min_lr_ratio={ratio})")


@pytest.mark.points(2)
@given(warmup=st.integers(0, 6), extra=st.integers(1, 12), ratio=st.floats(0.0, 1.0),
       bases=st.lists(st.floats(1e-4, 5.0), min_size=1, max_size=3))
def test_scheduler_follows_lr_at_in_every_group(impl, warmup, extra, ratio, bases):
    total = warmup + extra
    opt = make_optimizer(bases)
    sched = impl.warmup_cosine(opt, warmup, total, ratio)
    assert isinstance(sched, torch.optim.lr_scheduler.LambdaLR), (
        f"warmup_cosine returned {type(sched).__name__}, expected a LambdaLR")
    check_lrs(opt, 0, bases, warmup, total, ratio, "right after warmup_cosine")
    for k in range(1, total + 4):
        opt.step()
        sched.step()
        check_lrs(opt, k, bases, warmup, total, ratio, "warmup_cosine")


@pytest.mark.points(2)
@pytest.mark.parametrize("stop_at", [2, 7, 15])
def test_scheduler_resumes_from_state_dicts(impl, stop_at):
    """Checkpoint after some steps (through torch.save / torch.load(weights_only=True)), build a
    fresh optimizer and scheduler, load both state dicts, continue: the same lrs as never stopping."""
    bases, warmup, total, ratio = [0.5, 0.05], 5, 12, 0.2
    opt = make_optimizer(bases)
    sched = impl.warmup_cosine(opt, warmup, total, ratio)
    for _ in range(stop_at):
        opt.step()
        sched.step()
    buffer = io.BytesIO()
    torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, buffer)
    buffer.seek(0)
    try:
        saved = torch.load(buffer, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise AssertionError(f"the scheduler's state_dict() cannot be loaded with torch.load("
                             f"weights_only=True): {type(exc).__name__}: {str(exc)[:200]}") from None
    fresh_opt = make_optimizer([9.0, 9.0])  # the lrs come back from the checkpoint
    fresh_sched = impl.warmup_cosine(fresh_opt, warmup, total, ratio)
    fresh_opt.load_state_dict(saved["optimizer"])
    fresh_sched.load_state_dict(saved["scheduler"])
    label = f"resumed after {stop_at} steps"
    check_lrs(fresh_opt, stop_at, bases, warmup, total, ratio, label)
    for k in range(stop_at + 1, total + 3):
        fresh_opt.step()
        fresh_sched.step()
        check_lrs(fresh_opt, k, bases, warmup, total, ratio, label)



def test_lr_at_min_lr_ratio_defaults_to_0(impl):
    """``lr_at(step, *, base_lr, warmup_steps, total_steps, min_lr_ratio=0.0)``: without a
    ratio the schedule decays to 0."""
    kw = dict(base_lr=2.0, warmup_steps=2, total_steps=6)
    for step in (1, 3, 4, 6, 9):
        got = lr_of(impl, step, **kw)
        want = expected_lr(step, 2.0, 2, 6, 0.0)
        assert close(got, want, 2.0), (
            f"lr_at({step}, base_lr=2.0, warmup_steps=2, total_steps=6) = {got!r}, expected "
            f"{want!r} (min_lr_ratio defaults to 0.0)")


def test_warmup_cosine_min_lr_ratio_defaults_to_0(impl):
    """``warmup_cosine(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0)``: without a
    ratio the schedule decays to 0."""
    bases, warmup, total = [0.5, 0.2], 2, 6
    opt = make_optimizer(bases)
    sched = impl.warmup_cosine(opt, warmup_steps=warmup, total_steps=total)
    label = "warmup_cosine(optimizer, warmup_steps=2, total_steps=6) (min_lr_ratio left out)"
    check_lrs(opt, 0, bases, warmup, total, 0.0, label)
    for k in range(1, total + 3):
        opt.step()
        sched.step()
        check_lrs(opt, k, bases, warmup, total, 0.0, label)


NAN = float("nan")
GOOD = dict(base_lr=0.1, warmup_steps=2, total_steps=10, min_lr_ratio=0.0)


# Each bad argument alone, every other argument valid, so a check on the wrong argument fails.
@pytest.mark.parametrize("name, step, changes", [
    ("step", -1, {}),
    ("base_lr", 0, {"base_lr": -0.1}), ("base_lr", 0, {"base_lr": NAN}),
    ("warmup_steps", 0, {"warmup_steps": -1}),
    ("total_steps", 0, {"total_steps": 2}), ("total_steps", 0, {"total_steps": 1}),
    ("min_lr_ratio", 0, {"min_lr_ratio": 1.5}), ("min_lr_ratio", 0, {"min_lr_ratio": 1.0 + 1e-9}),
    ("min_lr_ratio", 0, {"min_lr_ratio": -0.1}), ("min_lr_ratio", 0, {"min_lr_ratio": NAN}),
], ids=["step=-1", "base_lr<0", "base_lr=nan", "warmup<0", "total=warmup", "total<warmup",
        "ratio=1.5", "ratio=1+1e-9", "ratio<0", "ratio=nan"])
def test_lr_at_bad_arguments_raise_value_error_naming_them(impl, name, step, changes):
    assert_raises_naming(ValueError, name, impl.lr_at, step, **{**GOOD, **changes})


@pytest.mark.parametrize("name, args", [
    ("warmup_steps", (-1, 10)), ("total_steps", (5, 5)), ("total_steps", (5, 4)),
    ("min_lr_ratio", (1, 5, 2.0)), ("min_lr_ratio", (1, 5, -0.5)), ("min_lr_ratio", (1, 5, NAN)),
], ids=["warmup<0", "total=warmup", "total<warmup", "ratio>1", "ratio<0", "ratio=nan"])
def test_warmup_cosine_checks_its_arguments_when_called(impl, name, args):
    assert_raises_naming(ValueError, name, impl.warmup_cosine, make_optimizer([0.1]), *args)


# One included end at a time, with the lrs it must give: (step, changes, expected lr).
INCLUDED_ENDS = {
    "step=0": (0, {}, 0.0),
    "base_lr=0": (5, {"base_lr": 0.0}, 0.0),
    "base_lr=0-warmup": (1, {"base_lr": 0.0}, 0.0),
    "warmup=0": (5, {"warmup_steps": 0}, 0.05),
    "total=warmup+1": (3, {"total_steps": 3}, 0.0),
    "total=warmup+1-warmup": (1, {"total_steps": 3}, 0.05),
    "ratio=0": (10, {"min_lr_ratio": 0.0}, 0.0),
    "ratio=1": (1, {"min_lr_ratio": 1.0}, 0.05),
    "ratio=1-floor": (12, {"min_lr_ratio": 1.0}, 0.1),
}


@pytest.mark.parametrize("case", list(INCLUDED_ENDS))
def test_included_range_ends_are_accepted(impl, case):
    step, changes, want = INCLUDED_ENDS[case]
    kw = {**GOOD, **changes}
    try:
        got = lr_of(impl, step, **kw)
    except ValueError as exc:
        raise AssertionError(f"lr_at({step}, {kw}) raised ValueError ({str(exc)[:200]}), but every "
                             "argument is inside its allowed range") from None
    assert close(got, want, 0.1), f"lr_at({step}, {kw}) = {got!r}, expected {want!r}"


@pytest.mark.parametrize("step, kw, want", [
    (3, dict(base_lr=2, warmup_steps=4, total_steps=8, min_lr_ratio=0), 1.5),
    (6, dict(base_lr=2, warmup_steps=4, total_steps=8, min_lr_ratio=0), 1.0),
    (8, dict(base_lr=2, warmup_steps=4, total_steps=8, min_lr_ratio=0), 0.0),
    (20, dict(base_lr=2, warmup_steps=4, total_steps=8, min_lr_ratio=1), 2.0),
    (20, dict(base_lr=2, warmup_steps=0, total_steps=8, min_lr_ratio=0), 0.0),
], ids=["warmup", "cosine", "at-total", "after-total-ratio1", "after-total-ratio0"])
def test_lr_at_returns_a_float_for_int_arguments(impl, step, kw, want):
    got = lr_of(impl, step, **kw)
    assert close(got, want), f"lr_at({step}, {kw}) = {got!r}, expected {want!r}"


@pytest.mark.points(2)
@pytest.mark.parametrize("warmup", [0, 3])
def test_base_lr_is_the_initial_lr_an_earlier_scheduler_recorded(impl, warmup):
    """StepLR ran first: it recorded initial_lr 0.5 / 0.2 and cut lr to 0.05 / 0.02. LambdaLR
    keeps the recorded initial_lr, so the schedule's base lrs are 0.5 and 0.2."""
    opt = make_optimizer([0.5, 0.2])
    earlier = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.1)
    opt.step()
    earlier.step()
    total, ratio = warmup + 6, 0.1
    sched = impl.warmup_cosine(opt, warmup, total, ratio)
    label = "warmup_cosine on an optimizer whose lr a StepLR had already cut from 0.5/0.2 to 0.05/0.02"
    check_lrs(opt, 0, [0.5, 0.2], warmup, total, ratio, label)
    for k in range(1, total + 2):
        opt.step()
        sched.step()
        check_lrs(opt, k, [0.5, 0.2], warmup, total, ratio, label)
