"""Public tests for pytorch.training.imbalanced_data: a few quick examples. Run with
``pytest exercises/pytorch/training/test_imbalanced_data.py``."""

from collections import Counter

import torch


def test_class_weights_of_a_small_example(impl):
    labels = torch.tensor([0, 0, 0, 1])  # N = 4, P = 2 classes present
    got = impl.class_weights(labels, 3)
    want = torch.tensor([4 / (2 * 3), 4 / (2 * 1), 0.0])
    assert torch.allclose(got, want), f"class_weights([0, 0, 0, 1], 3) = {got.tolist()}, expected {want.tolist()}"


def test_sampler_balances_the_classes(impl):
    labels = torch.tensor([0] * 90 + [1] * 10)
    sampler = impl.balanced_sampler(labels, 2000, generator=torch.Generator().manual_seed(0))
    per_class = Counter(int(labels[i]) for i in sampler)
    assert abs(per_class[1] / 2000 - 0.5) < 0.06, (
        f"90 examples of class 0 and 10 of class 1: class 1 was drawn {per_class[1]} times of 2000, "
        "expected about 1000")
