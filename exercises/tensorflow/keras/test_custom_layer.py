"""Public tests for tensorflow.keras.custom_layer: a few quick examples. Run with
``pytest exercises/tensorflow/keras/test_custom_layer.py``."""

import numpy as np

from grader.tfchecks import assert_close, assert_shape


def test_rbf_weights_appear_when_built(impl):
    layer = impl.RBF(3, gamma=0.5)
    assert not layer.weights
    out = layer(np.zeros((2, 4), np.float32))
    assert_shape(layer.centers, (3, 4), name="RBF(3).centers after an input with 4 features")
    assert_shape(out, (2, 3), name="RBF(3) output")


def test_rbf_value_at_a_center(impl):
    layer = impl.RBF(1, gamma=2.0)
    layer(np.zeros((1, 2), np.float32))
    layer.centers.assign([[1.0, 0.0]])
    assert_close(layer(np.array([[1.0, 0.0], [0.0, 0.0]], np.float32)), [[1.0], [np.exp(-2.0)]],
                 name="RBF(1, gamma=2) at its center and at distance 1")


def test_residual_dense_keeps_the_shape(impl):
    out = impl.ResidualDense(4)(np.ones((3, 4), np.float32))
    assert_shape(out, (3, 4), name="ResidualDense(4) output")
