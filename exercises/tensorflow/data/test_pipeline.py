"""Public tests for tensorflow.data.pipeline: a few quick examples. Run with
``pytest exercises/tensorflow/data/test_pipeline.py``."""

import numpy as np


def test_each_example_once_per_epoch(impl):
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    dataset = impl.make_pipeline(x, y, batch_size=4, shuffle_buffer=10, seed=0)
    batches = list(dataset)
    assert [len(yb) for _, yb in batches] == [4, 4, 2], "10 examples in batches of 4: sizes 4, 4, 2"
    labels = np.concatenate([yb.numpy() for _, yb in batches])
    assert sorted(labels) == list(range(10)), f"each example exactly once per epoch, got labels {labels}"
    for xb, yb in batches:
        np.testing.assert_array_equal(xb.numpy(), x[yb.numpy()])  # each x stays with its own y


def test_windows_of_a_range(impl):
    windows = [w.numpy().tolist() for w in impl.windowed(np.arange(7), window=3, shift=2)]
    assert windows == [[0, 1, 2], [2, 3, 4], [4, 5, 6]], f"got {windows}"
