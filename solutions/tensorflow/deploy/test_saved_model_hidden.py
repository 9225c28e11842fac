"""Hidden tests for tensorflow.deploy.saved_model (the catalog's contract checks).

The references are independent of the learner's code: TensorFlow's own ``tf.saved_model.load``
reads the learner's SavedModel; the kit exports (``keras.export.ExportArchive``) and converts
(``tf.lite.TFLiteConverter``) its own models to test ``load_and_predict``, ``convert_to_tflite``
and ``run_tflite`` one at a time; LiteRT's interpreter (the kit's ``litert`` extra, imported inside
the tests: without it those tests skip, naming the install command) runs every TFLite model; every
value is compared with the Keras model itself in evaluation mode. Everything is written under
``tmp_path``.
"""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from grader.tfchecks import assert_close, assert_raises_naming

keras = tf.keras

# tf.lite.Interpreter, which a correct answer may use, warns that it is deprecated.
pytestmark = pytest.mark.filterwarnings("ignore")

SIGNATURE = "serving_default"


def litert_interpreter():
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        pytest.skip("needs LiteRT's interpreter (the kit's litert extra): pip install -e '.[litert]'")
    return Interpreter


def mlp_with_dropout_and_batchnorm() -> keras.Model:
    """Dropout and batch normalisation whose moving statistics are far from (0, 1): training and
    evaluation mode give different outputs. The 48 x 32 kernel is large enough (over 1024 values)
    for the converter's default optimisation to quantise it."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(48), keras.layers.BatchNormalization(),
                              keras.layers.ReLU(), keras.layers.Dropout(0.5), keras.layers.Dense(32, activation="tanh"),
                              keras.layers.Dense(2)])
    norm = model.layers[1]
    norm.moving_mean.assign(np.linspace(-1.0, 1.0, 48).astype(np.float32))
    norm.moving_variance.assign(np.linspace(0.5, 4.0, 48).astype(np.float32))
    return model


def functional_on_sequences() -> keras.Model:
    """A functional model on inputs of shape (batch, 4, 3): features of more than one dimension."""
    keras.utils.set_random_seed(1)
    inputs = keras.Input((4, 3))
    hidden = keras.layers.Dense(5, activation="tanh")(inputs)
    outputs = keras.layers.Dense(2)(keras.layers.Flatten()(hidden))
    return keras.Model(inputs, outputs)


class TableLookup(keras.layers.Layer):
    """Each input, rounded to an int, looked up in a ``tf.lookup.StaticHashTable``: a resource of
    the model that is not a variable (and not one of Keras' own lookup layers)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        keys, values = tf.constant([0, 1, 2, 3], tf.int64), tf.constant([0.5, -1.0, 2.0, 4.0])
        self.table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), default_value=-3.0)

    def call(self, x):
        return self.table.lookup(tf.cast(tf.round(x), tf.int64))


def functional_with_a_lookup_table() -> keras.Model:
    keras.utils.set_random_seed(2)
    inputs = keras.Input((3,))
    return keras.Model(inputs, keras.layers.Dense(2)(TableLookup()(inputs)))


MODELS = {"sequential-dropout-batchnorm": mlp_with_dropout_and_batchnorm,
          "functional-2d-features": functional_on_sequences}


def batch_of(model: keras.Model, batch: int, seed: int = 0, dtype=np.float32) -> np.ndarray:
    features = tuple(model.inputs[0].shape[1:])
    return np.random.default_rng(seed).normal(1.0, 2.0, (batch, *features)).astype(dtype)


def expected(model: keras.Model, x) -> np.ndarray:
    return model(tf.cast(x, tf.float32), training=False).numpy()


def kit_export(model: keras.Model, export_dir, input_name: str, output_name: str) -> None:
    """The kit's own export, with names of its choosing."""
    spec = tf.TensorSpec((None, *model.inputs[0].shape[1:]), tf.float32, name=input_name)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(name=SIGNATURE, fn=lambda x: {output_name: model(x, training=False)},
                         input_signature=[spec])
    archive.write_out(os.fspath(export_dir), verbose=False)


