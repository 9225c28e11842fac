"""Hidden tests for pytorch.data.custom_dataset (the catalog's contract checks).

The reference for every sample is a brute-force walk over the series (start at 0, step by
``stride`` while a whole window and horizon fit), not the length formula. The DataLoader test
loads in two worker processes started with ``fork``, named explicitly:

- ``fork`` needs nothing pickled. ``spawn`` and ``forkserver`` (Python 3.14's default on Linux)
  pickle the dataset by reference to its class, and the learner's class lives in a module the
  ``impl`` fixture loaded from a file under a private name that no fresh interpreter can import.
- Forking is safe here: a DataLoader worker sets torch to one thread before it runs any dataset
  code, so it never waits for the OpenMP threads of the process it was forked from (and the
  grading child's environment sets ``OMP_NUM_THREADS=1``, unless submitted code changes it).
  ``tests/grader/test_dataloader_workers.py`` grades the reference 20 times in a row through the
  fork server, half of the copies leaving torch multi-threaded when imported, and none hangs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.data import Dataset

from grader.checks import (assert_close, assert_device, assert_raises_naming, assert_shape, device_params,
                           load_batches)

# Each error case isolates one rule; together they must not outweigh the value tests (a
# submission returning zeros of the right shape passes every one).
ERROR_CASE_POINTS = 0.25


def brute_force_windows(series: torch.Tensor, window: int, horizon: int, stride: int) -> list:
    """Independent reference: walk the series, one window every ``stride`` steps."""
    samples, start = [], 0
    while start + window + horizon <= series.shape[0]:
        samples.append((series[start:start + window], series[start + window:start + window + horizon]))
        start += stride
    return samples


def numbered_series(steps: int, features: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A series whose every entry differs, so a sample shows where it was cut from."""
    return torch.arange(steps * features, dtype=torch.float64).reshape(steps, features).to(dtype)


def describe(series, window, horizon, stride) -> str:
    return f"WindowDataset(series{tuple(series.shape)}, window={window}, horizon={horizon}, stride={stride})"


sizes = st.integers(1, 6)


@pytest.mark.points(0.5)
def test_is_a_dataset_subclass(impl):
    dataset = impl.WindowDataset(numbered_series(6, 2), 2, 1)
    assert isinstance(dataset, Dataset), (
        f"WindowDataset should subclass torch.utils.data.Dataset; its bases are {type(dataset).__mro__[1:]}")


@pytest.mark.points(1.5)
@given(steps=st.integers(0, 30), window=sizes, horizon=sizes, stride=sizes)
def test_length_formula_over_hypothesis_sizes(impl, steps, window, horizon, stride):
    series = numbered_series(steps, 2)
    dataset = impl.WindowDataset(series, window, horizon, stride)
    expected = len(brute_force_windows(series, window, horizon, stride))
    got = len(dataset)
    assert got == expected, (f"len({describe(series, window, horizon, stride)}) is {got}, expected {expected} "
                             "(the number of windows that fit entirely in the series)")


@pytest.mark.points(3)
@given(steps=st.integers(2, 30), features=st.integers(1, 4), window=sizes, horizon=sizes, stride=sizes)
def test_samples_match_the_series_slices(impl, steps, features, window, horizon, stride):
    series = numbered_series(steps, features)
    dataset = impl.WindowDataset(series, window, horizon, stride)
    label = describe(series, window, horizon, stride)
    for i, (want_x, want_y) in enumerate(brute_force_windows(series, window, horizon, stride)):
        sample = dataset[i]
        assert isinstance(sample, tuple) and len(sample) == 2, (
            f"{label}[{i}] should be a tuple (x, y), got {type(sample).__name__}")
        x, y = sample
        assert_shape(x, (window, features), name=f"{label}[{i}] x")
        assert_shape(y, (horizon, features), name=f"{label}[{i}] y")
        assert_close(x, want_x, rtol=0, atol=0, name=f"{label}[{i}] x (series[{i * stride}:{i * stride + window}])")
        assert_close(y, want_y, rtol=0, atol=0, name=f"{label}[{i}] y (the {horizon} steps after x)")


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int32, torch.int64, torch.uint8,
          torch.bool]


