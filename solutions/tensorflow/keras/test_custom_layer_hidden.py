"""Hidden tests for tensorflow.keras.custom_layer (the catalog's contract checks)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import (
    assert_close,
    assert_dtype,
    assert_raises_naming,
    assert_shape,
    central_differences,
    shapes,
    where_the_submission_lives,
)


def rbf_reference(x: np.ndarray, centers: np.ndarray, gamma: float) -> np.ndarray:
    """Independent reference in float64: explicit differences to every center."""
    diff = np.asarray(x, np.float64)[..., None, :] - np.asarray(centers, np.float64)
    return np.exp(-gamma * (diff ** 2).sum(-1))


def kernel_and_bias(layer, name: str):
    """The Dense kernel (2-D) and bias (1-D) among a ResidualDense's trainable weights."""
    weights = {len(w.shape): np.asarray(w) for w in layer.trainable_weights}
    assert set(weights) == {1, 2} and len(layer.trainable_weights) == 2, (
        f"{name}: expected two trainable weights, a (units, units) kernel and a (units,) bias; got "
        f"shapes {[tuple(w.shape) for w in layer.trainable_weights]}")
    return weights[2], weights[1]


def rng_array(seed: int, *shape: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


# --- RBF ----------------------------------------------------------------------------------------

@pytest.mark.points(2)
@settings(max_examples=8)
@given(batch=shapes(min_dims=0, max_dims=2, max_side=3), d=st.integers(1, 5), units=st.integers(1, 4),
       gamma=st.sampled_from([0.1, 0.5, 2.0]), seed=st.integers(0, 2**16))
@example(batch=(), d=3, units=2, gamma=0.5, seed=0)  # no leading dimension
@example(batch=(2, 3), d=2, units=4, gamma=2.0, seed=1)  # two leading dimensions
def test_rbf_builds_weights_from_the_input_and_matches_the_formula(impl, batch, d, units, gamma, seed):
    name = f"RBF({units}, gamma={gamma}) on input {(*batch, d)}"
    layer = impl.RBF(units, gamma=gamma)
    assert not layer.weights, (f"{name}: has {len(layer.weights)} weight(s) before build; create them in "
                               "build(), when the input size is known")
    x = rng_array(seed, *batch, d)
    out = layer(x)
    assert len(layer.trainable_weights) == 1, (
        f"{name}: {len(layer.trainable_weights)} trainable weights after the first call, expected 1 "
        "(the centers, created with add_weight(trainable=True))")
    assert_shape(layer.centers, (units, d), name=f"{name}: centers")
    assert_shape(out, (*batch, units), name=name)
    assert_dtype(out, tf.float32, name=name)
    assert_close(out, rbf_reference(x, layer.centers.numpy(), gamma), rtol=1e-5, atol=1e-6, name=name)
    assert_close(layer(x), out, rtol=0, atol=0, name=f"{name}: a second call on the same input")
    assert len(layer.weights) == 1, f"{name}: a second call created new weights"


def test_rbf_is_one_at_its_centers(impl):
    layer = impl.RBF(3, gamma=0.7)
    layer(np.zeros((1, 2), np.float32))
    centers = np.array([[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]], np.float32)
    layer.centers.assign(centers)
    assert_close(layer(centers), rbf_reference(centers, centers, 0.7), rtol=1e-5, atol=1e-6,
                 name="RBF evaluated at its own centers")


def test_rbf_in_float64_computes_in_float64(impl):
    layer = impl.RBF(3, gamma=0.5, dtype="float64")
    x = rng_array(7, 4, 2, dtype=np.float64) + 1e-9  # digits float32 would lose
    out = layer(x)
    name = "RBF(3, gamma=0.5, dtype='float64')"
    assert_dtype(layer.centers, tf.float64, name=f"{name}: centers")
    assert_dtype(out, tf.float64, name=name)
    assert_close(out, rbf_reference(x, layer.centers.numpy(), 0.5), rtol=1e-12, atol=1e-14, name=name)


def test_rbf_gamma_defaults_to_one(impl):
    layer = impl.RBF(3)
    x = rng_array(11, 4, 2)
    out = layer(x)
    assert_close(out, rbf_reference(x, layer.centers.numpy(), 1.0), rtol=1e-5, atol=1e-6,
                 name="RBF(3) (gamma=1.0 by default)")


def test_rbf_takes_an_int_gamma(impl):
    layer = impl.RBF(2, gamma=2)  # a positive finite number need not be a float
    x = rng_array(10, 3, 2)
    out = layer(x)
    assert_close(out, rbf_reference(x, layer.centers.numpy(), 2.0), rtol=1e-5, atol=1e-6, name="RBF(2, gamma=2)")


def test_rbf_input_gradient_matches_the_formula(impl):
    layer = impl.RBF(3, gamma=0.5, dtype="float64")
    x = tf.constant(rng_array(1, 2, 4, dtype=np.float64))
    layer(x)
    weight = rng_array(8, 2, 3, dtype=np.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        total = tf.reduce_sum(layer(x) * weight)
    grad = tape.gradient(total, x)
    assert grad is not None, "RBF: no gradient reaches the input"
    # d/dx sum_j w_j exp(-g |x - c_j|^2) = sum_j w_j out_j (-2 g) (x - c_j)
    centers = layer.centers.numpy()
    out = rbf_reference(x.numpy(), centers, 0.5)
    expected = np.einsum("nj,njd->nd", weight * out, -2 * 0.5 * (x.numpy()[:, None, :] - centers))
    assert_close(grad, expected, rtol=1e-10, atol=1e-12,
                 name="gradient of RBF(3, gamma=0.5, dtype='float64') with respect to its input")


def test_rbf_center_gradient_matches_finite_differences(impl):
    layer = impl.RBF(2, gamma=0.8, dtype="float64")
    x = tf.constant(rng_array(2, 3, 2, dtype=np.float64))
    layer(x)
    layer.centers.assign(rng_array(3, 2, 2, dtype=np.float64) * 0.5)
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(layer(x))
    grad = tape.gradient(total, layer.centers)
    assert grad is not None, "RBF: no gradient reaches the centers (are they a trainable weight?)"
    assert_close(grad, central_differences(lambda: layer(x), layer.centers), rtol=1e-5, atol=1e-7,
                 name="gradient of RBF with respect to its centers")


def test_rbf_config_round_trip(impl):
    layer = impl.RBF(4, gamma=0.25, name="my_rbf", dtype="float64")
    x = rng_array(4, 3, 2, dtype=np.float64)
    out = layer(x)
    config = layer.get_config()
    try:
        clone = impl.RBF.from_config(config)
    except Exception as exc:  # noqa: BLE001 - any failure here is the learner's config
        raise AssertionError(f"RBF.from_config(layer.get_config()) raised {type(exc).__name__}: "
                             f"{exc!s:.200}") from None
    assert (clone.units, clone.gamma) == (4, 0.25), (
        f"RBF.from_config(get_config()) has units={clone.units}, gamma={clone.gamma}; expected 4 and 0.25: "
        "get_config must return every constructor argument")
    assert clone.name == "my_rbf" and clone.dtype == "float64", (
        f"RBF.from_config(get_config()) has name={clone.name!r}, dtype={clone.dtype!r}; expected 'my_rbf' "
        "and 'float64': start from super().get_config()")
    clone(x)
    clone.set_weights(layer.get_weights())
    assert_close(clone(x), out, rtol=1e-12, atol=1e-12, name="the RBF rebuilt from its config")


@pytest.mark.parametrize("units", [0, -1, 2.5], ids=str)
def test_rbf_rejects_bad_units(impl, units):
    assert_raises_naming(ValueError, "units", impl.RBF, units)


@pytest.mark.parametrize("gamma", [-1.0, 0.0, float("nan"), float("inf"), "2"], ids=repr)  # "2": not a number
def test_rbf_rejects_bad_gamma(impl, gamma):
    assert_raises_naming(ValueError, "gamma", impl.RBF, 3, gamma=gamma)


# --- ResidualDense ------------------------------------------------------------------------------

@settings(max_examples=6)
@given(units=st.integers(1, 6), batch=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_residual_dense_at_inference(impl, units, batch, seed):
    name = f"ResidualDense({units}, dropout=0.5) with training=False"
    layer = impl.ResidualDense(units, dropout=0.5)
    assert isinstance(layer, keras.Model), "ResidualDense must subclass keras.Model"
    assert not layer.weights, f"ResidualDense({units}): has weights before it has seen an input"
    x = rng_array(seed, batch, units)
    out = layer(x, training=False)
    kernel, bias = kernel_and_bias(layer, f"ResidualDense({units})")
    assert_shape(out, (batch, units), name=name)
    assert_close(out, x + np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-5, name=name)
    assert_close(layer(x), out, rtol=0, atol=0,
                 name=f"ResidualDense({units}, dropout=0.5) called without a training argument")


@pytest.mark.points(2)
def test_residual_dense_dropout_only_when_training(impl):
    units, rate = 64, 0.5
    layer = impl.ResidualDense(units, dropout=rate)
    x = np.abs(rng_array(5, 16, units)) + 0.1
    layer(x)
    kernel_and_bias(layer, f"ResidualDense({units})")
    # A small positive kernel and a bias of 1 make every hidden unit positive and known, so a
    # zero in the output can only be dropout.
    for weight in layer.trainable_weights:
        weight.assign(np.full(weight.shape, 0.01 if len(weight.shape) == 2 else 1.0, np.float32))
    hidden = x @ np.full((units, units), 0.01) + 1.0
    delta = np.asarray(layer(x, training=True)) - x
    dropped = np.isclose(delta, 0, atol=1e-6)
    kept = np.isclose(delta, hidden / (1 - rate), rtol=1e-4, atol=1e-5)
    assert (dropped | kept).all(), ("ResidualDense with training=True: each hidden unit must be either "
                                    "dropped (0) or scaled by 1/(1-rate), then added to the input")
    assert 0.3 < dropped.mean() < 0.7, (f"ResidualDense(dropout=0.5) with training=True dropped "
                                        f"{dropped.mean():.0%} of the units, expected about 50%")


@pytest.mark.parametrize("units", [0, 2.5], ids=str)
def test_residual_dense_rejects_bad_units(impl, units):
    assert_raises_naming(ValueError, "units", impl.ResidualDense, units)


@pytest.mark.parametrize("dropout", [1.0, -0.1, float("nan")], ids=str)
def test_residual_dense_rejects_bad_dropout(impl, dropout):
    assert_raises_naming(ValueError, "dropout", impl.ResidualDense, 4, dropout=dropout)


# The last dimension is what must equal units, whatever comes before it: (2, 4, 3) has a 4, not last.
@pytest.mark.parametrize("shape", [(2, 3), (2, 4, 3)], ids=["2-D", "3-D"])
def test_residual_dense_rejects_an_input_of_another_width(impl, shape):
    assert_raises_naming(ValueError, "units", impl.ResidualDense(4), np.ones(shape, np.float32))


def test_residual_dense_dropout_zero_is_allowed(impl):
    layer = impl.ResidualDense(3, dropout=0.0)  # the included end of [0, 1)
    x = rng_array(9, 5, 3)
    out = layer(x, training=True)
    kernel, bias = kernel_and_bias(layer, "ResidualDense(3, dropout=0.0)")
    assert_close(out, x + np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-5,
                 name="ResidualDense(3, dropout=0.0) with training=True (nothing dropped)")


def test_residual_dense_get_config_holds_units_and_dropout(impl):
    config = impl.ResidualDense(3, dropout=0.25).get_config()
    assert isinstance(config, dict), f"ResidualDense.get_config() should return a dict, got {type(config).__name__}"
    assert config.get("units") == 3 and config.get("dropout") == 0.25, (
        f"ResidualDense(3, dropout=0.25).get_config() is {config}; it must hold units=3 and dropout=0.25")


# --- serialization ------------------------------------------------------------------------------

@pytest.mark.points(2)
def test_keras_file_round_trip(impl, tmp_path):
    inputs = keras.Input(shape=(4,))
    outputs = impl.RBF(5, gamma=0.25, name="rbf")(impl.ResidualDense(4, dropout=0.3, name="res")(inputs))
    model = where_the_submission_lives(impl, "keras.Model", inputs, outputs)
    x = rng_array(6, 3, 4)
    expected = np.asarray(model(x, training=False))
    path = tmp_path / "model.keras"
    model.save(path)
    try:
        # Loaded where the layers' classes live: a .keras file's config names what loading imports and calls.
        loaded = where_the_submission_lives(impl, "keras.saving.load_model", path,
                                            {"RBF": impl.RBF, "ResidualDense": impl.ResidualDense})
    except Exception as exc:  # noqa: BLE001 - any failure here is the learner's serialization
        raise AssertionError(f"loading the saved .keras model raised {type(exc).__name__}: {exc!s:.300}") from None
    rbf, res = loaded.get_layer("rbf"), loaded.get_layer("res")
    assert (rbf.units, rbf.gamma) == (5, 0.25), (
        f"after save/load the RBF has units={rbf.units}, gamma={rbf.gamma}; expected 5 and 0.25")
    assert res.get_config().get("units") == 4 and res.get_config().get("dropout") == 0.3, (
        f"after save/load ResidualDense's config is {res.get_config()}; it must hold units=4 and dropout=0.3")
    assert_close(loaded(x, training=False), expected, rtol=1e-6, atol=1e-6,
                 name="outputs of the model loaded from the .keras file")
