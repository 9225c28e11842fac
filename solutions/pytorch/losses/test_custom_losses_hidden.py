"""Hidden tests for pytorch.losses.custom_losses (the catalog's contract checks).

References are torch's built-ins (``F.binary_cross_entropy_with_logits``, ``F.huber_loss``) and
the focal-loss formula written out here from probabilities, never the kit's solution.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from grader.checks import (
    assert_close,
    assert_device,
    assert_raises_naming,
    assert_shape,
    call_on_device,
    check_gradients,
    device_params,
    shapes,
)

REDUCTIONS = ("none", "mean", "sum")
gammas = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 2.0]), st.floats(0.0, 5.0))
alphas = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 1.0]), st.floats(0.0, 1.0))
deltas = st.one_of(st.sampled_from([0.25, 1.0, 2.5]), st.floats(0.05, 5.0))


def reduce(loss: torch.Tensor, reduction: str) -> torch.Tensor:
    return {"none": loss, "sum": loss.sum(), "mean": loss.mean()}[reduction]


def binary_data(shape, seed, *, scale=3.0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    logits = (scale * torch.randn(shape, generator=gen, dtype=torch.float64)).to(dtype)
    target = (torch.rand(shape, generator=gen) < 0.5).to(dtype)
    return logits, target


def focal_from_probabilities(logits, target, gamma, alpha):
    """The focal loss as Lin et al. write it, from probabilities (fine in float64 for |x| < 30)."""
    p = 1 / (1 + torch.exp(-logits))
    p_t = torch.where(target == 1, p, 1 - p)
    alpha_t = torch.ones_like(p) if alpha is None else torch.where(target == 1, alpha, 1 - alpha)
    return -alpha_t * (1 - p_t) ** gamma * torch.log(p_t)


def focal_name(shape, gamma, alpha, reduction):
    return f"focal_loss(logits{tuple(shape)}, gamma={gamma:g}, alpha={alpha}, reduction={reduction!r})"


# --------------------------------------------------------------------------------- focal loss

@pytest.mark.points(0.5)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(min_dims=0, max_dims=3), seed=st.integers(0, 2**16))
def test_focal_with_gamma_0_equals_bce_with_logits(impl, reduction, shape, seed):
    logits, target = binary_data(shape, seed)
    out = impl.focal_loss(logits, target, gamma=0.0, reduction=reduction)
    expected = F.binary_cross_entropy_with_logits(logits, target, reduction=reduction)
    assert_close(out, expected, rtol=1e-9, atol=1e-9, name=focal_name(shape, 0.0, None, reduction))


@pytest.mark.points(0.75)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(min_dims=0, max_dims=3), seed=st.integers(0, 2**16), gamma=gammas, alpha=alphas)
@example(shape=(4, 3), seed=0, gamma=2.0, alpha=0.0)  # alpha = 0: positives weigh nothing
@example(shape=(4, 3), seed=1, gamma=2.0, alpha=1.0)  # alpha = 1: negatives weigh nothing
@example(shape=(4, 3), seed=2, gamma=0.0, alpha=0.25)  # gamma = 0 with alpha
@example(shape=(4, 3), seed=3, gamma=2.0, alpha=None)  # the defaults
def test_focal_matches_the_formula(impl, reduction, shape, seed, gamma, alpha):
    logits, target = binary_data(shape, seed)
    out = impl.focal_loss(logits, target, gamma=gamma, alpha=alpha, reduction=reduction)
    expected = reduce(focal_from_probabilities(logits, target, gamma, alpha), reduction)
    assert_close(out, expected, rtol=1e-7, atol=1e-9, name=focal_name(shape, gamma, alpha, reduction))


@pytest.mark.points(2)
@pytest.mark.parametrize("gamma, alpha", [(2.0, None), (2.0, 0.25), (0.0, None)])
def test_focal_stable_at_logit_100(impl, gamma, alpha):
    # Every sign of logit with every target, up to |logit| = 100, in float32.
    grid = torch.tensor([-100.0, -60.0, -20.0, -1.0, 0.0, 1.0, 20.0, 60.0, 100.0])
    logits32 = torch.cat([grid, grid]).requires_grad_()
    target32 = torch.cat([torch.ones(9), torch.zeros(9)])
    name = f"focal_loss(gamma={gamma:g}, alpha={alpha}) on float32 logits in [-100, 100]"
    out = impl.focal_loss(logits32, target32, gamma=gamma, alpha=alpha, reduction="none")
    assert torch.isfinite(out).all(), (f"{name}: non-finite losses {out.tolist()}; log(sigmoid(x)) "
                                       "underflows, use F.logsigmoid")
    # Float64 reference built on torch's stable BCE: p_t = exp(-bce), as torchvision does.
    logits64 = logits32.detach().double().requires_grad_()
    bce = F.binary_cross_entropy_with_logits(logits64, target32.double(), reduction="none")
    expected = bce if gamma == 0 else (1 - torch.exp(-bce)) ** gamma * bce
    if alpha is not None:
        expected = torch.where(target32 == 1, alpha, 1 - alpha).double() * expected
    assert_close(out, expected.detach().float(), rtol=1e-5, atol=1e-6, name=name)
    out.sum().backward()
    expected.sum().backward()
    assert torch.isfinite(logits32.grad).all(), f"{name}: non-finite gradients {logits32.grad.tolist()}"
    assert_close(logits32.grad, logits64.grad.float(), rtol=1e-4, atol=1e-6, name=f"gradient of {name}")


def focal_from_bce(logits, target, gamma, alpha):
    """The focal loss on torch's stable BCE: p_t = exp(-bce), as torchvision computes it."""
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    loss = bce if gamma == 0 else (1 - torch.exp(-bce)) ** gamma * bce
    return loss if alpha is None else torch.where(target == 1, alpha, 1 - alpha).to(loss.dtype) * loss


