"""Wrong: the constant submission: checks epochs, but never trains and reports a loss of 0.0
for every epoch."""

import tensorflow as tf


def train(model: tf.keras.Model, dataset: tf.data.Dataset, *, epochs: int,
          optimizer: tf.keras.optimizers.Optimizer, loss_fn) -> dict[str, list[float]]:
    """Train ``model`` with a tf.function train step; return ``{"loss": [mean batch loss per epoch]}``."""
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    mean_loss = tf.keras.metrics.Mean(name="loss")

    # Defined once, outside the epoch loop: the same tf.function keeps its traced graphs, so it
    # traces once per distinct batch shape (full and short last batch), not once per epoch.
    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            pred = model(x, training=True)  # dropout on, batch norm uses and updates batch stats
            loss = tf.reduce_mean(loss_fn(y, pred))  # mean, not sum: independent of batch size
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    return {"loss": [0.0] * epochs}
