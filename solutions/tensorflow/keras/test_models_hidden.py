"""Hidden tests for tensorflow.keras.models (the catalog's contract checks)."""

from itertools import pairwise

import keras
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.tfchecks import assert_close, assert_raises_naming, assert_shape


def dense_params(sizes: list[int]) -> int:
    """Parameters of a chain of Dense layers with bias: sizes[0] inputs, then each layer's units."""
    return sum((a + 1) * b for a, b in pairwise(sizes))


def count_params(model, name: str) -> int:
    try:
        return model.count_params()
    except ValueError as exc:
        raise AssertionError(f"{name}: the model has no weights yet ({exc!s:.120}): give it an "
                             "input shape (keras.Input) so it is built when created") from None


def clusters(seed: int, n: int, dim: int, num_classes: int, *, labels=None):
    """Well separated Gaussian clusters, one per class: any working classifier exceeds 0.9."""
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(1000 + dim).normal(size=(num_classes, dim)) * 3.0
    y = rng.integers(0, num_classes, size=n) if labels is None else labels
    x = centers[y] + 0.5 * rng.normal(size=(n, dim))
    return x.astype(np.float32), y.astype(np.int64)


def cross_entropy_from_logits(logits: np.ndarray, y: np.ndarray) -> float:
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(y)), y].mean())


def check_compiled_loss_and_metric(model, inputs, y, name: str) -> None:
    logits = np.asarray(model(inputs), np.float64)
    assert (logits < 0).any() or not np.allclose(logits.sum(axis=1), 1.0, atol=1e-3), (
        f"{name}: the outputs are probabilities (rows sum to 1): the last layer must output "
        "logits (no softmax) and the loss apply the softmax with from_logits=True")
    results = model.evaluate(inputs, y, verbose=0, return_dict=True)
    assert "loss" in results, f"{name}: the model is not compiled with a loss"
    assert_close(results["loss"], cross_entropy_from_logits(logits, y), rtol=1e-4, atol=1e-4,
                 name=f"{name}: compiled loss on integer labels (sparse cross-entropy from logits)")
    assert "accuracy" in results, f"{name}: compile with metrics=['accuracy']"
    assert_close(results["accuracy"], float((logits.argmax(axis=1) == y).mean()), rtol=1e-5, atol=1e-5,
                 name=f"{name}: compiled accuracy metric")


def _dense_weights(model, name: str) -> dict[tuple[int, ...], np.ndarray]:
    """The model's trainable weights by shape; the tests choose sizes that make shapes unique."""
    weights = {}
    for w in model.trainable_weights:
        shape = tuple(w.shape)
        assert shape not in weights, f"{name}: two trainable weights of shape {shape}"
        weights[shape] = np.asarray(w, np.float64)
    return weights


def mlp_forward(weights, x: np.ndarray, sizes: list[int], name: str) -> np.ndarray:
    """Independent reference: relu(x W + b) through the hidden sizes, then x W + b (logits)."""
    h = np.asarray(x, np.float64)
    for k, (a, b) in enumerate(pairwise(sizes)):
        assert (a, b) in weights and (b,) in weights, (
            f"{name}: no Dense kernel {(a, b)} with bias {(b,)} among the trainable weights "
            f"{sorted(weights)}")
        h = h @ weights[(a, b)] + weights[(b,)]
        if k < len(sizes) - 2:
            h = np.maximum(h, 0)
    return h


def assert_logits(model, inputs, expected_options: list[np.ndarray], name: str) -> None:
    out = np.asarray(model(inputs), np.float64)
    errors = [np.abs(out - e).max() for e in expected_options]
    assert min(errors) <= 1e-4, (
        f"{name}: the outputs differ from relu Dense layers ending in a plain Dense (largest error "
        f"{min(errors):.3g}); the model must output logits, no softmax or other final activation")


def _input(seed: int, *shape: int) -> np.ndarray:
    return (np.random.default_rng(seed).normal(size=shape) * 2).astype(np.float32)


# Sizes all different, so every Dense layer's kernel and bias have shapes of their own.
@pytest.mark.parametrize("hidden", [[], [7], [9, 5]], ids=["no_hidden", "one_hidden", "two_hidden"])
def test_sequential_outputs_logits_of_its_dense_layers(impl, hidden):
    name = f"build_sequential(4, {hidden}, 3)"
    model = impl.build_sequential(4, hidden, 3)
    x = _input(1, 6, 4)
    assert_logits(model, x, [mlp_forward(_dense_weights(model, name), x, [4, *hidden, 3], name)], name)


