"""Deploying a PyTorch model with ONNX: export with a dynamic batch axis, check, run elsewhere.

The question
------------
How do you deploy a PyTorch model with ONNX? ONNX is a file format for computation graphs: a
model exported to it runs without Python or PyTorch, in ONNX Runtime, TensorRT, OpenVINO or a
browser. ``torch.onnx.export`` captures the model's graph on example inputs; what the file must
get right for deployment is what the runtime will be asked to do: the names the serving code
feeds and fetches, the batch size (fixed to the example's unless an axis is declared dynamic),
the dtypes, the operator set version (opset) the runtime supports, and the model in evaluation
mode (dropout off, batch normalisation with its running statistics). ``onnx.checker`` validates
the file; running it in ONNX Runtime against PyTorch's own outputs proves it.

In torch 2.13, ``torch.onnx.export`` builds the graph with ``torch.export`` by default
(``dynamo=True``, which needs the ``onnxscript`` package); the older TorchScript-based exporter
(``dynamo=False``) and its ``dynamic_axes`` argument are deprecated (``dynamic_shapes`` replaces
it), and the default exporter stores the weights in a separate ``<path>.data`` file unless told
otherwise (``external_data=False``). The exporter and torch.export may warn; no warning fails a
test.

This exercise's tests need the kit's ``onnx`` extra (``pip install -e '.[onnx]'``: onnx,
onnxruntime and onnxscript; ``make setup`` installs it). Without it, they are skipped with a
message saying so, and a grader counts a skipped test as not passed.

Your task
---------
Write ``export_onnx(model, example, path, *, dynamic_batch=True, input_names=("input",),
output_names=("output",), opset_version=20)``.

Contract
--------
- ``example`` is one tensor or a non-empty tuple of tensors: the positional arguments of
  ``model(*example)``, each with its batch along dimension 0 (batch size 1 included). Each is
  float32 or float64; another dtype raises ``TypeError`` naming ``example``.
- ``path`` is a ``str`` or an ``os.PathLike``; its directory exists. ``export_onnx`` writes one
  self-contained ONNX file there (the weights inside it, no external data file beside it) and
  returns ``None``.
- The file passes ``onnx.checker.check_model(model, full_check=True)``.
- The graph's inputs are named ``input_names``, in order, one per example tensor, and its
  outputs ``output_names``, one per tensor the model returns (a tensor, or a tuple of tensors);
  a length that differs raises ``ValueError`` naming ``input_names`` or ``output_names`` and
  writes nothing.
- Each input is declared with its example tensor's dtype and its sizes after dimension 0, each
  output with the dtype the model returns it in: a float64 model and example give a float64
  graph.
- With ``dynamic_batch=True``, dimension 0 of every input and output is symbolic (a
  ``dim_param``), and ONNX Runtime runs the file at any batch size; with ``dynamic_batch=False``
  every dimension is fixed to the example's sizes.
- ONNX Runtime's outputs equal ``model(*inputs)`` in evaluation mode, within
  ``torch.testing.assert_close``'s default tolerances for the dtype.
- ``opset_version`` is the version of the default (``ai.onnx``) operator set the file declares:
  an int from 18 to 23 (the versions torch 2.13's exporter writes); another value raises
  ``ValueError`` naming ``opset_version`` and writes nothing.
- The model is exported in evaluation mode; ``model.training``, its parameters and buffers
  (values and dtypes) are left as they were.

Hints
-----
- ``torch.onnx.export(model, args, path, input_names=..., output_names=...,
  opset_version=..., dynamic_shapes=..., external_data=False)``; ``dynamic_shapes`` takes one
  ``{0: torch.export.Dim("batch")}`` per input, the same ``Dim`` for all of them.
- ``onnx.load(path)``, ``model.graph.input``/``output`` (``type.tensor_type``: ``elem_type``,
  ``shape.dim``: ``dim_value`` or ``dim_param``) and ``model.opset_import`` show what you wrote;
  ``onnxruntime.InferenceSession(path).run(None, {name: array})`` runs it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import nn


def export_onnx(model: nn.Module, example: torch.Tensor | tuple[torch.Tensor, ...], path: str | os.PathLike, *,
                dynamic_batch: bool = True, input_names: Sequence[str] = ("input",),
                output_names: Sequence[str] = ("output",), opset_version: int = 20) -> None:
    """Export ``model`` in evaluation mode to one ONNX file at ``path``."""
    raise NotImplementedError
