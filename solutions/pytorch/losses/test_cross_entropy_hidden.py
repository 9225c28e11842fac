"""Hidden tests for pytorch.losses.cross_entropy (the catalog's contract checks).

The reference everywhere is torch's own ``F.cross_entropy`` (or a formula written out here), never
the kit's solution.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    call_on_device,
    check_gradients,
    count_aten_ops,
    device_params,
)

REDUCTIONS = ("none", "mean", "sum")
# Torch's own loss kernels as they show up in the dispatcher (F.cross_entropy decomposes into
# _log_softmax + nll_loss_forward / nll_loss2d_forward).
FORBIDDEN_OPS = ("log_softmax", "nll_loss", "cross_entropy")


def describe(logits, weight=None, ignore_index=-100, label_smoothing=0.0, reduction="mean") -> str:
    return (f"cross_entropy(logits{tuple(logits.shape)}, weight={'given' if weight is not None else None}, "
            f"ignore_index={ignore_index}, label_smoothing={label_smoothing:g}, reduction={reduction!r})")


@st.composite
def cases(draw, *, min_extra: int, max_extra: int, keep_one: bool = False, reduction: str | None = None):
    """Logits, target and every option of F.cross_entropy, with some targets ignored.

    ``keep_one`` guarantees a non-ignored position (so the mean is not 0/0)."""
    n, c = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    extra = tuple(draw(st.lists(st.integers(1, 3), min_size=min_extra, max_size=max_extra)))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    logits = 3 * torch.randn(n, c, *extra, generator=gen, dtype=torch.float64)
    ignore_index = draw(st.one_of(st.sampled_from([-100, -1]), st.integers(0, c - 1)))
    target = torch.randint(0, c, (n, *extra), generator=gen)
    ignored = torch.rand(target.shape, generator=gen) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    target[ignored] = ignore_index
    if keep_one:
        valid = [k for k in range(c) if k != ignore_index]
        if not valid:  # the only class is the ignored one: ignore nothing instead
            ignore_index = -100
            valid = [0]
        target.view(-1)[0] = valid[0]
    weight = (0.1 + 2 * torch.rand(c, generator=gen, dtype=torch.float64)
              if draw(st.booleans()) else None)
    label_smoothing = draw(st.one_of(st.just(0.0), st.just(1.0), st.floats(0.0, 1.0)))
    reduction = reduction or draw(st.sampled_from(REDUCTIONS))
    return logits, target, {"weight": weight, "ignore_index": ignore_index,
                            "label_smoothing": label_smoothing, "reduction": reduction}


def check_against_torch(impl, logits, target, options, **tol):
    out = impl.cross_entropy(logits, target, **options)
    expected = F.cross_entropy(logits, target, **options)
    assert_close(out, expected, equal_nan=True, name=describe(logits, **options), **tol)


# ------------------------------------------------------------------------------ values vs torch

@pytest.mark.points(0.5)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(data=st.data())
def test_matches_torch_on_n_by_c_with_every_option(impl, reduction, data):
    logits, target, options = data.draw(cases(min_extra=0, max_extra=0, reduction=reduction))
    check_against_torch(impl, logits, target, options, rtol=1e-9, atol=1e-9)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(data=st.data())
def test_matches_torch_on_spatial_inputs_with_every_option(impl, reduction, data):
    logits, target, options = data.draw(cases(min_extra=1, max_extra=3, reduction=reduction))
    check_against_torch(impl, logits, target, options, rtol=1e-9, atol=1e-9)


# Every enumerated option value, each on its own against torch: reductions x smoothing at both
# ends of [0, 1] and inside, weight None / given, and ignore_index -100, -1 or a valid class.
@pytest.mark.points(0.125)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("weighted", [False, True], ids=["weight=None", "weight=given"])
@pytest.mark.parametrize("ignore_index", [-100, -1, 2])
def test_every_option_value_matches_torch(impl, reduction, label_smoothing, weighted, ignore_index):
    gen = torch.Generator().manual_seed(17)
    logits = 3 * torch.randn(6, 4, 2, generator=gen, dtype=torch.float64)
    target = torch.randint(0, 4, (6, 2), generator=gen)
    target[0, 0], target[1, 1], target[2, 0] = ignore_index, 0, 3
    weight = 0.1 + 2 * torch.rand(4, generator=gen, dtype=torch.float64) if weighted else None
    options = {"weight": weight, "ignore_index": ignore_index, "label_smoothing": label_smoothing,
               "reduction": reduction}
    check_against_torch(impl, logits, target, options, rtol=1e-9, atol=1e-9)


@pytest.mark.points(1 / 3)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(c=st.integers(1, 6), seed=st.integers(0, 2**16), smoothing=st.floats(0.0, 1.0),
       weighted=st.booleans())
def test_matches_torch_on_unbatched_input(impl, reduction, c, seed, smoothing, weighted):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(c, generator=gen, dtype=torch.float64)
    target = torch.randint(0, c, (), generator=gen)
    weight = torch.rand(c, generator=gen, dtype=torch.float64) + 0.1 if weighted else None
    options = {"weight": weight, "label_smoothing": smoothing, "reduction": reduction}
    check_against_torch(impl, logits, target, options, rtol=1e-9, atol=1e-9)


def test_weighted_mean_divides_by_the_targets_total_weight(impl):
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0], [0.0, 0.0, 3.0], [1.0, -2.0, 0.5]],
                          dtype=torch.float64)
    target = torch.tensor([0, 1, 2, 2])
    weight = torch.tensor([1.0, 2.0, 5.0], dtype=torch.float64)
    nll = -F.log_softmax(logits, 1).gather(1, target[:, None]).squeeze(1)
    expected = (weight[target] * nll).sum() / weight[target].sum()
    out = impl.cross_entropy(logits, target, weight=weight)
    assert_close(out, expected, rtol=1e-9, atol=1e-9,
                 name="weighted mean (the sum of w[y] * nll must be divided by the sum of w[y] "
                      "over the targets, not by N)")


def test_ignored_positions_leave_the_mean(impl):
    logits = torch.randn(6, 4, dtype=torch.float64)
    target = torch.tensor([3, -100, 0, -100, 2, 1])
    kept = target != -100
    nll = -F.log_softmax(logits[kept], 1).gather(1, target[kept][:, None])
    out = impl.cross_entropy(logits, target)
    assert_close(out, nll.mean(), rtol=1e-9, atol=1e-9,
                 name="mean with ignore_index=-100 (ignored positions count neither in the sum "
                      "nor in the denominator)")
    # A valid class index can be the ignored one too.
    target = torch.tensor([3, 1, 0, 1, 2, 1])
    out = impl.cross_entropy(logits, target, ignore_index=1, reduction="none")
    expected = F.cross_entropy(logits, target, ignore_index=1, reduction="none")
    assert_close(out, expected, rtol=1e-9, atol=1e-9,
                 name="reduction='none' with ignore_index=1 (loss 0 where target == 1)")


def test_label_smoothing_spreads_over_all_classes_and_uses_weights(impl):
    logits = torch.randn(5, 4, dtype=torch.float64)
    target = torch.tensor([0, 3, -100, 1, 3])
    weight = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)
    eps, c = 0.2, 4
    keep = target != -100
    logp = F.log_softmax(logits[keep], 1)
    t = target[keep]
    # Target distribution (1 - eps) * one_hot + eps / C, every term weighted by its class' weight.
    per_row = -(1 - eps) * weight[t] * logp.gather(1, t[:, None]).squeeze(1) \
        - eps / c * (logp * weight).sum(1)
    expected = per_row.sum() / weight[t].sum()
    out = impl.cross_entropy(logits, target, weight=weight, label_smoothing=eps)
    assert_close(out, expected, rtol=1e-9, atol=1e-9,
                 name="cross_entropy(weight=..., label_smoothing=0.2, ignore_index=-100) mean "
                      "(smoothing mass eps/C on every class, weighted, over the same denominator)")


def test_every_position_ignored(impl):
    logits = torch.randn(3, 4, 2, dtype=torch.float64)
    target = torch.full((3, 2), -100)
    weight = torch.rand(4, dtype=torch.float64) + 0.1
    for kwargs in ({}, {"weight": weight, "label_smoothing": 0.3}):
        mean = impl.cross_entropy(logits, target, **kwargs)
        assert mean.dim() == 0 and bool(torch.isnan(mean)), (
            f"cross_entropy with every target ignored and reduction='mean' returned {mean}; "
            "torch returns nan (0 / 0)")
        assert_close(impl.cross_entropy(logits, target, reduction="sum", **kwargs),
                     torch.tensor(0.0, dtype=torch.float64), name="sum with every target ignored")
        assert_close(impl.cross_entropy(logits, target, reduction="none", **kwargs),
                     torch.zeros(3, 2, dtype=torch.float64), name="'none' with every target ignored")


# ------------------------------------------------------------------- stability, gradients, AMP

@pytest.mark.points(2)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_stable_for_logits_of_magnitude_1e4(impl, smoothing):
    gen = torch.Generator().manual_seed(0)
    logits = (1e4 * torch.randn(8, 10, generator=gen)).requires_grad_()
    target = torch.randint(0, 10, (8,), generator=gen)
    weight = torch.rand(10, generator=gen) + 0.5
    name = f"cross_entropy on float32 logits of magnitude 1e4 (label_smoothing={smoothing})"
    out = impl.cross_entropy(logits, target, weight=weight, label_smoothing=smoothing,
                             reduction="none")
    assert torch.isfinite(out).all(), (
        f"{name}: returned non-finite losses {out.tolist()}; exp(1e4) overflows and softmax "
        "probabilities underflow to 0 (log 0 = -inf): use logits - logsumexp(logits)")
    ref_logits = logits.detach().clone().requires_grad_()
    expected = F.cross_entropy(ref_logits, target, weight=weight, label_smoothing=smoothing,
                               reduction="none")
    # Losses are ~1e4: float32 resolves them to ~1e-3.
    assert_close(out, expected, rtol=1e-5, atol=1e-2, name=name)
    out.sum().backward()
    expected.sum().backward()
    assert torch.isfinite(logits.grad).all(), f"{name}: the gradient is not finite"
    assert_close(logits.grad, ref_logits.grad, rtol=1e-4, atol=1e-5, name=f"gradient of {name}")


@pytest.mark.points(2)
@given(case=cases(min_extra=0, max_extra=2, keep_one=True))
def test_gradients_match_finite_differences(impl, case):
    logits, target, options = case
    check_gradients(lambda x: impl.cross_entropy(x, target, **options), logits,
                    reference=lambda x: F.cross_entropy(x, target, **options),
                    name=describe(logits, **options))


@pytest.mark.parametrize("low", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("device", device_params())
def test_autocast_low_precision_logits_give_a_float32_loss(impl, device, low):
    gen = torch.Generator().manual_seed(1)
    logits32 = 4 * torch.randn(16, 7, generator=gen)
    target = torch.randint(0, 7, (16,), generator=gen).to(device)
    with torch.autocast(device, dtype=low):
        logits = logits32.to(device, low)
        out = impl.cross_entropy(logits, target, label_smoothing=0.1)
        expected = F.cross_entropy(logits, target, label_smoothing=0.1)
    assert expected.dtype == torch.float32
    # Computing in float32 matches torch to ~1e-6; a log-sum-exp in bfloat16 is off by ~1e-2.
    assert_close(out, expected, rtol=1e-4, atol=1e-4,
                 name=f"cross_entropy on {low} logits under torch.autocast('{device}') (compute "
                      "and return in float32)")


# ------------------------------------------------------------------------------ no torch loss

def test_does_not_call_torch_cross_entropy_log_softmax_or_nll_loss(impl):
    logits = torch.randn(4, 5, 3)
    target = torch.randint(0, 5, (4, 3))
    for kwargs in ({}, {"weight": torch.rand(5), "label_smoothing": 0.1, "reduction": "sum"}):
        _, ops = count_aten_ops(impl.cross_entropy, logits, target, **kwargs)
        bad = sorted(op for op in ops if any(f in op for f in FORBIDDEN_OPS))
        assert not bad, (f"cross_entropy dispatched {bad}: compute the log-softmax yourself "
                         "(logits - logsumexp) instead of calling F.cross_entropy, "
                         "F.log_softmax or F.nll_loss")


# ------------------------------------------------------------------------ devices and shapes

@pytest.mark.points(0.5)
@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_stays_on_device(impl, device, reduction):
    logits = torch.randn(3, 4, 5, device=device)
    target = torch.randint(0, 4, (3, 5)).to(device)
    weight = torch.rand(4, device=device)
    out = call_on_device(device, impl.cross_entropy, logits, target, weight=weight,
                         label_smoothing=0.1, reduction=reduction)
    name = f"cross_entropy(reduction={reduction!r}) on {device}"
    assert_shape(out, (3, 5) if reduction == "none" else (), name=name)
    assert_device(out, device, name=name)
    assert out.dtype == torch.float32, f"{name}: dtype {out.dtype}, expected float32"


# ----------------------------------------------------------------------------------- errors

def test_rejects_bad_reduction(impl):
    assert_raises_naming(ValueError, "reduction", impl.cross_entropy, torch.randn(2, 3),
                         torch.tensor([0, 1]), reduction="avg")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("smoothing", [-0.1, 1.5, math.nan], ids=str)
def test_rejects_label_smoothing_outside_0_1(impl, smoothing):
    assert_raises_naming(ValueError, "label_smoothing", impl.cross_entropy, torch.randn(2, 3),
                         torch.tensor([0, 1]), label_smoothing=smoothing)


@pytest.mark.points(0.5)
@pytest.mark.parametrize("logits_shape, target_shape", [((4, 3), (3,)), ((4, 3), (4, 1)),
                                                        ((2, 3, 5), (2, 3)), ((2, 3, 5), (2,)),
                                                        ((2, 3, 5), (5, 2)), ((3,), (1,))], ids=str)
def test_rejects_target_of_the_wrong_shape(impl, logits_shape, target_shape):
    assert_raises_naming(ValueError, "target", impl.cross_entropy, torch.randn(logits_shape),
                         torch.zeros(target_shape, dtype=torch.int64))


@pytest.mark.points(0.5)
@pytest.mark.parametrize("weight_shape", [(4,), (3, 1), (2,)], ids=str)
def test_rejects_weight_of_the_wrong_shape(impl, weight_shape):
    # (3, 1) holds C = 3 values in the wrong shape.
    assert_raises_naming(ValueError, "weight", impl.cross_entropy, torch.randn(2, 3),
                         torch.tensor([0, 1]), weight=torch.ones(weight_shape))


def test_rejects_wrong_dtypes(impl):
    assert_raises_naming(TypeError, "target", impl.cross_entropy, torch.randn(2, 3),
                         torch.tensor([0.0, 1.0]))
    assert_raises_naming(TypeError, "target", impl.cross_entropy, torch.randn(2, 3),
                         torch.tensor([False, True]))
    assert_raises_naming(TypeError, "logits", impl.cross_entropy, torch.tensor([[1, 2, 3]]),
                         torch.tensor([0]))
    assert_raises_naming(ValueError, "logits", impl.cross_entropy, torch.tensor(1.0),
                         torch.tensor(0))


def test_float64_in_float64_out(impl):
    out = impl.cross_entropy(torch.randn(3, 4, dtype=torch.float64), torch.tensor([0, 1, 3]))
    assert out.dtype == torch.float64, f"cross_entropy on float64 logits returned {out.dtype}"
    assert math.isfinite(float(out))
