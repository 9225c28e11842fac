"""Public tests for tensorflow.deploy.saved_model: a few quick examples. Run with
``pytest exercises/tensorflow/deploy/test_saved_model.py``.

The TFLite test needs LiteRT's interpreter (``pip install -e '.[litert]'``) and is skipped
without it."""

import numpy as np
import pytest
import tensorflow as tf

keras = tf.keras

pytestmark = pytest.mark.filterwarnings("ignore")  # tf.lite.Interpreter warns it is deprecated


def small_model():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])


def test_export_has_a_named_signature_and_serves_batch_five(impl, tmp_path):
    model = small_model()
    impl.export_for_serving(model, tmp_path / "export", input_name="features")
    signature = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    assert list(signature.structured_input_signature[1]) == ["features"], "the input should be named 'features'"
    assert list(signature.structured_outputs) == ["outputs"], "the output should be named 'outputs'"
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(signature(features=tf.constant(x))["outputs"].numpy(), model(x).numpy(), atol=1e-5)
    np.testing.assert_allclose(impl.load_and_predict(tmp_path / "export", x), model(x).numpy(), atol=1e-5)


def test_tflite_model_runs_close_to_the_model(impl, tmp_path):
    pytest.importorskip("ai_edge_litert", reason="needs LiteRT's interpreter: pip install -e '.[litert]'")
    model = small_model()
    impl.export_for_serving(model, tmp_path / "export")
    content = impl.convert_to_tflite(tmp_path / "export")
    x = np.random.default_rng(1).normal(size=(1, 3)).astype(np.float32)
    np.testing.assert_allclose(impl.run_tflite(content, x), model(x).numpy(), rtol=1e-5, atol=1e-5)
