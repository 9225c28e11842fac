"""Hidden tests for tensorflow.performance.mixed_precision (the catalog's contract checks)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import assert_close, assert_dtype, assert_raises_naming, assert_shape, where_the_submission_lives

POLICIES = ("mixed_bfloat16", "mixed_float16")
LOW = {"mixed_bfloat16": tf.bfloat16, "mixed_float16": tf.float16}
UNIT_ROUNDOFF = {"mixed_bfloat16": 2.0**-8, "mixed_float16": 2.0**-11}
HIDDEN_UNITS = 64
LEARN_SEED, LEARN_EPOCHS, MIN_ACCURACY = 2, 8, 0.9


@pytest.fixture(autouse=True)
def float32_global_policy():
    """Every test starts and ends under the float32 global policy, whatever a submission (or an
    earlier exercise) left set: the grader runs many exercises in one process."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


def dense_layers(model, name: str):
    """The model's two Dense layers (hidden, output): the layers that hold weights, in order."""
    layers = [layer for layer in model.layers if layer.weights]
    assert len(layers) == 2 and all(isinstance(layer, keras.layers.Dense) for layer in layers), (
        f"{name}: expected two Dense layers with weights (hidden, output), got "
        f"{[type(layer).__name__ for layer in layers]}")
    return layers


def hidden_activations(impl, model, output_layer, x: np.ndarray) -> tf.Tensor:
    """What the output layer receives, from a model cut before it (joined where the model lives)."""
    return where_the_submission_lives(impl, "keras.Model", model.inputs[0], output_layer.input)(tf.constant(x))


def rounded(values: np.ndarray, dtype: tf.DType) -> np.ndarray:
    """``values`` rounded to ``dtype`` (bfloat16, float16) and back to float64."""
    return tf.cast(tf.cast(tf.constant(values, tf.float32), dtype), tf.float64).numpy()


def data(n: int, input_dim: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1.0, (n, input_dim)).astype(np.float32)


def build(impl, input_dim: int, num_classes: int, policy=None):
    args = (input_dim, num_classes) if policy is None else (input_dim, num_classes, policy)
    model = impl.build_mixed_model(*args)
    assert isinstance(model, keras.Model), (
        f"build_mixed_model must return a keras.Model, got {type(model).__name__}")
    return model


@pytest.mark.points(2)
@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=3, deadline=None)
@given(input_dim=st.integers(1, 6), num_classes=st.integers(2, 5), batch=st.integers(1, 5),
       seed=st.integers(0, 2**16))
@example(input_dim=1, num_classes=2, batch=1, seed=0)  # the smallest sizes allowed
def test_logits_of_the_two_dense_layers(impl, policy, input_dim, num_classes, batch, seed):
    model = build(impl, input_dim, num_classes, policy)
    hidden, output = dense_layers(model, f"build_mixed_model({input_dim}, {num_classes}, {policy!r})")
    x = data(batch, input_dim, seed)
    logits = model(tf.constant(x))
    name = f"the model's output for x of shape {x.shape} under {policy}"
    assert_shape(logits, (batch, num_classes), name=name)
    assert_dtype(logits, tf.float32, name=name)
    # Independent reference in float64 from the model's own weights, with the hidden layer's
    # inputs rounded to its low dtype; what remains is its rounding of the sums and the output,
    # bounded by a few units of round-off per term (the sums may be accumulated in 16 bits).
    low, u = LOW[policy], UNIT_ROUNDOFF[policy]
    w1, b1 = (rounded(v.numpy(), low) for v in (hidden.kernel, hidden.bias))
    w2, b2 = (np.asarray(v.numpy(), np.float64) for v in (output.kernel, output.bias))
    x_low = rounded(x, low)
    assert w1.shape == (input_dim, HIDDEN_UNITS), (
        f"the hidden Dense layer's kernel has shape {w1.shape}, expected ({input_dim}, {HIDDEN_UNITS})")
    h = np.maximum(x_low @ w1 + b1, 0)
    h_err = (input_dim + 3) * u * (np.abs(x_low) @ np.abs(w1) + np.abs(b1))
    expected = h @ w2 + b2
    assert_close(logits, expected, rtol=0, atol=float((h_err @ np.abs(w2)).max()) + 1e-5,
                 name=f"{name}, against relu(x @ W1 + b1) @ W2 + b2 computed from its weights")


