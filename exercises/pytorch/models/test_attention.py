"""Public tests for pytorch.models.attention: a few quick examples. Run with
``pytest exercises/pytorch/models/test_attention.py``."""

import torch
import torch.nn.functional as F

from grader.checks import assert_close


def test_matches_pytorch_without_mask(impl):
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    out, weights = impl.scaled_dot_product_attention(q, k, v)
    assert_close(out, F.scaled_dot_product_attention(q, k, v), rtol=1e-5, atol=1e-5, name="out")
    assert_close(weights.sum(-1), torch.ones(2, 3), rtol=1e-5, atol=1e-5, name="weights summed over keys")


def test_boolean_mask_true_means_attend(impl):
    q, k, v = torch.randn(3, 4), torch.randn(4, 4), torch.randn(4, 2)
    mask = torch.tensor([True, True, False, True])
    out, weights = impl.scaled_dot_product_attention(q, k, v, mask=mask)
    assert bool((weights[:, 2] == 0).all()), "key 2 is masked out (False), its weight must be 0"
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(3, 4)),
                 rtol=1e-5, atol=1e-5, name="out with a boolean mask")


def test_query_that_sees_nothing_gets_zeros(impl):
    q, k, v = torch.randn(2, 4), torch.randn(3, 4), torch.randn(3, 2)
    mask = torch.tensor([[True, True, False], [False, False, False]])
    out, weights = impl.scaled_dot_product_attention(q, k, v, mask=mask)
    assert not bool(out.isnan().any()), "a fully masked query must give zeros, not NaN"
    assert bool((out[1] == 0).all() and (weights[1] == 0).all())
    assert_close(out[0], F.scaled_dot_product_attention(q[:1], k[:2], v[:2])[0], rtol=1e-5, atol=1e-5,
                 name="out of the query that sees keys 0 and 1")
