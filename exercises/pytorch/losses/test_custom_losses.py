"""Public tests for pytorch.losses.custom_losses: a few quick examples. Run with
``pytest exercises/pytorch/losses/test_custom_losses.py``."""

import torch
import torch.nn.functional as F

from grader.checks import assert_close


def test_focal_with_gamma_0_is_binary_cross_entropy(impl):
    logits = torch.randn(4, 3)
    target = (torch.rand(4, 3) < 0.5).float()
    assert_close(impl.focal_loss(logits, target, gamma=0.0),
                 F.binary_cross_entropy_with_logits(logits, target),
                 name="focal_loss(logits, target, gamma=0)")


def test_focal_down_weights_easy_examples(impl):
    # Both examples are positives; the confident one (logit 4) should count much less than with BCE.
    logits, target = torch.tensor([4.0, -1.0]), torch.tensor([1.0, 1.0])
    focal = impl.focal_loss(logits, target, reduction="none")
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    assert focal[0] < 0.01 * bce[0] and focal[1] > 0.5 * bce[1], (focal, bce)


def test_huber_small_example(impl):
    pred = torch.tensor([0.0, 0.5, 3.0, -2.0])
    target = torch.zeros(4)
    # 0.5 * d**2 inside |d| <= 1, |d| - 0.5 outside.
    expected = torch.tensor([0.0, 0.125, 2.5, 1.5])
    assert_close(impl.huber(pred, target, reduction="none"), expected,
                 name="huber(pred, zeros, delta=1, reduction='none')")
