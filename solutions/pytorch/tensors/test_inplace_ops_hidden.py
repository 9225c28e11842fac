"""Hidden tests for pytorch.tensors.inplace_ops (the catalog's contract checks)."""

import copy
import math

import pytest
import torch
from hypothesis import given, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params, shapes)

# Each error case isolates one rule, so there are many of them; together they must not outweigh
# the value tests (a submission returning constants passes every one).
ERROR_CASE_POINTS = 0.5


decays = st.floats(0.0, 1.0)
seeds = st.integers(0, 2**16)


def formula(avg: torch.Tensor, new: torch.Tensor, decay: float) -> torch.Tensor:
    """Independent reference, in float64. Float64 comparisons use rtol = atol = 1e-6, loose
    enough for a solution that turns ``decay`` into a float32 tensor, tight enough for every
    wrong formula."""
    return decay * avg.detach().double() + (1.0 - decay) * new.detach().double()


def formula_with_grad(avg: torch.Tensor, new: torch.Tensor, decay: float) -> torch.Tensor:
    """The formula as a differentiable expression, the independent reference for gradients."""
    return decay * avg + (1.0 - decay) * new


def storage_ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


# ----------------------------------------------------------------------------------------- ema

@pytest.mark.points(2)
@given(shape=shapes(min_dims=0, max_dims=3), decay=decays, seed=seeds)
def test_ema_matches_formula(impl, shape, decay, seed):
    gen = torch.Generator().manual_seed(seed)
    avg = torch.randn(shape, generator=gen, dtype=torch.float64)
    new = torch.randn(shape, generator=gen, dtype=torch.float64)
    out = impl.ema(avg, new, decay)
    assert_close(out, formula(avg, new, decay), rtol=1e-6, atol=1e-6,
                 name=f"ema(avg{tuple(shape)}, new, decay={decay!r})")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=lambda d: str(d).removeprefix("torch."))
def test_ema_keeps_dtype(impl, dtype):
    gen = torch.Generator().manual_seed(4)
    avg = torch.randn(4, 3, generator=gen).to(dtype)
    new = torch.randn(4, 3, generator=gen).to(dtype)
    # Computing in the low dtype rounds each of the three operations (2**-8 relative in bfloat16,
    # 2**-11 in float16, on terms up to ~4): loose enough for that, far tighter than any wrong
    # formula's error.
    low_precision = {torch.bfloat16: 0.05, torch.float16: 0.01}
    tolerance = {"rtol": 0.0, "atol": low_precision[dtype]} if dtype in low_precision else {}
    assert_close(impl.ema(avg, new, 0.9), formula(avg, new, 0.9).to(dtype),
                 name=f"ema on {dtype} inputs", **tolerance)


# Both ends of [0, 1] are allowed, as floats and as ints; the result is then new or avg.
ENDPOINTS = [0.0, 1.0, 0, 1]
ENDPOINT_IDS = ["0.0", "1.0", "int-0", "int-1"]
# Just outside [0, 1], far outside, and the non-finite floats.
OUTSIDE = [math.nextafter(1.0, 2.0), math.nextafter(0.0, -1.0), 1.5, -0.1, 2, -1, math.nan,
           math.inf, -math.inf]
OUTSIDE_IDS = ["1+ulp", "-tiny", "1.5", "-0.1", "int-2", "int--1", "nan", "inf", "-inf"]


@pytest.mark.parametrize("decay", ENDPOINTS, ids=ENDPOINT_IDS)
def test_ema_accepts_both_ends(impl, decay):
    avg, new = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    out = impl.ema(avg, new, decay)
    assert_close(out, avg if decay == 1 else new, name=f"ema(avg, new, decay={decay!r})")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("decay", OUTSIDE, ids=OUTSIDE_IDS)
def test_ema_rejects_decay_outside_the_range(impl, decay):
    assert_raises_naming(ValueError, "decay", impl.ema, torch.randn(3), torch.randn(3), decay)


@pytest.mark.points(2)
def test_ema_leaves_inputs_untouched(impl):
    avg, new = torch.randn(5, 3), torch.randn(5, 3)
    avg_before, new_before = avg.clone(), new.clone()
    versions = avg._version, new._version
    out = impl.ema(avg, new, 0.9)
    assert_close(avg, avg_before, name="avg after ema(avg, new, 0.9) (ema must not modify it)")
    assert_close(new, new_before, name="new after ema(avg, new, 0.9) (ema must not modify it)")
    assert (avg._version, new._version) == versions, (
        "ema modified an input in place (its version counter changed): ema must be out of place")
    assert out is not avg and out is not new, "ema returned one of its inputs, not a new tensor"
    assert storage_ptr(out) not in (storage_ptr(avg), storage_ptr(new)), (
        "ema's result shares memory with an input: it must be a new tensor")


