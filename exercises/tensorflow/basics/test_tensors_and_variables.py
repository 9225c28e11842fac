"""Public tests for tensorflow.basics.tensors_and_variables: a few quick examples. Run with
``pytest exercises/tensorflow/basics/test_tensors_and_variables.py``."""

import tensorflow as tf

from grader.tfchecks import assert_close


def test_scatter_rows_small_example(impl):
    t = tf.zeros((3, 2))
    out = impl.scatter_rows(t, [2, 0], [[1.0, 2.0], [3.0, 4.0]])
    assert_close(out, [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]], name="scatter_rows(t, [2, 0], rows)")
    assert_close(t, tf.zeros((3, 2)), name="t after scatter_rows (must be unchanged)")


def test_scatter_rows_in_place_returns_the_same_variable(impl):
    var = tf.Variable([[1, 1], [2, 2]])
    out = impl.scatter_rows_(var, [1], [[5, 6]])
    assert out is var, "scatter_rows_ must return the Variable it was given, not a new one"
    assert_close(var, [[1, 1], [5, 6]], name="var after scatter_rows_")
