"""Hidden tests for tensorflow.keras.regularization (the catalog's contract checks)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import assert_close, assert_raises_naming, assert_shape, central_differences

DROPOUT_SEED = 7
DROPOUT_BATCH, DROPOUT_UNITS = 64, 32  # 2048 units per training call
DROPOUT_RATE_TOL = 0.08  # over 9 standard deviations of the dropped fraction at p = 0.5


# --- reading the model the learner built --------------------------------------------------------

def flat_layers(model) -> list:
    """The model's layers in order, nested models unrolled, input layers left out."""
    out = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            out += flat_layers(layer)
        elif not isinstance(layer, keras.layers.InputLayer):
            out.append(layer)
    return out


def dense_and_norm_layers(model, hidden, name: str):
    layers = flat_layers(model)
    dense = [layer for layer in layers if isinstance(layer, keras.layers.Dense)]
    norms = [layer for layer in layers if isinstance(layer, keras.layers.BatchNormalization)]
    assert len(dense) == len(hidden) + 1 and len(norms) == len(hidden), (
        f"{name}: {len(dense)} Dense and {len(norms)} BatchNormalization layers, expected "
        f"{len(hidden) + 1} Dense (one per hidden size and the output) and {len(hidden)} "
        "BatchNormalization (one per hidden block)")
    return dense, norms


def build(impl, input_dim, num_classes, name: str, **kwargs):
    model = impl.build_regularized(input_dim, num_classes, **kwargs)
    assert isinstance(model, keras.Model), f"{name}: expected a keras.Model, got {type(model).__name__}"
    try:
        model.count_params()
    except ValueError as exc:
        raise AssertionError(f"{name}: the model has no weights yet ({exc!s:.120}): give it an input "
                             "shape (keras.Input) so it is built when created") from None
    return model


def randomise(model, hidden, seed: int, name: str) -> None:
    """Random values for every weight and moving statistic (variances positive), so that each
    one shows in the outputs and in any penalty that wrongly includes it."""
    rng = np.random.default_rng(seed)
    dense, norms = dense_and_norm_layers(model, hidden, name)
    for layer in dense:
        for weight in layer.weights:
            weight.assign(rng.normal(size=weight.shape).astype(np.float32))
    for layer in norms:
        size = layer.gamma.shape
        layer.gamma.assign(rng.uniform(0.5, 2.0, size).astype(np.float32))
        layer.beta.assign(rng.normal(size=size).astype(np.float32))
        layer.moving_mean.assign(rng.normal(size=size).astype(np.float32))
        layer.moving_variance.assign(rng.uniform(0.5, 3.0, size).astype(np.float32))


def reference_forward(model, hidden, x, name: str, *, batch_statistics: bool = False) -> np.ndarray:
    """Independent NumPy forward pass of the documented stack without dropout: Dense ->
    BatchNormalization (moving or batch statistics) -> ReLU per hidden size, then Dense."""
    dense, norms = dense_and_norm_layers(model, hidden, name)
    h = np.asarray(x, np.float64)

    def affine(layer, h):
        h = h @ np.asarray(layer.kernel, np.float64)
        return h + np.asarray(layer.bias, np.float64) if layer.bias is not None else h

    for layer, norm in zip(dense, norms):
        z = affine(layer, h)
        if batch_statistics:
            mean, variance = z.mean(axis=0), z.var(axis=0)
        else:
            mean, variance = np.asarray(norm.moving_mean, np.float64), np.asarray(norm.moving_variance, np.float64)
        z = (np.asarray(norm.gamma, np.float64) * (z - mean) / np.sqrt(variance + 1e-3)
             + np.asarray(norm.beta, np.float64))
        h = np.maximum(z, 0)
    return affine(dense[-1], h)


def total_penalty(model) -> float:
    return float(np.sum([np.asarray(loss, np.float64) for loss in model.losses]))


def kernel_penalty(model, hidden, l2, name: str) -> float:
    dense, _ = dense_and_norm_layers(model, hidden, name)
    return l2 * sum(float(np.sum(np.asarray(layer.kernel, np.float64) ** 2)) for layer in dense)


def inputs(seed: int, batch: int, dim: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(batch, dim)).astype(np.float32)