@pytest.mark.parametrize("policy", POLICIES)
def test_hidden_layer_computes_low_with_float32_variables(impl, policy):
    model = build(impl, 5, 3, policy)
    hidden, output = dense_layers(model, f"build_mixed_model(5, 3, {policy!r})")
    low = LOW[policy].name
    assert (hidden.compute_dtype, hidden.variable_dtype) == (low, "float32"), (
        f"under {policy} the hidden Dense layer should compute in {low} with float32 variables, but "
        f"computes in {hidden.compute_dtype} with {hidden.variable_dtype} variables (give it dtype={policy!r})")
    assert_dtype(hidden_activations(impl, model, output, data(4, 5, 1)), LOW[policy],
                 name=f"the hidden layer's activations under {policy}")


@pytest.mark.points(2)
@pytest.mark.parametrize("policy", POLICIES)
def test_output_layer_computes_in_float32(impl, policy):
    model = build(impl, 5, 4, policy)
    _, output = dense_layers(model, f"build_mixed_model(5, 4, {policy!r})")
    assert output.compute_dtype == "float32", (
        f"the output Dense layer computes in {output.compute_dtype}: give it dtype='float32' (casting "
        "its low-precision logits to float32 afterwards keeps their round-off)")
    x = data(6, 5, 2)
    h = np.asarray(tf.cast(hidden_activations(impl, model, output, x), tf.float64).numpy())
    w2, b2 = (np.asarray(v.numpy(), np.float64) for v in (output.kernel, output.bias))
    # float32 round-off of 64 products summed, far below bfloat16's 2^-8 or float16's 2^-11.
    scale = np.abs(h) @ np.abs(w2) + np.abs(b2)
    assert_close(model(tf.constant(x)), h @ w2 + b2, rtol=0, atol=float(1e-5 * scale.max() + 1e-7),
                 name=f"the logits under {policy}, against hidden activations @ W2 + b2 in float32")


def test_default_policy_is_mixed_bfloat16(impl):
    model = build(impl, 3, 2)
    hidden, output = dense_layers(model, "build_mixed_model(3, 2)")
    assert hidden.compute_dtype == "bfloat16", (
        f"build_mixed_model(3, 2) should default to mixed_bfloat16, but its hidden layer computes "
        f"in {hidden.compute_dtype}")
    assert not isinstance(model.optimizer, keras.mixed_precision.LossScaleOptimizer), (
        "build_mixed_model(3, 2) (mixed_bfloat16 by default) should not scale the loss")


@pytest.mark.parametrize("policy", POLICIES)
def test_optimizer_is_adam_with_loss_scaling_for_float16_only(impl, policy):
    model = build(impl, 3, 2, policy)
    optimizer = model.optimizer
    scaled = isinstance(optimizer, keras.mixed_precision.LossScaleOptimizer)
    if policy == "mixed_float16":
        assert scaled, (f"under mixed_float16 the optimizer must be a LossScaleOptimizer, got "
                        f"{type(optimizer).__name__}: float16 gradients underflow without loss scaling")
        optimizer = optimizer.inner_optimizer
    else:
        assert not scaled, "under mixed_bfloat16 the optimizer is the plain Adam, without loss scaling"
    assert isinstance(optimizer, keras.optimizers.Adam), (
        f"the optimizer should be Adam, got {type(optimizer).__name__}")
    lr = float(optimizer.learning_rate.numpy())
    assert abs(lr - 0.01) < 1e-9, f"Adam's learning rate should be 0.01, got {lr:g}"


@pytest.mark.parametrize("policy", POLICIES)
def test_compiled_with_sparse_cross_entropy_from_logits_and_accuracy(impl, policy):
    model = build(impl, 4, 3, policy)
    model.set_weights([np.random.default_rng(3).normal(0, 0.5, w.shape).astype(np.float32)
                       for w in model.get_weights()])  # logits far from uniform
    x, y = data(16, 4, 4), np.random.default_rng(5).integers(0, 3, 16)
    logits = np.asarray(model(tf.constant(x)).numpy(), np.float64)
    log_probs = logits - logits.max(1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(1, keepdims=True))
    results = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    assert "accuracy" in results, f"the model is not compiled with metrics=['accuracy']: {sorted(results)}"
    assert_close(results["loss"], -log_probs[np.arange(16), y].mean(), rtol=1e-4, atol=1e-5,
                 name="model.evaluate's loss, against the cross-entropy of the model's logits "
                      "(SparseCategoricalCrossentropy(from_logits=True))")
    assert_close(results["accuracy"], np.mean(logits.argmax(1) == y), rtol=0, atol=1e-6,
                 name="model.evaluate's accuracy")


