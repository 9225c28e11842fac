"""Public tests for tensorflow.graphs.tf_function: a few quick examples. Run with
``pytest exercises/tensorflow/graphs/test_tf_function.py``."""

import numpy as np
import tensorflow as tf

from grader.tfchecks import assert_close


def test_ema_scan_small_example(impl):
    out = impl.ema_scan(tf.constant([1.0, 2.0, 3.0]), 0.5)
    assert_close(out, [1.0, 1.5, 2.25], name="ema_scan([1, 2, 3], 0.5)")


def test_session_matches_ema_scan(impl):
    x = np.array([4.0, 0.0, 2.0, 1.0], np.float32)
    assert_close(impl.run_in_session(x, 0.5), impl.ema_scan(x, 0.5), name="run_in_session(x, 0.5)")


def test_running_mean_accumulates(impl):
    rm = impl.RunningMean()
    rm.update(tf.constant([1.0, 3.0]))
    assert_close(rm.update(tf.constant([5.0])), 3.0, name="RunningMean after [1, 3] then [5]")
