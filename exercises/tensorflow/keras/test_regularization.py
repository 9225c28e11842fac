"""Public tests for tensorflow.keras.regularization: a few quick examples. Run with
``pytest exercises/tensorflow/keras/test_regularization.py``."""

import keras
import numpy as np

from grader.tfchecks import assert_close, assert_shape


def test_model_outputs_logits_of_the_right_shape(impl):
    model = impl.build_regularized(4, 3, hidden=[8], l2=1e-3, dropout=0.5)
    assert_shape(model(np.zeros((2, 4), np.float32)), (2, 3), name="build_regularized(4, 3) output")


def test_penalty_is_l2_times_the_sum_of_squared_kernels(impl):
    model = impl.build_regularized(4, 3, hidden=[8], l2=0.01)
    kernels = [layer.kernel for layer in model.layers if isinstance(layer, keras.layers.Dense)]
    expected = 0.01 * sum(float(np.sum(np.square(k))) for k in kernels)
    assert_close(impl.regularization_loss(model), expected, rtol=1e-5, atol=1e-7,
                 name="regularization_loss(build_regularized(4, 3, hidden=[8], l2=0.01))")


def test_inference_is_deterministic(impl):
    model = impl.build_regularized(4, 3, hidden=[8], dropout=0.5)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    assert_close(model(x, training=False), model(x, training=False), rtol=0, atol=0,
                 name="two calls with training=False")
