"""Public tests for tensorflow.training.custom_loop: a few quick examples. Run with
``pytest exercises/tensorflow/training/test_custom_loop.py``."""

import numpy as np
import tensorflow as tf


def mse(y_true, y_pred):
    return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)


def test_loss_goes_down_on_a_line(impl):
    x = np.linspace(-1, 1, 40, dtype=np.float32)[:, None]
    dataset = tf.data.Dataset.from_tensor_slices((x, 3 * x - 1)).batch(8)
    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])
    history = impl.train(model, dataset, epochs=5, optimizer=tf.keras.optimizers.SGD(0.1), loss_fn=mse)
    assert len(history["loss"]) == 5
    assert history["loss"][-1] < history["loss"][0], f"the loss did not go down: {history['loss']}"


def test_epochs_must_be_positive(impl):
    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])
    dataset = tf.data.Dataset.from_tensor_slices((np.zeros((4, 1)), np.zeros((4, 1)))).batch(2)
    try:
        impl.train(model, dataset, epochs=0, optimizer=tf.keras.optimizers.SGD(0.1), loss_fn=mse)
    except ValueError as exc:
        assert "epochs" in str(exc)
    else:
        raise AssertionError("train(..., epochs=0) should raise ValueError naming epochs")
