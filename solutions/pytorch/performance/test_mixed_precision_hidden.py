"""Hidden tests for pytorch.performance.mixed_precision (the catalog's contract checks).

Mixed precision runs for real on the CPU (autocast in bfloat16 and float16, GradScaler("cpu")).
The reference for every comparison is the documented AMP sequence run by hand on a deep copy.
``RecordingScaler`` is a real ``GradScaler`` that also notes what it was given and when.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch import nn

from grader.checks import assert_close, assert_raises_naming

LOW_DTYPES = [pytest.param(torch.bfloat16, id="bfloat16"), pytest.param(torch.float16, id="float16")]
CPU_AND_CUDA = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.cuda)]
EXACT = dict(rtol=1e-6, atol=1e-7)  # the same float32/low-precision ops give the same numbers


class RecordingScaler(torch.amp.GradScaler):
    """A GradScaler that records the calls made to it (and the loss dtype it scaled)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []
        self.scaled_dtypes: list[torch.dtype] = []

    def scale(self, outputs):
        self.calls.append("scale")
        self.scaled_dtypes.append(outputs.dtype)
        return super().scale(outputs)

    def unscale_(self, optimizer):
        self.calls.append("unscale_")
        return super().unscale_(optimizer)

    def step(self, optimizer, *args, **kwargs):
        self.calls.append("step")
        return super().step(optimizer, *args, **kwargs)

    def update(self, new_scale=None):
        self.calls.append("update")
        return super().update(new_scale)


def make_model(seed: int = 0, device: str = "cpu") -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)


def make_batch(seed: int = 0, device: str = "cpu", n: int = 8):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(n, 4, generator=gen).to(device), torch.randn(n, 3, generator=gen).to(device)


def mse(pred, target):
    return nn.functional.mse_loss(pred, target)


def low_precision_mse(pred, target):
    """A loss that stays in the prediction's (low) dtype."""
    return ((pred - target.to(pred.dtype)) ** 2).mean()


def reference_step(model, opt, scaler, loss_fn, batch, device_type, dtype, max_norm=None) -> float:
    model.train()
    opt.zero_grad()
    with torch.autocast(device_type, dtype=dtype):
        loss = loss_fn(model(batch[0]), batch[1])
    loss = loss.float()
    scaler.scale(loss).backward()
    if max_norm is not None:
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(opt)
    scaler.update()
    return loss.item()


def sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def run(impl, model, opt, scaler, batch, device_type, dtype, loss_fn=mse, **kw):
    return impl.amp_train_step(model, opt, scaler, loss_fn, batch, device_type=device_type, dtype=dtype, **kw)


