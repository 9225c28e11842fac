"""Wrong: the constant submission: the right layers, parameter counts, compile settings
and errors, but every model multiplies its logits by 0."""

from __future__ import annotations

from collections.abc import Sequence

import keras


def _check_positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


def _check_args(input_dims: dict[str, int], hidden: Sequence[int], num_classes: int) -> None:
    for name, value in input_dims.items():
        _check_positive(name, value)
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise TypeError(f"hidden must be a sequence of positive ints, got {hidden!r}")
    for units in hidden:
        _check_positive("hidden", units)
    _check_positive("num_classes", num_classes)
    if num_classes < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")


def _compile(model: keras.Model, learning_rate: float) -> keras.Model:
    # The last layer outputs logits (no softmax), so the loss applies the softmax itself:
    # from_logits=True is both numerically safer and what the output actually is.
    model.compile(optimizer=keras.optimizers.Adam(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def build_sequential(input_dim: int, hidden: Sequence[int], num_classes: int, *,
                     learning_rate: float = 1e-2) -> keras.Sequential:
    """``Input(input_dim) -> [Dense(h, relu) for h in hidden] -> Dense(num_classes)``, compiled."""
    _check_args({"input_dim": input_dim}, hidden, num_classes)
    # keras.Input builds the model at once: weights exist and count_params() works before fit.
    model = keras.Sequential([keras.Input(shape=(input_dim,))]
                             + [keras.layers.Dense(units, activation="relu") for units in hidden]
                             + [keras.layers.Dense(num_classes), keras.layers.Lambda(lambda t: t * 0.0)])
    return _compile(model, learning_rate)


def build_two_input(text_dim: int, num_dim: int, num_classes: int, *, text_units: int = 32,
                    num_units: int = 8, learning_rate: float = 1e-2) -> keras.Model:
    """Functional model: two named inputs, one Dense+relu branch each, concatenated, Dense logits."""
    _check_args({"text_dim": text_dim, "num_dim": num_dim, "text_units": text_units,
                 "num_units": num_units}, [], num_classes)
    # Input names are the keys of the dict the model is called and fitted with.
    text = keras.Input(shape=(text_dim,), name="text")
    numeric = keras.Input(shape=(num_dim,), name="numeric")
    merged = keras.layers.Concatenate()([
        keras.layers.Dense(text_units, activation="relu")(text),
        keras.layers.Dense(num_units, activation="relu")(numeric),
    ])
    logits = keras.layers.Lambda(lambda t: t * 0.0)(keras.layers.Dense(num_classes)(merged))
    return _compile(keras.Model(inputs=[text, numeric], outputs=logits), learning_rate)


class MLPClassifier(keras.Model):
    """Subclassed MLP: Dense+relu per entry of ``hidden``, then Dense logits."""

    def __init__(self, hidden: Sequence[int], num_classes: int, **kwargs) -> None:
        _check_args({}, hidden, num_classes)
        super().__init__(**kwargs)
        # Layers are created once, here, and tracked as attributes; their weights appear when the
        # model first sees an input (build), since only then is the input size known.
        self.hidden_layers = [keras.layers.Dense(units, activation="relu") for units in hidden]
        self.classifier = keras.layers.Dense(num_classes)

    def call(self, inputs):
        x = inputs
        for layer in self.hidden_layers:
            x = layer(x)
        return self.classifier(x) * 0.0
