"""Wrong: the constant submission: checks epochs, but never trains and reports a loss of 0.0
for every epoch."""

import tensorflow as tf


def train(model: tf.keras.Model, dataset: tf.data.Dataset, *, epochs: int,
          optimizer: tf.keras.optimizers.Optimizer, loss_fn) -> dict[str, list[float]]:
    """Train ``model`` with a tf.function train step; return ``{"loss": [mean batch loss per epoch]}``."""
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    return {"loss": [0.0] * epochs}
