"""Wrong: casts the model's predictions to float32 before loss_fn, so under mixed_bfloat16
loss_fn never sees the bfloat16 predictions the contract promises it (training still works)."""

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
            pred = tf.cast(model(x, training=True), tf.float32)
            loss = tf.reduce_mean(loss_fn(y, pred))  # mean, not sum: independent of batch size
        variables = model.trainable_variables
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    history: dict[str, list[float]] = {"loss": []}
    for _ in range(epochs):
        mean_loss.reset_state()  # otherwise each epoch's value averages over all epochs so far
        for x, y in dataset:
            mean_loss.update_state(train_step(x, y))
        history["loss"].append(float(mean_loss.result()))
    return history
