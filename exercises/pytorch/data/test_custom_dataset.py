"""Public tests for pytorch.data.custom_dataset: a few quick examples. Run with
``pytest exercises/pytorch/data/test_custom_dataset.py``."""

import torch
from torch.utils.data import DataLoader


def test_windows_of_a_small_series(impl):
    series = torch.arange(20.0).reshape(10, 2)  # 10 steps, 2 features
    dataset = impl.WindowDataset(series, window=3, horizon=2, stride=2)
    assert len(dataset) == 3, f"len(dataset) is {len(dataset)}, expected 3 (samples start at steps 0, 2, 4)"
    x, y = dataset[1]
    assert torch.equal(x, series[2:5]), f"dataset[1] x should be series[2:5], got {x.tolist()}"
    assert torch.equal(y, series[5:7]), f"dataset[1] y should be series[5:7], got {y.tolist()}"
    last_x, _ = dataset[-1]
    assert torch.equal(last_x, series[4:7]), "dataset[-1] should be the last sample, which starts at step 4"


def test_batches_from_a_dataloader(impl):
    series = torch.randn(12, 4)
    dataset = impl.WindowDataset(series, window=5, horizon=1)
    x, y = next(iter(DataLoader(dataset, batch_size=3)))
    assert x.shape == (3, 5, 4) and y.shape == (3, 1, 4), (
        f"a batch of 3 should be x (3, 5, 4) and y (3, 1, 4), got {tuple(x.shape)} and {tuple(y.shape)}")
    assert torch.equal(x[2], series[2:7]) and torch.equal(y[2], series[7:8]), (
        "the third sample of the first batch should be x = series[2:7], y = series[7:8]")
