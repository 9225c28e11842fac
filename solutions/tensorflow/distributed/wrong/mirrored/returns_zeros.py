"""Wrong: the constant submission: checks its arguments, but never trains and reports a loss of
0.0 for every epoch."""

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
    return {"loss": [0.0] * epochs}
