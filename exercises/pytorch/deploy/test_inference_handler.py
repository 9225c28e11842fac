"""Public tests for pytorch.deploy.inference_handler: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_inference_handler.py``."""

import torch
from torch import nn


def test_answers_in_order_with_an_error_entry(impl):
    model = nn.Linear(2, 3)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
        model.bias.zero_()
    handler = impl.Handler(model, ["a", "b", "c"], input_size=2, top_k=2)
    got = handler.handle([{"input": [5.0, 0.0]}, {"input": [1.0]}, {"input": [0.0, 5.0]}])
    assert [p["label"] for p in got[0]["predictions"]] == ["a", "b"], f"answer 0: {got[0]}"
    assert "error" in got[1] and isinstance(got[1]["error"], str), f"answer 1 should be an error: {got[1]}"
    assert [p["label"] for p in got[2]["predictions"]] == ["b", "a"], f"answer 2: {got[2]}"


def test_probabilities_sum_to_one(impl):
    handler = impl.Handler(nn.Linear(3, 4), ["w", "x", "y", "z"], input_size=3, top_k=4)
    (answer,) = handler.handle([{"input": [0.1, -0.2, 0.3]}])
    total = sum(p["probability"] for p in answer["predictions"])
    assert abs(total - 1.0) < 1e-5, f"probabilities of all 4 labels sum to {total}, expected 1"
