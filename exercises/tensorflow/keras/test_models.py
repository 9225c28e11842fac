"""Public tests for tensorflow.keras.models: a few quick examples. Run with
``pytest exercises/tensorflow/keras/test_models.py``."""

import keras
import numpy as np

from grader.tfchecks import assert_shape


def test_sequential_is_built_with_the_right_size(impl):
    model = impl.build_sequential(4, [8], 3)
    assert isinstance(model, keras.Sequential)
    assert model.count_params() == (4 + 1) * 8 + (8 + 1) * 3
    assert_shape(model(np.zeros((2, 4), np.float32)), (2, 3), name="build_sequential(4, [8], 3) output")


def test_two_input_takes_a_dict(impl):
    model = impl.build_two_input(5, 2, 3)
    out = model({"text": np.zeros((4, 5), np.float32), "numeric": np.zeros((4, 2), np.float32)})
    assert_shape(out, (4, 3), name="build_two_input(5, 2, 3) output")


def test_subclassed_model_builds_when_called(impl):
    model = impl.MLPClassifier([6], 2)
    model(np.zeros((1, 3), np.float32))
    assert model.count_params() == (3 + 1) * 6 + (6 + 1) * 2
