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
def test_lr_at_phases_are_monotone_and_bounded(impl, schedule):
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


def test_bad_arguments_raise_value_error_naming_them(impl):
    kw = dict(base_lr=0.1, warmup_steps=2, total_steps=10, min_lr_ratio=0.0)
    assert_raises_naming(ValueError, "step", impl.lr_at, -1, **kw)
    assert_raises_naming(ValueError, "base_lr", impl.lr_at, 0, **{**kw, "base_lr": -0.1})
    assert_raises_naming(ValueError, "warmup_steps", impl.lr_at, 0, **{**kw, "warmup_steps": -1})
    assert_raises_naming(ValueError, "total_steps", impl.lr_at, 0, **{**kw, "total_steps": 2})
    assert_raises_naming(ValueError, "min_lr_ratio", impl.lr_at, 0, **{**kw, "min_lr_ratio": 1.5})
    assert_raises_naming(ValueError, "min_lr_ratio", impl.lr_at, 0, **{**kw, "min_lr_ratio": -0.1})
    opt = make_optimizer([0.1])
    assert_raises_naming(ValueError, "warmup_steps", impl.warmup_cosine, opt, -1, 10)
    assert_raises_naming(ValueError, "total_steps", impl.warmup_cosine, opt, 5, 5)
    assert_raises_naming(ValueError, "min_lr_ratio", impl.warmup_cosine, opt, 1, 5, 2.0)