@pytest.mark.parametrize("hidden", [[], [7], [9, 5]], ids=["no_hidden", "one_hidden", "two_hidden"])
def test_subclassed_outputs_logits_of_its_dense_layers(impl, hidden):
    name = f"MLPClassifier({hidden}, 3)"
    model = impl.MLPClassifier(hidden, 3)
    x = _input(2, 6, 4)
    model(x)
    assert_logits(model, x, [mlp_forward(_dense_weights(model, name), x, [4, *hidden, 3], name)], name)


def test_two_input_outputs_logits_of_its_dense_layers(impl):
    name = "build_two_input(5, 2, 3, text_units=6, num_units=4)"
    model = impl.build_two_input(5, 2, 3, text_units=6, num_units=4)
    inputs = {"text": _input(3, 7, 5), "numeric": _input(4, 7, 2)}
    weights = _dense_weights(model, name)
    text = mlp_forward(weights, inputs["text"], [5, 6], name)
    numeric = mlp_forward(weights, inputs["numeric"], [2, 4], name)
    text, numeric = np.maximum(text, 0), np.maximum(numeric, 0)
    # The docstring does not fix the order of the concatenation: either one is right.
    options = [mlp_forward(weights, np.concatenate(pair, axis=1), [10, 3], name)
               for pair in ((text, numeric), (numeric, text))]
    assert_logits(model, inputs, options, name)


# --- Sequential ---------------------------------------------------------------------------------

@settings(max_examples=6)
@given(input_dim=st.integers(1, 9), hidden=st.lists(st.integers(1, 7), max_size=3),
       num_classes=st.integers(2, 6), batch=st.integers(1, 4))
@example(input_dim=3, hidden=[], num_classes=2, batch=1)  # no hidden layer; the fewest classes
def test_sequential_parameter_count_and_shapes(impl, input_dim, hidden, num_classes, batch):
    name = f"build_sequential({input_dim}, {hidden}, {num_classes})"
    model = impl.build_sequential(input_dim, hidden, num_classes)
    assert isinstance(model, keras.Sequential), f"{name}: expected a keras.Sequential, got {type(model).__name__}"
    assert count_params(model, name) == dense_params([input_dim, *hidden, num_classes]), (
        f"{name}: {model.count_params()} parameters, expected "
        f"{dense_params([input_dim, *hidden, num_classes])} (Dense layers with biases)")
    assert_shape(model(np.zeros((batch, input_dim), np.float32)), (batch, num_classes), name=name)


def test_sequential_outputs_logits_and_compiles_from_logits_loss(impl):
    model = impl.build_sequential(6, [16], 4)
    x, y = clusters(1, 64, 6, 4)
    check_compiled_loss_and_metric(model, x, y, "build_sequential(6, [16], 4)")


def test_sequential_uses_adam_with_the_learning_rate(impl):
    model = impl.build_sequential(3, [4], 2, learning_rate=0.003)
    assert isinstance(model.optimizer, keras.optimizers.Adam), (
        f"build_sequential: compile with keras.optimizers.Adam, got {type(model.optimizer).__name__}")
    assert_close(float(model.optimizer.learning_rate), 0.003, rtol=1e-6, atol=0,
                 name="build_sequential(..., learning_rate=0.003): optimizer learning rate")
    assert_close(float(impl.build_sequential(3, [4], 2).optimizer.learning_rate), 1e-2, rtol=1e-6, atol=0,
                 name="build_sequential(3, [4], 2): optimizer learning rate (learning_rate=1e-2 by default)")


@pytest.mark.points(2)
def test_sequential_trains_above_90_percent(impl):
    keras.utils.set_random_seed(0)
    model = impl.build_sequential(8, [32], 5)
    x, y = clusters(2, 320, 8, 5)
    model.fit(x, y, batch_size=32, epochs=5, verbose=0)
    x_test, y_test = clusters(3, 200, 8, 5)
    accuracy = float((np.asarray(model(x_test)).argmax(axis=1) == y_test).mean())
    assert accuracy > 0.9, (f"build_sequential(8, [32], 5) reaches only {accuracy:.2f} accuracy on "
                            "well separated clusters after 5 epochs (expected > 0.9)")


def test_sequential_rejects_bad_sizes(impl):
    assert_raises_naming(ValueError, "input_dim", impl.build_sequential, 0, [4], 3)
    assert_raises_naming(ValueError, "input_dim", impl.build_sequential, 2.5, [4], 3)
    assert_raises_naming(ValueError, "hidden", impl.build_sequential, 4, [4, 0], 3)
    assert_raises_naming(ValueError, "hidden", impl.build_sequential, 4, [4, 2.5], 3)
    assert_raises_naming(ValueError, "num_classes", impl.build_sequential, 4, [4], 1)
    assert_raises_naming(ValueError, "num_classes", impl.build_sequential, 4, [4], 3.0)