@pytest.mark.points(0.5)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(min_dims=1, max_dims=2, max_side=3), seed=st.integers(0, 2**16), gamma=gammas,
       alpha=alphas)
def test_focal_gradients_match_finite_differences(impl, reduction, shape, seed, gamma, alpha):
    logits, target = binary_data(shape, seed)
    check_gradients(lambda x: impl.focal_loss(x, target, gamma=gamma, alpha=alpha, reduction=reduction),
                    logits, reference=lambda x: reduce(focal_from_bce(x, target, gamma, alpha), reduction),
                    name=focal_name(shape, gamma, alpha, reduction))


@pytest.mark.points(0.25)
@pytest.mark.parametrize("value, arg", [({"gamma": -0.5}, "gamma"), ({"gamma": math.nan}, "gamma"),
                                        ({"alpha": 1.5}, "alpha"), ({"alpha": -0.1}, "alpha"),
                                        ({"alpha": math.nan}, "alpha"), ({"reduction": "avg"}, "reduction"),
                                        ({"reduction": "Mean"}, "reduction")], ids=str)
def test_focal_rejects_bad_arguments(impl, value, arg):
    logits, target = binary_data((3, 2), 0, dtype=torch.float32)
    assert_raises_naming(ValueError, arg, impl.focal_loss, logits, target, **value)


@pytest.mark.parametrize(("shape", "target_shape"), [((4, 1), (4,)), ((2, 3), (3, 2))], ids=str)
def test_focal_rejects_target_of_another_shape(impl, shape, target_shape):
    # (4, 1) vs (4,) would broadcast; (2, 3) vs (3, 2) has the same number of elements.
    assert_raises_naming(ValueError, "target", impl.focal_loss, torch.randn(shape), torch.ones(target_shape))


# --------------------------------------------------------------------------------- Huber loss

def huber_data(shape, seed, delta, dtype=torch.float64):
    """Errors of about 2 * delta, so both the quadratic and the linear part are hit."""
    gen = torch.Generator().manual_seed(seed)
    target = torch.randn(shape, generator=gen, dtype=torch.float64)
    pred = target + 2 * delta * torch.randn(shape, generator=gen, dtype=torch.float64)
    return pred.to(dtype), target.to(dtype)


@pytest.mark.points(0.75)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(min_dims=0, max_dims=3), seed=st.integers(0, 2**16), delta=deltas)
def test_huber_matches_torch(impl, reduction, shape, seed, delta):
    pred, target = huber_data(shape, seed, delta)
    out = impl.huber(pred, target, delta, reduction)
    expected = F.huber_loss(pred, target, delta=delta, reduction=reduction)
    assert_close(out, expected, rtol=1e-9, atol=1e-9,
                 name=f"huber(pred{tuple(shape)}, target, delta={delta:g}, reduction={reduction!r})")


def test_huber_is_not_smooth_l1(impl):
    pred, target = torch.tensor([0.5, -1.5, 3.0, -6.0]), torch.zeros(4)
    # delta = 2: 0.5 * d**2 inside, 2 * (|d| - 1) outside; smooth_l1(beta=2) is half of this.
    expected = torch.tensor([0.125, 1.125, 4.0, 10.0])
    assert_close(impl.huber(pred, target, delta=2.0, reduction="none"), expected,
                 name="huber(delta=2, reduction='none') (the linear part is delta * (|d| - delta/2), "
                      "not smooth_l1's |d| - beta/2)")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@given(shape=shapes(min_dims=1, max_dims=2, max_side=4), seed=st.integers(0, 2**16), delta=deltas)
