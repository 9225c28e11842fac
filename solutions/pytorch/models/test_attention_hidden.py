"""Hidden tests for pytorch.models.attention (the catalog's contract checks).

The reference for values and gradients is PyTorch's own ``F.scaled_dot_product_attention``; the
reference weights are the same op applied to identity values (``weights @ I == weights``).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, settings, strategies as st

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           autocast, check_gradients, device_params, record_aten_ops)

MASK_KINDS = ("none", "bool", "additive")
F64 = dict(rtol=1e-9, atol=1e-9)


def tril(lq: int, lk: int, device="cpu") -> torch.Tensor:
    return torch.ones(lq, lk, dtype=torch.bool, device=device).tril()


def torch_attention(q, k, v, mask=None, causal=False):
    """``(out, weights)`` from F.scaled_dot_product_attention (mask and causal combined)."""
    if causal:
        keep = tril(q.shape[-2], k.shape[-2], q.device)
        if mask is None:
            mask = keep
        elif mask.dtype == torch.bool:
            mask = mask & keep
        else:
            mask = mask.masked_fill(~keep, float("-inf"))
    if mask is not None:
        mask = mask.expand(*q.shape[:-1], k.shape[-2])  # F.sdpa wants at least (Lq, Lk)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    eye = torch.eye(k.shape[-2], dtype=q.dtype, device=q.device).expand(*k.shape[:-1], k.shape[-2])
    weights = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return out, weights


def make_mask(kind: str, shape, gen, dtype=torch.float64):
    if kind == "none":
        return None
    if kind == "bool":
        return torch.rand(shape, generator=gen) < 0.7
    bias = torch.randn(shape, generator=gen, dtype=dtype)
    return bias.masked_fill(torch.rand(shape, generator=gen) < 0.2, float("-inf"))


def qkv(lead, lq, lk, d, dv, *, seed=0, dtype=torch.float64, device="cpu", scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, lq, d, generator=gen, dtype=dtype) * scale
    k = torch.randn(*lead, lk, d, generator=gen, dtype=dtype) * scale
    v = torch.randn(*lead, lk, dv, generator=gen, dtype=dtype)
    return q.to(device), k.to(device), v.to(device)


def call(impl, q, k, v, **kw):
    return as_pair(impl.scaled_dot_product_attention(q, k, v, **kw))


def as_pair(result):
    assert isinstance(result, tuple) and len(result) == 2, (
        f"scaled_dot_product_attention must return a tuple (out, weights), got {type(result).__name__}")
    return result


def describe(q, k, v, mask=None, causal=False) -> str:
    m = "None" if mask is None else f"{'bool' if mask.dtype == torch.bool else 'additive'} mask{tuple(mask.shape)}"
    return (f"scaled_dot_product_attention(q{tuple(q.shape)}, k{tuple(k.shape)}, v{tuple(v.shape)}, "
            f"mask={m}, causal={causal})")


def assert_matches_torch(impl, q, k, v, mask=None, causal=False, tol=F64):
    out, weights = call(impl, q, k, v, mask=mask, causal=causal)
    want_out, want_weights = torch_attention(q, k, v, mask, causal)
    name = describe(q, k, v, mask, causal)
    assert_close(weights, want_weights, **tol, name=f"{name} weights")
    assert_close(out, want_out, **tol, name=f"{name} out")
    return out, weights


@pytest.mark.points(3)
@given(lead=st.lists(st.integers(1, 3), max_size=2), lq=st.integers(1, 6), lk=st.integers(1, 6),
       d=st.integers(1, 6), dv=st.integers(1, 5), kind=st.sampled_from(MASK_KINDS),
       causal=st.booleans(), seed=st.integers(0, 2**16))
@example(lead=[2], lq=3, lk=5, d=4, dv=2, kind="none", causal=False, seed=0)
@example(lead=[2], lq=3, lk=5, d=4, dv=2, kind="bool", causal=False, seed=1)
@example(lead=[2], lq=3, lk=5, d=4, dv=2, kind="additive", causal=False, seed=2)
@example(lead=[], lq=5, lk=3, d=3, dv=2, kind="none", causal=True, seed=3)
@example(lead=[2, 2], lq=2, lk=6, d=2, dv=3, kind="bool", causal=True, seed=4)
@example(lead=[1], lq=4, lk=4, d=5, dv=1, kind="additive", causal=True, seed=5)
@example(lead=[], lq=1, lk=1, d=1, dv=1, kind="none", causal=True, seed=6)
def test_matches_torch_attention(impl, lead, lq, lk, d, dv, kind, causal, seed):
    q, k, v = qkv(lead, lq, lk, d, dv, seed=seed)
    mask = make_mask(kind, (lq, lk), torch.Generator().manual_seed(seed + 1))
    out, weights = assert_matches_torch(impl, q, k, v, mask, causal)
    assert_shape(out, (*lead, lq, dv), name=describe(q, k, v, mask, causal) + " out")


@pytest.mark.points(2)
def test_scores_are_scaled_by_sqrt_d(impl):
    q, k, v = qkv((2,), 3, 4, 9, 2, seed=11)
    weights = call(impl, q, k, v)[1]
    expected = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(9), dim=-1)
    assert_close(weights, expected, **F64, name=describe(q, k, v) + " weights (scores / sqrt(D), D=9)")


@pytest.mark.points(2)
def test_softmax_runs_over_the_keys(impl):
    q, k, v = qkv((2,), 3, 5, 4, 2, seed=12)
    weights = call(impl, q, k, v)[1]
    assert_shape(weights, (2, 3, 5), name=describe(q, k, v) + " weights")
    assert_close(weights.sum(-1), torch.ones(2, 3, dtype=torch.float64), **F64,
                 name=describe(q, k, v) + " weights summed over the keys (each query's row sums to 1)")


@pytest.mark.points(2)
def test_bool_mask_true_means_attend(impl):
    q, k, v = qkv((2,), 3, 4, 4, 2, seed=13)
    mask = torch.tensor([[True, False, True, True], [False, True, True, False], [True, True, True, True]])
    out, weights = assert_matches_torch(impl, q, k, v, mask)
    masked = weights.masked_select(~mask.expand_as(weights))
    assert bool((masked == 0).all()), f"{describe(q, k, v, mask)}: a key with mask False got weight != 0"


@pytest.mark.points(2)
def test_additive_mask_is_added_to_scores(impl):
    q, k, v = qkv((2,), 3, 4, 4, 2, seed=14)
    mask = torch.tensor([[0.0, -1.5, 2.0, 0.5], [1.0, 0.0, -float("inf"), 0.0], [0.0] * 4], dtype=torch.float64)
    assert_matches_torch(impl, q, k, v, mask)


@pytest.mark.parametrize("mask_shape", [(5,), (3, 5), (2, 1, 3, 5), (2, 1, 1, 5), (1, 2, 1, 1)],
                         ids=["keys", "Lq_Lk", "batch_1_Lq_Lk", "key_padding", "per_head"])
def test_masks_broadcast(impl, mask_shape):
    q, k, v = qkv((2, 2), 3, 5, 4, 3, seed=15)
    gen = torch.Generator().manual_seed(16)
    assert_matches_torch(impl, q, k, v, make_mask("bool", mask_shape, gen))
    assert_matches_torch(impl, q, k, v, make_mask("additive", mask_shape, gen))


@pytest.mark.points(2)
@pytest.mark.parametrize("lq, lk", [(3, 6), (6, 3), (4, 4), (1, 5), (5, 1)])
def test_causal_is_aligned_top_left(impl, lq, lk):
    q, k, v = qkv((2,), lq, lk, 4, 3, seed=17)
    out, weights = assert_matches_torch(impl, q, k, v, causal=True)
    future = ~tril(lq, lk)
    assert bool((weights.masked_select(future.expand_as(weights)) == 0).all()), (
        f"{describe(q, k, v, causal=True)}: query i gave weight to a key j > i")


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_causal_and_mask_both_apply(impl, kind):
    q, k, v = qkv((2,), 4, 4, 3, 2, seed=18)
    mask = make_mask(kind, (4, 4), torch.Generator().manual_seed(19))
    mask = mask.clone()
    if kind == "bool":
        mask.fill_(True)
        mask[:, 1] = False          # key 1 masked for everyone, the future masked by causal
    else:
        mask.fill_(0.0)
        mask[:, 1] = -float("inf")
    out, weights = assert_matches_torch(impl, q, k, v, mask, causal=True)


def _fully_masked_case(kind: str):
    """q, k, v and a mask under which query 1 (and, for causal, query 0) may attend to nothing."""
    q, k, v = qkv((2,), 4, 5, 3, 2, seed=20)
    if kind == "bool":
        mask = torch.ones(4, 5, dtype=torch.bool)
        mask[1] = False
        return (q, k, v), dict(mask=mask), [1]
    if kind == "additive":
        mask = torch.zeros(4, 5, dtype=torch.float64)
        mask[1] = -float("inf")
        return (q, k, v), dict(mask=mask), [1]
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[:, 0] = False              # with causal, query 0's only key is masked out
    return (q, k, v), dict(mask=mask, causal=True), [0]


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["bool", "additive", "causal"])
def test_fully_masked_rows_give_zeros(impl, kind):
    (q, k, v), kw, rows = _fully_masked_case(kind)
    out, weights = assert_matches_torch(impl, q, k, v, kw["mask"], kw.get("causal", False))
    for r in rows:
        assert bool((weights[:, r] == 0).all()) and bool((out[:, r] == 0).all()), (
            f"{describe(q, k, v, kw['mask'], kw.get('causal', False))}: query {r} may attend to no "
            "key, so its weights and output must be exactly 0")


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["bool", "additive", "causal"])
def test_fully_masked_rows_have_finite_gradients(impl, kind):
    (q, k, v), kw, _ = _fully_masked_case(kind)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out, weights = call(impl, *leaves, **kw)
    gen = torch.Generator().manual_seed(0)
    ((out * torch.randn(out.shape, generator=gen, dtype=out.dtype)).sum()
     + (weights * torch.randn(weights.shape, generator=gen, dtype=weights.dtype)).sum()).backward()
    ref = [t.clone().requires_grad_(True) for t in (q, k, v)]
    r_out, r_weights = torch_attention(*ref, kw["mask"], kw.get("causal", False))
    gen = torch.Generator().manual_seed(0)
    ((r_out * torch.randn(r_out.shape, generator=gen, dtype=r_out.dtype)).sum()
     + (r_weights * torch.randn(r_weights.shape, generator=gen, dtype=r_weights.dtype)).sum()).backward()
    name = describe(q, k, v, kw["mask"], kw.get("causal", False))
    for label, got, want in zip("qkv", leaves, ref, strict=True):
        assert got.grad is not None, f"{name}: no gradient reached {label}"
        assert bool(torch.isfinite(got.grad).all()), (
            f"{name}: the gradient of {label} has NaN/inf (from the query that may attend to nothing)")
        assert_close(got.grad, want.grad, **F64, name=f"{name}: gradient of {label}")


@pytest.mark.points(2)
def test_softmax_is_stable_for_large_scores(impl):
    q, k, v = qkv((2,), 3, 4, 4, 2, seed=21, dtype=torch.float32, scale=60.0)
    out, weights = call(impl, q, k, v)
    name = describe(q, k, v) + " with scores in the thousands"
    assert bool(torch.isfinite(weights).all() and torch.isfinite(out).all()), f"{name}: NaN/inf in the result"
    want_out, want_weights = torch_attention(q, k, v)
    assert_close(weights, want_weights, rtol=1e-4, atol=1e-4, name=f"{name} weights")
    assert_close(out, want_out, rtol=1e-4, atol=1e-4, name=f"{name} out")


@pytest.mark.points(3)
@settings(max_examples=6)
@given(lq=st.integers(1, 3), lk=st.integers(1, 3), d=st.integers(1, 2),
       kind=st.sampled_from(MASK_KINDS), causal=st.booleans(), seed=st.integers(0, 99))
@example(lq=2, lk=3, d=2, kind="none", causal=False, seed=0)
@example(lq=3, lk=2, d=2, kind="bool", causal=True, seed=1)
@example(lq=2, lk=3, d=2, kind="additive", causal=False, seed=2)
def test_gradients_match_torch(impl, lq, lk, d, kind, causal, seed):
    q, k, v = qkv((1,), lq, lk, d, 2, seed=seed)
    mask = make_mask(kind, (lq, lk), torch.Generator().manual_seed(seed + 1))

    def fn(q, k, v):
        return impl.scaled_dot_product_attention(q, k, v, mask=mask, causal=causal)

    def reference(q, k, v):
        return torch_attention(q, k, v, mask, causal)

    check_gradients(fn, q, k, v, reference=reference,
                    name=describe(q, k, v, mask, causal) + " (out, weights) w.r.t. (q, k, v)")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", device_params(meta=True))
def test_dtype_and_device_follow_q(impl, dtype, device):
    q, k, v = qkv((2,), 3, 4, 4, 5, seed=22, dtype=dtype, device=device)
    mask = torch.ones(3, 4, dtype=torch.bool, device=device).tril()
    out, weights = call(impl, q, k, v, mask=mask, causal=True)
    name = describe(q, k, v, mask, True) + f" ({dtype}, {device})"
    for label, t, shape in (("out", out, (2, 3, 5)), ("weights", weights, (2, 3, 4))):
        assert_shape(t, shape, name=f"{name} {label}")
        assert_device(t, device, name=f"{name} {label}")
        assert t.dtype == dtype, f"{name} {label}: dtype {t.dtype}, expected {dtype}"
    if device != "meta":
        tol = F64 if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
        assert_matches_torch(impl, q, k, v, mask, True, tol=tol)


MATMULS = ("mm", "bmm", "addmm", "baddbmm", "matmul", "addbmm", "dot", "mv")


@pytest.mark.parametrize("device", device_params())
def test_autocast_runs_matmuls_in_low_precision(impl, device):
    q, k, v = qkv((2, 2), 5, 6, 8, 4, seed=23, dtype=torch.float32, device=device)
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(0)).to(device) < 0.8
    with autocast(device) as low:
        result, ops = record_aten_ops(impl.scaled_dot_product_attention, q, k, v, mask=mask)
    out, _ = as_pair(result)
    seen = [(op.name, dtype) for op in ops if op.name in MATMULS for dtype in op.dtypes]
    name = describe(q, k, v, mask) + f" under torch.autocast({device!r})"
    assert seen, f"{name}: no matrix multiply ran"
    wrong = sorted({f"{op} on {dt}" for op, dt in seen if dt != low})
    assert not wrong, f"{name}: matmuls must run in {low} under autocast, saw {wrong}"
    assert out.dtype == low, f"{name}: out is {out.dtype}, expected {low}"
    assert bool(torch.isfinite(out).all()), f"{name}: out has NaN/inf"
    want, _ = torch_attention(q, k, v, mask)
    assert_close(out.float(), want, rtol=5e-2, atol=5e-2, name=f"{name} out (vs float32)")


def test_rejects_key_size_mismatch(impl):
    q, k, v = qkv((2,), 3, 4, 4, 2)
    assert_raises_naming(ValueError, "k", impl.scaled_dot_product_attention, q, k[..., :3], v)


def test_rejects_value_length_mismatch(impl):
    q, k, v = qkv((2,), 3, 4, 4, 2)
    assert_raises_naming(ValueError, "v", impl.scaled_dot_product_attention, q, k, v[..., :3, :])


@pytest.mark.parametrize("mask_shape", [(3, 3), (4, 4), (2, 2, 3, 4)], ids=["wrong_Lk", "wrong_Lq", "grows"])
def test_rejects_mask_that_does_not_broadcast(impl, mask_shape):
    q, k, v = qkv((2,), 3, 4, 4, 2)
    assert_raises_naming(ValueError, "mask", impl.scaled_dot_product_attention, q, k, v,
                         mask=torch.ones(mask_shape, dtype=torch.bool))


@pytest.mark.parametrize("mask_dtype", [torch.int64, torch.float32], ids=["int64", "float32_for_float64_q"])
def test_rejects_mask_of_wrong_dtype(impl, mask_dtype):
    q, k, v = qkv((2,), 3, 4, 4, 2)
    assert_raises_naming(TypeError, "mask", impl.scaled_dot_product_attention, q, k, v,
                         mask=torch.zeros(3, 4, dtype=mask_dtype))