@pytest.mark.parametrize("kind", ["tuple", "range"])
def test_hidden_may_be_any_sequence(impl, kind):
    hidden = (6, 5) if kind == "tuple" else range(5, 7)
    sizes = [4, *hidden, 3]
    model = impl.build_sequential(4, hidden, 3)
    assert count_params(model, f"build_sequential(4, {hidden!r}, 3)") == dense_params(sizes), (
        f"build_sequential(4, {hidden!r}, 3): {model.count_params()} parameters, expected {dense_params(sizes)}")
    subclassed = impl.MLPClassifier(hidden, 3)
    subclassed(np.zeros((2, 4), np.float32))
    assert subclassed.count_params() == dense_params(sizes), (
        f"MLPClassifier({hidden!r}, 3): {subclassed.count_params()} parameters, expected {dense_params(sizes)}")


# kind: (how the message shows it, a fresh value: an iterator must not be used up by the first call).
NOT_SEQUENCES = {"int": ("5", lambda: 5), "None": ("None", lambda: None), "set": ("{5, 6}", lambda: {5, 6}),
                 "iterator": ("iter([6, 5])", lambda: iter([6, 5]))}


@pytest.mark.parametrize("kind", ["int", "None", "set", "iterator"])
def test_hidden_that_is_not_a_sequence_raises_type_error(impl, kind):
    shown, make = NOT_SEQUENCES[kind]
    for what, build in (("build_sequential", lambda hidden: impl.build_sequential(4, hidden, 3)),
                        ("MLPClassifier", lambda hidden: impl.MLPClassifier(hidden, 3))):
        try:
            build(make())
        except TypeError:
            continue
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            raise AssertionError(f"{what}(hidden={shown}) should raise TypeError (hidden is not a "
                                 f"sequence), but raised {type(exc).__name__}: {exc!s:.150}") from None
        raise AssertionError(f"{what}(hidden={shown}) should raise TypeError (hidden is not a "
                             "sequence), but returned normally")


# --- functional, two inputs ---------------------------------------------------------------------

