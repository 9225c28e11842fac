"""Wrong: ignores the strategy it is given and builds and trains under a MirroredStrategy of its own
(here: the two logical CPUs, with the default collective all-reduce)."""

from collections.abc import Callable

import tensorflow as tf


def train_distributed(strategy: tf.distribute.Strategy, build_model: Callable[[], tf.keras.Model],
                      dataset: tf.data.Dataset, epochs: int) -> dict[str, list[float]]:
    """Build the model with ``build_model`` under ``strategy`` and train it for ``epochs`` passes
    over ``dataset``; return ``{"loss": [mean global-batch loss per epoch]}``."""
    if not isinstance(strategy, tf.distribute.Strategy):
        raise TypeError(f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = build_model()
    optimizer = model.optimizer
    batches = strategy.experimental_distribute_dataset(dataset)

    def replica_step(x, y, global_batch_size):
        with tf.GradientTape() as tape:
            per_example = model.loss(y, model(x, training=True))
            # Divided by the global batch, not this replica's share: the strategy sums the
            # replicas' gradients, and the sum must be the gradient of the global batch's mean.
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @tf.function
    def train_step(x, y):
        # Here, outside strategy.run, every replica's share is visible: their sizes add up to
        # the global batch, which may be short (the last one) and split unequally.
        global_batch_size = tf.add_n([tf.shape(share)[0] for share in strategy.experimental_local_results(y)])
        losses = strategy.run(replica_step, args=(x, y, global_batch_size))
        return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)  # the global mean

    history: dict[str, list[float]] = {"loss": []}
    for _ in range(epochs):
        total, count = 0.0, 0
        for x, y in batches:
            total += float(train_step(x, y))
            count += 1
        history["loss"].append(total / count)
    return history