# --- the model at inference ---------------------------------------------------------------------

@pytest.mark.points(3)
@settings(max_examples=6)
@given(input_dim=st.integers(1, 6), hidden=st.lists(st.integers(1, 6), max_size=2),
       num_classes=st.integers(1, 5), batch=st.integers(1, 4), seed=st.integers(0, 2**16))
@example(input_dim=3, hidden=[], num_classes=2, batch=1, seed=0)  # the output Dense alone
@example(input_dim=4, hidden=[5, 3], num_classes=2, batch=3, seed=1)  # two blocks
def test_inference_output_is_the_documented_stack(impl, input_dim, hidden, num_classes, batch, seed):
    name = f"build_regularized({input_dim}, {num_classes}, hidden={hidden}, dropout=0.5)"
    model = build(impl, input_dim, num_classes, name, hidden=hidden, dropout=0.5)
    randomise(model, hidden, seed, name)
    x = inputs(seed, batch, input_dim)
    expected = reference_forward(model, hidden, x, name)
    out = model(x, training=False)
    assert_shape(out, (batch, num_classes), name=f"{name} output")
    assert_close(out, expected, rtol=1e-4, atol=1e-4,
                 name=f"{name} with training=False (Dense -> BatchNormalization with its moving "
                      "statistics -> ReLU per block, then Dense logits)")
    assert_close(model(x), out, rtol=0, atol=0, name=f"{name} called without a training argument")


@pytest.mark.parametrize("hidden", [(), (4, 3), range(3, 5)], ids=["empty", "tuple", "range"])
def test_hidden_may_be_any_sequence(impl, hidden):
    name = f"build_regularized(3, 2, hidden={hidden!r})"
    model = build(impl, 3, 2, name, hidden=hidden)
    randomise(model, list(hidden), 3, name)
    x = inputs(3, 4, 3)
    assert_close(model(x), reference_forward(model, list(hidden), x, name), rtol=1e-4, atol=1e-4,
                 name=f"{name} at inference")


def test_prediction_does_not_depend_on_the_rest_of_the_batch(impl):
    name = "build_regularized(4, 3, hidden=[6])"
    model = build(impl, 4, 3, name, hidden=[6])
    randomise(model, [6], 11, name)
    x = inputs(11, 5, 4)
    expected = reference_forward(model, [6], x, name)
    for i in range(len(x)):
        assert_close(model(x[i:i + 1], training=False), expected[i:i + 1], rtol=1e-4, atol=1e-4,
                     name=f"{name}: sample {i} predicted alone with training=False (BatchNormalization "
                          "must use its moving statistics, not the batch's)")


# --- training mode ------------------------------------------------------------------------------

def test_training_call_uses_batch_statistics_and_updates_moving_averages(impl):
    hidden = [5]
    name = "build_regularized(3, 2, hidden=[5], dropout=0.0)"
    model = build(impl, 3, 2, name, hidden=hidden, dropout=0.0)
    randomise(model, hidden, 12, name)
    x = inputs(12, 8, 3)
    (dense, *_), (norm,) = dense_and_norm_layers(model, hidden, name)
    mean0, var0 = np.asarray(norm.moving_mean, np.float64), np.asarray(norm.moving_variance, np.float64)
    z = x.astype(np.float64) @ np.asarray(dense.kernel, np.float64)
    if dense.bias is not None:
        z += np.asarray(dense.bias, np.float64)
    expected = reference_forward(model, hidden, x, name, batch_statistics=True)
    assert_close(model(x, training=True), expected, rtol=1e-4, atol=1e-4,
                 name=f"{name} with training=True (BatchNormalization normalises with the batch's "
                      "mean and biased variance)")
    assert_close(norm.moving_mean, 0.99 * mean0 + 0.01 * z.mean(axis=0), rtol=1e-5, atol=1e-5,
                 name=f"{name}: moving mean after one training call (momentum 0.99)")
    assert_close(norm.moving_variance, 0.99 * var0 + 0.01 * z.var(axis=0), rtol=1e-5, atol=1e-5,
                 name=f"{name}: moving variance after one training call (momentum 0.99)")


