"""TorchScript and torch.export: serialising a model with data-dependent control flow.

The question
------------
What is TorchScript, and how does a scripted or exported model differ from a regular PyTorch
model? A regular ``nn.Module`` is Python: its ``forward`` runs line by line, ``if`` statements
included, and needs a Python interpreter and the class's source to run again. Serialising it for
a runtime without Python takes one of three roads:

- ``torch.jit.trace`` runs ``forward`` once on an example and records the tensor operations that
  ran. Control flow that depends on tensor values is not recorded: the branch the example took is
  baked in, silently except for a ``torch.jit.TracerWarning``.
- ``torch.jit.script`` compiles ``forward``'s source to TorchScript, ``if`` statements included,
  so both branches survive; it accepts only the typed subset of Python TorchScript understands.
- ``torch.export.export`` traces ``forward`` into an ``ExportedProgram`` (a graph of ATen
  operations). Sizes are specialised to the example's unless declared dynamic
  (``torch.export.Dim``), and a branch on a tensor's value must be written with ``torch.cond``,
  which records both branches.

Dropout and batch normalisation behave differently in training and in evaluation: a model is
exported for inference in evaluation mode.

Deprecated in torch 2.13: ``torch.jit.script``, ``torch.jit.trace``, ``torch.jit.save`` and
``torch.jit.load`` emit a ``DeprecationWarning`` recommending ``torch.export``. They still work
and are what this exercise asks for (TorchScript files are still deployed); the tests check what
they produce, and no warning fails a test.

Your task
---------
Write ``BranchNet``, a module with data-dependent control flow that can be both scripted and
exported, and three export functions: ``export_scripted(model, path)``,
``export_traced(model, example, path)`` and ``export_program(model, example)``.

Contract
--------
- ``BranchNet(features)`` takes an int ``features >= 1`` (a smaller one raises ``ValueError``
  naming ``features``) and holds two ``nn.Linear(features, features)`` layers, ``up`` and ``down``.
- ``BranchNet.forward(x)`` takes ``x`` of shape ``(B, features)`` with ``B >= 1`` and returns
  ``relu(up(x))`` when ``x.sum() > 0`` and ``tanh(down(x))`` otherwise (a sum of exactly 0 takes
  the ``down`` branch); the branch is chosen once for the whole batch.
- ``torch.jit.script(BranchNet(f))`` succeeds, and the scripted module chooses the branch at run
  time as above; so does ``export_program``'s program for a ``BranchNet``.
- ``path`` is a ``str`` or an ``os.PathLike``; its directory exists. The export functions return
  ``None``, except ``export_program``.
- ``export_scripted(model, path)`` saves ``torch.jit.script(model)`` with ``torch.jit.save``; the
  module ``torch.jit.load(path)`` returns computes what ``model`` computes in evaluation mode,
  on either branch and at any batch size.
- ``export_traced(model, example, path)`` saves ``torch.jit.trace(model, example)`` with
  ``torch.jit.save``, for a model with one tensor input whose ``forward`` has no data-dependent
  control flow; the loaded module computes what ``model`` computes in evaluation mode at any
  batch size, not only the example's.
- If tracing emits a ``torch.jit.TracerWarning`` (the trace may not generalise: a tensor's value
  became a Python ``bool`` or number, or the trace does not reproduce the model's output),
  ``export_traced`` raises ``ValueError`` naming ``model`` and leaves nothing at ``path``.
- ``export_program(model, example)`` returns the ``torch.export.ExportedProgram`` of ``model``
  called on the one tensor ``example``, with dimension 0 (the batch) dynamic: ``program.module()``
  accepts any batch size ``>= 1``, whatever the example's batch size (1 included), and computes
  what ``model`` computes in evaluation mode; so does the program after ``torch.export.save`` and
  ``torch.export.load``.
- Every export captures the model in evaluation mode (dropout off, batch normalisation with its
  running statistics) and leaves ``model.training`` as it found it, with parameters and buffers
  unchanged.
- "Computes what ``model`` computes" means equal within float32 round-off
  (``torch.testing.assert_close``'s float32 tolerances).

Hints
-----
- ``torch.jit.is_scripting()`` is ``True`` only under TorchScript, and scripting skips the
  branch of an ``if`` on it that TorchScript never takes: ``forward`` can use a plain ``if`` for
  TorchScript and ``torch.cond(pred, true_fn, false_fn, (x,))`` for everything else. The skipped
  branch is still parsed: give ``torch.cond`` methods, not lambdas (TorchScript rejects lambdas).
- ``torch.export`` specialises a dimension of size 0 or 1 to a constant (the "0/1
  specialisation"): declaring it dynamic with an example of batch 1 fails. Any batch of 2 or more
  made from the example traces the same program.
- ``warnings.catch_warnings(record=True)`` with ``warnings.simplefilter("always")`` sees every
  warning, whatever filters the caller has set.
- ``model.train(mode)`` restores a saved ``mode``; ``try``/``finally`` restores it on errors too.
"""

from __future__ import annotations

import os
import warnings

import torch
from torch import nn


class BranchNet(nn.Module):
    """``relu(up(x))`` when ``x.sum() > 0``, else ``tanh(down(x))``; scriptable and exportable."""

    def __init__(self, features: int) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be an int >= 1, got {features}")
        self.up = nn.Linear(features, features)
        self.down = nn.Linear(features, features)

    def _up(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.up(x))

    def _down(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.down(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():
            if bool(x.sum() > 0):
                return self._up(x)
            return self._down(x)
        # torch.export cannot branch on a tensor's value in Python: torch.cond records both branches.
        return torch.cond(x.sum() > 0, self._up, self._down, (x,))


class _EvalMode:
    """Evaluation mode inside the block; the model's own mode again after it, errors included."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.modes = [m.training for m in model.modules()]

    def __enter__(self) -> nn.Module:
        return self.model.eval()

    def __exit__(self, *exc) -> None:
        # Per submodule: a model may have been handed over with some parts in eval mode already.
        for module, mode in zip(self.model.modules(), self.modes):
            module.training = mode


def export_scripted(model: nn.Module, path: str | os.PathLike) -> None:
    """Save ``torch.jit.script(model)``, captured in evaluation mode, to ``path``."""
    with _EvalMode(model):
        scripted = torch.jit.script(model)
    torch.jit.save(scripted, os.fspath(path))


def export_traced(model: nn.Module, example: torch.Tensor, path: str | os.PathLike) -> None:
    """Save ``torch.jit.trace(model, example)``, captured in evaluation mode, to ``path``; refuse a
    trace that may not generalise."""
    with _EvalMode(model), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traced = torch.jit.trace(model, example)
    tracer_warnings = [w for w in caught if issubclass(w.category, torch.jit.TracerWarning)]
    if tracer_warnings:
        raise ValueError(f"the model cannot be traced faithfully (its forward has data-dependent control flow "
                         f"or Python values taken from tensors): {tracer_warnings[0].message}; "
                         "script it instead (export_scripted)")
    torch.jit.save(traced, os.fspath(path))


def export_program(model: nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    """``torch.export`` the model, in evaluation mode, with a dynamic batch dimension."""
    if example.shape[0] < 2:
        # A batch of 1 would be specialised to a constant; a batch of 2 traces the same program.
        example = example.expand(2, *example.shape[1:])
    batch = torch.export.Dim("batch")
    with _EvalMode(model):
        return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
