"""Wrong: model.fit under the strategy's scope: Keras divides each replica's mean loss by the
number of replicas, right for equal shares only, and its epoch loss weights the batches by size."""

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
    with strategy.scope():
        model = build_model()
        history = model.fit(dataset, epochs=epochs, verbose=0)
    return {"loss": [float(v) for v in history.history["loss"]]}
