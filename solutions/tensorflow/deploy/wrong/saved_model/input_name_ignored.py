"""Wrong: the input spec has no name, so the signature's input is named after the function's argument."""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf

SIGNATURE = "serving_default"


def export_for_serving(model: keras.Model, export_dir: str | os.PathLike, *, input_name: str = "inputs") -> None:
    """Write ``model`` as a SavedModel with a ``"serving_default"`` signature and a dynamic batch."""
    if not isinstance(input_name, str) or not input_name.isidentifier():
        raise ValueError(f"input_name must be a non-empty str that is a Python identifier, got {input_name!r}")
    (model_input,) = model.inputs
    # None, not the batch size of any example: one export serves every batch size.
    spec = tf.TensorSpec((None, *model_input.shape[1:]), tf.float32)
    archive = keras.export.ExportArchive()
    archive.track(model)  # the variables travel with the SavedModel
    archive.add_endpoint(
        name=SIGNATURE,
        fn=lambda x: {"outputs": model(x, training=False)},  # the dict key names the output
        input_signature=[spec])
    # ExportArchive rather than tf.saved_model.save(model): the TFLite converter does not freeze
    # the variables of a Keras 3 model saved the latter way, and its converted outputs are wrong.
    archive.write_out(os.fspath(export_dir), verbose=False)


def _only_name(names) -> str:
    (name,) = names  # the contract promises one input and one output
    return name


def load_and_predict(export_dir: str | os.PathLike, x: np.ndarray | tf.Tensor) -> np.ndarray:
    """Load the SavedModel in ``export_dir`` and run its ``"serving_default"`` signature on ``x``."""
    signature = tf.saved_model.load(os.fspath(export_dir)).signatures[SIGNATURE]
    inputs = signature.structured_input_signature[1]  # (args, kwargs): signatures take keywords
    input_name = _only_name(inputs)
    output_name = _only_name(signature.structured_outputs)
    outputs = signature(**{input_name: tf.cast(x, inputs[input_name].dtype)})
    return outputs[output_name].numpy()


def convert_to_tflite(export_dir: str | os.PathLike) -> bytes:
    """The SavedModel in ``export_dir``, converted to a float32 TFLite flatbuffer."""
    converter = tf.lite.TFLiteConverter.from_saved_model(os.fspath(export_dir), signature_keys=[SIGNATURE])
    return converter.convert()  # no converter.optimizations: those quantise the weights


def run_tflite(model_content: bytes, x: np.ndarray | tf.Tensor) -> np.ndarray:
    """Run the ``"serving_default"`` signature of the TFLite model ``model_content`` on ``x``."""
    from ai_edge_litert.interpreter import Interpreter

    runner = Interpreter(model_content=model_content).get_signature_runner(SIGNATURE)
    input_name = _only_name(runner.get_input_details())
    # The runner resizes its input to this batch size before it runs (a bare Interpreter would
    # need resize_tensor_input and allocate_tensors).
    outputs = runner(**{input_name: np.asarray(x, dtype=np.float32)})
    return outputs[_only_name(runner.get_output_details())]
