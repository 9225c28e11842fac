"""Public tests for tensorflow.distributed.mirrored: a few quick examples. Run with
``pytest exercises/tensorflow/distributed/test_mirrored.py``."""

import numpy as np
import tensorflow as tf

from grader.tfchecks import logical_cpus  # importing it splits the CPU into two logical devices


def mse(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)


def build_model():
    # Zeros, not a random start: the loss goes down from there whatever the seed.
    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=mse)
    return model


def line(n=40, batch=8):
    x = np.linspace(-1, 1, n, dtype=np.float32)[:, None]
    return tf.data.Dataset.from_tensor_slices((x, 3 * x - 1)).batch(batch)


def test_default_strategy_loss_goes_down(impl):
    history = impl.train_distributed(tf.distribute.get_strategy(), build_model, line(), 5)
    assert len(history["loss"]) == 5
    assert history["loss"][-1] < history["loss"][0], f"the loss did not go down: {history['loss']}"


def test_mirrored_strategy_on_two_cpus_loss_goes_down(impl):
    # ReductionToOneDevice: several MirroredStrategy objects with the default collective
    # all-reduce in one process clash (see the exercise's docstring).
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2),
                                              cross_device_ops=tf.distribute.ReductionToOneDevice())
    history = impl.train_distributed(strategy, build_model, line(n=36), 3)  # the last batch of 4
    assert len(history["loss"]) == 3
    assert history["loss"][-1] < history["loss"][0], f"the loss did not go down: {history['loss']}"


def test_epochs_must_be_positive(impl):
    try:
        impl.train_distributed(tf.distribute.get_strategy(), build_model, line(), 0)
    except ValueError as exc:
        assert "epochs" in str(exc)
    else:
        raise AssertionError("train_distributed(..., epochs=0) should raise ValueError naming epochs")
