"""Wrong: defines the @tf.function inside the epoch loop, so every epoch gets a fresh function that traces again."""

import tensorflow as tf


def train(model: tf.keras.Model, dataset: tf.data.Dataset, *, epochs: int,
          optimizer: tf.keras.optimizers.Optimizer, loss_fn) -> dict[str, list[float]]:
    """Train ``model`` with a tf.function train step; return ``{"loss": [mean batch loss per epoch]}``."""
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    mean_loss = tf.keras.metrics.Mean(name="loss")

    history: dict[str, list[float]] = {"loss": []}
    for _ in range(epochs):

        @tf.function
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(loss_fn(y, model(x, training=True)))
            variables = model.trainable_variables
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        mean_loss.reset_state()  # otherwise each epoch's value averages over all epochs so far
        for x, y in dataset:
            mean_loss.update_state(train_step(x, y))
        history["loss"].append(float(mean_loss.result()))
    return history
