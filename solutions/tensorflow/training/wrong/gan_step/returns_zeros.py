"""Wrong: checks its arguments, then updates nothing and returns zero losses."""

import tensorflow as tf


def gan_train_step(generator: tf.keras.Model, discriminator: tf.keras.Model,
                   g_opt: tf.keras.optimizers.Optimizer, d_opt: tf.keras.optimizers.Optimizer,
                   real: tf.Tensor, noise_dim: int, *, noise: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
    """One simultaneous GAN step; returns ``{"d_loss": ..., "g_loss": ...}`` from before the update."""
    if not isinstance(noise_dim, int) or isinstance(noise_dim, bool) or noise_dim < 1:
        raise ValueError(f"noise_dim must be an int >= 1, got {noise_dim!r}")
    batch = real.shape[0]
    if noise is None:
        noise = tf.random.normal((batch, noise_dim))
    elif tuple(noise.shape) != (batch, noise_dim):
        raise ValueError(f"noise must have shape {(batch, noise_dim)} (batch, noise_dim), got {tuple(noise.shape)}")
    return {"d_loss": tf.constant(0.0), "g_loss": tf.constant(0.0)}