def dropout_outputs(impl, rate: float, seed: int = DROPOUT_SEED):
    """A model whose block outputs are known and positive, read through an identity output
    layer: returns (one training call, the values without dropout, an inference call)."""
    units = DROPOUT_UNITS
    name = f"build_regularized({units}, {units}, hidden=[{units}], dropout={rate})"
    model = build(impl, units, units, name, hidden=[units], dropout=rate)
    (first, output), (norm,) = dense_and_norm_layers(model, [units], name)
    rng = np.random.default_rng(seed)
    first.kernel.assign((rng.normal(size=(units, units)) / np.sqrt(units)).astype(np.float32))
    if first.bias is not None:
        first.bias.assign(np.zeros(units, np.float32))
    # beta = 6 with gamma = 0.5 keeps every unit positive, so a zero in the output can only be
    # dropout: with batch statistics |normalised z| <= sqrt(batch - 1) < 8, and at inference z is
    # about standard normal (the kernel is scaled by 1 / sqrt(units)) and the moving statistics
    # are close to their initial 0 and 1.
    norm.gamma.assign(np.full(units, 0.5, np.float32))
    norm.beta.assign(np.full(units, 6.0, np.float32))
    output.kernel.assign(np.eye(units, dtype=np.float32))
    output.bias.assign(np.zeros(units, np.float32))
    x = rng.normal(size=(DROPOUT_BATCH, units)).astype(np.float32)
    keras.utils.set_random_seed(seed)
    trained = np.asarray(model(x, training=True), np.float64)
    undropped = reference_forward(model, [units], x, name, batch_statistics=True)
    return name, model, x, trained, undropped


@pytest.mark.points(2)
@pytest.mark.parametrize("rate", [0.0, 0.2, 0.5])
def test_dropout_only_when_training(impl, rate):
    name, model, x, trained, undropped = dropout_outputs(impl, rate)
    dropped = trained == 0
    kept = np.isclose(trained, undropped / (1 - rate), rtol=1e-4, atol=1e-4)
    assert (dropped | kept).all(), (
        f"{name} with training=True: every unit of a block's output must be either dropped (0) or "
        f"kept and scaled by 1 / (1 - dropout) = {1 / (1 - rate):.4g}; "
        f"{int((~(dropped | kept)).sum())} of {trained.size} are neither")
    fraction = float(dropped.mean())
    assert abs(fraction - rate) <= (DROPOUT_RATE_TOL if rate else 0), (
        f"{name} with training=True dropped {fraction:.1%} of the units, expected about {rate:.0%} "
        "(Keras' Dropout(rate) takes the fraction to drop)")
    inferred = model(x, training=False)
    assert not np.any(np.asarray(inferred) == 0), (
        f"{name} with training=False zeroed some units: dropout must be off at inference")
    assert_close(inferred, reference_forward(model, [DROPOUT_UNITS], x, name), rtol=1e-4, atol=1e-4,
                 name=f"{name} with training=False (no dropout, moving statistics)")
    assert_close(model(x), inferred, rtol=0, atol=0, name=f"{name} called without a training argument")
    assert_close(model(x, training=False), inferred, rtol=0, atol=0,
                 name=f"{name}: a second call with training=False (inference is deterministic)")


def test_defaults_are_one_block_of_64_and_l2_of_1e_4(impl):
    name = "build_regularized(3, 2) (hidden=(64,) and l2=1e-4 by default)"
    model = build(impl, 3, 2, name)
    dense, _ = dense_and_norm_layers(model, [64], name)
    shapes = [tuple(layer.kernel.shape) for layer in dense]
    assert shapes == [(3, 64), (64, 2)], f"{name}: the Dense kernels have shapes {shapes}, expected [(3, 64), (64, 2)]"
    randomise(model, [64], 0, name)
    assert_close(total_penalty(model), kernel_penalty(model, [64], 1e-4, name), rtol=1e-5, atol=1e-9,
                 name=f"{name}: the sum of model.losses (1e-4 * sum(W ** 2) over the Dense kernels)")


# --- L2 penalties -------------------------------------------------------------------------------