def test_huber_gradients_match_finite_differences(impl, reduction, shape, seed, delta):
    pred, target = huber_data(shape, seed, delta)
    check_gradients(lambda p, t: impl.huber(p, t, delta, reduction), pred, target,
                    reference=lambda p, t: F.huber_loss(p, t, delta=delta, reduction=reduction),
                    name=f"huber(pred{tuple(shape)}, target, delta={delta:g}, reduction={reduction!r})")


@pytest.mark.points(2)
@pytest.mark.parametrize("delta", [0.5, 1.0, 2.0])
def test_huber_gradient_at_and_next_to_the_kink(impl, delta):
    # d = pred - target exactly at +-delta and 1e-3 inside and outside it, on both sides, and
    # exactly 0 (where |d| has a kink of its own: the gradient there is 0, never NaN).
    offsets = torch.tensor([-1e-3, 0.0, 1e-3], dtype=torch.float64)
    d = torch.cat([delta + offsets, -delta + offsets, torch.zeros(1, dtype=torch.float64)])
    target = torch.zeros_like(d)
    name = f"huber(delta={delta:g}) at |pred - target| = delta, delta +- 1e-3 and 0"
    check_gradients(lambda p: impl.huber(p, target, delta, "none"), d, name=name)
    pred = d.clone().requires_grad_()
    impl.huber(pred, target, delta, "sum").backward()
    # The derivative is d inside, delta * sign(d) outside: continuous, delta * sign(d) at the kink.
    assert_close(pred.grad, d.clamp(-delta, delta), rtol=1e-9, atol=1e-9, name=f"gradient of {name}")


@pytest.mark.points(0.25)
@pytest.mark.parametrize("value, arg", [({"delta": 0.0}, "delta"), ({"delta": -1.0}, "delta"),
                                        ({"delta": math.nan}, "delta"), ({"reduction": "avg"}, "reduction")],
                         ids=str)
def test_huber_rejects_bad_arguments(impl, value, arg):
    assert_raises_naming(ValueError, arg, impl.huber, torch.randn(3), torch.randn(3), **value)


@pytest.mark.parametrize(("shape", "target_shape"), [((4, 1), (4,)), ((2, 3), (3, 2))], ids=str)
def test_huber_rejects_target_of_another_shape(impl, shape, target_shape):
    assert_raises_naming(ValueError, "target", impl.huber, torch.randn(shape), torch.randn(target_shape))


# ----------------------------------------------------------------------- devices and dtypes

@pytest.mark.points(0.5)
@pytest.mark.parametrize("device", device_params(meta=True))
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_both_stay_on_device_with_the_input_dtype(impl, device, reduction):
    logits = torch.randn(3, 4, device=device)
    target = torch.ones(3, 4, device=device)
    focal = call_on_device(device, impl.focal_loss, logits, target, alpha=0.25, reduction=reduction)
    huber = call_on_device(device, impl.huber, logits, target, 0.5, reduction)
    for name, out in (("focal_loss", focal), ("huber", huber)):
        name = f"{name}(reduction={reduction!r}) on {device}"
        assert_shape(out, (3, 4) if reduction == "none" else (), name=name)
        assert_device(out, device, name=name)
        assert out.dtype == torch.float32, f"{name}: dtype {out.dtype}, expected float32"


LOW_PRECISION_TOL = {torch.float16: 2e-3, torch.bfloat16: 2e-2, torch.float32: 1e-5, torch.float64: 1e-9}


@pytest.mark.points(0.25)
@pytest.mark.parametrize("target_dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64], ids=str)
def test_both_keep_the_input_dtype_whatever_the_target_dtype(impl, dtype, target_dtype):
    """The loss has logits' / pred's dtype, also when target's dtype would promote it."""
    logits, target = binary_data((4, 5), 3)
    pred, huber_target = huber_data((4, 5), 4, 1.0)
    tol = LOW_PRECISION_TOL[dtype]
    x = logits.to(dtype)
    focal = impl.focal_loss(x, target.to(target_dtype), alpha=0.25, reduction="none")
    name = f"focal_loss({dtype} logits, {target_dtype} target)"
    assert focal.dtype == dtype, f"{name}: dtype {focal.dtype}, expected {dtype} (logits' dtype)"
    assert_close(focal.double(), focal_from_bce(x.double(), target, 2.0, 0.25), rtol=tol, atol=tol, name=name)
    p = pred.to(dtype)
    loss = impl.huber(p, huber_target.to(target_dtype), 1.0, "none")
    name = f"huber({dtype} pred, {target_dtype} target)"
    assert loss.dtype == dtype, f"{name}: dtype {loss.dtype}, expected {dtype} (pred's dtype)"
    expected = F.huber_loss(p.double(), huber_target.to(target_dtype).to(dtype).double(), reduction="none")
    assert_close(loss.double(), expected, rtol=tol, atol=tol, name=name)
