"""Public tests for tensorflow.training.gan_step: a few quick examples. Run with
``pytest exercises/tensorflow/training/test_gan_step.py``."""

import math

import keras
import numpy as np
import tensorflow as tf


def tiny_gan(noise_dim: int = 2, data_dim: int = 3):
    keras.utils.set_random_seed(0)
    generator = keras.Sequential([keras.Input((noise_dim,)), keras.layers.Dense(4, activation="tanh"),
                                  keras.layers.Dense(data_dim)])
    discriminator = keras.Sequential([keras.Input((data_dim,)), keras.layers.Dense(4, activation="tanh"),
                                      keras.layers.Dense(1)])
    return generator, discriminator


def test_returns_two_finite_losses(impl):
    generator, discriminator = tiny_gan()
    real = tf.random.normal((8, 3))
    out = impl.gan_train_step(generator, discriminator, keras.optimizers.Adam(1e-3),
                              keras.optimizers.Adam(1e-3), real, 2)
    assert set(out) >= {"d_loss", "g_loss"}, f"expected keys d_loss and g_loss, got {sorted(out)}"
    assert all(math.isfinite(float(out[k])) for k in ("d_loss", "g_loss")), f"losses not finite: {out}"


def test_losses_at_a_zero_discriminator(impl):
    # A discriminator whose logits are all 0 gives BCE = log 2 for every sample.
    generator, discriminator = tiny_gan()
    for v in discriminator.trainable_variables:
        v.assign(tf.zeros_like(v))
    out = impl.gan_train_step(generator, discriminator, keras.optimizers.SGD(0.1),
                              keras.optimizers.SGD(0.1), tf.ones((5, 3)), 2, noise=tf.ones((5, 2)))
    assert abs(float(out["d_loss"]) - 2 * math.log(2)) < 1e-5, f"d_loss {float(out['d_loss'])}, expected 2 log 2"
    assert abs(float(out["g_loss"]) - math.log(2)) < 1e-5, f"g_loss {float(out['g_loss'])}, expected log 2"


def test_discriminator_frozen_by_a_zero_learning_rate_stays_put(impl):
    generator, discriminator = tiny_gan()
    before = [v.numpy().copy() for v in discriminator.trainable_variables]
    impl.gan_train_step(generator, discriminator, keras.optimizers.SGD(0.5), keras.optimizers.SGD(0.0),
                        tf.random.normal((6, 3)), 2)
    for v, old in zip(discriminator.trainable_variables, before):
        assert np.array_equal(v.numpy(), old), "the generator's update changed the discriminator"
