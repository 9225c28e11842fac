"""Public tests for pytorch.losses.cross_entropy: a few quick examples. Run with
``pytest exercises/pytorch/losses/test_cross_entropy.py``."""

import math

import torch
import torch.nn.functional as F

from grader.checks import assert_close


def test_uniform_logits_give_log_c(impl):
    # Equal logits: every class has probability 1/C, so the loss is log(C) whatever the target.
    loss = impl.cross_entropy(torch.zeros(3, 5), torch.tensor([0, 2, 4]))
    assert_close(loss, torch.tensor(math.log(5)), name="cross_entropy(zeros(3, 5), target)")


def test_matches_torch_on_a_small_batch(impl):
    logits, target = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])
    assert_close(impl.cross_entropy(logits, target), F.cross_entropy(logits, target),
                 name="cross_entropy(logits, target)")


def test_reduction_none_keeps_the_target_shape(impl):
    logits, target = torch.randn(2, 4, 3, 5), torch.randint(0, 4, (2, 3, 5))
    out = impl.cross_entropy(logits, target, reduction="none")
    assert_close(out, F.cross_entropy(logits, target, reduction="none"),
                 name="cross_entropy(logits (2, 4, 3, 5), target, reduction='none')")
