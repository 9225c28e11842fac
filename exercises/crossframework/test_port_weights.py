"""Public tests for crossframework.port_weights: a few quick examples. Run with
``pytest exercises/crossframework/test_port_weights.py``."""

import keras
import numpy as np
import torch
from torch import nn

from grader.checks import assert_close


def test_linear_relu_to_keras(impl):
    source = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    ported = impl.torch_to_keras(source)
    x = torch.randn(5, 4)
    assert_close(torch.from_numpy(np.array(ported(x.numpy()))), source(x).detach(), rtol=1e-5, atol=1e-5,
                 name="torch_to_keras(Linear-ReLU-Linear) outputs")


def test_conv_to_keras_is_channels_last(impl):
    source = nn.Sequential(nn.Conv2d(3, 2, 3))
    ported = impl.torch_to_keras(source)
    x = torch.randn(1, 3, 5, 5)
    out = np.array(ported(x.permute(0, 2, 3, 1).numpy()))
    assert out.shape == (1, 3, 3, 2), f"Keras output shape {out.shape}, expected (1, 3, 3, 2) (channels last)"
    assert_close(torch.from_numpy(out).permute(0, 3, 1, 2), source(x).detach(), rtol=1e-5, atol=1e-5,
                 name="torch_to_keras(Conv2d) outputs")


def test_dense_to_torch(impl):
    source = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    ported = impl.keras_to_torch(source)
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    assert_close(ported(torch.from_numpy(x)).detach(), torch.from_numpy(np.array(source(x))), rtol=1e-5,
                 atol=1e-5, name="keras_to_torch(Dense) outputs")