@pytest.mark.points(3)
@settings(max_examples=6)
@given(l2=st.floats(0.0, 1.0), hidden=st.lists(st.integers(1, 5), max_size=2),
       input_dim=st.integers(1, 4), num_classes=st.integers(1, 3), seed=st.integers(0, 2**16))
@example(l2=0, hidden=[3], input_dim=2, num_classes=2, seed=0)  # an int, the included end
@example(l2=1e-4, hidden=[4, 3], input_dim=2, num_classes=3, seed=1)
def test_l2_penalty_is_l2_times_the_sum_of_squared_kernels(impl, l2, hidden, input_dim, num_classes, seed):
    name = f"build_regularized({input_dim}, {num_classes}, hidden={hidden}, l2={l2!r})"
    model = build(impl, input_dim, num_classes, name, hidden=hidden, l2=l2)
    randomise(model, hidden, seed, name)  # biases and BatchNormalization weights are not zero
    expected = kernel_penalty(model, hidden, l2, name)
    what = ("the sum of model.losses must be l2 * sum(W ** 2) over every Dense kernel (output "
            "layer included), with no penalty on biases, BatchNormalization weights or activations")
    assert_close(total_penalty(model), expected, rtol=1e-5, atol=1e-7, name=f"{name} before any call: {what}")
    x = inputs(seed, 3, input_dim)
    model(x, training=True)
    model(x)
    assert_close(total_penalty(model), kernel_penalty(model, hidden, l2, name), rtol=1e-5, atol=1e-7,
                 name=f"{name} after a training and an inference call: {what}")


# --- regularization_loss ------------------------------------------------------------------------

class TwoDense(keras.Model):
    """A subclassed model with a penalised kernel and a penalised bias."""

    def __init__(self):
        super().__init__()
        self.first = keras.layers.Dense(3, kernel_regularizer=keras.regularizers.L1(0.05))
        self.second = keras.layers.Dense(2, bias_regularizer=keras.regularizers.L2(0.3),
                                         bias_initializer="ones")

    def call(self, x):
        return self.second(self.first(x))


def penalised_model(kind: str):
    """A model with known penalties, and their sum computed from its weights in NumPy."""
    keras.utils.set_random_seed(21)
    x = inputs(21, 4, 3)
    if kind == "sequential":
        model = keras.Sequential([keras.Input((3,)),
                                  keras.layers.Dense(4, kernel_regularizer=keras.regularizers.L1L2(0.01, 0.1)),
                                  keras.layers.Dense(2, kernel_regularizer=keras.regularizers.L2(0.2))])
        k1, k2 = (np.asarray(layer.kernel, np.float64) for layer in model.layers)
        return model, 0.01 * np.abs(k1).sum() + 0.1 * (k1 ** 2).sum() + 0.2 * (k2 ** 2).sum()
    if kind == "nested_functional_with_activity":
        inner = keras.Sequential([keras.Input((3,)),
                                  keras.layers.Dense(4, kernel_regularizer=keras.regularizers.L2(0.5))])
        inp = keras.Input((3,))
        activity = keras.layers.Dense(2, activity_regularizer=keras.regularizers.L2(0.1))
        model = keras.Model(inp, activity(inner(inp)))
        model(x)  # the activity penalty of this call joins model.losses
        k = np.asarray(inner.layers[0].kernel, np.float64)
        features = x @ k + np.asarray(inner.layers[0].bias, np.float64)
        out = features @ np.asarray(activity.kernel, np.float64) + np.asarray(activity.bias, np.float64)
        # Keras records an activity penalty per sample: divided by the batch size.
        return model, 0.5 * (k ** 2).sum() + 0.1 * (out ** 2).sum() / len(x)
    if kind == "subclassed":
        model = TwoDense()
        model(x)
        k, b = np.asarray(model.first.kernel, np.float64), np.asarray(model.second.bias, np.float64)
        return model, 0.05 * np.abs(k).sum() + 0.3 * (b ** 2).sum()
    assert kind == "no_penalties"
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]), 0.0


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", ["sequential", "nested_functional_with_activity", "subclassed", "no_penalties"])
def test_regularization_loss_sums_every_penalty(impl, kind):
    model, expected = penalised_model(kind)
    name = f"regularization_loss of a {kind.replace('_', ' ')} model"
    got = impl.regularization_loss(model)
    assert tf.is_tensor(got), f"{name}: expected a scalar tensor, got {type(got).__name__}"
    assert tuple(got.shape) == () and got.dtype.is_floating, (
        f"{name}: expected a scalar float tensor, got shape {tuple(got.shape)} and dtype {got.dtype.name}")
    assert_close(got, expected, rtol=1e-5, atol=1e-7, name=f"{name} (the sum of model.losses)")


