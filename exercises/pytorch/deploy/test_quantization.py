"""Public tests for pytorch.deploy.quantization: a few quick examples. Run with
``pytest exercises/pytorch/deploy/test_quantization.py``."""

import torch

from grader.checks import assert_close


def test_symmetric_per_tensor_example(impl):
    x = torch.tensor([-1.0, 0.0, 0.5, 2.54])
    q, scale, zero_point = impl.quantize(x)
    # max|x| = 2.54 -> scale 2.54 / 127 = 0.02, zero point 0
    assert_close(scale, torch.tensor(0.02), rtol=1e-6, atol=0, name="scale")
    assert int(zero_point) == 0, f"symmetric zero_point should be 0, got {zero_point}"
    assert q.dtype == torch.int8 and q.tolist() == [-50, 0, 25, 127], f"q is {q.tolist()}"


def test_round_trip_is_close(impl):
    x = torch.randn(10, 6)
    q, scale, zero_point = impl.quantize(x, 8, symmetric=False)
    back = impl.dequantize(q, scale, zero_point)
    err = float((back - x).abs().max())
    assert err <= float(scale) / 2 + 1e-6, f"round trip error {err} is more than scale / 2 = {float(scale) / 2}"


def test_all_zero_input_has_a_finite_scale(impl):
    q, scale, zero_point = impl.quantize(torch.zeros(4))
    assert float(scale) == 1.0, f"all-zero x: scale is {float(scale)}, expected 1.0"
    assert q.tolist() == [0, 0, 0, 0], f"all-zero x: q is {q.tolist()}, expected zeros"
