"""One GAN training step in TensorFlow: two networks, two losses, two tapes, two optimizers.

The question
------------
How are GANs implemented in TensorFlow? A generator ``G`` turns noise ``z`` into samples; a
discriminator ``D`` scores samples with a logit, high for "real". TensorFlow's DCGAN tutorial
trains both at once: one forward pass under two ``tf.GradientTape``s, then each tape gives the
gradients of its own network's loss, and each optimizer updates its own network only. The
discriminator learns to tell real from fake; the generator uses the *non-saturating* loss
``-log sigmoid(D(G(z)))``, which still has a gradient when D easily spots the fakes. The classic
bugs: one tape (or one gradient) for both losses, an update that reaches the other network,
``log(sigmoid(x))`` written out (it overflows for large logits), and networks left in inference
mode.

Your task
---------
``gan_train_step(generator, discriminator, g_opt, d_opt, real, noise_dim, *, noise=None)``: one
simultaneous training step of both networks; return the two losses.

Contract
--------
- ``generator`` is a Keras model mapping noise ``(batch, noise_dim)`` to samples shaped like
  ``real`` (``(batch, ...)``, any batch size from 1); ``discriminator`` a Keras model mapping such
  samples to logits ``(batch, 1)``; ``g_opt`` and ``d_opt`` are Keras optimizers. Each call may
  get different models and optimizers.
- The noise is ``noise`` when given, else one draw of ``tf.random.normal((batch, noise_dim))``
  with ``batch = real.shape[0]``; the same noise batch serves both losses.
- Both networks are called with ``training=True``.
- With ``fake = generator(noise)``, the losses are binary cross-entropy on logits, each a mean
  over the batch: ``d_loss = BCE(1, D(real)) + BCE(0, D(fake))`` and the non-saturating
  ``g_loss = BCE(1, D(fake))``.
- The losses are computed from the logits stably: finite and exact even when the discriminator's
  logits are large (+-100 and beyond).
- Both gradients are taken at the parameters from before the step (a simultaneous update, as in
  TensorFlow's DCGAN tutorial): ``d_loss`` with respect to ``discriminator.trainable_variables``
  and ``g_loss`` with respect to ``generator.trainable_variables``.
- ``d_opt.apply_gradients`` updates the discriminator and ``g_opt.apply_gradients`` the generator,
  once each per call; each update leaves the other network untouched.
- Returns ``{"d_loss": ..., "g_loss": ...}``: the two losses of this step (before the update) as
  scalar float tensors (``float(...)`` works on them).
- ``noise_dim`` that is not an int >= 1 (a bool included) raises ``ValueError`` naming
  ``noise_dim``; a ``noise`` whose shape is not ``(batch, noise_dim)`` raises ``ValueError``
  naming ``noise``.

Hints
-----
- ``with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:`` records both at once.
- ``keras.losses.BinaryCrossentropy(from_logits=True)`` or ``tf.nn.sigmoid_cross_entropy_with_logits``.
- Keep ``gan_train_step`` itself eager: it gets new models and optimizers from call to call,
  and a ``tf.function`` may create variables (the optimizers' slots) on its first trace only.
"""

import tensorflow as tf


def gan_train_step(generator: tf.keras.Model, discriminator: tf.keras.Model,
                   g_opt: tf.keras.optimizers.Optimizer, d_opt: tf.keras.optimizers.Optimizer,
                   real: tf.Tensor, noise_dim: int, *, noise: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
    """One simultaneous GAN step; returns ``{"d_loss": ..., "g_loss": ...}`` from before the update."""
    raise NotImplementedError
