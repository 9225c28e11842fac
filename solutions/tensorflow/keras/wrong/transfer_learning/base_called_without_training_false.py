"""Wrong: calls the base without training=False, so the model's own flag reaches it: under fit its
Dropout drops units."""

from __future__ import annotations

import keras
import numpy as np


class FineTuneModel(keras.Model):
    """``base`` in inference mode -> ``GlobalAveragePooling2D`` -> ``Dense(num_classes)`` logits."""

    def __init__(self, base: keras.Model, num_classes: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.pool = keras.layers.GlobalAveragePooling2D()
        self.head = keras.layers.Dense(num_classes)

    def call(self, inputs, training=None):
        # training=False here, at run time: the base's Dropout stays off and its BatchNormalization
        # uses its moving statistics even under fit. (A training=False given while building a
        # functional model is overridden by the model's own flag in Keras 3.15.)
        features = self.base(inputs)
        return self.head(self.pool(features))


def _set_trainable_top(base: keras.Model, n: int) -> None:
    """The last ``n`` layers of ``base`` trainable except BatchNormalization; the rest frozen."""
    # The base's flag first: setting it sets every layer inside it; then each layer's own.
    base.trainable = True
    cut = len(base.layers) - n  # not layers[-n:]: for n = 0 that is the whole list
    for index, layer in enumerate(base.layers):
        # BatchNormalization stays frozen: its moving statistics come from the pre-training data.
        layer.trainable = index >= cut and not isinstance(layer, keras.layers.BatchNormalization)


def build_finetune_model(base: keras.Model, num_classes: int, *, train_base: bool = False) -> keras.Model:
    """``base`` in inference mode -> ``GlobalAveragePooling2D`` -> ``Dense(num_classes)`` logits."""
    if not isinstance(base, keras.Model) or len(base.outputs or ()) != 1 or len(base.outputs[0].shape) != 4:
        raise ValueError(f"base must be a built keras.Model with one 4-D output (batch, height, width, "
                         f"channels), got {base!r:.100}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    if train_base:
        _set_trainable_top(base, len(base.layers))
    else:
        base.trainable = False
    model = FineTuneModel(base, num_classes)
    model_input = base.inputs[0]
    model(np.zeros((1, *model_input.shape[1:]), model_input.dtype))  # builds the head's weights
    return model


def unfreeze_top(model: keras.Model, n: int) -> None:
    """Make the last ``n`` layers of the model's base trainable (BatchNormalization excepted)."""
    nested = [layer for layer in getattr(model, "layers", ()) if isinstance(layer, keras.Model)]
    if not isinstance(model, keras.Model) or len(nested) != 1:
        raise ValueError(f"model must hold exactly one nested keras.Model (the base), found {len(nested)}")
    base = nested[0]
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(base.layers):
        raise ValueError(f"n must be an int in [0, {len(base.layers)}] (the base's layers), got {n!r}")
    _set_trainable_top(base, n)