class Exports:
    """Exporting and converting take a second or more each: each SavedModel and TFLite model is
    made once per module (the models are seeded, so the same kind is the same model). A learner's
    export that raised raises again in every test that reads it."""

    def __init__(self, impl, root: pathlib.Path):
        self.impl, self.root, self.done = impl, root, {}

    def _once(self, key, make):
        if key not in self.done:
            try:
                self.done[key] = (make(), None)
            except Exception as exc:  # noqa: BLE001 - re-raised in each test that needs it
                self.done[key] = (None, exc)
        value, error = self.done[key]
        if error is not None:
            raise error
        return value

    def kit(self, kind: str, input_name="features", output_name="scores") -> pathlib.Path:
        path = self.root / f"kit-{kind}-{input_name}-{output_name}"
        return self._once(path, lambda: kit_export(MODELS[kind](), path, input_name, output_name) or path)

    def kit_tflite(self, kind: str, input_name="features", output_name="scores") -> bytes:
        return self._once(("tflite", kind, input_name, output_name), lambda: tf.lite.TFLiteConverter.from_saved_model(
            str(self.kit(kind, input_name, output_name))).convert())

    def learner(self, kind: str, **kwargs) -> pathlib.Path:
        path = self.root / f"learner-{kind}-{'-'.join(map(str, kwargs.values())) or 'default'}"
        return self._once(path, lambda: learner_export(self.impl, MODELS[kind](), path, **kwargs) or path)


@pytest.fixture(scope="module")
def exports(impl, tmp_path_factory):
    return Exports(impl, tmp_path_factory.mktemp("exports"))


def run_with_litert(model_content: bytes, x: np.ndarray) -> np.ndarray:
    runner = litert_interpreter()(model_content=model_content).get_signature_runner(SIGNATURE)
    (input_name,) = runner.get_input_details()
    (output,) = runner(**{input_name: x}).values()
    return output


def learner_export(impl, model, path, *, named=False, **kwargs):
    """``export_for_serving``, checked; ``named``: pass model and export_dir by keyword, as the
    signature ``export_for_serving(model, export_dir, *, ...)`` allows."""
    result = (impl.export_for_serving(model=model, export_dir=path, **kwargs) if named
              else impl.export_for_serving(model, path, **kwargs))
    assert result is None, f"export_for_serving should return None, got {type(result).__name__}"
    assert (pathlib.Path(path) / "saved_model.pb").is_file(), (
        "export_for_serving wrote no SavedModel (no saved_model.pb) into the export directory")


def serving_signature(path):
    loaded = tf.saved_model.load(os.fspath(path))
    assert SIGNATURE in loaded.signatures, (
        f"the SavedModel has no {SIGNATURE!r} signature; its signatures: {sorted(loaded.signatures)}")
    return loaded.signatures[SIGNATURE]


# --- export_for_serving, read back by tf.saved_model.load -------------------------------------

@pytest.mark.points(2)
@pytest.mark.parametrize("input_name", [None, "features"], ids=["default-name", "features"])
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_signature_names_dtype_and_dynamic_batch(exports, kind, input_name):
    model = MODELS[kind]()
    kwargs = {} if input_name is None else {"input_name": input_name}
    want_name = input_name or "inputs"
    signature = serving_signature(exports.learner(kind, **kwargs))
    args, inputs = signature.structured_input_signature
    assert not args and list(inputs) == [want_name], (
        f"the {SIGNATURE!r} signature's inputs are {list(inputs)} (keyword) and {len(args)} "
        f"positional; expected one input named {want_name!r}")
    spec = inputs[want_name]
    features = tuple(model.inputs[0].shape[1:])
    assert spec.dtype == tf.float32 and spec.shape.as_list() == [None, *features], (
        f"input {want_name!r} is declared {spec.dtype.name} of shape {spec.shape}; expected float32 "
        f"of shape {(None, *features)} (a None batch dimension)")
    outputs = signature.structured_outputs
    assert isinstance(outputs, dict) and list(outputs) == ["outputs"], (
        f"the signature's outputs are named {list(outputs) if isinstance(outputs, dict) else outputs}; "
        "expected one output named 'outputs'")
    assert outputs["outputs"].dtype == tf.float32, (
        f"output 'outputs' is {outputs['outputs'].dtype.name}, expected float32")


