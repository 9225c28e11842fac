"""Public tests for pytorch.nn.weight_sharing: a few quick examples. Run with
``pytest exercises/pytorch/nn/test_weight_sharing.py``."""

import torch

from grader.checks import assert_shape


def test_output_weight_is_embedding_weight(impl):
    model = impl.TiedLM(11, 4)
    assert model.output.weight is model.embedding.weight, "output.weight is not embedding.weight"


def test_shared_matrix_counted_once(impl):
    model = impl.TiedLM(11, 4)
    count = sum(p.numel() for p in model.parameters())
    assert count == 11 * 4 + 4 * 4 + 4, f"{count} parameters, expected {11 * 4 + 4 * 4 + 4}"


def test_logits_shape(impl):
    model = impl.TiedLM(11, 4)
    assert_shape(model(torch.randint(0, 11, (2, 6))), (2, 6, 11), name="TiedLM(11, 4)(tokens(2, 6))")
