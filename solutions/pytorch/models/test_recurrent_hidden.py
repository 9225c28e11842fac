"""Hidden tests for pytorch.models.recurrent (the catalog's contract checks).

References are PyTorch's own ``nn.LSTMCell``, ``nn.GRUCell`` and (packed) ``nn.LSTM`` holding the
same weights, called through ``torch.func.functional_call`` so that gradients reach the weights.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import example, given, settings, strategies as st
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape,
                           check_gradients, device_params)

F64 = dict(rtol=1e-9, atol=1e-9)
sizes = st.integers(1, 5)


def cell_tensors(gates, b, f, h, *, bias=True, seed=0, dtype=torch.float64, device="cpu", with_c=True):
    gen = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, dtype=dtype).to(device)

    x, h0 = rnd(b, f), rnd(b, h)
    c0 = rnd(b, h) if with_c else None
    w_ih, w_hh = rnd(gates * h, f), rnd(gates * h, h)
    b_ih, b_hh = (rnd(gates * h), rnd(gates * h)) if bias else (None, None)
    return x, h0, c0, w_ih, w_hh, b_ih, b_hh


def torch_lstm_cell(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None):
    cell = nn.LSTMCell(x.shape[-1], h.shape[-1], bias=b_ih is not None, device="meta")
    params = {"weight_ih": w_ih, "weight_hh": w_hh}
    if b_ih is not None:
        params |= {"bias_ih": b_ih, "bias_hh": b_hh}
    return functional_call(cell, params, (x, (h, c)))


def torch_gru_cell(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    cell = nn.GRUCell(x.shape[-1], h.shape[-1], bias=b_ih is not None, device="meta")
    params = {"weight_ih": w_ih, "weight_hh": w_hh}
    if b_ih is not None:
        params |= {"bias_ih": b_ih, "bias_hh": b_hh}
    return functional_call(cell, params, (x, h))


def torch_lstm(x, params, lengths=None):
    """nn.LSTM with the given weights; packed when ``lengths`` is given."""
    lstm = nn.LSTM(x.shape[-1], params["weight_hh"].shape[-1], device="meta")
    named = {f"{k}_l0": v for k, v in params.items()}
    if lengths is None:
        out, (h, c) = functional_call(lstm, named, (x,))
    else:
        packed = pack_padded_sequence(x, torch.as_tensor(lengths), enforce_sorted=False)
        out, (h, c) = functional_call(lstm, named, (packed,))
        out, _ = pad_packed_sequence(out, total_length=x.shape[0])
    return out, (h[0], c[0])


def lstm_params(f, h, *, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    return {"weight_ih": torch.randn(4 * h, f, generator=gen, dtype=dtype) * 0.5,
            "weight_hh": torch.randn(4 * h, h, generator=gen, dtype=dtype) * 0.5,
            "bias_ih": torch.randn(4 * h, generator=gen, dtype=dtype) * 0.5,
            "bias_hh": torch.randn(4 * h, generator=gen, dtype=dtype) * 0.5}


def make_lstm(impl, f, h, *, seed=0, dtype=torch.float64):
    module = impl.LSTM(f, h).to(dtype)
    params = lstm_params(f, h, seed=seed, dtype=dtype)
    with torch.no_grad():
        for name, value in params.items():
            getattr(module, name).copy_(value)
    return module, params


def call_lstm(module, x, lengths=None):
    result = module(x) if lengths is None else module(x, lengths)
    assert isinstance(result, tuple) and len(result) == 2 and len(result[1]) == 2, (
        "LSTM.forward must return (output, (h_n, c_n))")
    return result


@pytest.mark.points(3)
@given(b=sizes, f=sizes, h=sizes, bias=st.booleans(), seed=st.integers(0, 2**16))
@example(b=1, f=3, h=2, bias=True, seed=0)
@example(b=2, f=1, h=1, bias=False, seed=1)
def test_lstm_cell_matches_torch(impl, b, f, h, bias, seed):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = cell_tensors(4, b, f, h, bias=bias, seed=seed)
    got = impl.lstm_cell(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    want = torch_lstm_cell(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    name = f"lstm_cell(x({b}, {f}), h({b}, {h}), c, bias={bias})"
    assert isinstance(got, tuple) and len(got) == 2, f"{name} must return (h', c')"
    assert_close(got[0], want[0], **F64, name=f"{name} h' (vs nn.LSTMCell, gates i, f, g, o)")
    assert_close(got[1], want[1], **F64, name=f"{name} c' (vs nn.LSTMCell, gates i, f, g, o)")


@pytest.mark.points(3)
@given(b=sizes, f=sizes, h=sizes, bias=st.booleans(), seed=st.integers(0, 2**16))
@example(b=1, f=3, h=2, bias=True, seed=0)
@example(b=2, f=1, h=1, bias=False, seed=1)
def test_gru_cell_matches_torch(impl, b, f, h, bias, seed):
    x, h0, _, w_ih, w_hh, b_ih, b_hh = cell_tensors(3, b, f, h, bias=bias, seed=seed, with_c=False)
    got = impl.gru_cell(x, h0, w_ih, w_hh, b_ih, b_hh)
    want = torch_gru_cell(x, h0, w_ih, w_hh, b_ih, b_hh)
    assert_close(got, want, **F64, name=f"gru_cell(x({b}, {f}), h({b}, {h}), bias={bias}) "
                                         "(vs nn.GRUCell, gates r, z, n)")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("device", device_params(meta=True))
def test_cells_keep_dtype_and_device(impl, dtype, device):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = cell_tensors(4, 3, 4, 2, dtype=dtype, device=device)
    h1, c1 = impl.lstm_cell(x, h0, c0, w_ih, w_hh, b_ih, b_hh)
    gx, gh, _, gw_ih, gw_hh, gb_ih, gb_hh = cell_tensors(3, 3, 4, 2, dtype=dtype, device=device, with_c=False)
    g1 = impl.gru_cell(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh)
    for name, t in (("lstm_cell h'", h1), ("lstm_cell c'", c1), ("gru_cell h'", g1)):
        assert_shape(t, (3, 2), name=f"{name} ({dtype}, {device})")
        assert_device(t, device, name=f"{name} ({dtype}, {device})")
        assert t.dtype == dtype, f"{name}: dtype {t.dtype}, expected {dtype}"
    if device != "meta":
        tol = F64 if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
        assert_close(h1, torch_lstm_cell(x, h0, c0, w_ih, w_hh, b_ih, b_hh)[0], **tol, name=f"lstm_cell h' ({dtype})")
        assert_close(g1, torch_gru_cell(gx, gh, gw_ih, gw_hh, gb_ih, gb_hh), **tol, name=f"gru_cell h' ({dtype})")


@pytest.mark.points(2)
@settings(max_examples=4)
@given(b=st.integers(1, 2), f=st.integers(1, 2), h=st.integers(1, 2), seed=st.integers(0, 99))
def test_cell_gradients_match_torch(impl, b, f, h, seed):
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = cell_tensors(4, b, f, h, seed=seed)
    check_gradients(impl.lstm_cell, x, h0, c0, w_ih, w_hh, b_ih, b_hh, reference=torch_lstm_cell,
                    name=f"lstm_cell(x({b}, {f}), h({b}, {h})) w.r.t. every tensor argument")
    x, h0, _, w_ih, w_hh, b_ih, b_hh = cell_tensors(3, b, f, h, seed=seed, with_c=False)
    check_gradients(impl.gru_cell, x, h0, w_ih, w_hh, b_ih, b_hh, reference=torch_gru_cell,
                    name=f"gru_cell(x({b}, {f}), h({b}, {h})) w.r.t. every tensor argument")


def test_lstm_module_parameters(impl):
    module = impl.LSTM(5, 3)
    assert isinstance(module, nn.Module), "LSTM must be an nn.Module"
    shapes = {n: tuple(p.shape) for n, p in module.named_parameters()}
    want = {"weight_ih": (12, 5), "weight_hh": (12, 3), "bias_ih": (12,), "bias_hh": (12,)}
    assert shapes == want, f"LSTM(5, 3) parameters are {shapes}, expected {want}"


@pytest.mark.points(3)
@given(t=sizes, b=st.integers(1, 4), f=st.integers(1, 4), h=st.integers(1, 4), seed=st.integers(0, 2**16))
@example(t=1, b=1, f=1, h=1, seed=0)
def test_lstm_matches_torch(impl, t, b, f, h, seed):
    module, params = make_lstm(impl, f, h, seed=seed)
    x = torch.randn(t, b, f, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out, (h_n, c_n) = call_lstm(module, x)
    want_out, (want_h, want_c) = torch_lstm(x, params)
    name = f"LSTM({f}, {h})(x({t}, {b}, {f}))"
    assert_close(out, want_out, **F64, name=f"{name} output (vs nn.LSTM)")
    assert_close(h_n, want_h, **F64, name=f"{name} h_n (vs nn.LSTM)")
    assert_close(c_n, want_c, **F64, name=f"{name} c_n (vs nn.LSTM)")


@st.composite
def lengths_cases(draw):
    t = draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(1, t), min_size=1, max_size=4))
    return t, lengths


@pytest.mark.points(3)
@given(case=lengths_cases(), kind=st.sampled_from(["tensor", "list"]), seed=st.integers(0, 2**16))
@example(case=(5, [5, 1, 3]), kind="tensor", seed=0)
@example(case=(4, [2, 4, 1, 4]), kind="list", seed=1)
@example(case=(1, [1]), kind="list", seed=2)
def test_lstm_lengths_match_packed_lstm(impl, case, kind, seed):
    t, lengths = case
    module, params = make_lstm(impl, 3, 2, seed=seed)
    x = torch.randn(t, len(lengths), 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    arg = torch.tensor(lengths) if kind == "tensor" else list(lengths)
    out, (h_n, c_n) = call_lstm(module, x, arg)
    want_out, (want_h, want_c) = torch_lstm(x, params, lengths)
    name = f"LSTM(3, 2)(x{tuple(x.shape)}, lengths={lengths} as a {kind})"
    assert_close(h_n, want_h, **F64, name=f"{name} h_n (each sequence's state at its own last step)")
    assert_close(c_n, want_c, **F64, name=f"{name} c_n (each sequence's state at its own last step)")
    assert_close(out, want_out, **F64, name=f"{name} output (zero after each sequence's end)")


@pytest.mark.points(2)
def test_lstm_gradients_match_torch(impl):
    module, params = make_lstm(impl, 2, 2, seed=5)
    lengths = [3, 1]

    def fn(x, *weights):
        out, (h, c) = functional_call(module, dict(zip(params, weights, strict=True)), (x, lengths))
        return out, h, c

    def reference(x, *weights):
        out, (h, c) = torch_lstm(x, dict(zip(params, weights, strict=True)), lengths)
        return out, h, c

    x = torch.randn(3, 2, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    check_gradients(fn, x, *params.values(), reference=reference,
                    name="LSTM(2, 2)(x(3, 2, 2), lengths=[3, 1]) w.r.t. x and the weights")


@pytest.mark.parametrize("device", device_params(meta=True))
def test_lstm_runs_on_device(impl, device):
    module = impl.LSTM(3, 4).to(device)
    x = torch.randn(5, 2, 3, device=device)
    out, (h_n, c_n) = call_lstm(module, x, torch.tensor([5, 2], device=device) if device != "meta" else None)
    for name, t, shape in (("output", out, (5, 2, 4)), ("h_n", h_n, (2, 4)), ("c_n", c_n, (2, 4))):
        assert_shape(t, shape, name=f"LSTM(3, 4) {name} on {device}")
        assert_device(t, device, name=f"LSTM(3, 4) {name} on {device}")


def test_cells_reject_bad_w_ih(impl):
    # Same number of elements as the right (8, 6) weight, transposed: a numel check passes it.
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = cell_tensors(4, 2, 6, 2)
    assert_raises_naming(ValueError, "w_ih", impl.lstm_cell, x, h0, c0, w_ih.T.contiguous(), w_hh, b_ih, b_hh)
    x, h0, _, w_ih, w_hh, b_ih, b_hh = cell_tensors(3, 2, 4, 2, with_c=False)
    assert_raises_naming(ValueError, "w_ih", impl.gru_cell, x, h0, w_ih.T.contiguous(), w_hh, b_ih, b_hh)


@pytest.mark.parametrize("shape", [(4, 3), (4, 2, 5), (4, 1, 2, 3)], ids=["2d", "wrong_features", "4d"])
def test_lstm_rejects_bad_x(impl, shape):
    module = impl.LSTM(3, 2)
    assert_raises_naming(ValueError, "x", module, torch.randn(shape))


@pytest.mark.parametrize("lengths", [[0, 3], [4, 5], [3], [3, 2, 1]],
                         ids=["zero", "longer_than_T", "too_few", "too_many"])
def test_lstm_rejects_bad_lengths(impl, lengths):
    module = impl.LSTM(3, 2)
    assert_raises_naming(ValueError, "lengths", module, torch.randn(4, 2, 3), torch.tensor(lengths))