@pytest.mark.points(2)
@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_signature_equals_the_model_in_evaluation_mode(exports, kind, batch):
    model = MODELS[kind]()
    signature = serving_signature(exports.learner(kind, input_name="features"))
    x = batch_of(model, batch)
    try:
        outputs = signature(features=tf.constant(x))
    except (tf.errors.InvalidArgumentError, TypeError, ValueError) as exc:
        raise AssertionError(f"the {SIGNATURE!r} signature does not run at batch size {batch}: "
                             f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    assert_close(outputs["outputs"], expected(model, x), rtol=1e-5, atol=1e-5,
                 name=f"the signature's output at batch size {batch} vs model(x, training=False)")


@pytest.mark.points(1)
def test_signature_serves_a_model_with_a_lookup_table(impl, tmp_path):
    # The SavedModel must carry every resource the model uses, its table as well as its variables.
    model = functional_with_a_lookup_table()
    learner_export(impl, model, tmp_path / "export")
    x = np.array([[0.0, 1.2, 2.0], [3.0, 7.0, -0.8]], np.float32)  # 7 and -1 are not keys: -3.0
    assert_close(serving_signature(tmp_path / "export")(inputs=tf.constant(x))["outputs"], expected(model, x),
                 rtol=1e-5, atol=1e-5, name="the signature's output for a model that looks its inputs up in a "
                                            "tf.lookup.StaticHashTable")


@pytest.mark.parametrize("kind", ["str", "pathlib.Path", "pathlib.Path by keyword"])
def test_export_dir_may_be_str_or_pathlike(impl, tmp_path, kind):
    model = functional_on_sequences()
    path = tmp_path / "export"
    learner_export(impl, model, str(path) if kind == "str" else path, named=kind.endswith("by keyword"))
    x = batch_of(model, 2)
    assert_close(serving_signature(path)(inputs=tf.constant(x))["outputs"], expected(model, x),
                 rtol=1e-5, atol=1e-5, name=f"the output of a SavedModel exported to a {kind}")


@pytest.mark.parametrize("input_name", ["", "two words", "1st", "x-y", 7, None], ids=repr)
def test_bad_input_name_raises_value_error(impl, tmp_path, input_name):
    assert_raises_naming(ValueError, "input_name", impl.export_for_serving, functional_on_sequences(),
                         tmp_path / "export", input_name=input_name)


# --- load_and_predict, on SavedModels the kit exported -----------------------------------------

@pytest.mark.points(2)
@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("names", [("inputs", "outputs"), ("features", "scores")], ids="-".join)
def test_load_and_predict_reads_the_names_from_the_signature(impl, exports, names, batch):
    model = mlp_with_dropout_and_batchnorm()
    x = batch_of(model, batch, seed=batch)
    got = impl.load_and_predict(exports.kit("sequential-dropout-batchnorm", *names), x)
    assert isinstance(got, np.ndarray), f"load_and_predict should return a NumPy array, got {type(got).__name__}"
    assert_close(got, expected(model, x), rtol=1e-5, atol=1e-5,
                 name=f"load_and_predict at batch size {batch} (input {names[0]!r}, output {names[1]!r})")


X_KINDS = {
    "numpy-float32": lambda x: x,
    "numpy-float64": lambda x: x.astype(np.float64),
    "numpy-float16": lambda x: x.astype(np.float16),
    "tensor-float32": lambda x: tf.constant(x),
    "tensor-float64": lambda x: tf.constant(x, tf.float64),
    "tensor-float16": lambda x: tf.constant(x, tf.float16),
}


@pytest.mark.parametrize("kind", sorted(X_KINDS))
def test_load_and_predict_casts_x_to_the_inputs_dtype(impl, exports, kind):
    model = functional_on_sequences()
    x = X_KINDS[kind](batch_of(model, 3, seed=2))
    got = impl.load_and_predict(str(exports.kit("functional-2d-features")), x)
    assert isinstance(got, np.ndarray), f"load_and_predict should return a NumPy array, got {type(got).__name__}"
    assert_close(got, expected(model, x), rtol=1e-5, atol=1e-5, name=f"load_and_predict of a {kind} x")


def test_a_directory_without_a_savedmodel_raises_oserror(impl, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(OSError):
        impl.load_and_predict(tmp_path / "empty", np.zeros((1, 3), np.float32))


# --- convert_to_tflite and run_tflite, each on the kit's own half ------------------------------

@pytest.mark.points(2)
def test_converted_model_keeps_names_dtype_and_dynamic_batch(impl, exports):
    Interpreter = litert_interpreter()
    content = impl.convert_to_tflite(exports.kit("functional-2d-features"))
    assert isinstance(content, bytes), f"convert_to_tflite should return bytes, got {type(content).__name__}"
    interpreter = Interpreter(model_content=content)
    signatures = interpreter.get_signature_list()
    assert signatures == {SIGNATURE: {"inputs": ["features"], "outputs": ["scores"]}}, (
        f"the TFLite model's signatures are {signatures}; expected the SavedModel's {SIGNATURE!r} "
        "with its input 'features' and output 'scores'")
    runner = interpreter.get_signature_runner(SIGNATURE)
    details = runner.get_input_details()["features"]
    assert details["dtype"] == np.float32 and list(details["shape_signature"]) == [-1, 4, 3], (
        f"the TFLite input is {np.dtype(details['dtype']).name} with shape_signature "
        f"{list(details['shape_signature'])}; expected float32, [-1, 4, 3] (a dynamic batch)")
    output = runner.get_output_details()["scores"]
    assert output["dtype"] == np.float32 and not output["quantization_parameters"]["scales"].size, (
        "the TFLite output should be float32 and not quantised")


@pytest.mark.points(2)
@pytest.mark.parametrize("batch", [1, 5])
def test_converted_model_is_close_to_the_model(impl, exports, batch):
    model = mlp_with_dropout_and_batchnorm()
    litert_interpreter()
    content = impl.convert_to_tflite(str(exports.kit("sequential-dropout-batchnorm")))
    x = batch_of(model, batch, seed=10 + batch)
    assert_close(run_with_litert(content, x), expected(model, x), rtol=1e-5, atol=1e-5,
                 name=f"the converted model run by LiteRT at batch size {batch} vs the Keras model")


@pytest.mark.points(2)
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_export_then_convert_end_to_end(impl, exports, kind):
    model = MODELS[kind]()
    litert_interpreter()
    content = impl.convert_to_tflite(exports.learner(kind))
    for batch in (1, 5):
        x = batch_of(model, batch, seed=20 + batch)
        assert_close(run_with_litert(content, x), expected(model, x), rtol=1e-5, atol=1e-5,
                     name=f"the TFLite model converted from export_for_serving's SavedModel, at batch {batch}")


@pytest.mark.points(2)
@pytest.mark.parametrize("batch", [1, 5])
@pytest.mark.parametrize("names", [("inputs", "outputs"), ("features", "scores")], ids="-".join)
def test_run_tflite_at_any_batch_size(impl, exports, names, batch):
    litert_interpreter()
    model = functional_on_sequences()
    content = exports.kit_tflite("functional-2d-features", *names)
    x = batch_of(model, batch, seed=30 + batch)
    got = impl.run_tflite(content, x)
    assert isinstance(got, np.ndarray), f"run_tflite should return a NumPy array, got {type(got).__name__}"
    assert_close(got, expected(model, x), rtol=1e-5, atol=1e-5,
                 name=f"run_tflite at batch size {batch} (input {names[0]!r}, output {names[1]!r})")


@pytest.mark.parametrize("kind", sorted(X_KINDS))
def test_run_tflite_casts_x_to_float32(impl, exports, kind):
    litert_interpreter()
    model = mlp_with_dropout_and_batchnorm()
    content = exports.kit_tflite("sequential-dropout-batchnorm")
    x = X_KINDS[kind](batch_of(model, 2, seed=3))
    assert_close(impl.run_tflite(content, x), expected(model, x), rtol=1e-5, atol=1e-5,
                 name=f"run_tflite of a {kind} x")
