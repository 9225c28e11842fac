"""Hidden tests for pytorch.autograd.detach_and_no_grad (the catalog's contract checks).

References are independent: ``torch.round``, ``F.mse_loss`` on detached targets, and an
eval-mode deep copy of the model run under ``torch.no_grad()``.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch import nn

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params, shapes, tensors)


EXACT = dict(rtol=0.0, atol=0.0)
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
seeds = st.integers(0, 2**16)


# ---------------------------------------------------------------------------------------------
# straight_through_round
# ---------------------------------------------------------------------------------------------

@pytest.mark.points(2)
@given(x=tensors(shapes(min_dims=0, max_dims=3), scale=3.0),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_ste_forward_is_round(impl, x, dtype):
    x = x.to(dtype).clone()  # a tensor of our own: requires_grad_ below must not touch the draw
    original = x.clone()
    out = impl.straight_through_round(x.requires_grad_(True))
    name = f"straight_through_round(x{tuple(x.shape)}, {dtype})"
    assert_close(out.detach(), torch.round(original), name=name, **EXACT)
    assert_close(x.detach(), original, name=f"x after {name} (must not be modified)", **EXACT)


def test_ste_rounds_halves_to_even(impl):
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.49, -3.51], requires_grad=True)
    out = impl.straight_through_round(x)
    expected = torch.tensor([-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 3.0, -4.0])
    assert_close(out.detach(), expected, name="straight_through_round at halves (half to even)",
                 **EXACT)


@pytest.mark.points(2)
@given(shape=shapes(min_dims=0, max_dims=3), seed=seeds)
def test_ste_gradient_is_identity(impl, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (3 * torch.randn(shape, generator=gen, dtype=torch.float64)).requires_grad_(True)
    upstream = torch.randn(shape, generator=gen, dtype=torch.float64)
    out = impl.straight_through_round(x)
    name = f"straight_through_round(x{tuple(shape)})"
    assert out.requires_grad, (f"{name} does not require grad although x does: the gradient must "
                               "pass straight through (was the whole result detached?)")
    grad, = torch.autograd.grad(out, x, upstream, allow_unused=True)
    assert grad is not None, f"{name}: no gradient reaches x"
    assert_close(grad, upstream, name=f"gradient of {name} for a random upstream gradient "
                 "(must equal the upstream gradient: d round / dx treated as 1)", rtol=1e-12,
                 atol=1e-12)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_ste_keeps_shape_dtype_device(impl, device, dtype):
    x = torch.tensor([[0.4, -1.6, 2.5], [7.5, -0.5, 3.25]], dtype=dtype, device=device,
                     requires_grad=True)
    out = impl.straight_through_round(x)
    name = f"straight_through_round of {dtype} x on {device}"
    assert_shape(out, (2, 3), name=name)
    assert_device(out, device, name=name)
    assert out.dtype == dtype, f"{name}: dtype {out.dtype}, expected {dtype}"
    assert_close(out.detach(), torch.round(x.detach()), name=name, **EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_ste_passes_infinities_and_nan_like_round(impl, dtype):
    x = torch.tensor([float("inf"), float("-inf"), float("nan"), 0.4, -2.5], dtype=dtype,
                     requires_grad=True)
    out = impl.straight_through_round(x)
    name = f"straight_through_round([inf, -inf, nan, 0.4, -2.5]) in {dtype}"
    assert_close(out.detach(), torch.round(x.detach()), name=f"{name} (must equal torch.round)",
                 equal_nan=True, **EXACT)
    grad, = torch.autograd.grad(out.sum(), x)
    assert_close(grad, torch.ones_like(x), name=f"gradient of {name} (1 everywhere)", **EXACT)


# ---------------------------------------------------------------------------------------------
# mse_to_fixed_target
# ---------------------------------------------------------------------------------------------

@given(shape=shapes(min_dims=0, max_dims=3), seed=seeds)
def test_mse_value_matches_formula(impl, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    pred = torch.randn(shape, generator=gen, dtype=torch.float64)
    target = torch.randn(shape, generator=gen, dtype=torch.float64)
    got = impl.mse_to_fixed_target(pred, target)
    name = f"mse_to_fixed_target(pred{tuple(shape)}, target{tuple(shape)})"
    assert_shape(got, (), name=name)
    assert_close(got.detach(), F.mse_loss(pred, target), name=name, rtol=1e-12, atol=1e-12)
    assert not pred.requires_grad and not target.requires_grad, (
        f"{name} switched on requires_grad of a pred or target that did not require grad")


@pytest.mark.points(2)
def test_mse_no_gradient_reaches_a_target_network(impl):
    torch.manual_seed(0)
    student, teacher = nn.Linear(3, 2).double(), nn.Linear(3, 2).double()
    x = torch.randn(5, 3, dtype=torch.float64)
    pred, target = student(x), teacher(x)
    loss = impl.mse_to_fixed_target(pred, target)
    loss.backward()
    for name, p in teacher.named_parameters():
        assert p.grad is None, (f"the target network's {name} received a gradient: the loss must "
                                "treat target as a constant (detach it)")
    assert target.requires_grad, "mse_to_fixed_target changed target.requires_grad"
    expected = torch.autograd.grad(F.mse_loss(student(x), target.detach()),
                                   list(student.parameters()))
    for (name, p), want in zip(student.named_parameters(), expected):
        assert p.grad is not None, f"the predicting network's {name} received no gradient"
        assert_close(p.grad, want, name=f"gradient of the predicting network's {name}",
                     rtol=1e-10, atol=1e-12)


@pytest.mark.points(2)
def test_mse_leaf_target_keeps_its_flag_and_gets_no_grad(impl):
    pred = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    target = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    loss = impl.mse_to_fixed_target(pred, target)
    assert target.requires_grad, (
        "mse_to_fixed_target switched off target.requires_grad: that changes the caller's tensor "
        "for everyone else; detach() a view of it instead")
    assert pred.requires_grad, "mse_to_fixed_target changed pred.requires_grad"
    loss.backward()
    assert target.grad is None, "a leaf target that requires grad received a gradient"
    assert_close(pred.grad, 2 * (pred - target).detach() / pred.numel(), name="pred.grad",
                 rtol=1e-10, atol=1e-12)


def test_mse_gradient_wrt_pred_matches_finite_differences(impl):
    target = torch.randn(3, 2, dtype=torch.float64)
    check_gradients(lambda p: impl.mse_to_fixed_target(p, target),
                    torch.randn(3, 2, dtype=torch.float64),
                    name="mse_to_fixed_target(pred, target)",
                    reference=lambda p: F.mse_loss(p, target))


@pytest.mark.parametrize("pred_shape, target_shape",
                         [((5, 1), (5,)), ((4, 3), (3,)), ((4, 1), (1, 4)), ((1, 3), (4, 3)),
                          ((2, 3), (3, 2))], ids=str)
def test_mse_rejects_shape_mismatch(impl, pred_shape, target_shape):
    assert_raises_naming(ValueError, "target", impl.mse_to_fixed_target, torch.randn(pred_shape),
                         torch.randn(target_shape))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_mse_keeps_dtype_and_device(impl, device, dtype):
    pred = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=dtype, device=device,
                        requires_grad=True)
    target = torch.tensor([[1.0, 0.0, 1.0], [-0.5, 0.5, 0.25]], dtype=dtype, device=device)
    got = impl.mse_to_fixed_target(pred, target)
    name = f"mse_to_fixed_target for {dtype} on {device}"
    assert_shape(got, (), name=name)
    assert_device(got, device, name=name)
    assert got.dtype == dtype, f"{name}: dtype {got.dtype}, expected {dtype}"
    expected = F.mse_loss(pred.detach().double(), target.double()).to(dtype)
    assert_close(got.detach(), expected, name=name, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("pred_dtype, target_dtype",
                         [(torch.float32, torch.float64), (torch.float64, torch.float32),
                          (torch.bfloat16, torch.float32)], ids=str)
def test_mse_result_is_in_pred_dtype_for_a_target_of_another_dtype(impl, pred_dtype,
                                                                   target_dtype):
    pred = torch.tensor([0.5, -1.0, 2.0, 1.5], dtype=pred_dtype, requires_grad=True)
    target = torch.tensor([1.0, 0.0, 1.0, -0.5], dtype=target_dtype)
    got = impl.mse_to_fixed_target(pred, target)
    name = f"mse_to_fixed_target({pred_dtype} pred, {target_dtype} target)"
    assert got.dtype == pred_dtype, f"{name}: dtype {got.dtype}, expected pred's {pred_dtype}"
    expected = F.mse_loss(pred.detach().double(), target.double()).to(pred_dtype)
    assert_close(got.detach(), expected, name=name, rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# predict
# ---------------------------------------------------------------------------------------------

def make_model(device: str = "cpu") -> nn.Sequential:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(8, 3)).to(device)
    bn = model[1]
    with torch.no_grad():  # running statistics far from any batch's, so the two modes differ
        bn.running_mean.copy_(torch.linspace(-1.0, 1.0, 8))
        bn.running_var.copy_(torch.linspace(0.5, 3.0, 8))
        bn.num_batches_tracked.fill_(3)
    return model


def modes(model: nn.Module) -> dict[str, bool]:
    return {name or "<root>": m.training for name, m in model.named_modules()}


def bn_state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.points(2)
@given(batch=st.integers(2, 9), seed=seeds)
def test_predict_equals_eval_forward(impl, batch, seed):
    model = make_model()
    model.train()
    reference = copy.deepcopy(model).eval()
    x = torch.randn(batch, 6, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        expected = reference(x)
    out = impl.predict(model, x)
    assert_close(out, expected, name=f"predict(model, x({batch}, 6)) on a model in train mode "
                 "(must equal the eval-mode output: dropout off, BatchNorm running statistics)")


def test_predict_is_deterministic_with_dropout(impl):
    model = make_model().train()
    x = torch.randn(32, 6)
    a, b = impl.predict(model, x), impl.predict(model, x)
    assert torch.equal(a, b), ("predict gave different outputs for the same input: dropout is "
                               "still active (the model must be in eval mode)")
    with torch.no_grad():
        expected = copy.deepcopy(model).eval()(x)
    assert_close(a, expected, name="predict(model, x) on a model with dropout (eval output)")


@pytest.mark.points(2)
def test_predict_leaves_batchnorm_statistics_untouched(impl):
    model = make_model().train()
    before = bn_state(model)
    impl.predict(model, torch.randn(16, 6) * 5 - 3)
    after = model.state_dict()
    for key, value in before.items():
        assert torch.equal(after[key], value), (
            f"predict changed {key}: BatchNorm updated its statistics, so the forward ran in "
            "train mode (no_grad/inference_mode do not switch the model to eval mode)")


@pytest.mark.points(2)
@pytest.mark.parametrize("x_requires_grad", [False, True])
def test_predict_output_has_no_graph(impl, x_requires_grad):
    model = make_model().train()
    x = torch.randn(4, 6, requires_grad=x_requires_grad)
    with torch.no_grad():
        expected = copy.deepcopy(model).eval()(x)
    out = impl.predict(model, x)
    assert not out.requires_grad and out.grad_fn is None, (
        f"predict returned a tensor with autograd history (requires_grad={out.requires_grad}, "
        f"grad_fn={out.grad_fn}) for x.requires_grad={x_requires_grad}: run the forward under "
        "torch.inference_mode()")
    assert_close(out, expected, name=f"predict(model, x) for x.requires_grad={x_requires_grad}")


def test_predict_runs_under_inference_mode(impl):
    out = impl.predict(make_model(), torch.randn(4, 6))
    assert out.is_inference(), ("predict's result is not an inference tensor: the contract asks "
                                "for torch.inference_mode(), not only torch.no_grad()")


def _mixed(model: nn.Sequential) -> nn.Sequential:
    model.train()
    model[1].eval()  # a frozen BatchNorm kept in eval mode during fine-tuning
    return model


@pytest.mark.points(2)
@pytest.mark.parametrize("start", ["train", "eval", "mixed"])
def test_predict_restores_every_module_mode(impl, start):
    model = make_model()
    if start == "train":
        model.train()
    elif start == "eval":
        model.eval()
    else:
        _mixed(model)
    before = modes(model)
    impl.predict(model, torch.randn(4, 6))
    after = modes(model)
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, (
        f"predict did not restore the modules' modes (model started {start}); "
        + ", ".join(f"{k}: training was {b}, now {a}" for k, (b, a) in changed.items()))


class _Fails(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ArithmeticError("forward failed on purpose")


@pytest.mark.parametrize("start", ["train", "mixed"])
def test_predict_restores_modes_when_forward_raises(impl, start):
    model = make_model()
    model.append(_Fails())
    if start == "train":
        model.train()
    else:
        _mixed(model)
    before = modes(model)
    with pytest.raises(ArithmeticError):
        impl.predict(model, torch.randn(4, 6))
    after = modes(model)
    changed = sorted(k for k in before if before[k] != after[k])
    assert not changed, (f"after a forward pass that raised, predict left {changed} in the wrong "
                         "mode (restore in a finally block)")


def test_predict_leaves_parameters_alone(impl):
    model = make_model().train()
    model[0].weight.requires_grad_(False)  # a frozen parameter must stay frozen, others trainable
    flags = {n: p.requires_grad for n, p in model.named_parameters()}
    values = {n: p.detach().clone() for n, p in model.named_parameters()}
    impl.predict(model, torch.randn(4, 6))
    for n, p in model.named_parameters():
        assert p.requires_grad == flags[n], (
            f"predict changed {n}.requires_grad from {flags[n]} to {p.requires_grad}: to stop "
            "recording, use inference mode rather than flipping parameter flags")
        assert torch.equal(p.detach(), values[n]), f"predict changed the values of {n}"
    loss = model(torch.randn(4, 6)).sum()
    loss.backward()
    assert model[4].weight.grad is not None, "the model can no longer be trained after predict"


@pytest.mark.parametrize("device", device_params(meta=True))
def test_predict_keeps_device(impl, device):
    model = make_model(device).train()
    x = torch.randn(5, 6, device=device)
    with torch.no_grad():
        expected = copy.deepcopy(model).eval()(x)
    out = impl.predict(model, x)
    assert_shape(out, (5, 3), name=f"predict on {device}")
    assert_device(out, device, name=f"predict on {device}")
    assert_close(out, expected, name=f"predict on {device}")
