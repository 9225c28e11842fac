"""Wrong: the loss reads the logits as probabilities (from_logits left False)."""

from __future__ import annotations

import keras

POLICIES = ("mixed_bfloat16", "mixed_float16")


def _check_size(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value!r}")


def build_mixed_model(input_dim: int, num_classes: int, policy: str = "mixed_bfloat16") -> keras.Model:
    """A compiled classifier: hidden Dense in ``policy``, float32 output logits."""
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    _check_size("input_dim", input_dim, 1)
    _check_size("num_classes", num_classes, 2)
    # Policies given per layer, never globally: a global policy would leak into every model
    # built after this one.
    model = keras.Sequential([
        keras.Input((input_dim,)),
        keras.layers.Dense(64, activation="relu", dtype=policy),
        # float32 logits: the loss (log-softmax) and its gradient are computed in full precision.
        keras.layers.Dense(num_classes, dtype="float32"),
    ])
    optimizer = keras.optimizers.Adam(learning_rate=0.01)
    if policy == "mixed_float16":
        # float16's smallest normal is 6e-5: scale the loss up so small gradients survive.
        optimizer = keras.mixed_precision.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(),
                  metrics=["accuracy"])
    return model