@pytest.mark.points(0.25)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_samples_keep_the_series_dtype(impl, dtype):
    series = (numbered_series(12, 3) % 7).to(dtype)
    dataset = impl.WindowDataset(series, 4, 2, 3)
    for i in range(len(dataset)):
        x, y = dataset[i]
        assert_close(x, series[3 * i:3 * i + 4], rtol=0, atol=0, name=f"sample {i} x of a {dtype} series")
        assert_close(y, series[3 * i + 4:3 * i + 6], rtol=0, atol=0, name=f"sample {i} y of a {dtype} series")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("device", device_params(meta=True))
def test_samples_stay_on_the_series_device(impl, device):
    series = numbered_series(10, 2, torch.float32).to(device)
    dataset = impl.WindowDataset(series, 3, 2)
    assert len(dataset) == 6, f"len of a dataset over a {device} series is {len(dataset)}, expected 6"
    x, y = dataset[5]
    for name, value, rows in (("x", x, 3), ("y", y, 2)):
        assert_shape(value, (rows, 2), name=f"sample 5 {name} on {device}")
        assert_device(value, device, name=f"sample 5 {name}")
    if device != "meta":
        assert_close(x, series[5:8], rtol=0, atol=0, name=f"sample 5 x on {device}")
        assert_close(y, series[8:10], rtol=0, atol=0, name=f"sample 5 y on {device}")


@pytest.mark.points(1)
@pytest.mark.parametrize("stride", [1, 3])
def test_negative_index_counts_from_the_end(impl, stride):
    series = numbered_series(20, 2)
    dataset = impl.WindowDataset(series, 4, 3, stride)
    samples = brute_force_windows(series, 4, 3, stride)
    n = len(samples)
    for index in (-1, -2, -n):
        x, y = dataset[index]
        want_x, want_y = samples[n + index]
        assert_close(x, want_x, rtol=0, atol=0, name=f"dataset[{index}] x (of {n} samples, stride {stride})")
        assert_close(y, want_y, rtol=0, atol=0, name=f"dataset[{index}] y (of {n} samples, stride {stride})")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("stride", [1, 4])
def test_index_out_of_range_raises_index_error(impl, stride):
    series = numbered_series(20, 2)
    dataset = impl.WindowDataset(series, 4, 3, stride)
    n = len(brute_force_windows(series, 4, 3, stride))
    dataset[n - 1]  # both ends of the range are samples
    dataset[-n]
    for index in (n, n + 1, -n - 1):
        with pytest.raises(IndexError):
            dataset[index]
            pytest.fail(f"dataset[{index}] of a dataset of {n} samples returned, expected IndexError")
    empty = impl.WindowDataset(numbered_series(5, 2), 4, 3, stride)
    with pytest.raises(IndexError):
        empty[0]
        pytest.fail("dataset[0] of an empty dataset (series shorter than window + horizon) returned, "
                    "expected IndexError")


@pytest.mark.points(0.5)
@pytest.mark.parametrize("kind", ["numpy.int64", "numpy.int32"])
def test_integer_like_index_is_accepted(impl, kind):
    series = numbered_series(12, 2)
    dataset = impl.WindowDataset(series, 3, 2, 2)
    index = getattr(np, kind.split(".")[1])(2)
    x, y = dataset[index]
    assert_close(x, series[4:7], rtol=0, atol=0, name=f"dataset[{kind}(2)] x")
    assert_close(y, series[7:9], rtol=0, atol=0, name=f"dataset[{kind}(2)] y")


@pytest.mark.points(ERROR_CASE_POINTS)
def test_float_index_raises_type_error(impl):
    dataset = impl.WindowDataset(numbered_series(12, 2), 3, 2, 2)
    with pytest.raises(TypeError):
        dataset[1.0]
        pytest.fail("dataset[1.0] returned, expected TypeError (an index must be an integer)")


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("shape", [(12,), (12, 2, 1), ()], ids=["1-D", "3-D", "0-D"])
def test_series_of_another_rank_raises_value_error(impl, shape):
    assert_raises_naming(ValueError, "series", impl.WindowDataset, torch.zeros(shape), 3, 2)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("value", [0, -1])