def test_regularization_loss_gradient_flows_to_the_weights(impl):
    l2 = 0.25
    keras.utils.set_random_seed(31)
    model = keras.Sequential([keras.Input((3,), dtype="float64"),
                              keras.layers.Dense(4, dtype="float64", kernel_regularizer=keras.regularizers.L2(l2)),
                              keras.layers.Dense(2, dtype="float64")])
    kernel, bias = model.layers[0].kernel, model.layers[0].bias
    with tf.GradientTape() as tape:
        loss = impl.regularization_loss(model)
    assert tf.is_tensor(loss), (f"regularization_loss returned a {type(loss).__name__}: a tensor is "
                                "needed for gradients to flow")
    grads = tape.gradient(loss, [kernel, bias])
    assert grads[0] is not None, ("no gradient flows from regularization_loss(model) to the penalised "
                                  "kernel (is the result computed outside TensorFlow?)")
    assert_close(grads[0], 2 * l2 * np.asarray(kernel), rtol=1e-6, atol=1e-9,
                 name="gradient of regularization_loss w.r.t. a kernel with L2(0.25) (2 * l2 * W)")
    # The penalty is quadratic, so central differences are exact for any step: a large one keeps
    # them accurate even if the sum is taken in float32.
    assert_close(grads[0], central_differences(lambda: impl.regularization_loss(model), kernel, eps=1e-2),
                 rtol=1e-4, atol=1e-4, name="gradient of regularization_loss vs finite differences")
    assert grads[1] is None or not np.any(np.asarray(grads[1])), (
        "regularization_loss has a gradient w.r.t. an unpenalised bias")


# --- arguments ----------------------------------------------------------------------------------

BAD_SIZES = [("input_dim", {"input_dim": 0}), ("input_dim", {"input_dim": 2.5}),
             ("num_classes", {"num_classes": 0}), ("num_classes", {"num_classes": -3}),
             ("hidden", {"hidden": [4, 0]}), ("hidden", {"hidden": [4.0]}),
             ("hidden", {"hidden": 4})]  # a lone int is no sequence
BAD_RATES = [("l2", {"l2": -1e-4}), ("l2", {"l2": float("nan")}), ("l2", {"l2": float("inf")}),
             ("l2", {"l2": "1e-4"}),  # not a number: a ValueError too, not the TypeError of a comparison
             ("dropout", {"dropout": 1.0}), ("dropout", {"dropout": -0.1}), ("dropout", {"dropout": float("nan")}),
             ("dropout", {"dropout": "0.5"})]


def assert_rejected(impl, cases) -> None:
    for argument, change in cases:
        kwargs = {"input_dim": 3, "num_classes": 2, "hidden": [4], "l2": 1e-3, "dropout": 0.5, **change}
        input_dim, num_classes = kwargs.pop("input_dim"), kwargs.pop("num_classes")
        assert_raises_naming(ValueError, argument, impl.build_regularized, input_dim, num_classes, **kwargs)


def test_bad_sizes_raise_value_error(impl):
    assert_rejected(impl, BAD_SIZES)


def test_bad_l2_or_dropout_raises_value_error(impl):
    assert_rejected(impl, BAD_RATES)


def test_included_ends_are_accepted(impl):
    for kwargs in ({"l2": 0.0, "dropout": 0.0}, {"l2": 0, "dropout": 0}, {"l2": 1e-3, "dropout": 0.999}):
        name = f"build_regularized(3, 2, hidden=[4], **{kwargs})"
        model = build(impl, 3, 2, name, hidden=[4], **kwargs)
        assert_shape(model(inputs(0, 2, 3)), (2, 2), name=name)