def two_input_data(seed: int, n: int, text_dim: int, num_dim: int):
    """Four classes: the text features carry the high bit, the numeric ones the low bit."""
    labels = np.random.default_rng(seed).integers(0, 4, size=n)
    text, _ = clusters(seed + 1, n, text_dim, 2, labels=labels // 2)
    numeric, _ = clusters(seed + 2, n, num_dim, 2, labels=labels % 2)
    return {"text": text, "numeric": numeric}, labels.astype(np.int64)


@settings(max_examples=5)
@given(text_dim=st.integers(1, 9), num_dim=st.integers(1, 5), num_classes=st.integers(2, 6),
       text_units=st.integers(1, 6), num_units=st.integers(1, 6))
def test_two_input_parameter_count_and_shapes(impl, text_dim, num_dim, num_classes, text_units, num_units):
    name = (f"build_two_input({text_dim}, {num_dim}, {num_classes}, text_units={text_units}, "
            f"num_units={num_units})")
    model = impl.build_two_input(text_dim, num_dim, num_classes, text_units=text_units, num_units=num_units)
    expected = (dense_params([text_dim, text_units]) + dense_params([num_dim, num_units])
                + dense_params([text_units + num_units, num_classes]))
    assert count_params(model, name) == expected, f"{name}: {model.count_params()} parameters, expected {expected}"
    inputs = {"text": np.zeros((3, text_dim), np.float32), "numeric": np.zeros((3, num_dim), np.float32)}
    try:
        out = model(inputs)
    except (ValueError, KeyError) as exc:
        raise AssertionError(f"{name}: calling it with a dict keyed 'text' and 'numeric' raised "
                             f"{type(exc).__name__}: {exc!s:.200} (name the Inputs)") from None
    assert_shape(out, (3, num_classes), name=name)


def test_two_input_default_units(impl):
    name = "build_two_input(5, 3, 4) (text_units=32 and num_units=8 by default)"
    model = impl.build_two_input(5, 3, 4)
    expected = dense_params([5, 32]) + dense_params([3, 8]) + dense_params([32 + 8, 4])
    assert count_params(model, name) == expected, f"{name}: {model.count_params()} parameters, expected {expected}"


def test_two_input_outputs_logits_and_compiles_from_logits_loss(impl):
    model = impl.build_two_input(5, 3, 4)
    inputs, y = two_input_data(4, 64, 5, 3)
    check_compiled_loss_and_metric(model, inputs, y, "build_two_input(5, 3, 4)")


@pytest.mark.points(2)
def test_two_input_trains_above_90_percent_using_both_inputs(impl):
    keras.utils.set_random_seed(0)
    model = impl.build_two_input(6, 3, 4)
    inputs, y = two_input_data(5, 320, 6, 3)
    model.fit(inputs, y, batch_size=32, epochs=5, verbose=0)
    test_inputs, y_test = two_input_data(6, 200, 6, 3)
    accuracy = float((np.asarray(model(test_inputs)).argmax(axis=1) == y_test).mean())
    assert accuracy > 0.9, (f"build_two_input(6, 3, 4) reaches only {accuracy:.2f} accuracy after 5 "
                            "epochs on data whose class needs both inputs (expected > 0.9)")


def test_two_input_uses_adam_with_the_learning_rate(impl):
    model = impl.build_two_input(3, 2, 2, learning_rate=0.003)
    assert isinstance(model.optimizer, keras.optimizers.Adam), (
        f"build_two_input: compile with keras.optimizers.Adam, got {type(model.optimizer).__name__}")
    assert_close(float(model.optimizer.learning_rate), 0.003, rtol=1e-6, atol=0,
                 name="build_two_input(..., learning_rate=0.003): optimizer learning rate")
    assert_close(float(impl.build_two_input(3, 2, 2).optimizer.learning_rate), 1e-2, rtol=1e-6, atol=0,
                 name="build_two_input(3, 2, 2): optimizer learning rate (learning_rate=1e-2 by default)")


def test_two_input_rejects_bad_sizes(impl):
    assert_raises_naming(ValueError, "text_dim", impl.build_two_input, 0, 3, 4)
    assert_raises_naming(ValueError, "text_dim", impl.build_two_input, 2.5, 3, 4)
    assert_raises_naming(ValueError, "num_dim", impl.build_two_input, 5, -1, 4)
    assert_raises_naming(ValueError, "num_classes", impl.build_two_input, 5, 3, 1)
    assert_raises_naming(ValueError, "text_units", impl.build_two_input, 5, 3, 4, text_units=0)
    assert_raises_naming(ValueError, "num_units", impl.build_two_input, 5, 3, 4, num_units=1.5)


# --- subclassed ---------------------------------------------------------------------------------

@settings(max_examples=5)
@given(input_dim=st.integers(1, 9), hidden=st.lists(st.integers(1, 7), max_size=3),
       num_classes=st.integers(2, 6))
def test_subclassed_builds_on_first_call(impl, input_dim, hidden, num_classes):
    name = f"MLPClassifier({hidden}, {num_classes})"
    model = impl.MLPClassifier(hidden, num_classes)
    assert isinstance(model, keras.Model), f"{name}: expected a keras.Model subclass"
    assert not model.weights, (f"{name}: has {len(model.weights)} weights before seeing an input; "
                               "the input size is only known when the model is first called")
    x = np.random.default_rng(input_dim).normal(size=(3, input_dim)).astype(np.float32)
    out = model(x)
    assert_shape(out, (3, num_classes), name=f"{name} on input (3, {input_dim})")
    assert len(model.trainable_weights) == 2 * (len(hidden) + 1), (
        f"{name}: {len(model.trainable_weights)} trainable weights after the first call, expected "
        f"{2 * (len(hidden) + 1)} (a kernel and a bias per Dense layer); are layers created in call()?")
    assert model.count_params() == dense_params([input_dim, *hidden, num_classes]), (
        f"{name}: {model.count_params()} parameters, expected {dense_params([input_dim, *hidden, num_classes])}")
    assert_close(model(x), out, rtol=0, atol=0, name=f"{name}: a second call on the same input")


@pytest.mark.points(2)
def test_subclassed_trains_above_90_percent(impl):
    keras.utils.set_random_seed(0)
    model = impl.MLPClassifier([32], 5)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = clusters(7, 320, 8, 5)
    model.fit(x, y, batch_size=32, epochs=5, verbose=0)
    x_test, y_test = clusters(8, 200, 8, 5)
    accuracy = float((np.asarray(model(x_test)).argmax(axis=1) == y_test).mean())
    assert accuracy > 0.9, (f"MLPClassifier([32], 5) reaches only {accuracy:.2f} accuracy (expected > 0.9) "
                            "when compiled with a from-logits loss: does call() return logits?")


def test_subclassed_rejects_bad_sizes(impl):
    assert_raises_naming(ValueError, "hidden", impl.MLPClassifier, [3, -2], 4)
    assert_raises_naming(ValueError, "hidden", impl.MLPClassifier, [3.5], 4)
    assert_raises_naming(ValueError, "num_classes", impl.MLPClassifier, [3], 0)
    assert_raises_naming(ValueError, "num_classes", impl.MLPClassifier, [3], 1)
