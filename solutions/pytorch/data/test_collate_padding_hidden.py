"""Hidden tests for pytorch.data.collate_padding (the catalog's contract checks).

The references are independent of any padding code: the expected ``x`` is checked step by step
against each sequence, and the packed LSTM against the same ``nn.LSTM`` run on each sequence
alone (no padding at all).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from grader.checks import assert_close, assert_device, assert_raises_naming, assert_shape, device_params

# Each error case isolates one rule; together they must not outweigh the value tests (a
# submission returning zeros of the right shapes passes every one).
ERROR_CASE_POINTS = 0.25
KEYS = {"x", "lengths", "mask", "y"}

lengths_lists = st.lists(st.integers(1, 7), min_size=1, max_size=6)
pad_values = st.one_of(st.just(0.0), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


def make_batch(lengths, features, *, seed=0, dtype=torch.float64, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(n, features, generator=gen, dtype=torch.float64).to(device, dtype), 10 + i)
            for i, n in enumerate(lengths)]


def collate(impl, batch, **kwargs) -> dict:
    out = impl.pad_collate(batch, **kwargs)
    assert isinstance(out, dict), f"pad_collate returned {type(out).__name__}, expected a dict"
    missing = KEYS - set(out)
    assert not missing, f"pad_collate's dict lacks the key(s) {sorted(missing)}"
    return out


def check_padded(x, batch, pad_value, label):
    lengths = [sequence.shape[0] for sequence, _ in batch]
    features = batch[0][0].shape[1]
    assert_shape(x, (len(batch), max(lengths), features), name=f"x of {label}")
    for i, (sequence, _) in enumerate(batch):
        assert_close(x[i, :lengths[i]], sequence, rtol=0, atol=0, name=f"x[{i}, :{lengths[i]}] of {label}")
        padding = torch.full_like(x[i, lengths[i]:], pad_value)
        assert_close(x[i, lengths[i]:], padding, rtol=0, atol=0, equal_nan=True,
                     name=f"x[{i}, {lengths[i]}:] (the padding, pad_value={pad_value}) of {label}")


@pytest.mark.points(3)
@given(lengths=lengths_lists, features=st.integers(1, 4), pad_value=pad_values, seed=st.integers(0, 2**16))
def test_x_is_padded_over_hypothesis_lengths(impl, lengths, features, pad_value, seed):
    batch = make_batch(lengths, features, seed=seed)
    out = collate(impl, batch, pad_value=pad_value)
    check_padded(out["x"], batch, pad_value, f"a batch of lengths {lengths}")


@pytest.mark.points(0.5)
def test_default_pad_value_is_zero(impl):
    batch = make_batch([3, 1, 2], 2)
    check_padded(collate(impl, batch)["x"], batch, 0.0, "a batch of lengths [3, 1, 2] with the default pad_value")


@pytest.mark.points(2)
@given(lengths=lengths_lists, pad_value=pad_values)
def test_mask_marks_exactly_the_real_steps(impl, lengths, pad_value):
    out = collate(impl, make_batch(lengths, 2), pad_value=pad_value)
    mask = out["mask"]
    assert_shape(mask, (len(lengths), max(lengths)), name=f"mask for lengths {lengths}")
    assert mask.dtype == torch.bool, f"mask has dtype {mask.dtype}, expected torch.bool"
    expected = torch.tensor([[t < n for t in range(max(lengths))] for n in lengths])
    assert_close(mask, expected, name=f"mask for lengths {lengths} (True at the real steps)")


@pytest.mark.points(1.5)
@given(lengths=lengths_lists)
def test_lengths_are_cpu_int64(impl, lengths):
    out = collate(impl, make_batch(lengths, 3))
    assert_close(out["lengths"], torch.tensor(lengths, dtype=torch.int64), rtol=0, atol=0,
                 name=f"lengths for sequences of lengths {lengths}")


@pytest.mark.points(1)
def test_lengths_count_steps_equal_to_the_pad_value(impl):
    # Real steps that happen to equal pad_value: zero rows at the end of a sequence, pad_value 0.
    batch = [(torch.tensor([[1.0, 2.0], [0.0, 0.0], [0.0, 0.0]]), 0), (torch.tensor([[0.0, 0.0]]), 1),
             (torch.tensor([[3.0, 0.0], [0.0, 0.0]]), 2)]
    out = collate(impl, batch, pad_value=0.0)
    assert_close(out["lengths"], torch.tensor([3, 1, 2]), rtol=0, atol=0,
                 name="lengths of sequences whose last steps equal pad_value (they are still steps)")
    assert_close(out["mask"], torch.tensor([[True, True, True], [True, False, False], [True, True, False]]),
                 name="mask of sequences whose last steps equal pad_value")


@pytest.mark.points(1)
@given(lengths=lengths_lists)
def test_labels_are_int64(impl, lengths):
    batch = make_batch(lengths, 2)
    out = collate(impl, batch)
    assert_close(out["y"], torch.tensor([label for _, label in batch], dtype=torch.int64), rtol=0, atol=0,
                 name=f"y for a batch of {len(lengths)} labels")


@pytest.mark.points(0.5)
def test_result_has_exactly_the_four_keys(impl):
    out = collate(impl, make_batch([2, 3], 2))
    assert set(out) == KEYS, f"pad_collate's dict has the keys {sorted(out)}, expected exactly {sorted(KEYS)}"


@pytest.mark.points(1)
def test_the_batch_keeps_its_order(impl):
    lengths = [2, 5, 1, 3]  # neither sorted nor reverse-sorted
    batch = make_batch(lengths, 2, seed=3)
    out = collate(impl, batch, pad_value=-7.0)
    check_padded(out["x"], batch, -7.0, "an unsorted batch of lengths [2, 5, 1, 3]")
    assert_close(out["lengths"], torch.tensor(lengths), rtol=0, atol=0, name="lengths of an unsorted batch")
    assert_close(out["y"], torch.tensor([10, 11, 12, 13]), rtol=0, atol=0, name="y of an unsorted batch")


DTYPE_PADS = [(torch.float16, -2.5), (torch.bfloat16, -2.5), (torch.float32, -2.5), (torch.float64, -2.5),
              (torch.int32, -3), (torch.int64, -3), (torch.uint8, 9), (torch.bool, 1)]


@pytest.mark.points(0.25)
@pytest.mark.parametrize("dtype, pad_value", DTYPE_PADS, ids=[str(d) for d, _ in DTYPE_PADS])
def test_x_keeps_the_sequences_dtype(impl, dtype, pad_value):
    batch = [((sequence * 3).to(dtype), label) for sequence, label in make_batch([3, 1, 4], 2, seed=5)]
    out = collate(impl, batch, pad_value=pad_value)
    assert out["x"].dtype == dtype, f"x has dtype {out['x'].dtype} for {dtype} sequences, expected {dtype}"
    check_padded(out["x"], batch, pad_value, f"a {dtype} batch")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("pad_value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_nan_and_infinite_pad_values(impl, pad_value, dtype):
    batch = [(sequence.to(dtype), label) for sequence, label in make_batch([1, 3, 2], 2, seed=6)]
    out = collate(impl, batch, pad_value=pad_value)
    check_padded(out["x"], batch, pad_value, f"a {dtype} batch padded with {pad_value}")
    assert_close(out["mask"], torch.tensor([[True, False, False], [True, True, True], [True, True, False]]),
                 name=f"mask of a batch padded with {pad_value}")


@pytest.mark.points(1)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_outputs_live_where_the_contract_says(impl, device):
    batch = make_batch([2, 4, 3], 3, seed=7, dtype=torch.float32, device=device)
    out = collate(impl, batch)
    assert_shape(out["x"], (3, 4, 3), name=f"x of a {device} batch")
    assert_device(out["x"], device, name="x")
    assert_device(out["mask"], device, name="mask")
    assert_device(out["y"], device, name="y")
    assert_device(out["lengths"], "cpu", name="lengths (pack_padded_sequence wants them on the CPU)")
    assert_close(out["lengths"], torch.tensor([2, 4, 3]), rtol=0, atol=0, name=f"lengths of a {device} batch")
    if device != "meta":
        check_padded(out["x"], batch, 0.0, f"a {device} batch")
        assert_close(out["y"], torch.tensor([10, 11, 12], device=device), rtol=0, atol=0, name=f"y of a {device} batch")


@pytest.mark.points(1)
@pytest.mark.parametrize("lengths", [[3, 1, 2], [4]], ids=["three", "one-longest"])
def test_inputs_are_not_modified_and_x_is_a_copy(impl, lengths):
    batch = make_batch(lengths, 2, seed=8)
    before = [sequence.clone() for sequence, _ in batch]
    out = collate(impl, batch, pad_value=5.0)
    for i, (sequence, _) in enumerate(batch):
        assert torch.equal(sequence, before[i]), f"pad_collate modified batch[{i}]'s sequence"
    check_padded(out["x"], batch, 5.0, f"a batch of lengths {lengths}")
    out["x"].add_(100.0)
    for i, (sequence, _) in enumerate(batch):
        assert torch.equal(sequence, before[i]), (
            f"changing x in place changed batch[{i}]'s sequence: x must not share memory with the inputs")


@pytest.mark.points(3)
@settings(max_examples=30)
@given(lengths=lengths_lists, features=st.integers(1, 3), pad_value=pad_values, seed=st.integers(0, 2**16))
def test_packed_lstm_gives_each_sequence_its_own_final_state(impl, lengths, features, pad_value, seed):
    batch = make_batch(lengths, features, seed=seed)
    out = collate(impl, batch, pad_value=pad_value)
    torch.manual_seed(seed)
    lstm = nn.LSTM(features, 3, batch_first=True, dtype=torch.float64)
    try:
        packed = pack_padded_sequence(out["x"], out["lengths"], batch_first=True, enforce_sorted=False)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise AssertionError(f"pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False) "
                             f"rejected pad_collate's output: {exc!s:.200}") from None
    with torch.no_grad():
        _, (h, c) = lstm(packed)
        for i, (sequence, _) in enumerate(batch):
            _, (h_alone, c_alone) = lstm(sequence.unsqueeze(0))
            where = f"sequence {i} of a batch of lengths {lengths}"
            assert_close(h[:, i], h_alone[:, 0], rtol=1e-9, atol=1e-12,
                         name=f"final hidden state of the packed LSTM for {where} (vs. run alone)")
            assert_close(c[:, i], c_alone[:, 0], rtol=1e-9, atol=1e-12,
                         name=f"final cell state of the packed LSTM for {where} (vs. run alone)")


BAD_BATCHES = {
    "empty": lambda: [],
    "1-D sequence": lambda: [(torch.zeros(3, 2), 0), (torch.zeros(3), 1)],
    "3-D sequence": lambda: [(torch.zeros(3, 2), 0), (torch.zeros(3, 2, 1), 1)],
    "zero-length sequence": lambda: [(torch.zeros(3, 2), 0), (torch.zeros(0, 2), 1)],
    "features differ": lambda: [(torch.zeros(3, 2), 0), (torch.zeros(2, 3), 1)],
    "dtypes differ": lambda: [(torch.zeros(3, 2), 0), (torch.zeros(2, 2, dtype=torch.float64), 1)],
}


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("case", sorted(BAD_BATCHES))
def test_bad_batch_raises_value_error(impl, case):
    assert_raises_naming(ValueError, "batch", impl.pad_collate, BAD_BATCHES[case]())


@pytest.mark.points(ERROR_CASE_POINTS)
def test_sequences_of_length_one_are_accepted(impl):
    batch = [(torch.tensor([[1.0, 2.0]]), 4), (torch.tensor([[3.0, 4.0]]), 5)]
    out = collate(impl, batch, pad_value=-1.0)
    check_padded(out["x"], batch, -1.0, "a batch of two sequences of length 1")
    assert_close(out["mask"], torch.ones(2, 1, dtype=torch.bool), name="mask of two sequences of length 1")
