"""Hidden tests for pytorch.models.transformer (the catalog's contract checks).

References are PyTorch's ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer(batch_first=True)``
with the same weights, called with autograd on (which also keeps them off their fused fast path).
"""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from torch import nn

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params)

F64 = dict(rtol=1e-8, atol=1e-8)


def torch_mha(dim, heads, bias=True, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(dim, heads, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for p in mha.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return mha.eval()


def torch_layer(d_model, nhead, dim_ff, *, norm_first, dropout=0.3, seed=0):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(d_model, nhead, dim_ff, dropout=dropout, norm_first=norm_first,
                                       batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn_like(p) * 0.5)
    return layer.eval()


def my_mha(impl, mha):
    mine = impl.MultiHeadAttention(mha.embed_dim, mha.num_heads, bias=mha.in_proj_bias is not None).double()
    mine.load_from_torch(mha)
    return mine.eval()


def my_layer(impl, layer, dropout=0.3):
    mine = impl.TransformerEncoderLayer(layer.linear1.in_features, layer.self_attn.num_heads,
                                        layer.linear1.out_features, dropout=dropout,
                                        norm_first=layer.norm_first).double()
    mine.load_from_torch(layer)
    return mine.eval()


def padding_mask(b, lk, seed):
    """True = padding, at the end of each sequence; every sequence keeps at least one key."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, lk + 1, (b,), generator=gen)
    return torch.arange(lk)[None, :] >= lengths[:, None]


def causal_attn_mask(lq, lk):
    return ~torch.ones(lq, lk, dtype=torch.bool).tril()


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def describe_mha(dim, heads, bias, q, k, pad, causal):
    return (f"MultiHeadAttention({dim}, {heads}, bias={bias})(query{tuple(q.shape)}, key{tuple(k.shape)}, "
            f"key_padding_mask={'yes' if pad is not None else None}, causal={causal})")


@pytest.mark.points(3)
@given(b=st.integers(1, 3), lq=st.integers(1, 5), lk=st.integers(1, 5), heads=st.integers(1, 3),
       head_dim=st.integers(1, 3), bias=st.booleans(), pad=st.booleans(), causal=st.booleans(),
       self_attention=st.booleans(), seed=st.integers(0, 2**16))
@example(b=2, lq=4, lk=4, heads=2, head_dim=3, bias=True, pad=True, causal=True, self_attention=True, seed=0)
@example(b=2, lq=3, lk=5, heads=3, head_dim=2, bias=False, pad=True, causal=False, self_attention=False, seed=1)
@example(b=1, lq=5, lk=2, heads=1, head_dim=4, bias=True, pad=False, causal=True, self_attention=False, seed=2)
def test_mha_matches_torch(impl, b, lq, lk, heads, head_dim, bias, pad, causal, self_attention, seed):
    dim = heads * head_dim
    mha = torch_mha(dim, heads, bias, seed)
    mine = my_mha(impl, mha)
    if self_attention:
        lk = lq
    q = rand(b, lq, dim, seed=seed)
    k, v = (q, q) if self_attention else (rand(b, lk, dim, seed=seed + 1), rand(b, lk, dim, seed=seed + 2))
    kpm = padding_mask(b, lk, seed) if pad else None
    got = mine(q, k, v, key_padding_mask=kpm, causal=causal)
    want = mha(q, k, v, key_padding_mask=kpm, attn_mask=causal_attn_mask(lq, lk) if causal else None,
               need_weights=False)[0]
    assert_close(got, want, **F64, name=describe_mha(dim, heads, bias, q, k, kpm, causal) + " vs nn.MultiheadAttention")


@pytest.mark.points(2)
@pytest.mark.parametrize("pad, causal", [(False, False), (True, True)], ids=["no_mask", "padding_and_causal"])
def test_mha_gradients_match_torch(impl, pad, causal):
    mha = torch_mha(2, 2, True, 3)
    mine = my_mha(impl, mha)
    kpm = torch.tensor([[False, False, True]]) if pad else None
    attn_mask = causal_attn_mask(2, 3) if causal else None
    check_gradients(lambda q, k, v: mine(q, k, v, key_padding_mask=kpm, causal=causal),
                    rand(1, 2, 2, seed=0), rand(1, 3, 2, seed=1), rand(1, 3, 2, seed=2),
                    reference=lambda q, k, v: mha(q, k, v, key_padding_mask=kpm, attn_mask=attn_mask,
                                                  need_weights=False)[0],
                    name=f"MultiHeadAttention(2, 2) (key padding={pad}, causal={causal}) w.r.t. (query, key, value)")


@pytest.mark.points(3)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
@settings(max_examples=12)
@given(b=st.integers(1, 3), length=st.integers(1, 5), nhead=st.integers(1, 3), head_dim=st.integers(1, 3),
       dim_ff=st.integers(1, 6), pad=st.booleans(), causal=st.booleans(), seed=st.integers(0, 2**16))
@example(b=2, length=4, nhead=2, head_dim=2, dim_ff=5, pad=True, causal=True, seed=0)
@example(b=1, length=1, nhead=1, head_dim=1, dim_ff=1, pad=False, causal=False, seed=1)
def test_layer_matches_torch_in_eval(impl, norm_first, b, length, nhead, head_dim, dim_ff, pad, causal, seed):
    d_model = nhead * head_dim
    layer = torch_layer(d_model, nhead, dim_ff, norm_first=norm_first, seed=seed)
    mine = my_layer(impl, layer)
    x = rand(b, length, d_model, seed=seed)
    kpm = padding_mask(b, length, seed) if pad else None
    got = mine(x, key_padding_mask=kpm, causal=causal)
    want = layer(x, src_mask=causal_attn_mask(length, length) if causal else None, src_key_padding_mask=kpm)
    name = (f"TransformerEncoderLayer({d_model}, {nhead}, {dim_ff}, dropout=0.3, norm_first={norm_first}) in eval "
            f"mode on x{tuple(x.shape)} (key padding={pad}, causal={causal})")
    assert_close(got, want, **F64, name=name + " vs nn.TransformerEncoderLayer")


@pytest.mark.points(2)
@pytest.mark.parametrize("norm_first", [False, True], ids=["post_norm", "pre_norm"])
def test_layer_gradients_match_torch(impl, norm_first):
    # d_model 4: a LayerNorm over 2 features has a zero gradient everywhere (its output is +-1).
    layer = torch_layer(4, 2, 3, norm_first=norm_first, seed=3)
    mine = my_layer(impl, layer)
    kpm = torch.tensor([[False, False, True]])
    check_gradients(lambda x: mine(x, key_padding_mask=kpm, causal=True), rand(1, 3, 4, seed=5),
                    reference=lambda x: layer(x, src_mask=causal_attn_mask(3, 3), src_key_padding_mask=kpm),
                    name=f"TransformerEncoderLayer(4, 2, 3, norm_first={norm_first}) w.r.t. x")


def test_layer_load_reads_the_source_as_given(impl):
    """The loaded layer equals the source layer as it was before loading (compared with an untouched
    copy, so that writing this module's weights into the source cannot make the two agree)."""
    layer = torch_layer(4, 2, 3, norm_first=False, seed=4)
    untouched = copy.deepcopy(layer)
    mine = my_layer(impl, layer)
    x = rand(2, 3, 4, seed=6)
    assert_close(mine(x), untouched(x), **F64,
                 name="TransformerEncoderLayer(4, 2, 3) after load_from_torch vs the source layer as given")


@pytest.mark.points(2)
def test_dropout_only_in_training(impl):
    torch.manual_seed(0)
    layer = impl.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = torch.randn(3, 5, 8)
    layer.train()
    a, b = layer(x), layer(x)
    assert not torch.equal(a, b), "in training mode with dropout=0.5, two calls gave the same output (no dropout?)"
    layer.eval()
    c, d = layer(x), layer(x)
    assert torch.equal(c, d), "in eval mode two calls gave different outputs (dropout must be off)"
    plain = impl.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    plain.load_state_dict(layer.state_dict())
    assert_close(c, plain.eval()(x), name="eval output with dropout=0.5 vs the same weights with dropout=0.0")


def _permute_check(fn, reference, x, kpm, perm, name):
    """fn on permuted positions equals the permuted output (taken from torch's module, so that a
    position-independent constant does not pass)."""
    want = reference(x, kpm)[:, perm]
    got = fn(x[:, perm], None if kpm is None else kpm[:, perm])
    assert_close(got, want, **F64, name=f"{name} on permuted positions vs the permuted output")


@pytest.mark.points(2)
@settings(max_examples=10)
@given(b=st.integers(1, 2), length=st.integers(2, 6), pad=st.booleans(), norm_first=st.booleans(),
       perm_seed=st.integers(0, 2**16))
@example(b=2, length=5, pad=True, norm_first=False, perm_seed=0)
def test_permutation_equivariance(impl, b, length, pad, norm_first, perm_seed):
    perm = torch.randperm(length, generator=torch.Generator().manual_seed(perm_seed))
    x = rand(b, length, 4, seed=perm_seed)
    kpm = padding_mask(b, length, perm_seed) if pad else None
    mha = torch_mha(4, 2, True, 7)
    mine = my_mha(impl, mha)
    _permute_check(lambda t, m: mine(t, t, t, key_padding_mask=m),
                   lambda t, m: mha(t, t, t, key_padding_mask=m, need_weights=False)[0],
                   x, kpm, perm, "MultiHeadAttention(4, 2)")
    layer = torch_layer(4, 2, 6, norm_first=norm_first, seed=8)
    enc = my_layer(impl, layer)
    _permute_check(lambda t, m: enc(t, key_padding_mask=m), lambda t, m: layer(t, src_key_padding_mask=m),
                   x, kpm, perm, f"TransformerEncoderLayer(4, 2, 6, norm_first={norm_first})")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", device_params(meta=True))
def test_outputs_keep_device_and_dtype(impl, device, dtype):
    mha = impl.MultiHeadAttention(6, 3).to(device, dtype)
    q, kv = torch.randn(2, 3, 6, device=device, dtype=dtype), torch.randn(2, 4, 6, device=device, dtype=dtype)
    kpm = torch.tensor([[False, False, True, True], [False] * 4], device=device)
    out = mha(q, kv, kv, key_padding_mask=kpm, causal=True)
    layer = impl.TransformerEncoderLayer(6, 3, 5).to(device, dtype)
    enc = layer(kv, key_padding_mask=kpm, causal=True)
    for name, t, shape in (("MultiHeadAttention", out, (2, 3, 6)), ("TransformerEncoderLayer", enc, (2, 4, 6))):
        assert_shape(t, shape, name=f"{name} on {device} ({dtype})")
        assert_device(t, device, name=f"{name} on {device} ({dtype})")
        assert t.dtype == dtype, f"{name} on {device}: dtype {t.dtype}, expected {dtype}"


def test_mha_rejects_heads_that_do_not_divide_dim(impl):
    assert_raises_naming(ValueError, "heads", impl.MultiHeadAttention, 6, 4)
    assert_raises_naming(ValueError, "heads", impl.MultiHeadAttention, 6, 0)  # 0 divides no dim


def test_mha_load_rejects_other_modules(impl):
    mine = impl.MultiHeadAttention(8, 2)
    assert_raises_naming(ValueError, "mha", mine.load_from_torch, nn.MultiheadAttention(8, 4, batch_first=True))
    assert_raises_naming(ValueError, "mha", mine.load_from_torch, nn.MultiheadAttention(4, 2, batch_first=True))
    # Keys and values of another size: nn.MultiheadAttention keeps separate k/v projections then.
    assert_raises_naming(ValueError, "mha", mine.load_from_torch,
                         nn.MultiheadAttention(8, 2, kdim=4, vdim=4, batch_first=True))
    assert_raises_naming(ValueError, "mha", mine.load_from_torch, nn.Linear(8, 8))


def test_layer_load_rejects_other_layers(impl):
    mine = impl.TransformerEncoderLayer(8, 2, 16, norm_first=False)
    for other in (nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, batch_first=True),
                  nn.TransformerEncoderLayer(8, 2, 12, batch_first=True),
                  nn.TransformerEncoderLayer(8, 4, 16, batch_first=True)):
        assert_raises_naming(ValueError, "layer", mine.load_from_torch, other)


@pytest.mark.parametrize("dropout", [1.0, -0.1, float("nan"), 1.5], ids=["one", "negative", "nan", "above_one"])
def test_layer_rejects_bad_dropout(impl, dropout):
    assert_raises_naming(ValueError, "dropout", impl.TransformerEncoderLayer, 8, 2, 16, dropout=dropout)


def test_layer_accepts_dropout_zero_and_just_below_one(impl):
    for dropout in (0.0, 0.99):
        layer = impl.TransformerEncoderLayer(8, 2, 16, dropout=dropout)
        assert_shape(layer.eval()(torch.randn(1, 3, 8)), (1, 3, 8), name=f"TransformerEncoderLayer(dropout={dropout})")


def test_layer_rejects_nhead_that_does_not_divide(impl):
    assert_raises_naming(ValueError, "nhead", impl.TransformerEncoderLayer, 10, 4, 16)
    assert_raises_naming(ValueError, "nhead", impl.TransformerEncoderLayer, 10, 0, 16)  # 0 divides no d_model