def assert_same_parameters(model, ref, name):
    for (pname, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        assert_close(p.detach(), q.detach(), **EXACT, name=f"{name}: parameter {pname}")


@pytest.mark.points(3)
@pytest.mark.parametrize("max_norm", [None, 0.5], ids=["no_clip", "clip"])
@pytest.mark.parametrize("scaler_on", [True, False], ids=["scaler", "scaler_disabled"])
@pytest.mark.parametrize("dtype", LOW_DTYPES)
@pytest.mark.parametrize("device", CPU_AND_CUDA)
def test_matches_the_amp_recipe(impl, device, dtype, scaler_on, max_norm):
    model = make_model(1, device)
    ref = copy.deepcopy(model)
    opt, ref_opt = sgd(model), sgd(ref)
    settings = dict(init_scale=2.0 ** 10, growth_interval=1, enabled=scaler_on)
    scaler, ref_scaler = torch.amp.GradScaler(device, **settings), torch.amp.GradScaler(device, **settings)
    name = f"amp_train_step({device}, {dtype}, scaler enabled={scaler_on}, max_norm={max_norm})"
    for step in range(2):
        batch = make_batch(step, device)
        got = run(impl, model, opt, scaler, batch, device, dtype, max_norm=max_norm)
        want = reference_step(ref, ref_opt, ref_scaler, mse, batch, device, dtype, max_norm)
        assert isinstance(got, float), f"{name} returned {type(got).__name__}, expected a Python float"
        assert math.isclose(got, want, rel_tol=1e-6), f"{name} step {step + 1} returned loss {got}, expected {want}"
        assert_same_parameters(model, ref, f"{name} after step {step + 1}")
        assert scaler.get_scale() == ref_scaler.get_scale(), (
            f"{name}: scale after step {step + 1} is {scaler.get_scale()}, expected {ref_scaler.get_scale()}")


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", LOW_DTYPES)
def test_matmuls_run_in_low_dtype_and_loss_fn_gets_low_output(impl, dtype):
    model = make_model(2)
    seen: list[tuple[str, torch.dtype]] = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            module.register_forward_hook(lambda m, i, out, name=name: seen.append((f"Linear {name}", out.dtype)))

    def loss_fn(pred, target):
        seen.append(("loss_fn's prediction", pred.dtype))
        return mse(pred, target)

    run(impl, model, sgd(model), torch.amp.GradScaler("cpu"), make_batch(), "cpu", dtype, loss_fn=loss_fn)
    assert len(seen) == 3, f"expected two Linear forwards and one loss_fn call, saw {[s for s, _ in seen]}"
    wrong = [f"{what} in {dt}" for what, dt in seen if dt != dtype]
    assert not wrong, f"under autocast with dtype={dtype}: {wrong} (expected {dtype})"


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", LOW_DTYPES)
def test_parameters_and_gradients_stay_float32(impl, dtype):
    model = make_model(3)
    run(impl, model, sgd(model), torch.amp.GradScaler("cpu"), make_batch(), "cpu", dtype)
    for pname, p in model.named_parameters():
        assert p.dtype == torch.float32, f"parameter {pname} is {p.dtype} after the step; the model must stay float32"
        assert p.grad is not None and p.grad.dtype == torch.float32, (
            f"parameter {pname}: .grad is {None if p.grad is None else p.grad.dtype}, expected float32")


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", LOW_DTYPES)
def test_loss_is_scaled_in_float32(impl, dtype):
    model = make_model(4)
    ref = copy.deepcopy(model)
    scaler = RecordingScaler("cpu", init_scale=2.0 ** 8)
    batch = make_batch(4)
    got = run(impl, model, sgd(model), scaler, batch, "cpu", dtype, loss_fn=low_precision_mse)
    assert scaler.scaled_dtypes == [torch.float32], (
        f"scaler.scale received a loss of dtype {scaler.scaled_dtypes} (loss_fn returned {dtype}); "
        "cast the loss to float32 before scaling it")
    want = reference_step(ref, sgd(ref), torch.amp.GradScaler("cpu", init_scale=2.0 ** 8), low_precision_mse,
                          batch, "cpu", dtype)
    assert math.isclose(got, want, rel_tol=1e-6), f"returned loss {got}, expected {want}"
    assert_same_parameters(model, ref, f"amp_train_step with a {dtype} loss")


@pytest.mark.points(2)
@pytest.mark.parametrize("max_norm", [None, 1.0], ids=["no_clip", "clip"])
def test_grads_are_left_unscaled(impl, max_norm):
    model = make_model(5)
    ref = copy.deepcopy(model)
    batch = make_batch(5)
    run(impl, model, sgd(model), torch.amp.GradScaler("cpu", init_scale=2.0 ** 12), batch, "cpu",
        torch.bfloat16, max_norm=max_norm)
    reference_step(ref, sgd(ref), torch.amp.GradScaler("cpu", init_scale=2.0 ** 12), mse, batch, "cpu",
                   torch.bfloat16, max_norm)
    for (pname, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        assert p.grad is not None, f"parameter {pname} has no .grad after the step (zeroed at the end?)"
        assert_close(p.grad, q.grad, **EXACT, name=f"{pname}.grad after the step (max_norm={max_norm}; "
                                                    "the unscaled gradient the optimizer used)")


@pytest.mark.points(2)
def test_clipping_sees_unscaled_gradients(impl):
    model = make_model(6)
    ref = copy.deepcopy(model)
    batch = make_batch(6)
    scaler = RecordingScaler("cpu", init_scale=2.0 ** 16)
    run(impl, model, sgd(model), scaler, batch, "cpu", torch.bfloat16, max_norm=0.25)
    assert "unscale_" in scaler.calls, "with max_norm, scaler.unscale_(optimizer) must run before clipping"
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    assert float(total) <= 0.25 * (1 + 1e-4), f"gradient norm after clipping is {float(total):.4g}, above max_norm=0.25"
    reference_step(ref, sgd(ref), torch.amp.GradScaler("cpu", init_scale=2.0 ** 16), mse, batch, "cpu",
                   torch.bfloat16, 0.25)
    assert_same_parameters(model, ref, "amp_train_step(max_norm=0.25) with scale 65536")


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", LOW_DTYPES)
def test_inf_gradients_skip_the_step_and_back_off(impl, dtype):
    model = make_model(7)
    opt = sgd(model)
    run(impl, model, opt, torch.amp.GradScaler("cpu"), make_batch(7), "cpu", dtype)  # momentum buffers exist
    before = [p.detach().clone() for p in model.parameters()]
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, backoff_factor=0.25)
    x, y = make_batch(8)
    x[0, 0] = float("inf")
    got = run(impl, model, opt, scaler, (x, y), "cpu", dtype)
    assert not math.isfinite(got), f"the loss of a batch with an inf input was returned as {got}"
    for (pname, p), b in zip(model.named_parameters(), before, strict=True):
        assert torch.equal(p.detach(), b), (f"parameter {pname} changed on a step whose gradients were inf/NaN "
                                            "(step through scaler.step, which skips it)")
    assert scaler.get_scale() == 2.0 ** 10 * 0.25, (
        f"scale after an inf step is {scaler.get_scale()}, expected {2.0 ** 10 * 0.25} (backoff_factor 0.25)")


@pytest.mark.points(2)
def test_scale_grows_after_growth_interval_good_steps(impl):
    model = make_model(9)
    opt = sgd(model)
    scaler = RecordingScaler("cpu", init_scale=8.0, growth_factor=2.0, growth_interval=2)
    scales = []
    for step in range(4):
        run(impl, model, opt, scaler, make_batch(step), "cpu", torch.bfloat16)
        scales.append(scaler.get_scale())
    assert scales == [8.0, 16.0, 16.0, 32.0], (
        f"scale after each of 4 good steps: {scales}, expected [8.0, 16.0, 16.0, 32.0] (growth_interval=2)")
    assert scaler.calls.count("step") == 4 and scaler.calls.count("update") == 4, (
        f"scaler calls over 4 steps: {scaler.calls}; expected one scaler.step and one scaler.update per step")


@pytest.mark.points(2)
def test_stale_gradients_do_not_influence_the_update(impl):
    model = make_model(10)
    ref = copy.deepcopy(model)
    for p in model.parameters():
        p.grad = torch.full_like(p, 100.0)
    batch = make_batch(10)
    run(impl, model, sgd(model), torch.amp.GradScaler("cpu"), batch, "cpu", torch.bfloat16)
    reference_step(ref, sgd(ref), torch.amp.GradScaler("cpu"), mse, batch, "cpu", torch.bfloat16)
    assert_same_parameters(model, ref, "amp_train_step with leftover .grad values (clear them first)")


def test_model_in_training_mode(impl):
    model = make_model(11).eval()
    modes = []
    model[0].register_forward_hook(lambda m, i, o: modes.append(m.training))
    run(impl, model, sgd(model), torch.amp.GradScaler("cpu"), make_batch(), "cpu", torch.bfloat16)
    assert modes == [True], f"the forward pass ran with training={modes}; call model.train() first"


BAD_VALUES = {"device_type": ["mps", "CPU"], "dtype": [torch.float32, torch.float64],
              "max_norm": [0.0, -1.0, float("nan"), float("inf"), "0.5"]}  # a str is no number either


@pytest.mark.parametrize("arg", list(BAD_VALUES))
def test_rejects_bad_arguments_before_changing_anything(impl, arg):
    for value in BAD_VALUES[arg]:
        model = make_model(12)
        before = [p.detach().clone() for p in model.parameters()]
        kwargs = {"device_type": "cpu", "dtype": torch.bfloat16, "max_norm": None, arg: value}
        assert_raises_naming(ValueError, arg, impl.amp_train_step, model, sgd(model),
                             torch.amp.GradScaler("cpu"), mse, make_batch(), **kwargs)
        for p, b in zip(model.parameters(), before, strict=True):
            assert torch.equal(p.detach(), b), f"a parameter changed although {arg}={value!r} was rejected"


def test_accepts_tiny_positive_max_norm(impl):
    model = make_model(13)
    ref = copy.deepcopy(model)
    batch = make_batch(13)
    start = [p.detach().clone() for p in model.parameters()]
    run(impl, model, sgd(model), torch.amp.GradScaler("cpu"), batch, "cpu", torch.bfloat16, max_norm=1e-3)
    reference_step(ref, sgd(ref), torch.amp.GradScaler("cpu"), mse, batch, "cpu", torch.bfloat16, 1e-3)
    assert_same_parameters(model, ref, "amp_train_step(max_norm=1e-3)")
    moved = max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), start, strict=True))
    assert moved > 0, "amp_train_step(max_norm=1e-3) did not update the parameters"
