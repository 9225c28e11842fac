"""Public tests for pytorch.data.collate_padding: a few quick examples. Run with
``pytest exercises/pytorch/data/test_collate_padding.py``."""

import torch
from torch.utils.data import DataLoader


def test_pads_to_the_longest_sequence(impl):
    batch = [(torch.tensor([[1.0], [2.0]]), 0), (torch.tensor([[3.0], [4.0], [5.0]]), 1)]
    out = impl.pad_collate(batch, pad_value=-1.0)
    assert out["x"].tolist() == [[[1.0], [2.0], [-1.0]], [[3.0], [4.0], [5.0]]], (
        f"x should be the sequences padded with -1.0 to length 3, got {out['x'].tolist()}")
    assert out["lengths"].tolist() == [2, 3], f"lengths should be [2, 3], got {out['lengths'].tolist()}"
    assert out["mask"].tolist() == [[True, True, False], [True, True, True]], (
        f"mask should be True at the real steps, got {out['mask'].tolist()}")
    assert out["y"].tolist() == [0, 1], f"y should be the labels [0, 1], got {out['y'].tolist()}"


def test_a_dataloader_batches_with_pad_collate(impl):
    samples = [(torch.randn(n, 4), n % 2) for n in (5, 2, 7, 1)]
    out = next(iter(DataLoader(samples, batch_size=4, collate_fn=impl.pad_collate)))
    assert out["x"].shape == (4, 7, 4), f"x should have shape (4, 7, 4), got {tuple(out['x'].shape)}"
    assert torch.equal(out["x"][1, :2], samples[1][0]), "x[1, :2] should be the second sample's sequence"
    assert out["lengths"].tolist() == [5, 2, 7, 1], f"lengths should be [5, 2, 7, 1], got {out['lengths'].tolist()}"
