"""Public tests for pytorch.tensors.creation_ops: a few quick examples. Run with
``pytest exercises/pytorch/tensors/test_creation_ops.py``."""

import math

import torch

from grader.checks import assert_close


def test_sinusoidal_small_table(impl):
    out = impl.sinusoidal_positions(3, 4, base=100.0)
    # f_0 = 1, f_1 = 100 ** (-2 / 4) = 0.1
    expected = torch.tensor([[math.sin(p), math.cos(p), math.sin(0.1 * p), math.cos(0.1 * p)]
                             for p in range(3)], dtype=torch.float32)
    assert_close(out, expected, name="sinusoidal_positions(3, 4, base=100.0)")


def test_coordinate_grid_corners(impl):
    grid = impl.coordinate_grid(3, 5)
    assert grid.shape == (3, 5, 2), f"coordinate_grid(3, 5): shape {tuple(grid.shape)}"
    assert grid[0, 0].tolist() == [-1.0, -1.0], "top-left pixel should be (x, y) = (-1, -1)"
    assert grid[0, 4].tolist() == [1.0, -1.0], "top-right pixel should be (x, y) = (1, -1)"
    assert grid[2, 2].tolist() == [0.0, 1.0], "bottom-middle pixel should be (x, y) = (0, 1)"


def test_coordinate_grid_matches_affine_grid(impl):
    theta = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    expected = torch.nn.functional.affine_grid(theta, [1, 1, 4, 6], align_corners=True)[0]
    assert_close(impl.coordinate_grid(4, 6), expected, name="coordinate_grid(4, 6)")
