"""Public tests for tensorflow.performance.mixed_precision: a few quick examples. Run with
``pytest exercises/tensorflow/performance/test_mixed_precision.py``."""

import keras
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def float32_global_policy():
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_bfloat16_hidden_layer_float32_output(impl):
    model = impl.build_mixed_model(4, 3)
    hidden, output = [layer for layer in model.layers if layer.weights]
    assert hidden.compute_dtype == "bfloat16" and hidden.variable_dtype == "float32"
    logits = model(np.ones((2, 4), np.float32))
    assert logits.shape == (2, 3) and logits.dtype == "float32"
    assert keras.mixed_precision.global_policy().name == "float32", "the global policy changed"


def test_float16_uses_a_loss_scale_optimizer(impl):
    model = impl.build_mixed_model(4, 3, policy="mixed_float16")
    assert isinstance(model.optimizer, keras.mixed_precision.LossScaleOptimizer)
