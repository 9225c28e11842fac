"""Wrong (the constant submission): BranchNet checks ``features`` and holds its layers but returns
zeros, and every export saves or returns a module that returns zeros, leaving the model alone."""

from __future__ import annotations

import os

import torch
from torch import nn


class _Zeros(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


class BranchNet(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        if features < 1:
            raise ValueError(f"features must be an int >= 1, got {features}")
        self.up = nn.Linear(features, features)
        self.down = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


def export_scripted(model: nn.Module, path: str | os.PathLike) -> None:
    torch.jit.save(torch.jit.script(_Zeros()), os.fspath(path))


def export_traced(model: nn.Module, example: torch.Tensor, path: str | os.PathLike) -> None:
    torch.jit.save(torch.jit.trace(_Zeros(), example), os.fspath(path))


def export_program(model: nn.Module, example: torch.Tensor) -> torch.export.ExportedProgram:
    example = example.expand(2, *example.shape[1:])
    return torch.export.export(_Zeros(), (example,), dynamic_shapes=({0: torch.export.Dim("batch")},))