@pytest.mark.points(2)
def test_ema_gradients_match_finite_differences(impl):
    avg, new = torch.randn(2, 3), torch.randn(2, 3)
    check_gradients(lambda a, n: impl.ema(a, n, 0.7), avg, new, name="ema(avg, new, 0.7)",
                    reference=lambda a, n: formula_with_grad(a, n, 0.7))


@pytest.mark.parametrize("device", device_params(meta=True))
def test_ema_stays_on_device(impl, device):
    avg = torch.randn(3, 4, device=device)
    new = torch.randn(3, 4, device=device)
    out = impl.ema(avg, new, 0.5)
    assert_shape(out, (3, 4), name="ema")
    assert_device(out, device, name="ema")
    assert out.dtype == torch.float32, f"ema: dtype {out.dtype}, expected torch.float32"
    if device != "meta":
        assert_close(out.cpu(), formula(avg.cpu(), new.cpu(), 0.5).float(), check_device=False,
                     name=f"ema on {device}")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("avg_shape, new_shape", [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3), (1, 3)),
                                                  ((2, 3), (3,)), ((), (1,))],
                         ids=["3-vs-4", "same-numel", "broadcasts-(1,3)", "broadcasts-(3,)",
                              "0-d-vs-(1,)"])
def test_ema_rejects_shape_mismatch(impl, avg_shape, new_shape):
    assert_raises_naming(ValueError, "new", impl.ema, torch.randn(avg_shape), torch.randn(new_shape),
                         0.5)


# --------------------------------------------------------------------------------- ema_update_

@pytest.mark.points(2)
@given(sizes=st.lists(shapes(min_dims=0, max_dims=3), min_size=1, max_size=4), decay=decays,
       seed=seeds)
def test_ema_update_matches_formula(impl, sizes, decay, seed):
    gen = torch.Generator().manual_seed(seed)
    avg = [torch.randn(s, generator=gen, dtype=torch.float64) for s in sizes]
    params = [torch.randn(s, generator=gen, dtype=torch.float64) for s in sizes]
    expected = [formula(a, p, decay) for a, p in zip(avg, params)]
    result = impl.ema_update_(avg, params, decay)
    assert result is None, f"ema_update_ should return None, returned {type(result).__name__}"
    for i, (a, e) in enumerate(zip(avg, expected)):
        assert_close(a, e, rtol=1e-6, atol=1e-6,
                     name=f"avg_params[{i}] (shape {tuple(a.shape)}) after ema_update_ "
                          f"with decay={decay!r} (the caller's tensors must change)")


@pytest.mark.points(2)
def test_ema_update_is_in_place_on_the_same_memory(impl):
    avg = [torch.randn(4, 3), torch.randn(5)]
    params = [torch.randn(4, 3), torch.randn(5)]
    holder = list(avg)  # another reference to the same tensors, as an EMA model would hold
    ptrs = [storage_ptr(a) for a in avg]
    versions = [a._version for a in avg]
    expected = [formula(a, p, 0.9).float() for a, p in zip(avg, params)]
    impl.ema_update_(avg, params, 0.9)
    assert all(a is h for a, h in zip(avg, holder)), (
        "ema_update_ replaced the tensors in avg_params with new objects: update them in place")
    for i, a in enumerate(holder):
        assert_close(a, expected[i], name=f"avg_params[{i}] as seen through another reference "
                                          "after ema_update_")
        assert storage_ptr(a) == ptrs[i], (
            f"avg_params[{i}] now lives in new memory (was .data assigned?): the update must "
            "write into the tensor's existing storage")
        assert a._version > versions[i], (
            f"avg_params[{i}]._version did not increase: the update bypassed autograd's version "
            "counter (was it done through .data?); use in-place ops under torch.no_grad()")


@pytest.mark.points(2)
def test_ema_update_records_no_history_when_params_require_grad(impl):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    params = list(model.parameters())
    avg = [p.detach().clone() + 1.0 for p in params]
    before = [p.detach().clone() for p in params]
    param_versions = [p._version for p in params]
    expected = [formula(a, p, 0.8).float() for a, p in zip(avg, params)]
    impl.ema_update_(avg, params, 0.8)
    for i, a in enumerate(avg):
        assert a.grad_fn is None and not a.requires_grad, (
            f"avg_params[{i}] has autograd history after ema_update_ (grad_fn={a.grad_fn}, "
            f"requires_grad={a.requires_grad}) because params require grad: do the update "
            "under torch.no_grad()")
        assert_close(a, expected[i], name=f"avg_params[{i}] after ema_update_")
    for i, p in enumerate(params):
        assert_close(p.detach(), before[i], name=f"params[{i}] after ema_update_ (must not change)")
        assert p._version == param_versions[i], f"ema_update_ modified params[{i}] in place"
        assert p.grad is None, f"ema_update_ populated params[{i}].grad"