@pytest.mark.parametrize("argument", ["window", "horizon", "stride"])
def test_argument_below_one_raises_value_error(impl, argument, value):
    kwargs = {"window": 3, "horizon": 2, "stride": 1, argument: value}
    assert_raises_naming(ValueError, argument, impl.WindowDataset, numbered_series(12, 2), **kwargs)


@pytest.mark.points(ERROR_CASE_POINTS)
@pytest.mark.parametrize("argument", ["window", "horizon", "stride"])
def test_argument_of_one_is_accepted(impl, argument):
    kwargs = {"window": 3, "horizon": 2, "stride": 2, argument: 1}
    series = numbered_series(12, 2)
    dataset = impl.WindowDataset(series, **kwargs)
    expected = brute_force_windows(series, kwargs["window"], kwargs["horizon"], kwargs["stride"])
    assert len(dataset) == len(expected), f"len with {argument}=1 is {len(dataset)}, expected {len(expected)}"
    x, y = dataset[len(expected) - 1]
    assert_close(x, expected[-1][0], rtol=0, atol=0, name=f"last sample x with {argument}=1")
    assert_close(y, expected[-1][1], rtol=0, atol=0, name=f"last sample y with {argument}=1")


@pytest.mark.points(2)
def test_samples_do_not_share_memory_with_the_series(impl):
    series = numbered_series(10, 2)
    original = series.clone()
    dataset = impl.WindowDataset(series, 4, 2, 1)
    for i in range(len(dataset)):
        dataset[i]
    assert torch.equal(series, original), "reading the samples changed the series"
    x, y = dataset[1]
    x.add_(1000)
    y.mul_(-1)
    assert torch.equal(series, original), (
        "changing a returned sample in place changed the series: samples must not share memory with it "
        "(overlapping windows are views of the same storage; clone them)")
    for i, (want_x, want_y) in enumerate(brute_force_windows(original, 4, 2, 1)):
        x, y = dataset[i]
        assert_close(x, want_x, rtol=0, atol=0, name=f"sample {i} x, read after sample 1 was changed in place")
        assert_close(y, want_y, rtol=0, atol=0, name=f"sample {i} y, read after sample 1 was changed in place")


@pytest.mark.points(3)
def test_dataloader_with_two_workers_and_shuffle_yields_every_sample_once(impl):
    steps, features, window, horizon, stride, batch = 40, 3, 5, 2, 3, 4
    series = numbered_series(steps, features)
    expected = brute_force_windows(series, window, horizon, stride)
    dataset = impl.WindowDataset(series, window, horizon, stride)
    seen = []
    try:  # loaded where the dataset lives (graded apart: workers forked from the submission's process)
        batches = load_batches(dataset, batch_size=batch, shuffle=True, num_workers=2, multiprocessing_context="fork",
                               generator=torch.Generator().manual_seed(0), timeout=30)
    except RuntimeError as exc:
        raise AssertionError(f"a DataLoader with num_workers=2 failed: {exc!s:.300}") from None
    for b, sample in enumerate(batches):
        assert isinstance(sample, (list, tuple)) and len(sample) == 2, (
            f"batch {b} from the DataLoader is not a pair (x, y): {type(sample).__name__}")
        x, y = sample
        size = min(batch, len(expected) - batch * b)
        assert_shape(x, (size, window, features), name=f"DataLoader batch {b} x")
        assert_shape(y, (size, horizon, features), name=f"DataLoader batch {b} y")
        for k in range(size):
            start = int(x[k, 0, 0]) // features  # the numbered series tells where x was cut
            index = start // stride
            assert start % stride == 0 and index < len(expected), (
                f"DataLoader batch {b} row {k}: x starts at step {start}, which is not the start of a sample")
            assert_close(x[k], expected[index][0], rtol=0, atol=0, name=f"DataLoader batch {b} row {k} x")
            assert_close(y[k], expected[index][1], rtol=0, atol=0, name=f"DataLoader batch {b} row {k} y")
            seen.append(index)
    assert sorted(seen) == list(range(len(expected))), (
        f"one epoch of the DataLoader gave samples {sorted(seen)}, expected each of 0..{len(expected) - 1} once")
