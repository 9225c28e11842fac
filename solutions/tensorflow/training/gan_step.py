"""Reference solution for tensorflow.training.gan_step."""

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
    # from_logits=True computes softplus stably; log(sigmoid(x)) written out gives -inf for x << 0.
    bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(noise, training=True)
        real_logits = discriminator(real, training=True)
        fake_logits = discriminator(fake, training=True)
        d_loss = bce(tf.ones_like(real_logits), real_logits) + bce(tf.zeros_like(fake_logits), fake_logits)
        g_loss = bce(tf.ones_like(fake_logits), fake_logits)  # non-saturating: -log sigmoid(D(G(z)))
    # Both gradients before either update: each tape differentiates its own loss with respect to
    # its own network only, so neither optimizer ever sees the other network's variables.
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
    return {"d_loss": d_loss, "g_loss": g_loss}