@pytest.mark.points(2)
def test_ema_update_on_a_deepcopied_ema_model(impl):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ema_model = copy.deepcopy(model)  # its parameters are leaves that require grad
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p))
    expected = [formula(a, p, 0.9).float() for a, p in zip(ema_model.parameters(), model.parameters())]
    objects = [id(p) for p in ema_model.parameters()]
    try:
        impl.ema_update_(ema_model.parameters(), model.parameters(), 0.9)
    except RuntimeError as exc:
        raise AssertionError(
            "ema_update_(ema_model.parameters(), model.parameters(), 0.9) on an EMA model made "
            f"with copy.deepcopy raised RuntimeError: {exc!s:.200}") from None
    got = list(ema_model.parameters())
    assert [id(p) for p in got] == objects, "ema_update_ replaced the EMA model's parameters"
    for i, (p, e) in enumerate(zip(got, expected)):
        assert_close(p.detach(), e, name=f"EMA model parameter {i} after ema_update_ "
                                         "(both arguments given as generators)")
        assert isinstance(p, torch.nn.Parameter) and p.is_leaf and p.requires_grad, (
            f"EMA model parameter {i} is no longer a leaf Parameter that requires grad "
            f"(is_leaf={p.is_leaf}, requires_grad={p.requires_grad})")
        assert p.grad_fn is None, f"EMA model parameter {i} has grad_fn {p.grad_fn}"


@pytest.mark.parametrize("device", device_params(meta=True))
def test_ema_update_on_device(impl, device):
    avg = [torch.randn(3, 2, device=device), torch.randn(4, device=device)]
    params = [torch.randn(3, 2, device=device), torch.randn(4, device=device)]
    expected = [formula(a.cpu(), p.cpu(), 0.6).float() for a, p in zip(avg, params)] \
        if device != "meta" else None
    objects = [id(a) for a in avg]
    versions = [a._version for a in avg]
    impl.ema_update_(avg, params, 0.6)
    assert [id(a) for a in avg] == objects, f"ema_update_ on {device} replaced the tensors"
    for i, a in enumerate(avg):
        assert_device(a, device, name=f"avg_params[{i}]")
        assert a._version > versions[i], f"avg_params[{i}] on {device} was not updated in place"
        if expected is not None:
            assert_close(a.cpu(), expected[i], name=f"avg_params[{i}] on {device}")


CONTAINERS = {"list": list, "tuple": tuple, "generator": lambda ts: (t for t in ts)}


@pytest.mark.parametrize("avg_kind", sorted(CONTAINERS))
@pytest.mark.parametrize("params_kind", sorted(CONTAINERS))
def test_ema_update_accepts_any_iterable(impl, avg_kind, params_kind):
    avg = [torch.randn(2, 3), torch.randn(4)]
    params = [torch.randn(2, 3), torch.randn(4)]
    expected = [formula(a, p, 0.75).float() for a, p in zip(avg, params)]
    impl.ema_update_(CONTAINERS[avg_kind](avg), CONTAINERS[params_kind](params), 0.75)
    for i, (a, e) in enumerate(zip(avg, expected)):
        assert_close(a, e, name=f"avg_params[{i}] after ema_update_(<{avg_kind}>, <{params_kind}>, "
                                "0.75)")


@pytest.mark.parametrize("decay", ENDPOINTS, ids=ENDPOINT_IDS)
def test_ema_update_accepts_both_ends(impl, decay):
    avg = [torch.randn(3, 2, dtype=torch.float64), torch.randn(2, dtype=torch.float64)]
    params = [torch.randn(3, 2, dtype=torch.float64), torch.randn(2, dtype=torch.float64)]
    expected = [a.clone() if decay == 1 else p.clone() for a, p in zip(avg, params)]
    impl.ema_update_(avg, params, decay)
    for i, (a, e) in enumerate(zip(avg, expected)):
        assert_close(a, e, name=f"avg_params[{i}] after ema_update_(..., decay={decay!r})")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("decay", OUTSIDE, ids=OUTSIDE_IDS)
def test_ema_update_rejects_decay_outside_the_range(impl, decay):
    avg = [torch.zeros(2), torch.zeros(3)]
    assert_raises_naming(ValueError, "decay", impl.ema_update_, avg, [torch.ones(2), torch.ones(3)],
                         decay)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("params_shapes", [[(2,)], [(2,), (3,), (1,)], [(2,), (4,)], [(2,), (1, 3)],
                                           [(2,), (1,)]],
                         ids=["fewer", "more", "size-4-vs-3", "same-numel-(1,3)", "broadcasts-(1,)"])
def test_ema_update_rejects_mismatched_params(impl, params_shapes):
    avg = [torch.zeros(2), torch.zeros(3)]
    params = [torch.ones(s) for s in params_shapes]
    assert_raises_naming(ValueError, "params", impl.ema_update_, avg, params, 0.5)
