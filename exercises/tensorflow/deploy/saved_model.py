"""Exporting a Keras model for serving: a SavedModel with a signature, and a TFLite (LiteRT) model.

The question
------------
"How does TensorFlow save a model, and how do you deploy it?" A Keras ``.keras`` file is for
going on training in Python; serving wants a *SavedModel*: a directory with the graph of each
exported function and the variables' values, loadable without the Python code that built the
model (TensorFlow Serving, ``tf.saved_model.load``, other languages). Clients call it through a
*signature*: a named function (``"serving_default"``) with named, typed inputs and outputs and a
batch dimension left open (``None``) so one export serves any batch size. For phones and
microcontrollers the same SavedModel is converted to a TFLite flatbuffer, run by LiteRT's
interpreter (formerly TensorFlow Lite). Each step has its classic slip: a signature traced at
one batch size, outputs left unnamed, a model exported in training mode, a client that hard-codes
names, a converted model quantised without anyone checking its outputs.

Your task
---------
Write ``export_for_serving(model, export_dir, *, input_name="inputs")``,
``load_and_predict(export_dir, x)``, ``convert_to_tflite(export_dir)`` and
``run_tflite(model_content, x)``. Running TFLite models needs LiteRT's interpreter
(``pip install ai-edge-litert``, or the kit's extra: ``pip install -e '.[litert]'``).

Contract
--------
- ``model`` is a built Keras ``Sequential`` or functional model with one float32 input of shape
  ``(batch, *features)`` and one float32 output.
- ``export_for_serving`` writes a SavedModel into ``export_dir`` (a ``str`` or an
  ``os.PathLike`` naming a directory that does not exist yet) and returns ``None``.
- The SavedModel's ``"serving_default"`` signature takes one float32 input named
  ``input_name``, of shape ``(None, *features)``: the batch dimension is dynamic, so any batch
  size from 1 up runs. It returns one output, named ``"outputs"``: the model's output.
- The signature computes ``model(x, training=False)``: dropout off, batch normalisation with
  its moving statistics.
- ``input_name`` is a non-empty ``str`` that is a Python identifier; anything else raises
  ``ValueError`` naming ``input_name``.
- ``load_and_predict(export_dir, x)`` loads the SavedModel in ``export_dir`` with
  ``tf.saved_model.load`` and runs its ``"serving_default"`` signature on ``x``, whatever the
  names of that signature's one input and one output: it reads them from the signature.
- ``x`` is a NumPy array or a ``tf.Tensor`` of a floating dtype (float16, float32 or float64)
  and shape ``(batch, *features)``; it is cast to the input's dtype. The output comes back as a
  NumPy array.
- A directory that holds no SavedModel raises ``OSError``.
- ``convert_to_tflite(export_dir)`` converts that SavedModel's ``"serving_default"`` signature
  with ``tf.lite.TFLiteConverter`` into a TFLite flatbuffer, returned as ``bytes``: float32, not
  quantised; the signature's name, input name and output name kept; the batch dimension still
  dynamic (``-1`` at dimension 0 of the input's ``shape_signature``).
- The TFLite model converted from what ``export_for_serving`` wrote, run by LiteRT's
  interpreter at any batch size, gives ``model(x, training=False)`` within ``1e-5`` (relative and
  absolute).
- ``run_tflite(model_content, x)`` runs the ``"serving_default"`` signature of the TFLite
  flatbuffer ``model_content`` on ``x`` (an ``x`` as for ``load_and_predict``, cast to float32;
  any batch size, whatever the input's and output's names) and returns the output as a NumPy
  array.

Hints
-----
- ``tf.TensorSpec(shape, dtype, name=...)``: the name becomes the signature's input name.
- ``keras.export.ExportArchive``: ``track(model)``, ``add_endpoint(name, fn, input_signature)``
  (``fn`` may return a dict: its keys name the outputs), ``write_out(path)``. A SavedModel
  written by ``tf.saved_model.save`` of a Keras 3 model loads and runs in TensorFlow, but (in
  TensorFlow 2.21) the TFLite converter does not freeze its variables: check the converted model.
- ``loaded.signatures["serving_default"]``: ``structured_input_signature`` (``(args, kwargs)``)
  and ``structured_outputs`` give the names.
- ``from ai_edge_litert.interpreter import Interpreter``; ``Interpreter(model_content=...)``;
  ``get_signature_runner("serving_default")`` resizes its inputs to what you pass, and its
  ``get_input_details()`` is keyed by input name.
"""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf


def export_for_serving(model: keras.Model, export_dir: str | os.PathLike, *, input_name: str = "inputs") -> None:
    """Write ``model`` as a SavedModel with a ``"serving_default"`` signature and a dynamic batch."""
    raise NotImplementedError


def load_and_predict(export_dir: str | os.PathLike, x: np.ndarray | tf.Tensor) -> np.ndarray:
    """Load the SavedModel in ``export_dir`` and run its ``"serving_default"`` signature on ``x``."""
    raise NotImplementedError


def convert_to_tflite(export_dir: str | os.PathLike) -> bytes:
    """The SavedModel in ``export_dir``, converted to a float32 TFLite flatbuffer."""
    raise NotImplementedError


def run_tflite(model_content: bytes, x: np.ndarray | tf.Tensor) -> np.ndarray:
    """Run the ``"serving_default"`` signature of the TFLite model ``model_content`` on ``x``."""
    raise NotImplementedError