def blobs(seed: int, n: int = 240, input_dim: int = 4, num_classes: int = 3):
    """One Gaussian blob per class (noise sd 0.5) around centres on randomly rotated orthogonal
    axes, every two of them 8 * sqrt(2) apart whatever the seed: well separated for every seed."""
    rng = np.random.default_rng(seed)
    axes, _ = np.linalg.qr(rng.normal(0, 1, (input_dim, input_dim)))
    centres = 8.0 * axes[:num_classes]
    y = rng.integers(0, num_classes, n)
    x = (centres[y] + 0.5 * rng.normal(0, 1, (n, input_dim))).astype(np.float32)
    return x, y


def train_accuracy(impl, policy: str, seed: int = LEARN_SEED):
    """Train a fresh model from ``seed`` (data, weights, batch order); its loss history and the
    training accuracy after ``LEARN_EPOCHS`` epochs."""
    keras.utils.set_random_seed(seed)
    model = impl.build_mixed_model(4, 3, policy)
    x, y = blobs(seed)
    history = model.fit(x, y, batch_size=32, epochs=LEARN_EPOCHS, verbose=0)
    accuracy = model.evaluate(x, y, batch_size=240, verbose=0, return_dict=True)["accuracy"]
    return model, history.history["loss"], float(accuracy)


@pytest.mark.points(2)
@pytest.mark.parametrize("policy", POLICIES)
def test_fit_learns_and_variables_stay_float32(impl, policy):
    model, losses, accuracy = train_accuracy(impl, policy)
    assert np.all(np.isfinite(losses)), f"fit under {policy}: the loss is not finite: {losses}"
    assert accuracy >= MIN_ACCURACY, (
        f"fit under {policy}: training accuracy {accuracy:.3f} after {LEARN_EPOCHS} epochs on "
        f"well-separated blobs, expected at least {MIN_ACCURACY} (loss went {losses[0]:.4g} -> {losses[-1]:.4g})")
    for variable in model.weights:
        assert_dtype(variable, tf.float32, name=f"the variable {variable.path} after fit under {policy}")


@pytest.mark.parametrize("global_policy", ["float32", "mixed_float16"])
def test_global_policy_is_left_alone_and_ignored(impl, global_policy):
    keras.mixed_precision.set_global_policy(global_policy)
    model = build(impl, 3, 2, "mixed_bfloat16")
    after = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy("float32")
    assert after == global_policy, (
        f"build_mixed_model changed the Keras global policy from {global_policy!r} to {after!r}: "
        "give the policy to the layers (dtype=...), do not set it globally")
    hidden, output = dense_layers(model, "build_mixed_model(3, 2, 'mixed_bfloat16')")
    assert (hidden.compute_dtype, output.compute_dtype) == ("bfloat16", "float32"), (
        f"with the global policy {global_policy!r}, build_mixed_model(3, 2, 'mixed_bfloat16') made "
        f"layers computing in {hidden.compute_dtype} and {output.compute_dtype}, expected bfloat16 "
        "and float32: the model must follow its policy argument, not the global one")


@pytest.mark.parametrize("policy", ["float32", "float16", "bfloat16", "mixed_float32", "", None, 16])
def test_other_policies_raise_value_error(impl, policy):
    assert_raises_naming(ValueError, "policy", impl.build_mixed_model, 4, 3, policy)


@pytest.mark.parametrize(("argument", "value"), [
    ("input_dim", 0), ("input_dim", -2), ("input_dim", 4.0), ("input_dim", True),
    ("num_classes", 1), ("num_classes", 0), ("num_classes", 3.0), ("num_classes", True)])
def test_bad_sizes_raise_value_error(impl, argument, value):
    sizes = {"input_dim": 4, "num_classes": 3, argument: value}
    assert_raises_naming(ValueError, argument, impl.build_mixed_model, sizes["input_dim"],
                         sizes["num_classes"], "mixed_bfloat16")
