"""Wrong: BranchNet accepts ``features < 1`` (nn.Linear(0, 0) builds without complaint)."""

from __future__ import annotations

import os
import warnings

import torch
from torch import nn


class BranchNet(nn.Module):
    """``relu(up(x))`` when ``x.sum() > 0``, else ``tanh(down(x))``; scriptable and exportable."""

    def __init__(self, features: int) -> None:
        super().__init__()
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
